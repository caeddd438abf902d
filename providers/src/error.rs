//! [`ProviderError`]: every way a model call can fail, typed and matchable.

use std::num::NonZeroU32;
use std::time::Duration;

use crate::Provider;

/// How long the excerpt of an undecodable payload kept in [`ProviderError::Decode`] may be.
const EXCERPT_CHARS: usize = 200;

/// A failed model call.
///
/// Every variant says which provider failed and whether retrying the same request may succeed
/// ([`is_retryable`](Self::is_retryable)). No variant ever holds an API key: HTTP errors keep
/// the provider's own message, transport errors drop the URL's query string.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ProviderError {
    /// The provider answered with an HTTP error status (before any stream event).
    #[error(
        "{provider} returned HTTP {status}{}: {message}{}{}",
        error_type.as_deref().map(|t| format!(" ({t})")).unwrap_or_default(),
        body_cut_at.map(|cap| format!(" [error body longer than {cap} bytes (`Limits::max_error_body_bytes`); the rest was not read]")).unwrap_or_default(),
        if *retryable { "; retryable, try again later" } else { "; not retryable: fix the request, key or quota" }
    )]
    Http {
        /// Which provider answered.
        provider: Provider,
        /// HTTP status code.
        status: u16,
        /// The provider's error type, e.g. `invalid_request_error`, `overloaded_error`,
        /// `RESOURCE_EXHAUSTED`.
        error_type: Option<String>,
        /// The provider's finer error code, e.g. `insufficient_quota`, `model_not_found`.
        code: Option<String>,
        /// The provider's error message (or the start of the body when it was not the usual
        /// error envelope).
        message: String,
        /// The provider's request id, for support tickets.
        request_id: Option<String>,
        /// Whether the same request may succeed later (429 rate limits, 5xx, overloaded).
        retryable: bool,
        /// How long the provider asked us to wait, if it said.
        retry_after: Option<Duration>,
        /// `Some(cap)` when the error body was longer than
        /// [`Limits::max_error_body_bytes`](crate::Limits::max_error_body_bytes): only the first
        /// `cap` bytes were read and parsed, the rest was left unread. (A `NonZeroU32`,
        /// saturating, keeps `ProviderError` small; no error body cap needs 4 GiB.)
        body_cut_at: Option<NonZeroU32>,
    },
    /// The provider reported an error inside a stream that had already started (an OpenAI
    /// Responses `error` event, an Anthropic `event: error`).
    #[error(
        "{provider} reported an error mid-stream{}: {message}",
        error_type.as_deref().map(|t| format!(" ({t})")).unwrap_or_default()
    )]
    Stream {
        /// Which provider reported it.
        provider: Provider,
        /// The provider's error type or code.
        error_type: Option<String>,
        /// The provider's message.
        message: String,
        /// Whether a new attempt of the whole request may succeed. Skein never retries a
        /// stream automatically once it has started.
        retryable: bool,
    },
    /// The provider answered with a redirect (HTTP 3xx). Redirects are never followed: the
    /// next hop would receive the API key headers and, on a 307 or 308, the whole conversation.
    /// Nothing was sent to `location`.
    #[error(
        "{provider} answered HTTP {status}, a redirect to {}, which Skein does not follow (it would carry the key and the conversation there); set the base URL to the provider's own endpoint",
        location.as_deref().map_or_else(|| "no location".to_owned(), |to| format!("`{to}`"))
    )]
    Redirected {
        /// Which provider answered.
        provider: Provider,
        /// The redirect status (301, 302, 303, 307, 308, …).
        status: u16,
        /// Where the provider tried to send the client: the first characters of its
        /// `Location` header, keys removed; `None` when it named no place.
        location: Option<String>,
    },
    /// The connection failed (DNS, TCP, TLS, reset) before a complete answer arrived.
    #[error("could not reach {provider}: {message}; check the base URL and the network")]
    Transport {
        /// Which provider we were talking to.
        provider: Provider,
        /// What failed, without the URL's query string.
        message: String,
    },
    /// A timeout from [`Timeouts`](crate::Timeouts) expired.
    #[error("{provider} timed out: no {phase} within {after:?}; raise `Timeouts` or try again")]
    Timeout {
        /// Which provider we were waiting for.
        provider: Provider,
        /// What we were waiting for.
        phase: TimeoutPhase,
        /// The limit that expired.
        after: Duration,
    },
    /// A response body or stream event could not be understood.
    #[error("{provider} sent something Skein cannot read: {message}; payload starts: {excerpt:?}")]
    Decode {
        /// Which provider sent it.
        provider: Provider,
        /// What was wrong with it.
        message: String,
        /// The first characters of the offending payload.
        excerpt: String,
    },
    /// The stream ended before the provider said the answer was complete.
    #[error(
        "{} stream ended early: {detail}; the answer is incomplete, try again",
        provider.map_or("model", Provider::as_str)
    )]
    StreamTruncated {
        /// Which provider's stream ended, when known.
        provider: Option<Provider>,
        /// What was missing.
        detail: String,
    },
    /// The model configuration or request cannot be used.
    #[error("invalid model configuration: {message}")]
    Config {
        /// What is wrong and how to fix it.
        message: String,
    },
    /// A configured header would override what Skein itself must send: a framing or
    /// hop-by-hop header (`Host`, `Content-Length`, `Transfer-Encoding`, …) or, next to a
    /// configured key, a credential header (`Authorization`, `x-api-key`, …) that would
    /// replace or accompany the key. Nothing was sent.
    #[error(
        "header `{name}` may not be set through `default_headers` or request headers: {reason}; remove it"
    )]
    ForbiddenHeader {
        /// The header as configured.
        name: String,
        /// Why it is refused.
        reason: &'static str,
    },
    /// The provider needed for this model was compiled out.
    #[error(
        "model `{model_id}` needs the {provider} adapter, which this build leaves out; enable the `{feature}` feature of the `providers` crate"
    )]
    FeatureDisabled {
        /// The provider that was detected.
        provider: Provider,
        /// The model id asked for.
        model_id: String,
        /// The cargo feature that adds it.
        feature: &'static str,
    },
    /// The adapter cannot do what the request or configuration asks (e.g. stop sequences on
    /// the OpenAI Responses API); nothing was sent.
    #[error("{provider} adapter cannot do this: {what}")]
    Unsupported {
        /// Which adapter.
        provider: Provider,
        /// What it cannot do, and what to do instead.
        what: String,
    },
    /// The provider sent more than a cap allows (an SSE event past
    /// [`Limits::max_sse_event_bytes`](crate::Limits), too many simultaneously open tool calls,
    /// …). Reading stopped at the cap; nothing past it was buffered.
    #[error(
        "{provider} sent {what}, over the cap of {max}{} (`{limit}`); reading stopped there. {}",
        limit.unit(),
        limit.hint()
    )]
    LimitExceeded {
        /// Which provider sent it.
        provider: Provider,
        /// Which cap was hit.
        limit: Limit,
        /// What was too large, e.g. `an SSE event` or `a 1025th open tool call (key 4294967295)`.
        what: String,
        /// The cap's value.
        max: u64,
    },
    /// The call was cancelled by the caller.
    #[error("the model call was cancelled")]
    Cancelled,
}

/// Which cap a [`ProviderError::LimitExceeded`] hit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Limit {
    /// [`Limits::max_sse_event_bytes`](crate::Limits::max_sse_event_bytes): one SSE event (or
    /// line), in bytes.
    SseEvent,
    /// [`Limits::max_response_body_bytes`](crate::Limits::max_response_body_bytes): a
    /// non-streamed answer body, in bytes.
    ResponseBody,
    /// [`MAX_OPEN_BLOCKS`](crate::MAX_OPEN_BLOCKS): tool calls, reasoning or content blocks
    /// of one answer open at the same time.
    OpenBlocks,
    /// [`MAX_TOOL_CALLS`](crate::MAX_TOOL_CALLS): tool calls in one answer, open or closed.
    ToolCalls,
}

impl Limit {
    fn unit(self) -> &'static str {
        match self {
            Limit::SseEvent | Limit::ResponseBody => " bytes",
            Limit::OpenBlocks => " open blocks",
            Limit::ToolCalls => " tool calls",
        }
    }

    fn hint(self) -> &'static str {
        match self {
            Limit::SseEvent => {
                "Raise `Limits::max_sse_event_bytes` if the provider really sends events this large"
            }
            Limit::ResponseBody => {
                "Raise `Limits::max_response_body_bytes` if answers really are this large"
            }
            Limit::OpenBlocks => {
                "The provider's stream is malformed or hostile; no real answer needs this many"
            }
            Limit::ToolCalls => {
                "The provider's answer is malformed or hostile; no real answer calls this many tools in one round"
            }
        }
    }
}

impl std::fmt::Display for Limit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Limit::SseEvent => "max_sse_event_bytes",
            Limit::ResponseBody => "max_response_body_bytes",
            Limit::OpenBlocks => "MAX_OPEN_BLOCKS",
            Limit::ToolCalls => "MAX_TOOL_CALLS",
        })
    }
}

/// What a [`ProviderError::Timeout`] was waiting for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeoutPhase {
    /// Establishing the connection.
    Connect,
    /// The response status and headers.
    FirstByte,
    /// The next piece of the body while streaming.
    Idle,
}

impl std::fmt::Display for TimeoutPhase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TimeoutPhase::Connect => "connection",
            TimeoutPhase::FirstByte => "response headers",
            TimeoutPhase::Idle => "stream data",
        })
    }
}

impl ProviderError {
    /// Whether the same request may succeed if sent again later.
    pub fn is_retryable(&self) -> bool {
        match self {
            ProviderError::Http { retryable, .. } | ProviderError::Stream { retryable, .. } => {
                *retryable
            }
            ProviderError::Transport { .. }
            | ProviderError::Timeout { .. }
            | ProviderError::StreamTruncated { .. } => true,
            ProviderError::Decode { .. }
            | ProviderError::Redirected { .. }
            | ProviderError::LimitExceeded { .. }
            | ProviderError::Config { .. }
            | ProviderError::ForbiddenHeader { .. }
            | ProviderError::FeatureDisabled { .. }
            | ProviderError::Unsupported { .. }
            | ProviderError::Cancelled => false,
        }
    }

    /// The HTTP status, for [`ProviderError::Http`] and [`ProviderError::Redirected`].
    pub fn status(&self) -> Option<u16> {
        match self {
            ProviderError::Http { status, .. } | ProviderError::Redirected { status, .. } => {
                Some(*status)
            }
            _ => None,
        }
    }

    /// The provider's error type (`invalid_request_error`, `overloaded_error`, …), if it gave one.
    pub fn error_type(&self) -> Option<&str> {
        match self {
            ProviderError::Http { error_type, .. } | ProviderError::Stream { error_type, .. } => {
                error_type.as_deref()
            }
            _ => None,
        }
    }

    /// How long the provider asked us to wait before retrying, if it said.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ProviderError::Http { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// Calls `f` on every text field (messages, types, codes, ids, excerpts): what the
    /// redactor cleans.
    #[cfg(feature = "__http")]
    pub(crate) fn for_each_text(&mut self, mut f: impl FnMut(&mut String)) {
        match self {
            ProviderError::Http {
                error_type,
                code,
                message,
                request_id,
                ..
            } => {
                f(message);
                for text in [error_type, code, request_id].into_iter().flatten() {
                    f(text);
                }
            }
            ProviderError::Stream {
                error_type,
                message,
                ..
            } => {
                f(message);
                if let Some(text) = error_type {
                    f(text);
                }
            }
            ProviderError::Transport { message, .. } | ProviderError::Config { message } => {
                f(message);
            }
            ProviderError::Decode {
                message, excerpt, ..
            } => {
                f(message);
                f(excerpt);
            }
            ProviderError::StreamTruncated { detail, .. } => f(detail),
            ProviderError::Redirected { location, .. } => {
                if let Some(location) = location {
                    f(location);
                }
            }
            ProviderError::FeatureDisabled { model_id, .. } => f(model_id),
            ProviderError::Unsupported { what, .. } | ProviderError::LimitExceeded { what, .. } => {
                f(what);
            }
            ProviderError::ForbiddenHeader { name, .. } => f(name),
            ProviderError::Timeout { .. } | ProviderError::Cancelled => {}
        }
    }

    /// A [`ProviderError::Config`] with this message.
    pub fn config(message: impl Into<String>) -> Self {
        ProviderError::Config {
            message: message.into(),
        }
    }

    /// A [`ProviderError::Decode`] keeping the start of the offending payload.
    pub fn decode(provider: Provider, message: impl std::fmt::Display, payload: &str) -> Self {
        ProviderError::Decode {
            provider,
            message: message.to_string(),
            excerpt: excerpt(payload),
        }
    }
}

/// The first [`EXCERPT_CHARS`] characters of `text` (never splitting a character).
pub(crate) fn excerpt(text: &str) -> String {
    match text.char_indices().nth(EXCERPT_CHARS) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

//! The shared HTTP core every provider adapter uses: the reqwest clients (one per runtime and
//! connect timeout, shared by every model, following no redirect; see `client.rs`), the retry
//! policy, timeouts, error statuses, and SSE decoding into
//! [`StreamEvent`](crate::StreamEvent)s.
//!
//! [`HttpModel`](crate::protocol::HttpModel) gives [`HttpClient::post_json`] /
//! [`HttpClient::post_sse`] a [`WireRequest`] (URL, JSON body, extra headers) and the two
//! pieces of its [`WireProtocol`](crate::protocol::WireProtocol) they need: an
//! [`ErrorParser`] that reads the provider's error envelope, and (for streams) a
//! [`sse::EventParser`] that turns each SSE event into [`Chunk`](crate::assemble::Chunk)s.
//! Everything else lives here once.

mod client;
mod idle;
mod retry;
pub(crate) mod sse;

use std::collections::BTreeMap;
use std::sync::Once;
use std::time::Duration;

use bytes::Bytes;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue, LOCATION};

use crate::error::excerpt;
use crate::{
    EventStream, Limit, Limits, ModelConfig, Provider, ProviderError, RetryPolicy, TimeoutPhase,
    Timeouts,
};

pub(crate) use retry::{retry_after, retryable_status};

/// One request as an adapter built it.
#[derive(Debug)]
pub(crate) struct WireRequest {
    /// Full URL.
    pub(crate) url: String,
    /// JSON body, shared (not copied) by every attempt of a retried request.
    pub(crate) body: Bytes,
    /// Headers for this request only (after the client's default headers).
    pub(crate) headers: BTreeMap<String, String>,
}

/// An HTTP error response, handed to the adapter's [`ErrorParser`].
#[derive(Debug)]
pub(crate) struct HttpFailure<'a> {
    pub(crate) provider: Provider,
    pub(crate) status: u16,
    pub(crate) headers: &'a HeaderMap,
    pub(crate) body: &'a [u8],
    /// `Some(cap)` when the body was cut at `cap` bytes.
    pub(crate) body_cut_at: Option<std::num::NonZeroU32>,
    /// The protocol's rule for which statuses are worth a retry.
    pub(crate) retryable_status: fn(u16) -> bool,
}

/// What a provider's error envelope said; see [`HttpFailure::error`].
#[derive(Debug, Default)]
pub(crate) struct ErrorDetails {
    pub(crate) error_type: Option<String>,
    pub(crate) code: Option<String>,
    pub(crate) message: Option<String>,
    pub(crate) request_id: Option<String>,
    /// `Some(false)` for errors that must not be retried whatever the status (quota).
    pub(crate) retryable: Option<bool>,
    /// A retry hint from the body (Gemini `RetryInfo`); headers win when both exist.
    pub(crate) retry_after: Option<Duration>,
}

impl HttpFailure<'_> {
    /// A [`ProviderError::Http`] from the envelope's details plus what the status and headers
    /// say (retryable status, `retry-after`). The message falls back to the start of the body.
    pub(crate) fn error(&self, details: ErrorDetails) -> ProviderError {
        let message = details
            .message
            .unwrap_or_else(|| excerpt(&String::from_utf8_lossy(self.body)));
        ProviderError::Http {
            provider: self.provider,
            status: self.status,
            error_type: details.error_type,
            code: details.code,
            message,
            request_id: details.request_id,
            retryable: details
                .retryable
                .unwrap_or((self.retryable_status)(self.status)),
            retry_after: retry_after(self.headers).or(details.retry_after),
            body_cut_at: self.body_cut_at,
        }
    }

    /// The value of a response header, if it is text.
    #[cfg_attr(
        not(any(feature = "openai", feature = "anthropic")),
        allow(dead_code, reason = "Gemini sends no request id header")
    )]
    pub(crate) fn header(&self, name: &str) -> Option<String> {
        let value = self.headers.get(name)?.to_str().ok()?;
        Some(value.to_owned())
    }
}

/// Reads a provider's error response into a [`ProviderError`].
pub(crate) type ErrorParser = fn(&HttpFailure<'_>) -> ProviderError;

/// A model's headers, retry policy and timeouts, sent with the reqwest client of the runtime
/// each request runs on.
#[derive(Debug)]
pub(crate) struct HttpClient {
    provider: Provider,
    headers: HeaderMap,
    retry: RetryPolicy,
    timeouts: Timeouts,
    limits: Limits,
    /// Whether the configuration set a key (request headers may then carry no credential).
    key_configured: bool,
    /// Which HTTP statuses the protocol retries.
    retryable_status: fn(u16) -> bool,
}

impl HttpClient {
    /// A client for `provider` sending `auth_headers` (never shown in errors) and the
    /// configuration's default headers with every request; `retryable_status` says which
    /// error statuses are worth another attempt.
    pub(crate) fn new(
        provider: Provider,
        config: &ModelConfig,
        auth_headers: &[(&str, String)],
        retryable_status: fn(u16) -> bool,
    ) -> Result<Self, ProviderError> {
        config.check_headers()?;
        // A TLS setup that cannot be built fails the configuration, not its first request
        // (a model served over plain HTTP needs none).
        let plain = config
            .base_url
            .as_deref()
            .is_some_and(|base| client::Transport::of(base) == client::Transport::Plain);
        if !plain {
            client::tls_config()?;
        }
        let mut headers = HeaderMap::new();
        let auth = auth_headers
            .iter()
            .map(|(name, value)| (*name, value.as_str()));
        let configured = config
            .default_headers
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_str()));
        for (name, value) in auth.chain(configured) {
            let (name, mut value) = header(name, value)?;
            value.set_sensitive(crate::config::looks_secret(name.as_str()));
            headers.insert(name, value);
        }
        Ok(HttpClient {
            provider,
            headers,
            retry: config.retry.clone(),
            timeouts: config.timeouts.clone(),
            limits: config.limits.clone(),
            key_configured: config.key_configured(),
            retryable_status,
        })
    }

    /// Posts the request with retries and returns the whole successful body.
    pub(crate) async fn post_json(
        &self,
        request: &WireRequest,
        errors: ErrorParser,
    ) -> Result<Vec<u8>, ProviderError> {
        retry::with_retries(&self.retry, || async {
            let response = self.send_once(request, errors).await?;
            let max = self.limits.max_response_body_bytes;
            let (body, cut) = read_body(self.provider, response, self.timeouts.idle, max).await?;
            if cut {
                return Err(ProviderError::LimitExceeded {
                    provider: self.provider,
                    limit: Limit::ResponseBody,
                    what: "a response body".into(),
                    max: max as u64,
                });
            }
            Ok(body)
        })
        .await
    }

    /// Posts the request with retries (until the response headers arrive) and decodes the
    /// body as server-sent events through `parser`.
    #[cfg_attr(
        not(feature = "openai"),
        allow(
            dead_code,
            reason = "Anthropic and Gemini use `post_sse_retrying_start`"
        )
    )]
    pub(crate) async fn post_sse<P: sse::EventParser>(
        &self,
        request: &WireRequest,
        errors: ErrorParser,
        parser: P,
    ) -> Result<EventStream, ProviderError> {
        let response = retry::with_retries(&self.retry, || self.send_once(request, errors)).await?;
        Ok(sse::decode(
            self.provider,
            body_stream(self.provider, response, self.timeouts.idle),
            parser,
            self.limits.max_sse_event_bytes,
        ))
    }

    /// Like [`Self::post_sse`], and a stream that fails before its first piece of content
    /// (only `Started` came) is retried like an HTTP error when the error is retryable:
    /// Anthropic reports `overloaded_error` and Gemini an `UNAVAILABLE` error event in-band
    /// right after a 200. The caller still sees
    /// nothing of a failed attempt; `parser` makes a fresh parser for each attempt.
    #[cfg_attr(
        not(any(feature = "anthropic", feature = "gemini")),
        allow(dead_code, reason = "the OpenAI APIs report no error before content")
    )]
    pub(crate) async fn post_sse_retrying_start<P: sse::EventParser>(
        &self,
        request: &WireRequest,
        errors: ErrorParser,
        parser: impl Fn() -> P,
    ) -> Result<EventStream, ProviderError> {
        let parser = &parser;
        retry::with_retries(&self.retry, || async move {
            let response = self.send_once(request, errors).await?;
            let body = body_stream(self.provider, response, self.timeouts.idle);
            let max_event = self.limits.max_sse_event_bytes;
            sse::until_content(sse::decode(self.provider, body, parser(), max_event)).await
        })
        .await
    }

    async fn send_once(
        &self,
        request: &WireRequest,
        errors: ErrorParser,
    ) -> Result<reqwest::Response, ProviderError> {
        let transport = client::Transport::of(&request.url);
        let mut builder = client::for_current_runtime(self.timeouts.connect, transport)?
            .post(&request.url)
            .headers(self.headers.clone())
            .header(CONTENT_TYPE, "application/json")
            .body(request.body.clone());
        // The request's headers replace the client's of the same name (`RequestBuilder::header`
        // would append, sending both values).
        let mut extra = HeaderMap::new();
        for (name, value) in &request.headers {
            crate::config::check_header(name, self.key_configured)?;
            let (name, mut value) = header(name, value)?;
            value.set_sensitive(crate::config::looks_secret(name.as_str()));
            extra.append(name, value);
        }
        builder = builder.headers(extra);
        let sent = tokio::time::timeout(self.timeouts.first_byte, builder.send()).await;
        let response = match sent {
            Err(_) => {
                return Err(ProviderError::Timeout {
                    provider: self.provider,
                    phase: TimeoutPhase::FirstByte,
                    after: self.timeouts.first_byte,
                });
            }
            Ok(result) => result.map_err(|err| self.transport(err))?,
        };
        let status = response.status().as_u16();
        if response.status().is_success() {
            return Ok(response);
        }
        if response.status().is_redirection() {
            return Err(redirected(self.provider, &response));
        }
        let headers = response.headers().clone();
        let max = self.limits.max_error_body_bytes;
        let (body, cut) = read_body(self.provider, response, self.timeouts.idle, max)
            .await
            .unwrap_or_default();
        Err(errors(&HttpFailure {
            provider: self.provider,
            status,
            headers: &headers,
            body: &body,
            body_cut_at: cut
                .then(|| std::num::NonZeroU32::new(u32::try_from(max).unwrap_or(u32::MAX)))
                .flatten(),
            retryable_status: self.retryable_status,
        }))
    }

    fn transport(&self, err: reqwest::Error) -> ProviderError {
        transport_error(self.provider, self.timeouts.connect, err)
    }
}

/// A redirect answer as a [`ProviderError::Redirected`] naming where it pointed (the first
/// characters of its `Location`). Nothing is sent there: see `client.rs`.
fn redirected(provider: Provider, response: &reqwest::Response) -> ProviderError {
    let location = response
        .headers()
        .get(LOCATION)
        .map(|value| excerpt(&String::from_utf8_lossy(value.as_bytes())));
    ProviderError::Redirected {
        provider,
        status: response.status().as_u16(),
        location,
    }
}

/// A reqwest error as a [`ProviderError`], without the URL (its query may hold a key).
fn transport_error(provider: Provider, connect: Duration, err: reqwest::Error) -> ProviderError {
    if err.is_connect() && err.is_timeout() {
        return ProviderError::Timeout {
            provider,
            phase: TimeoutPhase::Connect,
            after: connect,
        };
    }
    let err = err.without_url();
    let mut message = err.to_string();
    let mut source = std::error::Error::source(&err);
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    ProviderError::Transport { provider, message }
}

fn header(name: &str, value: &str) -> Result<(HeaderName, HeaderValue), ProviderError> {
    let header_name = HeaderName::from_bytes(name.as_bytes())
        .map_err(|_| ProviderError::config(format!("`{name}` is not a valid HTTP header name")))?;
    let header_value = HeaderValue::from_str(value).map_err(|_| {
        ProviderError::config(format!(
            "the value of header `{name}` is not valid in HTTP (control characters or non-ASCII)"
        ))
    })?;
    Ok((header_name, header_value))
}

/// Builds the TLS setup every model's HTTP client uses, so that the first request of a server
/// does not wait for it. Blocking (it reads the system's root certificates): call it off async
/// workers, at start.
pub fn preload() -> Result<(), ProviderError> {
    client::tls_config().map(drop)
}

/// Installs rustls's `ring` crypto provider as the process default, once, unless one is
/// installed already. reqwest is built without a crypto provider of its own (its default pulls
/// aws-lc, a much heavier C build), so every reqwest client built with rustls (here, and in the
/// tools that fetch over HTTP) needs this default.
pub fn install_crypto_provider() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            // An error means another thread installed one first, which is just as good.
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
    });
}

/// The response body as a stream of byte chunks; a silence longer than `idle` ends it with a
/// timeout error. Dropping the stream drops the response and closes the connection.
fn body_stream(
    provider: Provider,
    response: reqwest::Response,
    idle: Duration,
) -> impl futures::Stream<Item = Result<Bytes, ProviderError>> + Send + 'static {
    idle::IdleBody::new(provider, reqwest::Body::from(response), idle)
}

/// Reads a body up to `limit` bytes; `true` when it was longer. Reading stops at the limit:
/// the rest is never read (dropping the response closes the connection), so an endless body
/// costs `limit` bytes and no more time than reading them.
async fn read_body(
    provider: Provider,
    response: reqwest::Response,
    idle: Duration,
    limit: usize,
) -> Result<(Vec<u8>, bool), ProviderError> {
    use futures::TryStreamExt;
    let mut body = Vec::new();
    let mut chunks = std::pin::pin!(body_stream(provider, response, idle));
    while let Some(chunk) = chunks.try_next().await? {
        let room = limit.saturating_sub(body.len());
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return Ok((body, true));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body, false))
}

//! [`ModelConfig`] (how to reach a model) and [`ApiFormat`] (which of OpenAI's APIs it is
//! called through).

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::{Provider, ProviderError, detect_provider};

/// Which of OpenAI's two APIs a model is called through; parsed once, from configuration
/// (`"chat"`, `"chat_completions"`, `"responses"`).
///
/// ```
/// use providers::ApiFormat;
///
/// assert_eq!("responses".parse::<ApiFormat>().unwrap(), ApiFormat::Responses);
/// assert_eq!(" Chat ".parse::<ApiFormat>().unwrap(), ApiFormat::Chat);
/// let err = "soap".parse::<ApiFormat>().unwrap_err();
/// assert!(err.to_string().contains("`chat` or `responses`"));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApiFormat {
    /// `POST /chat/completions`: the default, and what compatible servers implement.
    #[default]
    #[serde(alias = "chat_completions")]
    Chat,
    /// `POST /responses`: OpenAI's Responses API.
    Responses,
}

impl ApiFormat {
    /// The name used in configuration files: `chat` or `responses`.
    pub const fn as_str(self) -> &'static str {
        match self {
            ApiFormat::Chat => "chat",
            ApiFormat::Responses => "responses",
        }
    }
}

impl fmt::Display for ApiFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for ApiFormat {
    type Err = ProviderError;

    /// Case and surrounding spaces are ignored.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.trim().to_ascii_lowercase().as_str() {
            "chat" | "chat_completions" => Ok(ApiFormat::Chat),
            "responses" => Ok(ApiFormat::Responses),
            _ => Err(ProviderError::config(format!(
                "unknown api_format `{}`: use `chat` or `responses`",
                text.trim()
            ))),
        }
    }
}

/// How to reach a model (id, protocol, endpoint, key, headers), plus retry, timeout and
/// buffering limits.
///
/// `Debug` never shows the API key, nor the values of headers whose name looks like a
/// credential (`authorization`, `*key*`, `*token*`, `*secret*`).
#[derive(Clone, Default, PartialEq)]
pub struct ModelConfig {
    /// The provider's model id, e.g. `gpt-4o`, `claude-sonnet-4-5`, `gemini-2.5-flash`; `echo`
    /// selects the debug model (feature `testing`).
    pub model_id: String,
    /// The model type (provider alias): `openai`/`gpt`, `anthropic`/`claude`, `google`/`gemini`,
    /// `openrouter`.
    pub model: Option<String>,
    /// The API key. May be omitted (or a dummy) when `base_url` points at a proxy.
    pub api_key: Option<String>,
    /// A custom endpoint in the provider's own convention: OpenAI `…/v1`, Anthropic the host
    /// without `/v1`, Gemini `…/v1beta`.
    pub base_url: Option<String>,
    /// Headers sent with every request (`model_kwargs.extra_headers` / `additional_headers`).
    pub default_headers: BTreeMap<String, String>,
    /// Default maximum output tokens when a request sets none.
    pub max_tokens: Option<u32>,
    /// Which OpenAI API to call: [`ApiFormat::Responses`] or (when `None`) Chat Completions.
    /// Other protocols have one API each: [`model_from_config`](crate::model_from_config)
    /// refuses `Responses` for them, and `Chat` changes nothing.
    pub api_format: Option<ApiFormat>,
    /// Whether the model's reasoning goes back to it in later requests; `None` takes the
    /// registry's default for the model ([`ModelInfo::reasoning_replay`](crate::ModelInfo)).
    ///
    /// ```
    /// use providers::{ModelConfig, ReasoningReplay};
    ///
    /// // A deployment whose contract changed before the registry did.
    /// let config = ModelConfig {
    ///     reasoning_replay: Some(ReasoningReplay::Always),
    ///     ..ModelConfig::new("deepseek-reasoner")
    /// };
    /// assert!(format!("{config:?}").contains("reasoning_replay: Some(Always)"));
    /// ```
    pub reasoning_replay: Option<crate::ReasoningReplay>,
    /// Retries of failed requests.
    pub retry: RetryPolicy,
    /// Connection, first-byte and idle timeouts.
    pub timeouts: Timeouts,
    /// Caps on what a provider may make Skein buffer (SSE events, error bodies).
    pub limits: Limits,
}

impl ModelConfig {
    /// A configuration for `model_id` with every other field at its default.
    pub fn new(model_id: impl Into<String>) -> Self {
        ModelConfig {
            model_id: model_id.into(),
            ..Default::default()
        }
    }

    /// Refuses `default_headers` that would override what the HTTP client must control:
    /// `Host`, `Content-Length`, `Transfer-Encoding`, `Connection`, `TE`, `Upgrade` (and the
    /// other hop-by-hop headers) always; `Authorization`, `Proxy-Authorization`, `x-api-key`,
    /// `x-goog-api-key`, `api-key` and `Cookie` whenever an `api_key` is set, since the request
    /// carries that key (for `skein serve`, possibly the server's own). Names are compared
    /// without regard to case. [`model_from_config`](crate::model_from_config) runs this check.
    ///
    /// ```
    /// use providers::{ModelConfig, ProviderError};
    ///
    /// let mut config = ModelConfig::new("gpt-4o");
    /// config.api_key = Some("sk-test".into());
    /// config.default_headers.insert("X-Team".into(), "a".into());
    /// assert!(config.check_headers().is_ok());
    /// config.default_headers.insert("Authorization".into(), "Bearer other".into());
    /// let err = config.check_headers().unwrap_err();
    /// assert!(matches!(err, ProviderError::ForbiddenHeader { ref name, .. } if name == "Authorization"));
    /// ```
    pub fn check_headers(&self) -> Result<(), ProviderError> {
        let key_configured = self.key_configured();
        self.default_headers
            .keys()
            .try_for_each(|name| check_header(name, key_configured))
    }

    /// Whether a non-blank `api_key` is set (the request then carries it, and no other
    /// credential header may be configured).
    pub(crate) fn key_configured(&self) -> bool {
        self.api_key
            .as_deref()
            .is_some_and(|k| !k.trim().is_empty())
    }

    /// The API key to send: the configured one (trimmed), or `dummy` when there is none but a
    /// `base_url` is set (a proxy may hold the real key or need none). Without either, a
    /// [`ProviderError::Config`] naming the environment variable the CLI reads.
    ///
    /// ```
    /// use providers::ModelConfig;
    ///
    /// let mut config = ModelConfig::new("gpt-4o");
    /// assert!(config.api_key_or_dummy().is_err());
    /// config.base_url = Some("http://127.0.0.1:8000/v1".into());
    /// assert_eq!(config.api_key_or_dummy().unwrap(), "dummy");
    /// ```
    pub fn api_key_or_dummy(&self) -> Result<String, ProviderError> {
        match (&self.api_key, &self.base_url) {
            (Some(key), _) if !key.trim().is_empty() => Ok(key.trim().to_owned()),
            (_, Some(_)) => Ok("dummy".to_owned()),
            _ => Err(ProviderError::config(format!(
                "no API key for {} model `{}`: set `api_key` (the CLI reads {}) or a `base_url` proxy",
                self.provider(),
                self.model_id,
                self.provider().key_env_var()
            ))),
        }
    }

    /// The configured `base_url` without a trailing slash, or `default` when none (or a blank
    /// one) is set.
    ///
    /// ```
    /// use providers::ModelConfig;
    ///
    /// let mut config = ModelConfig::new("gpt-4o");
    /// assert_eq!(config.base_url_or("https://api.openai.com/v1"), "https://api.openai.com/v1");
    /// config.base_url = Some("http://127.0.0.1:8000/v1/".into());
    /// assert_eq!(config.base_url_or("https://api.openai.com/v1"), "http://127.0.0.1:8000/v1");
    /// ```
    pub fn base_url_or(&self, default: &str) -> String {
        self.base_url
            .as_deref()
            .map(str::trim)
            .filter(|url| !url.is_empty())
            .unwrap_or(default)
            .trim_end_matches('/')
            .to_owned()
    }

    /// The provider this configuration selects ([`detect_provider`] of `model` and `model_id`).
    pub fn provider(&self) -> Provider {
        detect_provider(self.model.as_deref(), &self.model_id)
    }
}

impl fmt::Debug for ModelConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let headers: BTreeMap<&str, &str> = self
            .default_headers
            .iter()
            .map(|(name, value)| {
                let shown = if looks_secret(name) {
                    "<redacted>"
                } else {
                    value.as_str()
                };
                (name.as_str(), shown)
            })
            .collect();
        f.debug_struct("ModelConfig")
            .field("model_id", &self.model_id)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("base_url", &self.base_url)
            .field("default_headers", &headers)
            .field("max_tokens", &self.max_tokens)
            .field("api_format", &self.api_format)
            .field("reasoning_replay", &self.reasoning_replay)
            .field("retry", &self.retry)
            .field("timeouts", &self.timeouts)
            .field("limits", &self.limits)
            .finish()
    }
}

/// Headers only the HTTP client sets: framing and hop-by-hop headers. A configured value would
/// let whoever wrote the configuration re-route or re-frame a request that carries a key.
const FRAMING_HEADERS: &[&str] = &[
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "upgrade",
];

/// Headers that carry credentials: with a configured key they would replace it (or send a
/// second credential along with it), so they may only be set when no key is configured.
const CREDENTIAL_HEADERS: &[&str] = &[
    "authorization",
    "proxy-authorization",
    "x-api-key",
    "x-goog-api-key",
    "api-key",
    "cookie",
];

/// Refuses a header a configuration may not set; see [`ModelConfig::check_headers`].
pub(crate) fn check_header(name: &str, key_configured: bool) -> Result<(), ProviderError> {
    let name = name.trim();
    let refused = |reason| {
        Err(ProviderError::ForbiddenHeader {
            name: name.to_owned(),
            reason,
        })
    };
    if FRAMING_HEADERS.iter().any(|h| h.eq_ignore_ascii_case(name)) {
        return refused("the HTTP client sets framing and hop-by-hop headers itself");
    }
    if key_configured
        && CREDENTIAL_HEADERS
            .iter()
            .any(|h| h.eq_ignore_ascii_case(name))
    {
        return refused(
            "it would replace or accompany the configured API key; set `api_key` alone, or leave `api_key` unset to send your own credential header",
        );
    }
    Ok(())
}

/// Whether a header of this name carries a credential (its value is never shown).
pub(crate) fn looks_secret(name: &str) -> bool {
    messages::redact::looks_secret(name)
}

/// When and how often a failed request is sent again.
///
/// Retries happen only before the first byte of a response body reaches the caller: a 429,
/// a 5xx, Anthropic's 529 or a connection failure is retried with exponential backoff and
/// jitter, honouring the provider's `retry-after` / `retry-after-ms` headers (or its retry
/// hint in the body). Other 4xx statuses and quota errors are never retried, and neither is a
/// stream that failed after it started.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// How many times a request is retried after its first attempt (0 disables retries).
    pub max_retries: usize,
    /// The first backoff delay; each retry doubles it.
    pub initial_backoff: Duration,
    /// The longest backoff delay.
    pub max_backoff: Duration,
    /// The longest wait a provider may ask for; asking for more ends the retries, since the
    /// caller is better off hearing about it.
    pub max_retry_after: Duration,
    /// Whether backoff delays get random jitter.
    pub jitter: bool,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 3,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(60),
            jitter: true,
        }
    }
}

impl RetryPolicy {
    /// A policy that never retries.
    pub fn none() -> Self {
        RetryPolicy {
            max_retries: 0,
            ..Default::default()
        }
    }
}

/// How long to wait for each phase of a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Timeouts {
    /// Establishing the TCP/TLS connection.
    pub connect: Duration,
    /// From sending the request to receiving the response status and headers (a non-streamed
    /// answer is generated in this phase, so it is generous).
    pub first_byte: Duration,
    /// The longest silence between two pieces of a response body.
    pub idle: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            connect: Duration::from_secs(10),
            first_byte: Duration::from_secs(600),
            idle: Duration::from_secs(120),
        }
    }
}

/// How much a provider may make Skein buffer. A provider that sends more gets its answer
/// ended with [`ProviderError::LimitExceeded`](crate::ProviderError::LimitExceeded) (or, for an
/// error body, the rest of the body unread), so one misbehaving endpoint cannot take the
/// process's memory.
///
/// Operators set them in configuration files (`serde`, every field optional):
///
/// ```
/// let limits: providers::Limits = serde_json::from_str(r#"{"max_error_body_bytes": 4096}"#)?;
/// assert_eq!(limits.max_error_body_bytes, 4096);
/// assert_eq!(limits.max_sse_event_bytes, providers::Limits::DEFAULT_MAX_SSE_EVENT_BYTES);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    /// Largest server-sent event (or single line of one) in bytes. Reading stops as soon as an
    /// event grows past it; the rest is never buffered.
    pub max_sse_event_bytes: usize,
    /// Largest part of an HTTP error body that is read; the rest is left unread and the
    /// connection closed.
    pub max_error_body_bytes: usize,
    /// Largest non-streamed (`complete`) answer body in bytes.
    pub max_response_body_bytes: usize,
}

impl Limits {
    /// Default of [`Limits::max_sse_event_bytes`]: 8 MiB, far above any real event (a whole
    /// tool-call argument or an encrypted reasoning blob arrives in one event).
    pub const DEFAULT_MAX_SSE_EVENT_BYTES: usize = 8 * 1024 * 1024;
    /// Default of [`Limits::max_error_body_bytes`]: 64 KiB.
    pub const DEFAULT_MAX_ERROR_BODY_BYTES: usize = 64 * 1024;
    /// Default of [`Limits::max_response_body_bytes`]: 64 MiB.
    pub const DEFAULT_MAX_RESPONSE_BODY_BYTES: usize = 64 * 1024 * 1024;
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_sse_event_bytes: Self::DEFAULT_MAX_SSE_EVENT_BYTES,
            max_error_body_bytes: Self::DEFAULT_MAX_ERROR_BODY_BYTES,
            max_response_body_bytes: Self::DEFAULT_MAX_RESPONSE_BODY_BYTES,
        }
    }
}

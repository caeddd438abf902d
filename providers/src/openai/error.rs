//! OpenAI's error envelope, shared by Chat Completions, the Responses API and compatible
//! servers: HTTP error bodies and errors reported inside a stream.

use std::borrow::Cow;

use serde::Deserialize;

use crate::http::{ErrorDetails, HttpFailure};
use crate::{Provider, ProviderError};

/// `{"error": {"message", "type", "param", "code"}}`; compatible servers sometimes send a
/// bare string.
#[derive(Debug, Deserialize)]
pub(super) struct ErrorEnvelope<'a> {
    #[serde(borrow)]
    pub(super) error: WireError<'a>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(super) enum WireError<'a> {
    Object {
        #[serde(borrow)]
        message: Option<Cow<'a, str>>,
        #[serde(rename = "type", borrow)]
        kind: Option<Cow<'a, str>>,
        #[serde(default, deserialize_with = "code_text")]
        code: Option<String>,
    },
    Text(#[serde(borrow)] Cow<'a, str>),
}

/// Error codes are strings at OpenAI and numbers at some compatible servers.
fn code_text<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(match Option::<serde_json::Value>::deserialize(d)? {
        Some(serde_json::Value::String(code)) => Some(code),
        Some(serde_json::Value::Null) | None => None,
        Some(other) => Some(other.to_string()),
    })
}

impl WireError<'_> {
    /// (type, code, message)
    pub(super) fn parts(self) -> (Option<String>, Option<String>, Option<String>) {
        match self {
            WireError::Object {
                message,
                kind,
                code,
            } => (
                kind.map(Cow::into_owned),
                code,
                message.map(Cow::into_owned),
            ),
            WireError::Text(message) => (None, None, Some(message.into_owned())),
        }
    }
}

/// Quota errors arrive as 429 but never clear by waiting.
fn is_quota(kind: Option<&str>, code: Option<&str>) -> bool {
    [kind, code]
        .into_iter()
        .flatten()
        .any(|value| value == "insufficient_quota")
}

/// Reads an OpenAI (or compatible) HTTP error response.
pub(crate) fn http_error(failure: &HttpFailure<'_>) -> ProviderError {
    let envelope: Option<ErrorEnvelope<'_>> = serde_json::from_slice(failure.body).ok();
    let (error_type, code, message) = envelope.map(|e| e.error.parts()).unwrap_or_default();
    let quota = is_quota(error_type.as_deref(), code.as_deref());
    failure.error(ErrorDetails {
        error_type,
        code,
        message,
        request_id: failure.header("x-request-id"),
        retryable: quota.then_some(false),
        retry_after: None,
    })
}

/// An error reported inside a stream.
pub(super) fn stream_error(error: WireError<'_>) -> ProviderError {
    let (error_type, code, message) = error.parts();
    let quota = is_quota(error_type.as_deref(), code.as_deref());
    let retryable = !quota
        && [error_type.as_deref(), code.as_deref()]
            .into_iter()
            .flatten()
            .any(|v| {
                matches!(
                    v,
                    "server_error" | "rate_limit_exceeded" | "overloaded_error"
                )
            });
    ProviderError::Stream {
        provider: Provider::OpenAi,
        error_type: code.or(error_type),
        message: message.unwrap_or_else(|| "no message".into()),
        retryable,
    }
}

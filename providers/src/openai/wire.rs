//! Wire pieces the Chat Completions and Responses formats share: usage, the error envelope,
//! media parts as data URLs.

use std::borrow::Cow;

use base64::Engine as _;
use serde::Deserialize;

use crate::assemble::UsageUpdate;
use crate::http::{ErrorDetails, HttpFailure};
use crate::{Provider, ProviderError};

/// Token counts in either format (`prompt_tokens` in Chat, `input_tokens` in Responses).
#[derive(Debug, Default, Deserialize)]
pub(super) struct WireUsage {
    #[serde(
        alias = "input_tokens",
        default,
        deserialize_with = "crate::wire_numbers::token_count"
    )]
    prompt_tokens: Option<u64>,
    #[serde(
        alias = "output_tokens",
        default,
        deserialize_with = "crate::wire_numbers::token_count"
    )]
    completion_tokens: Option<u64>,
    #[serde(alias = "input_tokens_details")]
    prompt_tokens_details: Option<PromptDetails>,
    #[serde(alias = "output_tokens_details")]
    completion_tokens_details: Option<CompletionDetails>,
    /// DeepSeek's name for cached prompt tokens.
    #[serde(default, deserialize_with = "crate::wire_numbers::token_count")]
    prompt_cache_hit_tokens: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
struct PromptDetails {
    #[serde(default, deserialize_with = "crate::wire_numbers::token_count")]
    cached_tokens: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
struct CompletionDetails {
    #[serde(default, deserialize_with = "crate::wire_numbers::token_count")]
    reasoning_tokens: Option<u64>,
}

impl From<WireUsage> for UsageUpdate {
    fn from(usage: WireUsage) -> Self {
        UsageUpdate {
            input_tokens: usage.prompt_tokens,
            output_tokens: usage.completion_tokens,
            cached_input_tokens: usage
                .prompt_tokens_details
                .and_then(|d| d.cached_tokens)
                .or(usage.prompt_cache_hit_tokens),
            cache_creation_tokens: None,
            reasoning_tokens: usage
                .completion_tokens_details
                .and_then(|d| d.reasoning_tokens),
        }
    }
}

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
pub(super) fn http_error(failure: &HttpFailure<'_>) -> ProviderError {
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

/// Inline bytes as a `data:` URL.
pub(super) fn data_url(mime_type: &str, data: &[u8]) -> String {
    format!(
        "data:{mime_type};base64,{}",
        base64::engine::general_purpose::STANDARD.encode(data)
    )
}

/// A file name for inline bytes of a non-image type (OpenAI wants one for `file` parts).
pub(super) fn file_name(mime_type: &str) -> String {
    let extension = mime_type.rsplit('/').next().unwrap_or("bin");
    format!("attachment.{extension}")
}

/// `finish_reason` of the Chat format.
pub(super) fn finish_reason(reason: &str) -> crate::FinishReason {
    use crate::FinishReason;
    match reason {
        "stop" => FinishReason::Stop,
        "length" => FinishReason::Length,
        "tool_calls" | "function_call" => FinishReason::ToolCalls,
        "content_filter" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_owned()),
    }
}

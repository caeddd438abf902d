//! Anthropic's error envelope: HTTP error bodies and `error` events inside a stream.

use std::borrow::Cow;

use serde::Deserialize;

use super::wire::PROVIDER;
use crate::ProviderError;
use crate::http::sse::MaybeText;
use crate::http::{ErrorDetails, HttpFailure};

/// `{"type": "…", "message": "…"}`, the `error` of the envelope
/// `{"type": "error", "error": {…}, "request_id": "req_…"}` and of the `error` stream event.
#[derive(Debug, Default, Deserialize)]
pub(super) struct WireError<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: MaybeText<'a>,
    #[serde(default, borrow)]
    message: MaybeText<'a>,
}

#[derive(Debug, Deserialize)]
struct ErrorEnvelope<'a> {
    #[serde(borrow)]
    error: WireError<'a>,
    #[serde(borrow)]
    request_id: Option<Cow<'a, str>>,
}

/// Error types worth sending the same request again for.
fn retryable_type(kind: &str) -> bool {
    matches!(
        kind,
        "overloaded_error" | "api_error" | "rate_limit_error" | "timeout_error"
    )
}

/// Reads an Anthropic HTTP error response. Whether it is retried follows the status (429,
/// 5xx and 529 `overloaded_error` are); the request id comes from the body or the
/// `request-id` header.
pub(super) fn http_error(failure: &HttpFailure<'_>) -> ProviderError {
    let envelope: Option<ErrorEnvelope<'_>> = serde_json::from_slice(failure.body).ok();
    let (error, request_id) = match envelope {
        Some(envelope) => (envelope.error, envelope.request_id.map(Cow::into_owned)),
        None => (WireError::default(), None),
    };
    failure.error(ErrorDetails {
        error_type: error.kind.0.map(Cow::into_owned),
        code: None,
        message: error.message.0.map(Cow::into_owned),
        request_id: request_id.or_else(|| failure.header("request-id")),
        retryable: None,
        retry_after: None,
    })
}

/// An error the API reported inside a stream (or in a 200 body).
pub(super) fn stream_error(error: Option<WireError<'_>>) -> ProviderError {
    let error = error.unwrap_or_default();
    let kind = error.kind.0.map(Cow::into_owned);
    ProviderError::Stream {
        provider: PROVIDER,
        retryable: kind.as_deref().is_some_and(retryable_type),
        error_type: kind,
        message: error
            .message
            .0
            .map_or_else(|| "no message".to_owned(), Cow::into_owned),
    }
}

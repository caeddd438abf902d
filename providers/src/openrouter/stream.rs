//! OpenRouter's stream: Chat Completions chunks, with upstream failures reported in-band.

use crate::{ProviderError, http};

/// OpenRouter puts the upstream HTTP status in an in-stream error's `code` (`{"error":
/// {"code": 502, "message": "Provider returned error"}}` after a 200): the same failure as an
/// HTTP 502, so retried like one.
pub(crate) fn retryable_by_code(mut error: ProviderError) -> ProviderError {
    if let ProviderError::Stream {
        error_type,
        retryable,
        ..
    } = &mut error
    {
        let status = error_type
            .as_deref()
            .and_then(|code| code.parse::<u16>().ok());
        *retryable |= status.is_some_and(http::retryable_status);
    }
    error
}

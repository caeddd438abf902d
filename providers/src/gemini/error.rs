//! The Gemini error envelope (`google.rpc.Status`): HTTP errors and errors inside a stream.
//!
//! ```json
//! {"error": {"code": 429, "message": "…", "status": "RESOURCE_EXHAUSTED", "details": [
//!   {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [{"quotaId": "…"}]},
//!   {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "58s"}]}}
//! ```

use std::borrow::Cow;
use std::time::Duration;

use serde::Deserialize;

use crate::http::{ErrorDetails, HttpFailure};
use crate::{Provider, ProviderError};

/// `{"error": {...}}`.
#[derive(Debug, Deserialize)]
pub(super) struct ErrorEnvelope<'a> {
    #[serde(borrow)]
    pub(super) error: WireError<'a>,
}

/// The `error` object.
#[derive(Debug, Default, Deserialize)]
pub(super) struct WireError<'a> {
    #[serde(borrow)]
    message: Option<Cow<'a, str>>,
    /// The canonical code name: `INVALID_ARGUMENT`, `RESOURCE_EXHAUSTED`, `UNAVAILABLE`, …
    #[serde(borrow)]
    status: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    details: Vec<Detail<'a>>,
}

/// One entry of `details`; the fields of the detail types Skein reads, all optional.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Detail<'a> {
    /// `google.rpc.ErrorInfo.reason`, e.g. `API_KEY_INVALID`.
    #[serde(borrow)]
    reason: Option<Cow<'a, str>>,
    /// `google.rpc.RetryInfo.retryDelay`, a protobuf `Duration` such as `"58s"` or `"0.5s"`.
    #[serde(borrow)]
    retry_delay: Option<Cow<'a, str>>,
    /// `google.rpc.QuotaFailure.violations`.
    #[serde(default, borrow)]
    violations: Vec<Violation<'a>>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Violation<'a> {
    #[serde(borrow)]
    quota_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    quota_value: Option<Cow<'a, str>>,
}

impl WireError<'_> {
    /// The finer code: the `ErrorInfo` reason, else the violated quota's id.
    fn code(&self) -> Option<String> {
        let reason = self.details.iter().find_map(|d| d.reason.as_deref());
        let quota = || self.violations().find_map(|v| v.quota_id.as_deref());
        reason.or_else(quota).map(str::to_owned)
    }

    fn violations(&self) -> impl Iterator<Item = &Violation<'_>> {
        self.details.iter().flat_map(|d| &d.violations)
    }

    fn retry_delay(&self) -> Option<Duration> {
        self.details
            .iter()
            .find_map(|d| d.retry_delay.as_deref())
            .and_then(duration)
    }

    /// A quota that waiting a minute does not refill: a daily quota, or a limit of zero (the
    /// model is not available on this tier at all).
    fn is_hard_quota(&self) -> bool {
        let message_says_zero = self
            .message
            .as_deref()
            .is_some_and(|m| m.contains("limit: 0,") || m.ends_with("limit: 0"));
        message_says_zero
            || self.violations().any(|v| {
                v.quota_id
                    .as_deref()
                    .is_some_and(|id| id.contains("PerDay"))
                    || v.quota_value.as_deref() == Some("0")
            })
    }
}

/// A protobuf JSON `Duration` (`"58s"`, `"34.4s"`, `"0.000500s"`).
fn duration(text: &str) -> Option<Duration> {
    let seconds: f64 = text.trim().strip_suffix('s')?.parse().ok()?;
    Duration::try_from_secs_f64(seconds).ok()
}

/// Reads a Gemini HTTP error response. The envelope may also come wrapped in a JSON array
/// (what `streamGenerateContent` without `alt=sse` sends).
pub(super) fn http_error(failure: &HttpFailure<'_>) -> ProviderError {
    let error = envelope(failure.body).unwrap_or_default();
    failure.error(ErrorDetails {
        code: error.code(),
        retryable: error.is_hard_quota().then_some(false),
        retry_after: error.retry_delay(),
        error_type: error.status.map(Cow::into_owned),
        message: error.message.map(Cow::into_owned),
        request_id: None,
    })
}

fn envelope(body: &[u8]) -> Option<WireError<'_>> {
    // Checked first: serde would also read a struct from an array, positionally.
    if body.trim_ascii_start().starts_with(b"[") {
        let wrapped: Vec<ErrorEnvelope<'_>> = serde_json::from_slice(body).ok()?;
        return wrapped.into_iter().next().map(|envelope| envelope.error);
    }
    let envelope: ErrorEnvelope<'_> = serde_json::from_slice(body).ok()?;
    Some(envelope.error)
}

/// An error Gemini reported in place of a response (inside a stream, or in a 200 body).
pub(super) fn stream_error(error: WireError<'_>) -> ProviderError {
    let retryable = !error.is_hard_quota()
        && matches!(
            error.status.as_deref(),
            Some("RESOURCE_EXHAUSTED" | "UNAVAILABLE" | "INTERNAL" | "DEADLINE_EXCEEDED")
        );
    ProviderError::Stream {
        provider: Provider::Google,
        error_type: error.status.map(Cow::into_owned),
        message: error
            .message
            .map_or_else(|| "no message".to_owned(), Cow::into_owned),
        retryable,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(duration("58s"), Some(Duration::from_secs(58)));
        assert_eq!(duration("34.4s"), Some(Duration::from_millis(34_400)));
        assert_eq!(duration("0.000500s"), Some(Duration::from_micros(500)));
        for bad in ["58", "s", "-1s", "soon", "NaNs", "1e400s"] {
            assert_eq!(duration(bad), None, "{bad}");
        }
    }

    #[test]
    fn hard_quotas() {
        fn error(body: &str) -> WireError<'_> {
            envelope(body.as_bytes()).expect("parses")
        }
        let per_day = r#"{"error": {"status": "RESOURCE_EXHAUSTED", "details": [{"violations": [{"quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier"}]}]}}"#;
        let zero = r#"{"error": {"message": "Quota exceeded for metric: x, limit: 0, model: y"}}"#;
        let per_minute = r#"[{"error": {"details": [{"violations": [{"quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier", "quotaValue": "5"}]}]}}]"#;
        assert!(error(per_day).is_hard_quota());
        assert!(error(zero).is_hard_quota());
        assert!(!error(per_minute).is_hard_quota());
        assert_eq!(
            error(per_minute).code().as_deref(),
            Some("GenerateRequestsPerMinutePerProjectPerModel-FreeTier")
        );
    }
}

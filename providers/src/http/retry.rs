//! The one retry policy: which failures are retried and how long to wait.

use std::time::{Duration, SystemTime};

use backon::{ExponentialBuilder, Retryable};
use reqwest::header::HeaderMap;

use crate::{ProviderError, RetryPolicy};

/// Runs `attempt` until it succeeds, fails with a non-retryable error, or the policy's retries
/// are spent. A provider's requested wait (`retry-after`) replaces the backoff delay; a
/// requested wait longer than [`RetryPolicy::max_retry_after`] ends the retries at once.
pub(crate) async fn with_retries<T, F, Fut>(
    policy: &RetryPolicy,
    attempt: F,
) -> Result<T, ProviderError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, ProviderError>>,
{
    let mut backoff = ExponentialBuilder::default()
        .with_min_delay(policy.initial_backoff)
        .with_max_delay(policy.max_backoff)
        .with_max_times(policy.max_retries);
    if policy.jitter {
        backoff = backoff.with_jitter();
    }
    let max_retry_after = policy.max_retry_after;
    attempt
        .retry(backoff)
        .sleep(tokio::time::sleep)
        .when(ProviderError::is_retryable)
        .adjust(move |error, delay| {
            // `delay` is None once the retries are spent: never extend past that.
            let delay = delay?;
            match error.retry_after() {
                Some(wait) if wait > max_retry_after => None,
                Some(wait) => Some(wait),
                None => Some(delay),
            }
        })
        .await
}

/// The wait a response asks for: `retry-after-ms` (OpenAI), else `retry-after` as seconds
/// (possibly fractional) or an HTTP date.
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let header = |name: &str| headers.get(name).and_then(|value| value.to_str().ok());
    if let Some(millis) = header("retry-after-ms").and_then(|v| v.trim().parse::<f64>().ok()) {
        return Duration::try_from_secs_f64(millis / 1000.0).ok();
    }
    let value = header("retry-after")?.trim();
    if let Ok(seconds) = value.parse::<f64>() {
        return Duration::try_from_secs_f64(seconds).ok();
    }
    let date = httpdate::parse_http_date(value).ok()?;
    Some(
        date.duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

/// Whether an HTTP status is worth retrying: 408, 409 (OpenAI's "try again" lock conflict),
/// 429, and every 5xx including Anthropic's 529.
pub(crate) fn retryable_status(status: u16) -> bool {
    matches!(status, 408 | 409 | 429) || status >= 500
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, value.parse().expect("test header value"));
        }
        map
    }

    #[test]
    fn retry_after_forms() {
        assert_eq!(
            retry_after(&headers(&[("retry-after", "2")])),
            Some(Duration::from_secs(2))
        );
        assert_eq!(
            retry_after(&headers(&[("retry-after", "0.5")])),
            Some(Duration::from_millis(500))
        );
        assert_eq!(
            retry_after(&headers(&[("retry-after-ms", "250"), ("retry-after", "9")])),
            Some(Duration::from_millis(250))
        );
        assert_eq!(
            retry_after(&headers(&[(
                "retry-after",
                "Sun, 06 Nov 1994 08:49:37 GMT"
            )])),
            Some(Duration::ZERO)
        );
        let future = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(120));
        let wait = retry_after(&headers(&[("retry-after", &future)])).expect("a date parses");
        assert!(wait > Duration::from_secs(100) && wait <= Duration::from_secs(120));
        assert_eq!(retry_after(&headers(&[("retry-after", "soon")])), None);
        assert_eq!(retry_after(&headers(&[("retry-after", "-3")])), None);
        assert_eq!(retry_after(&HeaderMap::new()), None);
    }

    #[test]
    fn statuses() {
        for status in [408, 409, 429, 500, 502, 503, 504, 529] {
            assert!(retryable_status(status), "{status}");
        }
        for status in [400, 401, 403, 404, 413, 422] {
            assert!(!retryable_status(status), "{status}");
        }
    }
}

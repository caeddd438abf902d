//! The per-caller concurrency limit ([`service::ConcurrencyLimit`]), taken without waiting: a
//! caller at its limit gets 429 with `Retry-After` before anything else happens, never a
//! stream that starts and then fails. With a PostgreSQL store the limit counts across every
//! replica on the database.

use std::time::Duration;

use service::{ConcurrencyLimit, LimitError, Principal, Slot};

use crate::api::error::ApiError;

/// A slot of `caller` within `limit`, held until it is dropped; a 429 with `Retry-After`
/// when the caller has none free, a 503 when shared slots cannot be read.
pub(crate) async fn admit(
    limit: &ConcurrencyLimit,
    caller: Principal,
    retry_after: Duration,
) -> Result<Slot, ApiError> {
    limit.try_acquire(caller).await.map_err(|err| {
        let (status, code, message) = match err {
            LimitError::Reached { .. } => (
                http::StatusCode::TOO_MANY_REQUESTS,
                "too_many_requests",
                format!("{err}; retry after the time in Retry-After"),
            ),
            _ => (
                http::StatusCode::SERVICE_UNAVAILABLE,
                "store_unavailable",
                err.to_string(),
            ),
        };
        ApiError::new(status, code, message).with_retry_after(retry_after)
    })
}

#[cfg(test)]
mod tests {
    use http::StatusCode;

    use super::*;

    #[tokio::test]
    async fn a_caller_at_its_limit_gets_429_with_retry_after() {
        let limit = ConcurrencyLimit::in_process(1);
        let _held = admit(&limit, Principal::token(0), Duration::from_secs(3))
            .await
            .unwrap();
        let refused = admit(&limit, Principal::token(0), Duration::from_secs(3))
            .await
            .unwrap_err();
        assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    }
}

//! The per-caller concurrency limit: a semaphore per caller, taken without waiting. A caller
//! at its limit gets 429 with `Retry-After` before anything else happens, never a stream that
//! starts and then fails.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use service::Principal;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::api::error::ApiError;

/// Concurrency slots per caller.
#[derive(Debug)]
pub(crate) struct ConcurrencyLimit {
    per_caller: usize,
    retry_after: Duration,
    slots: Mutex<HashMap<Principal, Arc<Semaphore>>>,
}

impl ConcurrencyLimit {
    pub(crate) fn new(per_caller: usize, retry_after: Duration) -> Self {
        ConcurrencyLimit {
            per_caller,
            retry_after,
            slots: Mutex::new(HashMap::new()),
        }
    }

    /// A slot for `caller`, held until the permit is dropped, or a 429.
    pub(crate) fn try_acquire(&self, caller: Principal) -> Result<OwnedSemaphorePermit, ApiError> {
        let semaphore = {
            // The map only grows by one entry per caller (tokens are configured, loopback is
            // one caller), so it stays small.
            let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
            Arc::clone(
                slots
                    .entry(caller)
                    .or_insert_with(|| Arc::new(Semaphore::new(self.per_caller))),
            )
        };
        semaphore.try_acquire_owned().map_err(|_| {
            ApiError::new(
                http::StatusCode::TOO_MANY_REQUESTS,
                "too_many_requests",
                format!(
                    "this caller already has {} responses in flight, the most allowed at once; \
                     retry after the time in Retry-After",
                    self.per_caller
                ),
            )
            .with_retry_after(self.retry_after)
        })
    }
}

#[cfg(test)]
mod tests {
    use http::StatusCode;

    use super::*;

    #[test]
    fn each_caller_has_its_own_slots() {
        let limit = ConcurrencyLimit::new(2, Duration::from_secs(3));
        let a1 = limit.try_acquire(Principal::token(0)).unwrap();
        let _a2 = limit.try_acquire(Principal::token(0)).unwrap();
        let refused = limit.try_acquire(Principal::token(0)).unwrap_err();
        assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
        // Another caller is not affected.
        let _b = limit.try_acquire(Principal::token(1)).unwrap();
        // A finished response frees its slot.
        drop(a1);
        assert!(limit.try_acquire(Principal::token(0)).is_ok());
    }
}

//! [`ConcurrencyLimit`]: how many answers each caller may have in flight at once, taken
//! without waiting, so a caller at its limit is refused before any work starts.
//!
//! With a PostgreSQL store the limit counts across every replica on the database: a slot is a
//! row claimed atomically ([`conversation_tree::slots`]), one round trip at admission and one
//! at release (sent after the answer, off its stream). The replica renews the slots it holds
//! every third of their time to live, in one statement for all of them; a replica that dies
//! stops renewing and its slots free themselves once that time runs out, by the database's
//! clock. With SQLite or in memory (one process), the limit is a semaphore per caller, in
//! memory.
//!
//! ```
//! use service::{ConcurrencyLimit, LimitError, Principal};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let limit = ConcurrencyLimit::in_process(1);
//! let slot = limit.try_acquire(Principal::SHARED).await?;
//! assert!(matches!(
//!     limit.try_acquire(Principal::SHARED).await,
//!     Err(LimitError::Reached { limit: 1 })
//! ));
//! drop(slot); // the answer ended
//! limit.try_acquire(Principal::SHARED).await?;
//! # Ok::<(), LimitError>(())
//! # }).unwrap();
//! ```

mod shared;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::Principal;

/// Why a caller was not admitted.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LimitError {
    /// The caller already has `limit` answers in flight (on any replica, with a PostgreSQL
    /// store): retry once one ends.
    #[error(
        "this caller already has {limit} responses in flight, the most allowed at once; retry \
         once one of them ends"
    )]
    Reached {
        /// The most answers a caller may have in flight.
        limit: usize,
    },
    /// The slots shared by the replicas could not be read or claimed.
    #[error("the concurrency limit could not be checked in the conversation store: {0}")]
    Store(#[from] conversation_tree::StoreError),
}

/// Concurrency slots per caller: in memory, or shared by every replica on a PostgreSQL store.
pub struct ConcurrencyLimit {
    per_caller: usize,
    slots: Slots,
}

enum Slots {
    InProcess(Mutex<HashMap<Principal, Arc<Semaphore>>>),
    Shared(shared::SharedSlots),
}

impl fmt::Debug for ConcurrencyLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match &self.slots {
            Slots::InProcess(_) => "in process",
            Slots::Shared(_) => "shared through the store",
        };
        f.debug_struct("ConcurrencyLimit")
            .field("per_caller", &self.per_caller)
            .field("slots", &kind)
            .finish()
    }
}

impl ConcurrencyLimit {
    /// `per_caller` slots per caller, counted in this process only.
    pub fn in_process(per_caller: usize) -> Self {
        ConcurrencyLimit {
            per_caller,
            slots: Slots::InProcess(Mutex::new(HashMap::new())),
        }
    }

    /// `per_caller` slots per caller, counted in `store` across every replica that uses it.
    /// `owner` names each caller as the store knows it (never its token); `replica` names
    /// this process among the replicas; a slot this process holds frees itself `ttl` after
    /// the process stops renewing it.
    pub fn shared(
        per_caller: usize,
        store: Arc<dyn conversation_tree::Store>,
        owner: impl Fn(Principal) -> String + Send + Sync + 'static,
        replica: String,
        ttl: Duration,
    ) -> Self {
        ConcurrencyLimit {
            per_caller,
            slots: Slots::Shared(shared::SharedSlots::new(
                store,
                Box::new(owner),
                replica,
                ttl,
            )),
        }
    }

    /// The most answers a caller may have in flight.
    pub fn per_caller(&self) -> usize {
        self.per_caller
    }

    /// A slot for `caller`, held until the [`Slot`] is dropped, or
    /// [`LimitError::Reached`] at once when it has none free.
    ///
    /// # Errors
    ///
    /// [`LimitError::Reached`], and [`LimitError::Store`] when shared slots cannot be read.
    pub async fn try_acquire(&self, caller: Principal) -> Result<Slot, LimitError> {
        let reached = LimitError::Reached {
            limit: self.per_caller,
        };
        match &self.slots {
            Slots::InProcess(semaphores) => {
                let semaphore = {
                    // One entry per caller (tokens are configured, loopback is one caller),
                    // so the map stays small.
                    let mut semaphores = semaphores.lock().unwrap_or_else(PoisonError::into_inner);
                    Arc::clone(
                        semaphores
                            .entry(caller)
                            .or_insert_with(|| Arc::new(Semaphore::new(self.per_caller))),
                    )
                };
                let permit = semaphore.try_acquire_owned().map_err(|_| reached)?;
                Ok(Slot(Held::InProcess(permit)))
            }
            Slots::Shared(shared) => shared
                .claim(caller, self.per_caller)
                .await?
                .map(|held| Slot(Held::Shared(held)))
                .ok_or(reached),
        }
    }
}

/// One caller's place within its limit, freed when dropped.
#[derive(Debug)]
pub struct Slot(#[allow(dead_code, reason = "held for what its drop does")] Held);

/// What a slot holds, released when dropped.
#[derive(Debug)]
#[allow(dead_code, reason = "each is held for what its drop does")]
enum Held {
    InProcess(OwnedSemaphorePermit),
    Shared(shared::HeldSlot),
}

//! Concurrency slots shared by every replica on one database ([`SlotStore`]): a caller may
//! have at most `limit` answers in flight, whichever replicas serve them.
//!
//! Each owner has slots numbered `0..limit`. A replica admitting a request claims a free one
//! for itself ([`SlotStore::claim_slot`]), for a time to live it renews while the request runs
//! ([`SlotStore::renew_slots`], one statement for all the slots it holds), and frees it when
//! the request ends ([`SlotStore::release_slot`]). A slot is free when it was never claimed,
//! was released, or its time ran out: a replica that dies stops renewing, so its slots free
//! themselves after the time to live, and nothing has to clean up after it.
//!
//! **Exact under races.** On PostgreSQL a claim is one `UPDATE` of the lowest free slot, picked
//! `FOR UPDATE SKIP LOCKED`: claimants racing each lock a different free slot, and one that
//! finds every free slot locked by others is refused, as those others will hold them. So of
//! N claims at once, exactly `min(N, free slots)` succeed, whichever replicas make them. On
//! SQLite, claims are serialised by the file's write lock.
//!
//! **Time comes from the database** on PostgreSQL (`now()`), so replicas' clocks need not
//! agree; on SQLite it is the store's [`Clock`](crate::runs::Clock).
//!
//! ```
//! use std::time::Duration;
//! use conversation_tree::SqliteStore;
//! use conversation_tree::slots::SlotStore;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), conversation_tree::StoreError> {
//! let store = SqliteStore::open_in_memory().await?;
//! let ttl = Duration::from_secs(10);
//! let first = store.claim_slot("token-sha256:ab12", 2, "replica-a", ttl).await?.expect("free");
//! let second = store.claim_slot("token-sha256:ab12", 2, "replica-b", ttl).await?.expect("free");
//! // Both slots are held: a third request of the same owner is refused, on any replica.
//! assert!(store.claim_slot("token-sha256:ab12", 2, "replica-a", ttl).await?.is_none());
//! // Another owner has slots of its own.
//! assert!(store.claim_slot("token-sha256:cd34", 2, "replica-a", ttl).await?.is_some());
//! // A finished request frees its slot.
//! store.release_slot(&first).await?;
//! assert!(store.claim_slot("token-sha256:ab12", 2, "replica-b", ttl).await?.is_some());
//! # drop(second);
//! # Ok(())
//! # }
//! ```

use std::time::Duration;

use async_trait::async_trait;
use jiff::Timestamp;

use crate::Result;

/// One claimed slot: the right to run one answer for its owner.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Slot {
    /// The owner name it counts against (never a token).
    pub owner: String,
    /// Which of the owner's slots it is, from 0.
    pub index: u32,
    /// The replica that claimed it.
    pub holder: String,
    /// What tells this claim apart from a later claim of the same slot, so that a late
    /// release never frees another request's slot.
    pub claim: String,
    /// When it frees itself unless renewed, by the database's clock.
    pub expires: Timestamp,
}

/// Slots counted across every replica on the store's database: implemented by both stores,
/// and a supertrait of [`Store`](crate::Store).
#[async_trait]
pub trait SlotStore: Send + Sync {
    /// Claims one of `owner`'s slots `0..limit` for `holder` for `ttl`: the lowest free one,
    /// atomically. `None` when all of them are held (the owner is at its limit).
    ///
    /// # Errors
    ///
    /// [`StoreError::InvalidOwner`](crate::StoreError::InvalidOwner),
    /// [`StoreError::InvalidRunName`](crate::StoreError::InvalidRunName) for an unusable
    /// owner or holder name, and the store's own errors.
    async fn claim_slot(
        &self,
        owner: &str,
        limit: u32,
        holder: &str,
        ttl: Duration,
    ) -> Result<Option<Slot>>;

    /// Extends every unexpired slot `holder` holds to `ttl` from now, in one statement, and
    /// returns how many. A slot that expired meanwhile is not renewed: it may be another
    /// request's now.
    async fn renew_slots(&self, holder: &str, ttl: Duration) -> Result<u64>;

    /// Frees `slot`, so another request may have it at once. Does nothing when the slot was
    /// claimed again since (it expired and another request has it).
    async fn release_slot(&self, slot: &Slot) -> Result<()>;
}

/// A new claim's id.
pub(crate) fn new_claim() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// Checks a claim's names.
pub(crate) fn check_names(owner: &str, holder: &str) -> Result<()> {
    crate::store::check_owner(owner)?;
    crate::runs::row::check_replica(holder)
}

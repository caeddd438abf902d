//! Slots shared by every replica on one store, and the task that renews this replica's.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use conversation_tree::Store;
use conversation_tree::slots::Slot;
use tokio_util::sync::CancellationToken;

use crate::Principal;

use super::LimitError;

type OwnerName = Box<dyn Fn(Principal) -> String + Send + Sync>;

/// The shared slots of one replica.
pub(super) struct SharedSlots {
    inner: Arc<Inner>,
    /// Stops the renewing task when the limit is dropped (the replica goes away): its slots
    /// then free themselves after their time to live.
    stop: CancellationToken,
}

struct Inner {
    store: Arc<dyn Store>,
    owner: OwnerName,
    replica: String,
    ttl: Duration,
    /// Slots held now: the renewing task skips its statement when there are none.
    held: AtomicUsize,
    /// Whether the renewing task was started (it needs a runtime, so it starts with the first
    /// claim).
    renewing: std::sync::Once,
}

impl SharedSlots {
    pub(super) fn new(
        store: Arc<dyn Store>,
        owner: OwnerName,
        replica: String,
        ttl: Duration,
    ) -> Self {
        SharedSlots {
            inner: Arc::new(Inner {
                store,
                owner,
                replica,
                ttl,
                held: AtomicUsize::new(0),
                renewing: std::sync::Once::new(),
            }),
            stop: CancellationToken::new(),
        }
    }

    /// Claims one of `caller`'s `limit` slots: `None` when all are held.
    pub(super) async fn claim(
        &self,
        caller: Principal,
        limit: usize,
    ) -> Result<Option<HeldSlot>, LimitError> {
        let inner = &self.inner;
        inner.renewing.call_once(|| {
            tokio::spawn(renew(Arc::downgrade(inner), self.stop.clone()));
        });
        let owner = (inner.owner)(caller);
        let limit = u32::try_from(limit).unwrap_or(u32::MAX);
        let Some(slot) = inner
            .store
            .claim_slot(&owner, limit, &inner.replica, inner.ttl)
            .await?
        else {
            return Ok(None);
        };
        inner.held.fetch_add(1, Ordering::Relaxed);
        Ok(Some(HeldSlot {
            inner: Arc::clone(inner),
            slot: Some(slot),
        }))
    }
}

impl Drop for SharedSlots {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Renews the replica's slots every third of their time to live, while any is held, until
/// `stop`.
async fn renew(inner: std::sync::Weak<Inner>, stop: CancellationToken) {
    let Some(period) = inner.upgrade().map(|inner| inner.ttl / 3) else {
        return;
    };
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(period) => {}
        }
        let Some(inner) = inner.upgrade() else { return };
        if inner.held.load(Ordering::Relaxed) == 0 {
            continue;
        }
        if let Err(err) = inner.store.renew_slots(&inner.replica, inner.ttl).await {
            // The slots stay held until they expire; the next renewal tries again.
            tracing::warn!(error = %err, "renewing this replica's concurrency slots failed");
        }
    }
}

/// A claimed slot: released in a task of its own when dropped, so the answer's end does not
/// wait for the database.
pub(super) struct HeldSlot {
    inner: Arc<Inner>,
    slot: Option<Slot>,
}

impl fmt::Debug for HeldSlot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HeldSlot")
            .field("index", &self.slot.as_ref().map(|slot| slot.index))
            .finish_non_exhaustive()
    }
}

impl Drop for HeldSlot {
    fn drop(&mut self) {
        self.inner.held.fetch_sub(1, Ordering::Relaxed);
        let Some(slot) = self.slot.take() else { return };
        // Without a runtime (the process is ending), the slot frees itself when it expires.
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let store = Arc::clone(&self.inner.store);
        runtime.spawn(async move {
            if let Err(err) = store.release_slot(&slot).await {
                tracing::warn!(error = %err, "releasing a concurrency slot failed; it frees itself when it expires");
            }
        });
    }
}

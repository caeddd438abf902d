//! The `RunStore` trait.

use std::time::Duration;

use async_trait::async_trait;

use super::{EventBatch, Lease, NewRun, PurgeReport, Run, RunChanges, RunEvent, RunUpdate};
use crate::{Result, StoreError};

/// Run records, their events and leases: implemented by both stores, and a supertrait of
/// [`Store`](crate::Store), so an `Arc<dyn Store>` reaches these methods and coerces to an
/// `Arc<dyn RunStore>`.
///
/// Every write is one transaction. Leases and retention read the database's clock on
/// PostgreSQL and the store's [`Clock`](super::Clock) on SQLite.
#[async_trait]
pub trait RunStore: Send + Sync {
    /// Stores a new run, [`Queued`](super::RunStatus::Queued) (or in progress, when
    /// [`NewRun::in_progress`] says so), without events, leased to a replica when
    /// [`NewRun::leased_to`] says so.
    ///
    /// # Errors
    ///
    /// [`StoreError::RunExists`] for an id the store holds already,
    /// [`StoreError::InvalidRunName`] / [`StoreError::InvalidOwner`] for an unusable id,
    /// replica or owner, [`StoreError::UnknownNode`] for a node the store does not hold, and
    /// the store's own errors.
    async fn create_run(&self, run: NewRun) -> Result<Run>;

    /// The run with this id, whoever owns it; `None` when the store holds none.
    async fn run(&self, id: &str) -> Result<Option<Run>>;

    /// The run with this id when `owner` started it: another principal's run is as absent as
    /// a run that does not exist, so a server answers both alike.
    async fn run_of(&self, id: &str, owner: &str) -> Result<Option<Run>> {
        crate::store::check_owner(owner)?;
        Ok(self.run(id).await?.filter(|run| run.owner == owner))
    }

    /// Applies `update` in one transaction and returns the run as it now is. A terminal status
    /// also frees the run's lease and records when it finished.
    ///
    /// # Errors
    ///
    /// [`StoreError::IllegalRunTransition`] for a status the run cannot move to (terminal
    /// statuses are final; nothing is written), [`StoreError::UnknownRun`],
    /// [`StoreError::UnknownNode`] for a last node the store does not hold, and the store's
    /// own errors.
    async fn update_run(&self, id: &str, update: RunUpdate) -> Result<Run>;

    /// Asks the run to stop: sets [`Run::cancel_requested`] and tells the followers
    /// ([`RunChange::CancelRequested`](super::RunChange::CancelRequested)), so the replica
    /// that holds it stops it. A finished run is returned unchanged.
    ///
    /// # Errors
    ///
    /// [`StoreError::UnknownRun`], and the store's own errors.
    async fn request_cancel(&self, id: &str) -> Result<Run>;

    /// Stores a batch of events in one transaction and returns the run's last sequence number.
    /// The batch must continue the stored events: numbered from the last one plus one (0 for
    /// the first), one more each. So two replicas that both believe they run the run cannot
    /// both write an event: the second write of a number fails. An empty batch writes nothing.
    ///
    /// # Errors
    ///
    /// [`StoreError::DuplicateEvent`] and [`StoreError::EventGap`] for a batch that does not
    /// continue the stored events (nothing of it is written), [`StoreError::UnknownRun`], and
    /// the store's own errors.
    async fn append_events(&self, id: &str, events: &[RunEvent]) -> Result<Option<u64>> {
        if events.is_empty() {
            return self.last_seq(id).await;
        }
        let mut results = self
            .append_event_batches(&[EventBatch::new(id, events)])
            .await?;
        // One result per batch: the only one is this run's.
        results
            .pop()
            .unwrap_or_else(|| Err(StoreError::UnknownRun { run: id.to_owned() }))
    }

    /// Stores the events of many runs in one transaction, as [`append_events`](Self::append_events)
    /// stores one run's: a replica writing the events of all its runs at once pays for one
    /// transaction instead of one per run. Each run's batch is checked and written on its own
    /// (within a savepoint): one that does not continue its run's stored events, names an
    /// unknown run, or fails to be written, is left out, and the others are stored. Followers
    /// are told of every run written ([`RunChange::Events`](super::RunChange::Events)).
    ///
    /// Returns one result per batch, in the order given: the run's last sequence number (an
    /// empty batch writes nothing and returns the stored one), or why its batch was left out:
    /// [`StoreError::DuplicateEvent`], [`StoreError::EventGap`], [`StoreError::UnknownRun`],
    /// [`StoreError::InvalidRunName`], or the store's own error. Two batches of one run are
    /// written in the order given, the second continuing the first.
    ///
    /// # Errors
    ///
    /// The store's own errors when the transaction as a whole fails (nothing is written), and
    /// [`StoreError::ReadOnly`] for a read-only store.
    ///
    /// # Example
    ///
    /// ```
    /// use conversation_tree::runs::{EventBatch, NewRun, RunEvent, RunMode, RunProtocol, RunStore};
    /// use conversation_tree::{SqliteStore, StoreError};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), StoreError> {
    /// let store = SqliteStore::open_in_memory().await?;
    /// for id in ["resp_a", "resp_b"] {
    ///     let spec = serde_json::json!({"model": "echo", "input": "Hi"});
    ///     store
    ///         .create_run(NewRun::new(id, "token:4f1c", RunProtocol::Responses, RunMode::Background, spec))
    ///         .await?;
    /// }
    /// let a = [RunEvent::new(0, "event: a0\n\n"), RunEvent::new(1, "event: a1\n\n")];
    /// let b = [RunEvent::new(1, "event: b1\n\n")]; // event 0 is missing
    /// let results = store
    ///     .append_event_batches(&[EventBatch::new("resp_a", &a), EventBatch::new("resp_b", &b)])
    ///     .await?;
    /// assert_eq!(results[0].as_ref().ok(), Some(&Some(1)));
    /// assert!(matches!(results[1], Err(StoreError::EventGap { found: 1, expected: 0, .. })));
    /// assert_eq!(store.last_seq("resp_b").await?, None);
    /// # Ok(())
    /// # }
    /// ```
    async fn append_event_batches(
        &self,
        batches: &[EventBatch<'_>],
    ) -> Result<Vec<Result<Option<u64>>>>;

    /// The run's events after sequence number `after` (`None`: from the first), in order, at
    /// most `limit` of them and never more than [`MAX_EVENT_PAGE`](super::MAX_EVENT_PAGE).
    /// A reader always sees a prefix of the stream: a batch is visible whole or not at all.
    ///
    /// # Errors
    ///
    /// [`StoreError::UnknownRun`], and the store's own errors.
    async fn events_after(
        &self,
        id: &str,
        after: Option<u64>,
        limit: usize,
    ) -> Result<Vec<RunEvent>>;

    /// The sequence number of the run's last stored event (`None`: none yet).
    ///
    /// # Errors
    ///
    /// [`StoreError::UnknownRun`], and the store's own errors.
    async fn last_seq(&self, id: &str) -> Result<Option<u64>> {
        match self.run(id).await? {
            Some(run) => Ok(run.last_seq),
            None => Err(StoreError::UnknownRun { run: id.to_owned() }),
        }
    }

    /// Makes `replica` the holder of the run for `ttl`, when the run is unfinished and free
    /// (never leased, released, or its lease expired). `None` when another replica holds it or
    /// it is finished. Atomic: of replicas claiming at once, one wins.
    ///
    /// # Errors
    ///
    /// [`StoreError::UnknownRun`], [`StoreError::InvalidRunName`] for an unusable replica
    /// name, and the store's own errors.
    async fn claim_run(&self, id: &str, replica: &str, ttl: Duration) -> Result<Option<Lease>>;

    /// Extends `lease` to `ttl` from now, while it is still held: not expired, not taken over,
    /// not released, and the run not finished.
    ///
    /// # Errors
    ///
    /// [`StoreError::LeaseLost`] when it is no longer held: the holder must stop working on
    /// the run, whose next worker continues from what is stored. The store's own errors.
    async fn renew_lease(&self, lease: &Lease, ttl: Duration) -> Result<Lease>;

    /// Frees the run so another replica may claim it at once (a replica that stops without
    /// finishing its runs). Does nothing when `lease` is no longer held.
    async fn release_lease(&self, lease: &Lease) -> Result<()>;

    /// Takes the paused run `id` for `replica`: moves it to
    /// [`InProgress`](super::RunStatus::InProgress) leased for `ttl`, atomically, so of
    /// deciders racing for one pause one gets it. Returns it (its [`Run::paused`] document
    /// and [`Run::last_seq`] as the pause left them); `None` when it is not paused (taken
    /// already, finished, never paused).
    ///
    /// # Errors
    ///
    /// [`StoreError::UnknownRun`], [`StoreError::InvalidRunName`] for an unusable replica
    /// name, and the store's own errors.
    async fn take_paused(&self, id: &str, replica: &str, ttl: Duration) -> Result<Option<Run>>;

    /// Takes, as [`take_paused`](Self::take_paused), one paused run whose
    /// [`Run::decide_by`] has passed, the longest overdue first; `None` when there is none.
    ///
    /// # Errors
    ///
    /// [`StoreError::InvalidRunName`] for an unusable replica name, and the store's own errors.
    async fn take_expired_pause(&self, replica: &str, ttl: Duration) -> Result<Option<Run>>;

    /// The unfinished runs whose lease expired or that no replica holds, oldest expiry first,
    /// at most `limit`: what a replica looks for to take over.
    async fn orphaned_runs(&self, limit: usize) -> Result<Vec<Run>>;

    /// Claims one orphaned run ([`RunStore::orphaned_runs`]) for `replica`, atomically: two
    /// replicas looking at once get different runs (on PostgreSQL `FOR UPDATE SKIP LOCKED`).
    /// Returns it with its new [`Run::lease`]; `None` when there is none.
    ///
    /// # Errors
    ///
    /// [`StoreError::InvalidRunName`] for an unusable replica name, and the store's own errors.
    async fn claim_orphaned_run(&self, replica: &str, ttl: Duration) -> Result<Option<Run>>;

    /// Every change to every run, from now on, for as long as the stream is held. Subscribe
    /// before reading the store: a change made between the read and the subscription would
    /// otherwise be missed. On PostgreSQL the changes of every replica arrive through
    /// `LISTEN`; on SQLite those of this process.
    fn run_changes(&self) -> RunChanges;

    /// The changes of run `id` ([`RunStore::run_changes`] filtered), and every
    /// [`RunChange::Missed`](super::RunChange::Missed).
    fn watch_run(&self, id: &str) -> RunChanges {
        use futures::StreamExt as _;
        let id = id.to_owned();
        Box::pin(self.run_changes().filter(move |change| {
            let keep = change.run().is_none_or(|run| run == id);
            std::future::ready(keep)
        }))
    }

    /// Deletes the events stored more than `older_than` ago (but a paused run's, which its
    /// client may come back to replay when it decides), and the runs that finished more than
    /// `older_than` ago with all their events, in one transaction. Unfinished runs stay.
    async fn purge_runs(&self, older_than: Duration) -> Result<PurgeReport>;
}

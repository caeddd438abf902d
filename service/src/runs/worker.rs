//! [`RunWorker`]: this replica's hold on one run while it runs it: the lease renewed in a
//! task of its own, the events queued to the replica's event writer, the run's cancel token.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use conversation_tree::runs::{Lease, Run, RunEvent, RunMode, RunStatus, RunUpdate};
use conversation_tree::{NodeId, StoreError};
use tokio_util::sync::CancellationToken;

use super::records::Shared;
use super::writer::EventWriter;
use crate::ServiceError;

/// What the worker, its tasks, the replica's listener and its event writer share about one
/// run.
#[derive(Debug)]
pub(crate) struct HeldRun {
    /// The run's id.
    pub(crate) id: String,
    /// Whether clients read its events from the store as they come (background), which
    /// decides how soon the replica's event writer stores them.
    pub(crate) mode: RunMode,
    /// Cancelled by a cancel request (from any replica), a lost lease, or shutdown.
    pub(crate) cancel: CancellationToken,
    /// Set when the lease is lost (or the replica halted): nothing more is written.
    pub(crate) lost: AtomicBool,
    /// Stops the lease renewal.
    pub(crate) stop_renewing: CancellationToken,
}

impl HeldRun {
    /// Stops all writing for the run and cancels it: another replica may have it now.
    pub(crate) fn lose(&self) {
        self.lost.store(true, Ordering::SeqCst);
        self.stop_renewing.cancel();
        self.cancel.cancel();
    }

    pub(crate) fn is_lost(&self) -> bool {
        self.lost.load(Ordering::SeqCst)
    }
}

/// This replica's hold on a run it runs ([`RunRecords::start`](super::RunRecords::start), or
/// a run it took over): the lease, renewed every third of its time to live in a task of its
/// own; the cancel token, cancelled when a cancel is asked for on any replica, when the lease
/// is lost, or when the server stops; and its place in the replica's event writer, which
/// stores the events [`push`](Self::push)ed by all the replica's runs in batches off the served
/// path.
///
/// Dropping it without [`finish`](Self::finish) stops renewing (the lease expires, and another
/// replica takes the run over) after the queued events are written.
#[derive(Debug)]
pub struct RunWorker {
    shared: Arc<Shared>,
    status: Mutex<RunStatus>,
    held: Arc<HeldRun>,
    lease: Arc<Mutex<Lease>>,
    next_seq: AtomicU64,
    writer: EventWriter,
}

impl RunWorker {
    /// The worker of `run`, held under `lease`: registers it with the replica's listener,
    /// starts its renewal task, and writes its events with the replica's writer.
    pub(crate) fn new(shared: Arc<Shared>, run: &Run, lease: Lease) -> Self {
        let held = Arc::new(HeldRun {
            id: run.id.clone(),
            mode: run.mode,
            cancel: shared.runs.run_token(),
            lost: AtomicBool::new(false),
            stop_renewing: CancellationToken::new(),
        });
        shared.hold(Arc::clone(&held));
        let lease = Arc::new(Mutex::new(lease));
        tokio::spawn(renew(
            Arc::clone(&shared),
            run.id.clone(),
            Arc::clone(&lease),
            Arc::clone(&held),
        ));
        let writer = shared.event_writer();
        RunWorker {
            status: Mutex::new(run.status),
            next_seq: AtomicU64::new(run.last_seq.map_or(0, |last| last + 1)),
            shared,
            held,
            lease,
            writer,
        }
    }

    /// The worker of `run`, just taken by this replica (its lease in [`Run::lease`]).
    pub(crate) fn taken(shared: Arc<Shared>, run: &Run) -> Result<Self, ServiceError> {
        let lease = run.lease.clone().ok_or_else(|| {
            ServiceError::Runs(StoreError::LeaseLost {
                run: run.id.clone(),
                holder: shared.replica.clone(),
            })
        })?;
        Ok(RunWorker::new(shared, run, lease))
    }

    /// The run's id.
    pub fn id(&self) -> &str {
        &self.held.id
    }

    /// The run's token: cancelled when a cancel is asked for on any replica, when this
    /// replica loses the lease, or when the server stops.
    pub fn cancel_token(&self) -> &CancellationToken {
        &self.held.cancel
    }

    /// The sequence number the next [`push`](Self::push) gets: 0 for a new run, one more
    /// than its last stored event for a run taken over.
    pub fn next_seq(&self) -> u64 {
        self.next_seq.load(Ordering::SeqCst)
    }

    /// Whether this replica stopped working on the run without ending it: its lease was lost,
    /// or the server is stopping and lets another replica continue it. Nothing pushed from
    /// then on is stored.
    pub fn is_abandoned(&self) -> bool {
        self.held.is_lost()
            || (self.held.mode == RunMode::Background && self.shared.runs.releasing())
    }

    /// Queues one event (the exact bytes of one SSE frame) under the next sequence number,
    /// and returns that number. The replica's event writer stores it with other runs' events
    /// in one transaction (a background run's within `runs.batch`, a foreground run's within
    /// 250 ms, both at once when the run ends or pauses), so the caller never waits for the
    /// store.
    pub fn push(&self, frame: impl Into<bytes::Bytes>) -> u64 {
        let seq = self.next_seq.fetch_add(1, Ordering::SeqCst);
        if !self.is_abandoned() {
            self.writer.push(&self.held, RunEvent::new(seq, frame));
        }
        seq
    }

    /// Moves the run to `in_progress` (a run taken over already is).
    ///
    /// # Errors
    ///
    /// [`ServiceError::Runs`] when the store fails.
    pub async fn in_progress(&self) -> Result<(), ServiceError> {
        if self.status() != RunStatus::Queued || self.is_abandoned() {
            return Ok(());
        }
        self.update(RunUpdate::new().status(RunStatus::InProgress))
            .await?;
        *self.status.lock().unwrap_or_else(PoisonError::into_inner) = RunStatus::InProgress;
        Ok(())
    }

    /// Records `node` as the last one the run wrote to the tree: where a replica that takes
    /// it over continues.
    ///
    /// # Errors
    ///
    /// [`ServiceError::Runs`] when the store fails.
    pub async fn recorded(&self, node: NodeId) -> Result<(), ServiceError> {
        if self.is_abandoned() {
            return Ok(());
        }
        self.update(RunUpdate::new().last_node(node)).await?;
        Ok(())
    }

    /// Writes the queued events, sets the terminal `status` (and `error`), frees the lease,
    /// and returns the run as stored. A run this replica no longer holds is returned as
    /// another left it; a background run the server stops before it ends keeps its status and
    /// has its lease released, so another replica continues it at once.
    ///
    /// # Errors
    ///
    /// [`ServiceError::Runs`] when the store fails.
    pub async fn finish(
        self,
        status: RunStatus,
        error: Option<String>,
    ) -> Result<Run, ServiceError> {
        self.finish_at(None, status, error).await
    }

    /// [`finish`](Self::finish), recording `last` (when there is one) as the last node the run
    /// wrote to the tree, as [`recorded`](Self::recorded) does, in the same write as its end.
    ///
    /// # Errors
    ///
    /// [`ServiceError::Runs`] when the store fails.
    pub async fn finish_at(
        mut self,
        last: Option<NodeId>,
        status: RunStatus,
        error: Option<String>,
    ) -> Result<Run, ServiceError> {
        self.flush().await;
        self.held.stop_renewing.cancel();
        let result = self.end(last, status, error).await;
        self.shared.release(&self.held);
        result
    }

    /// Writes the queued events and pauses the run until a person decides about its tool
    /// calls: `document` is what the protocol needs to resume it (stored in clear: no key or
    /// token), kept with the record; the lease is freed, so no replica holds the run while it
    /// waits, and whoever the decisions reach takes it
    /// ([`RunRecords::take_paused`](super::RunRecords::take_paused)). Undecided after
    /// `approval.timeout`, it is continued with its calls rejected
    /// ([`Resume::expired`](super::Resume::expired)). Returns the run as stored; a run this
    /// replica no longer holds is returned as another left it, unpaused.
    ///
    /// # Errors
    ///
    /// [`ServiceError::Runs`] when the store fails.
    pub async fn pause(mut self, document: serde_json::Value) -> Result<Run, ServiceError> {
        self.flush().await;
        self.held.stop_renewing.cancel();
        let result = if self.held.is_lost() {
            self.stored().await
        } else {
            if self.status() == RunStatus::Queued {
                self.update(RunUpdate::new().status(RunStatus::InProgress))
                    .await?;
            }
            self.update(RunUpdate::new().paused(document, self.shared.approval_timeout))
                .await
        };
        self.shared.release(&self.held);
        result
    }

    async fn end(
        &mut self,
        last: Option<NodeId>,
        status: RunStatus,
        error: Option<String>,
    ) -> Result<Run, ServiceError> {
        let lease = self
            .lease
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if self.held.is_lost() {
            return self.stored().await;
        }
        if self.is_abandoned() {
            self.shared
                .store
                .release_lease(&lease)
                .await
                .map_err(ServiceError::Runs)?;
            tracing::info!(run = %self.held.id, "the server stops: its run is left for another replica");
            return self.stored().await;
        }
        if self.status() == RunStatus::Queued && !RunStatus::Queued.can_become(status) {
            self.update(RunUpdate::new().status(RunStatus::InProgress))
                .await?;
        }
        let mut update = RunUpdate::new().status(status);
        if let Some(error) = error {
            update = update.error(error);
        }
        if let Some(last) = last {
            match self.update(update.clone().last_node(last)).await {
                // A node the tree does not hold is not recorded, but the end still is.
                Err(ServiceError::Runs(StoreError::UnknownNode { id })) => {
                    tracing::warn!(run = %self.held.id, node = %id, "could not record the run's last node: the tree does not hold it");
                }
                ended => return ended,
            }
        }
        self.update(update).await
    }

    fn status(&self) -> RunStatus {
        *self.status.lock().unwrap_or_else(PoisonError::into_inner)
    }

    async fn stored(&self) -> Result<Run, ServiceError> {
        self.shared
            .store
            .run(&self.held.id)
            .await
            .map_err(ServiceError::Runs)?
            .ok_or_else(|| ServiceError::UnknownRun {
                id: self.held.id.clone(),
            })
    }

    /// Waits for the writer to store the events pushed so far (or to give the run up).
    async fn flush(&mut self) {
        self.writer.flush(&self.held).await;
    }

    async fn update(&self, update: RunUpdate) -> Result<Run, ServiceError> {
        self.shared
            .store
            .update_run(&self.held.id, update)
            .await
            .map_err(ServiceError::Runs)
    }
}

impl Drop for RunWorker {
    fn drop(&mut self) {
        // A worker dropped unfinished: its queued events are still written (the writer holds
        // them), and its lease is left to expire.
        self.held.stop_renewing.cancel();
        self.shared.release(&self.held);
    }
}

/// Renews the lease every third of its time to live until told to stop; a lost lease cancels
/// the run and stops all writing for it.
async fn renew(shared: Arc<Shared>, id: String, lease: Arc<Mutex<Lease>>, held: Arc<HeldRun>) {
    let ttl = shared.config.lease_ttl;
    let every = ttl / 3;
    loop {
        tokio::select! {
            () = held.stop_renewing.cancelled() => return,
            () = tokio::time::sleep(every) => {}
        }
        let current = lease.lock().unwrap_or_else(PoisonError::into_inner).clone();
        match shared.store.renew_lease(&current, ttl).await {
            Ok(renewed) => *lease.lock().unwrap_or_else(PoisonError::into_inner) = renewed,
            Err(StoreError::LeaseLost { .. }) => {
                if !held.stop_renewing.is_cancelled() {
                    tracing::warn!(run = %id, "lost the run's lease: another replica may run it now; stopping");
                    held.lose();
                }
                return;
            }
            // A passing failure: the next renewal may succeed before the lease expires.
            Err(error) => tracing::warn!(run = %id, %error, "could not renew the run's lease"),
        }
    }
}

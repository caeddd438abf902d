//! [`RunWorker`]: this replica's hold on one run while it runs it: the lease renewed in a
//! task of its own, the events written in batches by another, the run's cancel token.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use conversation_tree::runs::{Lease, Run, RunEvent, RunMode, RunStatus, RunUpdate};
use conversation_tree::{NodeId, StoreError};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::records::Shared;
use crate::ServiceError;

/// A batch is written once it holds this many events, whatever its age.
const BATCH_EVENTS: usize = 64;

/// How often a batch the store refused for a passing reason is tried again before the run is
/// given up (its events could not be kept).
const WRITE_ATTEMPTS: u32 = 3;

/// What the worker, its tasks and the replica's listener share about one run.
#[derive(Debug)]
pub(crate) struct HeldRun {
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

    fn is_lost(&self) -> bool {
        self.lost.load(Ordering::SeqCst)
    }
}

/// This replica's hold on a run it runs ([`RunRecords::start`](super::RunRecords::start), or
/// a run it took over): the lease, renewed every third of its time to live in a task of its
/// own; the cancel token, cancelled when a cancel is asked for on any replica, when the lease
/// is lost, or when the server stops; and the event writer, which stores the events
/// [`push`](Self::push)ed in batches off the served path.
///
/// Dropping it without [`finish`](Self::finish) stops renewing (the lease expires, and another
/// replica takes the run over) after the queued events are written.
#[derive(Debug)]
pub struct RunWorker {
    shared: Arc<Shared>,
    id: String,
    mode: RunMode,
    status: Mutex<RunStatus>,
    held: Arc<HeldRun>,
    lease: Arc<Mutex<Lease>>,
    next_seq: AtomicU64,
    events: Option<mpsc::UnboundedSender<RunEvent>>,
    writer: Option<JoinHandle<()>>,
}

impl RunWorker {
    /// The worker of `run`, held under `lease`: registers it with the replica's listener and
    /// starts its renewal and writer tasks.
    pub(crate) fn new(shared: Arc<Shared>, run: &Run, lease: Lease) -> Self {
        let held = Arc::new(HeldRun {
            cancel: shared.runs.run_token(),
            lost: AtomicBool::new(false),
            stop_renewing: CancellationToken::new(),
        });
        shared.hold(&run.id, Arc::clone(&held));
        let lease = Arc::new(Mutex::new(lease));
        tokio::spawn(renew(
            Arc::clone(&shared),
            run.id.clone(),
            Arc::clone(&lease),
            Arc::clone(&held),
        ));
        let (events, received) = mpsc::unbounded_channel();
        let writer = tokio::spawn(write(
            Arc::clone(&shared),
            run.id.clone(),
            received,
            Arc::clone(&held),
        ));
        RunWorker {
            id: run.id.clone(),
            mode: run.mode,
            status: Mutex::new(run.status),
            next_seq: AtomicU64::new(run.last_seq.map_or(0, |last| last + 1)),
            shared,
            held,
            lease,
            events: Some(events),
            writer: Some(writer),
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
        &self.id
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
        self.held.is_lost() || (self.mode == RunMode::Background && self.shared.runs.releasing())
    }

    /// Queues one event (the exact bytes of one SSE frame) under the next sequence number,
    /// and returns that number; written in batches (every `batch` or 64 events) by a task, so
    /// the caller never waits for the store.
    pub fn push(&self, frame: impl Into<Vec<u8>>) -> u64 {
        let seq = self.next_seq.fetch_add(1, Ordering::SeqCst);
        if !self.is_abandoned()
            && let Some(events) = &self.events
        {
            // The writer ends only after the sender is dropped: the send cannot fail.
            let _ = events.send(RunEvent::new(seq, frame));
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
        mut self,
        status: RunStatus,
        error: Option<String>,
    ) -> Result<Run, ServiceError> {
        self.flush().await;
        self.held.stop_renewing.cancel();
        let result = self.end(status, error).await;
        self.shared.release(&self.id, &self.held);
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
        self.shared.release(&self.id, &self.held);
        result
    }

    async fn end(&mut self, status: RunStatus, error: Option<String>) -> Result<Run, ServiceError> {
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
            tracing::info!(run = %self.id, "the server stops: its run is left for another replica");
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
        self.update(update).await
    }

    fn status(&self) -> RunStatus {
        *self.status.lock().unwrap_or_else(PoisonError::into_inner)
    }

    async fn stored(&self) -> Result<Run, ServiceError> {
        self.shared
            .store
            .run(&self.id)
            .await
            .map_err(ServiceError::Runs)?
            .ok_or_else(|| ServiceError::UnknownRun {
                id: self.id.clone(),
            })
    }

    /// Closes the event queue and waits for the writer to store what it holds.
    async fn flush(&mut self) {
        self.events = None;
        if let Some(writer) = self.writer.take() {
            let _ = writer.await;
        }
    }

    async fn update(&self, update: RunUpdate) -> Result<Run, ServiceError> {
        self.shared
            .store
            .update_run(&self.id, update)
            .await
            .map_err(ServiceError::Runs)
    }
}

impl Drop for RunWorker {
    fn drop(&mut self) {
        // A worker dropped unfinished: its queued events are still written (the writer ends
        // once the queue closes), and its lease is left to expire.
        self.held.stop_renewing.cancel();
        self.shared.release(&self.id, &self.held);
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

/// Writes the run's events in batches: the first event of a batch waits at most
/// `config.batch` for others, a batch holds at most [`BATCH_EVENTS`], and what is queued when
/// the queue closes is written before the task ends.
async fn write(
    shared: Arc<Shared>,
    id: String,
    mut received: mpsc::UnboundedReceiver<RunEvent>,
    held: Arc<HeldRun>,
) {
    let mut batch = Vec::with_capacity(BATCH_EVENTS);
    let mut open = true;
    while open {
        match received.recv().await {
            Some(event) => batch.push(event),
            None => break,
        }
        let deadline = Instant::now() + shared.config.batch;
        while batch.len() < BATCH_EVENTS {
            match tokio::time::timeout_at(deadline, received.recv()).await {
                Ok(Some(event)) => batch.push(event),
                Ok(None) => {
                    open = false;
                    break;
                }
                Err(_) => break,
            }
        }
        store_batch(&shared, &id, &held, &mut batch).await;
    }
}

async fn store_batch(shared: &Shared, id: &str, held: &HeldRun, batch: &mut Vec<RunEvent>) {
    let mut attempt = 0;
    while !batch.is_empty() && !held.is_lost() {
        attempt += 1;
        match shared.store.append_events(id, batch).await {
            Ok(_) => break,
            Err(StoreError::DuplicateEvent { .. } | StoreError::EventGap { .. }) => {
                tracing::warn!(run = %id, "another replica wrote the run's events: it runs it now; stopping");
                held.lose();
            }
            Err(error) if attempt >= WRITE_ATTEMPTS => {
                tracing::error!(run = %id, %error, "could not store the run's events; stopping it");
                held.lose();
            }
            Err(error) => {
                tracing::warn!(run = %id, %error, "could not store the run's events; trying again");
                tokio::time::sleep(Duration::from_millis(100) * attempt).await;
            }
        }
    }
    batch.clear();
}

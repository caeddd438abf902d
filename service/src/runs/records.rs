//! [`RunRecords`]: this replica's side of the stored runs: starting them under a lease,
//! reading, cancelling and following them on any replica, and taking over the runs of
//! replicas that stopped.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use conversation_tree::Store;
use conversation_tree::runs::{
    NewRun, Run, RunChange, RunEvent, RunProtocol, RunStatus, RunUpdate,
};
use futures::{Stream, StreamExt as _};
use tokio_util::sync::CancellationToken;

use super::config::RunsConfig;
use super::local::Runs;
use super::worker::{HeldRun, RunWorker};
use super::writer::EventWriter;
use crate::{Principal, ServiceError};

/// The reason a pending call nobody decided about within `approval.timeout` is rejected
/// with: what the model reads of it.
pub const TIMED_OUT_REASON: &str =
    "nobody decided about this call within the time allowed for approvals";

/// How a protocol continues a background run this replica took over from one that stopped,
/// registered with [`RunRecords::on_takeover`].
#[async_trait]
pub trait Resume: Send + Sync + std::fmt::Debug {
    /// Continues `run` (its record as claimed: [`Run::last_node`] is where its last worker
    /// got to, [`Run::last_seq`] its last stored event) with `worker`, and finishes it.
    async fn resume(&self, run: Run, worker: RunWorker);

    /// Continues `run`, a pause nobody decided about within `approval.timeout` (taken:
    /// in progress, leased to this replica; [`Run::paused`] holds what the protocol stored),
    /// with every pending call rejected for [`TIMED_OUT_REASON`], and finishes it. By
    /// default it ends failed: a protocol that pauses runs overrides this.
    async fn expired(&self, run: Run, worker: RunWorker) {
        let error = format!(
            "the run waited for approval past its time, and its protocol ({}) cannot go on \
             without one",
            run.protocol.as_str()
        );
        if let Err(error) = worker.finish(RunStatus::Failed, Some(error)).await {
            tracing::warn!(run = %run.id, %error, "could not end an expired pause");
        }
    }
}

/// What the records, their workers and their tasks share.
pub(crate) struct Shared {
    pub(crate) store: Arc<dyn Store>,
    pub(crate) replica: String,
    pub(crate) config: RunsConfig,
    /// How long a paused run waits for decisions.
    pub(crate) approval_timeout: Duration,
    pub(crate) runs: Arc<Runs>,
    /// Each token's owner name, in token order (a principal's stored owner).
    owners: Vec<String>,
    /// The runs this replica works on.
    held: Mutex<HashMap<String, Arc<HeldRun>>>,
    resumes: Mutex<HashMap<RunProtocol, Arc<dyn Resume>>>,
    /// Stops the replica's tasks (cancel listener, takeover, retention).
    halted: CancellationToken,
    /// Whether the takeover task runs (from the first [`RunRecords::on_takeover`]).
    takeover: std::sync::atomic::AtomicBool,
    /// The replica's event writer, started by its first worker.
    writer: Mutex<Option<EventWriter>>,
}

impl Shared {
    /// The replica's event writer, started on the current runtime when none runs yet (or
    /// the runtime it ran on stopped).
    pub(crate) fn event_writer(&self) -> EventWriter {
        let mut writer = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        match &*writer {
            Some(running) if !running.is_closed() => running.clone(),
            _ => writer
                .insert(EventWriter::start(
                    Arc::clone(&self.store),
                    self.config.batch,
                ))
                .clone(),
        }
    }

    pub(crate) fn hold(&self, run: Arc<HeldRun>) {
        self.held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(run.id.clone(), run);
    }

    /// Forgets `run` (when it is still the one held under its id).
    pub(crate) fn release(&self, run: &Arc<HeldRun>) {
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        if held
            .get(&run.id)
            .is_some_and(|known| Arc::ptr_eq(known, run))
        {
            held.remove(&run.id);
        }
    }

    fn held(&self, id: &str) -> Option<Arc<HeldRun>> {
        self.held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(id)
            .cloned()
    }

    /// The ids of the runs this replica works on.
    pub(crate) fn held_ids(&self) -> Vec<String> {
        self.held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .keys()
            .cloned()
            .collect()
    }

    fn owner(&self, principal: Principal) -> &str {
        crate::principal::owner_of(&self.owners, principal)
    }
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunRecords")
            .field("replica", &self.replica)
            .field("config", &self.config)
            .field("held", &self.held_ids())
            .finish_non_exhaustive()
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        self.halted.cancel();
    }
}

/// This replica's side of the stored runs (see the [module documentation](crate::runs)):
/// cheap to clone, shared by the protocols.
#[derive(Clone, Debug)]
pub struct RunRecords {
    shared: Arc<Shared>,
}

impl RunRecords {
    /// The records of `store` for this replica, under a fresh name (`replica-<uuid>`, logged),
    /// with its cancel listener, takeover and retention tasks started when a Tokio runtime
    /// runs (they stop when the records are dropped, or [`halt`](Self::halt)ed).
    pub(crate) fn new(
        store: Arc<dyn Store>,
        config: RunsConfig,
        approval_timeout: Duration,
        owners: Vec<String>,
        runs: Arc<Runs>,
    ) -> Self {
        let replica = format!("replica-{}", uuid::Uuid::new_v4().simple());
        let shared = Arc::new(Shared {
            store,
            replica,
            config,
            approval_timeout,
            runs,
            owners,
            held: Mutex::new(HashMap::new()),
            resumes: Mutex::new(HashMap::new()),
            halted: CancellationToken::new(),
            takeover: std::sync::atomic::AtomicBool::new(false),
            writer: Mutex::new(None),
        });
        if tokio::runtime::Handle::try_current().is_ok() {
            // `skein serve` names the replica in its first line; embedders see it here.
            tracing::debug!(replica = %shared.replica, lease_ttl = ?shared.config.lease_ttl, "run records ready");
            super::tasks::start(&shared);
        }
        RunRecords { shared }
    }

    /// This replica's name, as its leases hold it.
    pub fn replica(&self) -> &str {
        &self.shared.replica
    }

    /// The configuration.
    pub fn config(&self) -> &RunsConfig {
        &self.shared.config
    }

    /// Creates the record (queued, leased to this replica, in one transaction) and returns the
    /// worker's handle: it renews the lease every ttl/3 in a task of its own, and cancels the
    /// handle's token when the lease is lost or a cancel is requested from any replica.
    ///
    /// # Errors
    ///
    /// [`ServiceError::Runs`] when the store refuses the run (an id it holds already, an
    /// unknown node) or fails.
    pub async fn start(&self, run: NewRun) -> Result<RunWorker, ServiceError> {
        let run = run.leased_to(self.shared.replica.clone(), self.shared.config.lease_ttl);
        let run = self
            .shared
            .store
            .create_run(run)
            .await
            .map_err(ServiceError::Runs)?;
        let lease = run.lease.clone().ok_or_else(|| {
            ServiceError::Runs(conversation_tree::StoreError::LeaseLost {
                run: run.id.clone(),
                holder: self.shared.replica.clone(),
            })
        })?;
        Ok(RunWorker::new(Arc::clone(&self.shared), &run, lease))
    }

    /// The run `id` when `principal` started it (another principal's run is absent).
    ///
    /// # Errors
    ///
    /// [`ServiceError::Runs`] when the store fails.
    pub async fn get(&self, id: &str, principal: Principal) -> Result<Option<Run>, ServiceError> {
        let owner = self.shared.owner(principal);
        match self.shared.store.run_of(id, owner).await {
            Ok(run) => Ok(run),
            // An id no run can have names no run of the caller's.
            Err(conversation_tree::StoreError::InvalidRunName { .. }) => Ok(None),
            Err(error) => Err(ServiceError::Runs(error)),
        }
    }

    /// Asks the run to stop on whichever replica holds it, and returns it as it is once it
    /// ended (or, when no replica ends it within twice the lease's time to live and five
    /// seconds, as it is then). A finished run is returned as it is; another principal's is absent.
    ///
    /// # Errors
    ///
    /// [`ServiceError::Runs`] when the store fails.
    pub async fn cancel(
        &self,
        id: &str,
        principal: Principal,
    ) -> Result<Option<Run>, ServiceError> {
        let Some(run) = self.get(id, principal).await? else {
            return Ok(None);
        };
        if run.status.is_terminal() {
            return Ok(Some(run));
        }
        if run.status == RunStatus::Paused {
            // Nobody holds a paused run to stop it: it ends here. A decider that took it
            // meanwhile holds it now, and is stopped as any holder is.
            match self
                .shared
                .store
                .update_run(id, RunUpdate::new().status(RunStatus::Cancelled))
                .await
            {
                Ok(run) if run.status.is_terminal() => return Ok(Some(run)),
                Ok(_) | Err(conversation_tree::StoreError::IllegalRunTransition { .. }) => {}
                Err(error) => return Err(ServiceError::Runs(error)),
            }
        }
        // Subscribed before the request, so that the end cannot pass unseen.
        let mut changes = self.shared.store.watch_run(id);
        let run = self
            .shared
            .store
            .request_cancel(id)
            .await
            .map_err(ServiceError::Runs)?;
        self.shared.cancel_held(id);
        // A live holder ends the run at once; a dead one's run is ended by the replica that
        // takes it over, within one and a half leases.
        let deadline =
            tokio::time::Instant::now() + self.shared.config.lease_ttl * 2 + Duration::from_secs(5);
        let mut run = run;
        while !run.status.is_terminal() {
            let wait = tokio::time::timeout_at(deadline, async {
                // A notification, or a second's poll: it ends even if notifications are lost.
                let _ = tokio::time::timeout(Duration::from_secs(1), changes.next()).await;
            });
            let timed_out = wait.await.is_err();
            run = match self
                .shared
                .store
                .run(id)
                .await
                .map_err(ServiceError::Runs)?
            {
                Some(run) => run,
                None => return Ok(None),
            };
            if timed_out {
                break;
            }
        }
        Ok(Some(run))
    }

    /// Takes the paused run `id` of `principal` to resume it here, once across every replica:
    /// of deciders racing for one pause, one gets it. The run is in progress again, leased to
    /// this replica; the returned [`Run::paused`] is what its protocol stored when it paused,
    /// and the worker numbers its events after the stored ones. `Ok(None)` when `principal`
    /// has no run `id` (another's is as absent).
    ///
    /// Check the decisions against the stored pause before taking it: a run taken is no
    /// longer paused.
    ///
    /// # Errors
    ///
    /// [`ServiceError::RunNotPaused`] when the run is not paused (decided already, finished,
    /// never paused), [`ServiceError::Runs`] when the store fails.
    pub async fn take_paused(
        &self,
        id: &str,
        principal: Principal,
    ) -> Result<Option<(Run, RunWorker)>, ServiceError> {
        let Some(run) = self.get(id, principal).await? else {
            return Ok(None);
        };
        let not_paused = |status| ServiceError::RunNotPaused {
            id: id.to_owned(),
            status,
        };
        if run.status != RunStatus::Paused {
            return Err(not_paused(run.status));
        }
        let taken = self
            .shared
            .store
            .take_paused(id, &self.shared.replica, self.shared.config.lease_ttl)
            .await
            .map_err(ServiceError::Runs)?;
        let Some(run) = taken else {
            let now = self
                .get(id, principal)
                .await?
                .map_or(run.status, |run| run.status);
            return Err(not_paused(now));
        };
        let worker = RunWorker::taken(Arc::clone(&self.shared), &run)?;
        Ok(Some((run, worker)))
    }

    /// The run's stored events after `after` (None: all), then the live ones as they are
    /// stored (any replica's), ending after the run reaches a terminal status, or pauses for
    /// approval, and its last event is yielded. Each item is a [`RunEvent`] whose bytes are exactly those a live
    /// client was sent. A run `principal` did not start yields [`ServiceError::UnknownRun`].
    pub fn follow(
        &self,
        id: &str,
        principal: Principal,
        after: Option<u64>,
    ) -> impl Stream<Item = Result<RunEvent, ServiceError>> + Send + 'static {
        super::follow::follow(
            Arc::clone(&self.shared.store),
            id.to_owned(),
            self.shared.owner(principal).to_owned(),
            after,
        )
    }

    /// Registers how a protocol continues a background run this replica takes over (the
    /// server registers one per [`RunProtocol`] at startup).
    ///
    /// The takeover of orphaned runs starts with the first registration (its first pass at
    /// once, so a server resumes at start the runs its last process left). A background run
    /// of a protocol this replica cannot continue is left to another replica.
    pub fn on_takeover(&self, protocol: RunProtocol, resume: Arc<dyn Resume>) {
        self.shared
            .resumes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(protocol, resume);
        if !self
            .shared
            .takeover
            .swap(true, std::sync::atomic::Ordering::SeqCst)
            && tokio::runtime::Handle::try_current().is_ok()
        {
            super::tasks::start_takeover(&self.shared);
        }
    }

    /// Stops this replica's work on runs as a killed process would: its tasks stop (no
    /// takeover, no listening), its leases are no longer renewed and nothing more of its runs
    /// is written; their tokens are cancelled. Another replica takes them over once their
    /// leases expire. For tests and fault drills.
    pub fn halt(&self) {
        self.shared.halted.cancel();
        let held: Vec<Arc<HeldRun>> = self
            .shared
            .held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .cloned()
            .collect();
        for run in held {
            run.lose();
        }
    }

    /// The ids of the runs this replica works on now.
    pub fn held(&self) -> Vec<String> {
        self.shared.held_ids()
    }
}

/// What the replica's tasks need of the records.
impl Shared {
    pub(crate) fn halted(&self) -> &CancellationToken {
        &self.halted
    }

    /// The cancel token of the held run `id`, when this replica holds it.
    pub(crate) fn cancel_held(&self, id: &str) {
        if let Some(held) = self.held(id) {
            held.cancel.cancel();
        }
    }

    /// The registered continuation of `protocol`'s background runs.
    pub(crate) fn resume_of(&self, protocol: RunProtocol) -> Option<Arc<dyn Resume>> {
        self.resumes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&protocol)
            .cloned()
    }

    /// Whether `change` asks this replica to cancel a run it holds.
    pub(crate) fn on_change(&self, change: &RunChange) -> bool {
        match change {
            RunChange::CancelRequested { run } => {
                self.cancel_held(run);
                false
            }
            RunChange::Missed => true,
            _ => false,
        }
    }
}

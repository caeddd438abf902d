//! A replica's tasks: the cancel listener, the takeover of orphaned runs, the retention purge.
//! Each holds the records weakly, and ends when they are dropped or halted.

use std::sync::{Arc, Weak};
use std::time::Duration;

use conversation_tree::runs::{Run, RunMode, RunStatus};
use futures::StreamExt as _;

use super::records::Shared;
use super::worker::RunWorker;

/// How often finished runs older than the retention are purged.
const PURGE_EVERY: Duration = Duration::from_secs(3600);

/// The most runs one takeover pass claims: the rest wait for the next pass (or another
/// replica), so one replica does not take every orphan of a dead one at once.
const CLAIMS_PER_PASS: usize = 16;

/// Starts the replica's tasks.
pub(crate) fn start(shared: &Arc<Shared>) {
    // Subscribed now, before any run is started: no cancel can pass unheard.
    let changes = shared.store.run_changes();
    let halted = shared.halted().clone();
    let weak = Arc::downgrade(shared);
    tokio::spawn(async move {
        let mut changes = changes;
        loop {
            let change = tokio::select! {
                () = halted.cancelled() => return,
                change = changes.next() => change,
            };
            let Some(change) = change else { return };
            let Some(shared) = weak.upgrade() else { return };
            if shared.on_change(&change) {
                recheck_held(&shared).await;
            }
        }
    });
    let weak = Arc::downgrade(shared);
    let halted = shared.halted().clone();
    tokio::spawn(async move {
        loop {
            {
                let Some(shared) = weak.upgrade() else { return };
                match shared.store.purge_runs(shared.config.retention).await {
                    Ok(report) if report.runs > 0 || report.events > 0 => tracing::info!(
                        runs = report.runs,
                        events = report.events,
                        "purged finished runs past their retention"
                    ),
                    Ok(_) => {}
                    Err(error) => tracing::warn!(%error, "could not purge old runs"),
                }
            }
            tokio::select! {
                () = halted.cancelled() => return,
                () = tokio::time::sleep(PURGE_EVERY) => {}
            }
        }
    });
}

/// Starts the takeover of orphaned runs: its first pass at once, then every half lease.
pub(crate) fn start_takeover(shared: &Arc<Shared>) {
    let weak = Arc::downgrade(shared);
    let halted = shared.halted().clone();
    let ttl = shared.config.lease_ttl;
    tokio::spawn(async move {
        let mut pause = Duration::ZERO;
        loop {
            tokio::select! {
                () = halted.cancelled() => return,
                () = tokio::time::sleep(pause) => {}
            }
            if !take_over(&weak).await || !sweep_pauses(&weak).await {
                return;
            }
            pause = takeover_period(ttl);
        }
    });
}

/// Half the lease's time to live, give or take a tenth at random, so that replicas started
/// together do not all look at once.
fn takeover_period(ttl: Duration) -> Duration {
    let half = ttl / 2;
    let tenth = half.as_millis().max(10) / 10;
    let jitter = (uuid::Uuid::new_v4().as_u128() % (2 * tenth)) as u64;
    (half + Duration::from_millis(jitter)).saturating_sub(Duration::from_millis(tenth as u64))
}

/// Notifications may have been lost: reads again whether a held run was asked to stop.
async fn recheck_held(shared: &Shared) {
    for id in shared.held_ids() {
        if let Ok(Some(run)) = shared.store.run(&id).await
            && run.cancel_requested
        {
            shared.cancel_held(&id);
        }
    }
}

/// One takeover pass; `false` when the replica is gone or stopping.
async fn take_over(weak: &Weak<Shared>) -> bool {
    let mut passed = Vec::new();
    for _ in 0..CLAIMS_PER_PASS {
        let Some(shared) = weak.upgrade() else {
            return false;
        };
        if shared.halted().is_cancelled() || shared.runs.is_draining() {
            return false;
        }
        let claimed = shared
            .store
            .claim_orphaned_run(&shared.replica, shared.config.lease_ttl)
            .await;
        match claimed {
            Ok(Some(run)) if passed.contains(&run.id) => {
                // Released earlier in this pass: the rest are for the next one.
                release(&shared, &run).await;
                break;
            }
            Ok(Some(run)) => {
                if !continue_run(Arc::clone(&shared), &run).await {
                    release(&shared, &run).await;
                    passed.push(run.id);
                }
            }
            Ok(None) => break,
            Err(error) => {
                tracing::warn!(%error, "could not look for runs to take over");
                break;
            }
        }
    }
    true
}

/// Takes the pauses nobody decided about in time and has their protocols continue them with
/// every call rejected; `false` when the replica is gone or stopping.
async fn sweep_pauses(weak: &Weak<Shared>) -> bool {
    for _ in 0..CLAIMS_PER_PASS {
        let Some(shared) = weak.upgrade() else {
            return false;
        };
        if shared.halted().is_cancelled() || shared.runs.is_draining() {
            return false;
        }
        let taken = shared
            .store
            .take_expired_pause(&shared.replica, shared.config.lease_ttl)
            .await;
        let run = match taken {
            Ok(Some(run)) => run,
            Ok(None) => break,
            Err(error) => {
                tracing::warn!(%error, "could not look for expired approvals");
                break;
            }
        };
        tracing::info!(run = %run.id, replica = %shared.replica, "nobody decided about a paused run in time: its protocol answers its calls as rejected");
        let worker = match RunWorker::taken(Arc::clone(&shared), &run) {
            Ok(worker) => worker,
            Err(error) => {
                tracing::warn!(run = %run.id, %error, "could not continue an expired pause");
                continue;
            }
        };
        match shared.resume_of(run.protocol) {
            Some(resume) => shared
                .runs
                .spawn(async move { resume.expired(run, worker).await }),
            None => {
                let error = format!(
                    "the run waited for approval past its time, and this replica cannot \
                     continue {} runs",
                    run.protocol.as_str()
                );
                if let Err(error) = worker.finish(RunStatus::Failed, Some(error)).await {
                    tracing::warn!(run = %run.id, %error, "could not end an expired pause");
                }
            }
        }
    }
    true
}

/// Frees a run claimed but not continued here.
async fn release(shared: &Shared, run: &Run) {
    if let Some(lease) = &run.lease
        && let Err(error) = shared.store.release_lease(lease).await
    {
        tracing::warn!(run = %run.id, %error, "could not release a run");
    }
}

/// Continues or ends a run this replica just claimed; `false` when it cannot continue it
/// (no continuation registered for its protocol), so that another replica may.
async fn continue_run(shared: Arc<Shared>, run: &Run) -> bool {
    let Some(lease) = run.lease.clone() else {
        return true;
    };
    let resume = shared.resume_of(run.protocol);
    if run.mode == RunMode::Background && !run.cancel_requested && resume.is_none() {
        return false;
    }
    let run = run.clone();
    tracing::info!(run = %run.id, mode = run.mode.as_str(), replica = %shared.replica, "took over a run whose replica stopped");
    let worker = RunWorker::new(Arc::clone(&shared), &run, lease);
    let ending = if run.cancel_requested {
        Some((
            RunStatus::Cancelled,
            "the run was cancelled while its replica stopped".to_owned(),
        ))
    } else if run.mode == RunMode::Foreground {
        Some((
            RunStatus::Cancelled,
            "the replica running it stopped before it finished; continue the conversation \
             from its last answer"
                .to_owned(),
        ))
    } else {
        None
    };
    if let Some((status, error)) = ending {
        if let Err(error) = worker.finish(status, Some(error)).await {
            tracing::warn!(%error, "could not end a run taken over");
        }
        return true;
    }
    if let Some(resume) = resume {
        shared
            .runs
            .spawn(async move { resume.resume(run, worker).await });
    }
    true
}

//! The runs in flight, of every protocol: their cancel tokens by principal and id (for
//! `POST /v1/response/{id}/cancel` and `POST /v1/responses/{id}/cancel`), what a protocol
//! shows of each while it runs (a Responses object as it began, for `GET /v1/responses/{id}`),
//! and the tracker graceful shutdown waits on.
//!
//! Ids are scoped per principal: two callers may use the same `X-Request-ID` without one
//! cancelling, hiding or unregistering the other's run.
//!
//! A cancel is answered with how the run really ended: a run whose answer was already whole
//! (or being logged as whole) when the cancel came ends `completed` all the same, and the
//! cancel must not claim otherwise. So a run says how it ended ([`Registration::settle`]) once
//! its log holds that end, and a cancel waits for it ([`Ending::wait`]).

use std::any::Any;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use conversation_tree::ResponseStatus;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::Principal;

/// Every run in flight.
#[derive(Debug, Default)]
pub struct Runs {
    by_id: Mutex<HashMap<(Principal, String), Arc<Entry>>>,
    tracker: TaskTracker,
    /// Cancelled when shutdown begins: new responses are refused from then on.
    draining: CancellationToken,
    /// Cancelled when the shutdown grace period is over, just before `stop`: background runs
    /// still going are left for another replica instead of ending cancelled.
    release: CancellationToken,
    /// Cancelled when the shutdown grace period is over: the parent of every run's token.
    stop: CancellationToken,
}

#[derive(Debug)]
struct Entry {
    cancel: CancellationToken,
    /// How the run ended, once its log holds it.
    ended: watch::Sender<Option<ResponseStatus>>,
    /// What its protocol shows of it while it runs ([`Registration::show`]).
    shown: Mutex<Option<Shown>>,
}

/// A protocol's view of a run, of a type only that protocol knows.
type Shown = Arc<dyn Any + Send + Sync>;

/// A run's place in [`Runs`]: dropping it (when the run ends) removes its ids.
#[derive(Debug)]
pub struct Registration {
    runs: Arc<Runs>,
    entry: Arc<Entry>,
    /// Its keys in [`Runs::by_id`]: the owner with each id.
    keys: Vec<(Principal, String)>,
}

impl Registration {
    /// Keeps `view` with the run until it ends: what its protocol shows of it while it runs
    /// (a Responses object as it began), read back with [`Runs::shown`].
    pub fn show<T: Any + Send + Sync>(&self, view: T) {
        *self
            .entry
            .shown
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(Arc::new(view));
    }

    /// How the run ends, to wait for without cancelling it.
    pub fn ending(&self) -> Ending {
        Ending(self.entry.ended.subscribe())
    }

    /// Says how the run ended: call it once the log holds that end (and before the client is
    /// told), so that a cancel racing the end answers the truth.
    pub fn settle(&self, status: ResponseStatus) {
        self.entry.ended.send_if_modified(|ended| {
            let unsettled = ended.is_none();
            if unsettled {
                *ended = Some(status);
            }
            unsettled
        });
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        // A run dropped before it said how it ended lost its client: what it had produced is
        // logged as cancelled.
        self.settle(ResponseStatus::Cancelled);
        let mut by_id = self
            .runs
            .by_id
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        for key in &self.keys {
            // A later run of the same caller may have taken the id over: leave its entry.
            if by_id
                .get(key)
                .is_some_and(|entry| Arc::ptr_eq(entry, &self.entry))
            {
                by_id.remove(key);
            }
        }
    }
}

/// How a cancelled run ended, once it has: `cancelled`, or `completed` / `failed` when its
/// answer ended that way before the cancel could stop it.
#[derive(Debug)]
pub struct Ending(watch::Receiver<Option<ResponseStatus>>);

impl Ending {
    /// Waits until the run's log holds how it ended. A cancelled run ends at once (its model
    /// stream is closed and its tools are stopped), so this waits for the last write only.
    pub async fn wait(mut self) -> ResponseStatus {
        match self.0.wait_for(Option::is_some).await {
            Ok(ended) => ended.unwrap_or(ResponseStatus::Cancelled),
            // The run's registration is gone, and it settles before it goes.
            Err(_) => ResponseStatus::Cancelled,
        }
    }
}

impl Runs {
    /// Registers a run of `owner` under `ids` (request and response id) and returns its cancel
    /// token, a child of the shutdown token.
    pub fn register(
        self: &Arc<Self>,
        ids: &[&str],
        owner: Principal,
    ) -> (CancellationToken, Registration) {
        let cancel = self.stop.child_token();
        let entry = Arc::new(Entry {
            cancel: cancel.clone(),
            ended: watch::Sender::new(None),
            shown: Mutex::new(None),
        });
        let keys: Vec<(Principal, String)> =
            ids.iter().map(|id| (owner, (*id).to_owned())).collect();
        let mut by_id = self.by_id.lock().unwrap_or_else(PoisonError::into_inner);
        for key in &keys {
            by_id.insert(key.clone(), Arc::clone(&entry));
        }
        drop(by_id);
        let registration = Registration {
            runs: Arc::clone(self),
            entry,
            keys,
        };
        (cancel, registration)
    }

    /// Cancels the run `id` if `caller` started it: how it ended, to wait for; `None` when
    /// there is no such run in flight.
    pub fn cancel(&self, id: &str, caller: Principal) -> Option<Ending> {
        let by_id = self.by_id.lock().unwrap_or_else(PoisonError::into_inner);
        // Another caller's run is as invisible as a finished one.
        let entry = by_id.get(&(caller, id.to_owned()))?;
        entry.cancel.cancel();
        Some(Ending(entry.ended.subscribe()))
    }

    /// What the protocol of the run `id` of `owner` shows of it while it runs, when that
    /// run is in flight and shows a `T` ([`Registration::show`]).
    pub fn shown<T: Any + Clone>(&self, id: &str, owner: Principal) -> Option<T> {
        let by_id = self.by_id.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = by_id.get(&(owner, id.to_owned()))?;
        let shown = entry
            .shown
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()?;
        shown.downcast_ref::<T>().cloned()
    }

    /// A token for a run: a child of the shutdown token.
    pub(crate) fn run_token(&self) -> CancellationToken {
        self.stop.child_token()
    }

    /// Whether the grace period is over and background runs are left for another replica.
    pub(crate) fn releasing(&self) -> bool {
        self.release.is_cancelled()
    }

    /// The tracker graceful shutdown waits on.
    pub(super) fn tracker(&self) -> &TaskTracker {
        &self.tracker
    }

    /// Runs `task` as a tracked run.
    pub fn spawn<F>(&self, task: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.tracker.spawn(task);
    }

    /// How many runs are in flight.
    pub fn active(&self) -> usize {
        self.tracker.len()
    }

    /// Whether shutdown has begun.
    pub fn is_draining(&self) -> bool {
        self.draining.is_cancelled()
    }

    /// Refuses new runs, lets the runs in flight finish for up to `grace`, then cancels the
    /// rest (their clients get `response.cancelled`) and waits for them to wind up.
    pub async fn shutdown(&self, grace: Duration) {
        self.draining.cancel();
        self.tracker.close();
        if tokio::time::timeout(grace, self.tracker.wait())
            .await
            .is_err()
        {
            tracing::info!(
                runs = self.tracker.len(),
                "shutdown grace period over; cancelling the runs still in flight and releasing \
                 the background ones to another replica"
            );
            self.release.cancel();
            self.stop.cancel();
            self.tracker.wait().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn cancel_needs_the_owner_and_ids_go_away_with_the_run() {
        let runs = Arc::new(Runs::default());
        let (token, registration) = runs.register(&["req-1", "resp-1"], Principal::token(0));
        assert!(runs.cancel("resp-1", Principal::token(1)).is_none());
        assert!(!token.is_cancelled());
        let ending = runs
            .cancel("req-1", Principal::token(0))
            .expect("the owner's run");
        assert!(token.is_cancelled());
        drop(registration);
        assert_eq!(ending.wait().await, ResponseStatus::Cancelled);
        assert!(runs.cancel("resp-1", Principal::token(0)).is_none());
    }

    #[tokio::test]
    async fn the_same_request_id_of_two_callers_stays_apart() {
        let runs = Arc::new(Runs::default());
        let (a, a_registration) = runs.register(&["req-same"], Principal::token(0));
        let (b, b_registration) = runs.register(&["req-same"], Principal::token(1));
        // B cannot reach A's run, and B's registration did not replace A's.
        assert!(runs.cancel("req-same", Principal::token(1)).is_some());
        assert!(b.is_cancelled());
        assert!(!a.is_cancelled());
        // B's run ending does not unregister A's.
        drop(b_registration);
        assert!(runs.cancel("req-same", Principal::token(0)).is_some());
        assert!(a.is_cancelled());
        drop(a_registration);
        assert!(runs.cancel("req-same", Principal::token(0)).is_none());
    }

    #[tokio::test]
    async fn a_cancel_that_comes_after_the_end_was_settled_answers_that_end() {
        let runs = Arc::new(Runs::default());
        let (_token, registration) = runs.register(&["resp-1"], Principal::SHARED);
        registration.settle(ResponseStatus::Completed);
        let ending = runs
            .cancel("resp-1", Principal::SHARED)
            .expect("still registered");
        // Settling again (the registration going away) changes nothing.
        drop(registration);
        assert_eq!(ending.wait().await, ResponseStatus::Completed);
    }

    #[tokio::test]
    async fn a_runs_view_is_its_owners_while_it_runs() {
        let runs = Arc::new(Runs::default());
        let (_token, registration) = runs.register(&["resp-1"], Principal::token(0));
        assert_eq!(runs.shown::<String>("resp-1", Principal::token(0)), None);
        registration.show("began".to_owned());
        assert_eq!(
            runs.shown::<String>("resp-1", Principal::token(0))
                .as_deref(),
            Some("began")
        );
        assert_eq!(runs.shown::<String>("resp-1", Principal::token(1)), None);
        assert_eq!(runs.shown::<u32>("resp-1", Principal::token(0)), None);
        drop(registration);
        assert_eq!(runs.shown::<String>("resp-1", Principal::token(0)), None);
    }

    #[tokio::test]
    async fn shutdown_waits_then_cancels() {
        let runs = Arc::new(Runs::default());
        let (quick, _r1) = runs.register(&["quick"], Principal::SHARED);
        let (slow, _r2) = runs.register(&["slow"], Principal::SHARED);
        runs.spawn(async move {
            tokio::time::sleep(Duration::from_millis(10)).await;
            drop(quick);
        });
        let slow_seen = slow.clone();
        runs.spawn(async move { slow.cancelled().await });
        runs.shutdown(Duration::from_millis(200)).await;
        assert!(runs.is_draining());
        assert!(
            slow_seen.is_cancelled(),
            "the slow run was cancelled after the grace period"
        );
        assert_eq!(runs.active(), 0);
    }
}

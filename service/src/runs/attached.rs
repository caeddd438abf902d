//! [`Attached`]: a run polled by the client that reads it, which goes on as a tracked task of
//! its own once that client leaves.
//!
//! A run in a task of its own hands every event to the task that writes its client's
//! connection: two task wake-ups per text delta where a relay has one. A foreground run,
//! which its client reads as it goes, is instead polled by that connection's task, while
//! [`Runs::shutdown`] still counts it. When the client leaves before the run's end, the rest
//! of the run is spawned as any run is, so that it ends, is logged and stored as if it had
//! been a task from the start.

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};

use agent_loop::WakeGated;
use futures::future::BoxFuture;
use tokio_util::task::TaskTracker;
use tokio_util::task::task_tracker::TaskTrackerToken;

use super::Runs;

/// A run driven by whoever polls it ([`Attached::poll_run`]); dropping it before the run's end
/// spawns the rest as a tracked run ([`Runs::spawn`]).
pub struct Attached {
    run: Option<WakeGated<BoxFuture<'static, ()>>>,
    tracker: TaskTracker,
    /// Counts the run as in flight for [`Runs::shutdown`] while it is polled here.
    _counted: TaskTrackerToken,
}

impl fmt::Debug for Attached {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Attached")
            .field("running", &self.run.is_some())
            .finish_non_exhaustive()
    }
}

impl Runs {
    /// `run` as a tracked run that its caller polls itself until it ends or is dropped.
    pub fn attach(&self, run: impl Future<Output = ()> + Send + 'static) -> Attached {
        Attached {
            run: Some(WakeGated::new(Box::pin(run))),
            tracker: self.tracker().clone(),
            _counted: self.tracker().token(),
        }
    }
}

impl Attached {
    /// Polls the run if something woke it since its last poll; `Ready` once it is over (and
    /// from then on). Its reader asks again right after each event the run handed over,
    /// while the run still waits where it left its wakers.
    pub fn poll_run(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        WakeGated::poll_slot(&mut self.run, cx)
    }
}

impl Future for Attached {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.get_mut().poll_run(cx)
    }
}

impl Drop for Attached {
    fn drop(&mut self) {
        let Some(run) = self.run.take() else {
            return;
        };
        // Outside a runtime (or while it shuts down) the run is dropped where it stands, as
        // a spawned one would be.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            self.tracker.spawn_on(run.into_inner(), &runtime);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn a_run_left_by_its_reader_goes_on_and_shutdown_waits_for_it() {
        let runs = Runs::default();
        let steps = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&steps);
        let (go_on, wait) = tokio::sync::oneshot::channel::<()>();
        let mut attached = runs.attach(async move {
            counted.fetch_add(1, Ordering::SeqCst);
            let _ = wait.await;
            counted.fetch_add(1, Ordering::SeqCst);
        });
        assert!(futures::poll!(&mut attached).is_pending());
        assert_eq!(steps.load(Ordering::SeqCst), 1);
        assert_eq!(runs.active(), 1, "an attached run counts as in flight");
        drop(attached);
        assert_eq!(runs.active(), 1, "the rest of the run is a task now");
        go_on.send(()).expect("the run waits");
        tokio::time::timeout(
            Duration::from_secs(5),
            runs.shutdown(Duration::from_secs(5)),
        )
        .await
        .expect("shutdown waits for the run, which ends");
        assert_eq!(
            steps.load(Ordering::SeqCst),
            2,
            "the run went on after its reader left"
        );
        assert_eq!(runs.active(), 0);
    }

    #[tokio::test]
    async fn a_run_polled_to_its_end_leaves_nothing_behind() {
        let runs = Runs::default();
        let mut attached = runs.attach(async {});
        assert!(futures::poll!(&mut attached).is_ready());
        assert!(futures::poll!(&mut attached).is_ready(), "and stays over");
        drop(attached);
        assert_eq!(runs.active(), 0);
    }
}

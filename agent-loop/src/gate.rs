//! [`WakeGated`]: a future (or a stream) polled again only once something woke it.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};

use futures::Stream;
use futures::task::AtomicWaker;
use tokio_util::sync::CancellationToken;

/// `F`, polled only when it was woken since it last returned `Pending`: a future through
/// [`poll_gated`](Self::poll_gated), a stream through
/// [`poll_next_gated`](Self::poll_next_gated).
///
/// A stream whose producer runs inside its own `poll_next` (a run's driver, sending its events
/// to a queue the stream then reads) is asked for its next item right after handing one over,
/// and the producer, pending on the provider's socket, would be walked down to that socket
/// again only to find it still pending. Once pending, the producer has left its wakers with
/// whatever it waits for, and those go through this gate: until one fires, a poll here is
/// answered `Pending` at once.
///
/// ```
/// use std::task::{Context, Poll, Waker};
///
/// use agent_loop::WakeGated;
///
/// let mut cx = Context::from_waker(Waker::noop());
/// let mut gated = WakeGated::new(std::future::pending::<()>());
/// // Polled the first time it is asked, then not until something wakes it.
/// assert_eq!(gated.poll_gated(&mut cx), Poll::Pending);
/// assert_eq!(gated.poll_gated(&mut cx), Poll::Pending);
/// ```
pub struct WakeGated<F> {
    inner: F,
    /// The waker the inner value is polled with.
    mark: WakeMark,
    /// The stream gave an item last time: it is asked again, woken or not.
    again: bool,
}

impl<F> std::fmt::Debug for WakeGated<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WakeGated")
            .field("mark", &self.mark)
            .finish_non_exhaustive()
    }
}

impl<F> WakeGated<F> {
    /// `inner`, polled the first time it is asked.
    pub fn new(inner: F) -> Self {
        WakeGated {
            inner,
            mark: WakeMark::marked(),
            again: false,
        }
    }

    /// The future or stream, for a caller that takes it over.
    pub fn into_inner(self) -> F {
        self.inner
    }

    /// Whether to poll: the task in `cx` is left to be woken with the inner value, and the
    /// mark of a wake is cleared before the poll (a wake that comes during it is kept for the
    /// next one).
    fn open(&mut self, cx: &Context<'_>) -> bool {
        self.mark.register(cx);
        self.mark.take() || std::mem::take(&mut self.again)
    }
}

/// A waker that marks that it fired and then wakes the task last registered with it: how a
/// poll tells whether *this* waker fired, when what wakes its task may be many things.
///
/// ```
/// use std::task::{Context, Waker};
///
/// use agent_loop::WakeMark;
///
/// let mark = WakeMark::unmarked();
/// mark.register(&Context::from_waker(Waker::noop()));
/// assert!(!mark.take());
/// mark.waker().wake_by_ref();
/// assert!(mark.take(), "it fired");
/// assert!(!mark.take(), "taking the mark clears it");
/// ```
pub struct WakeMark {
    shared: Arc<Mark>,
    waker: Waker,
}

impl std::fmt::Debug for WakeMark {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WakeMark")
            .field("fired", &self.shared.fired.load(Ordering::Acquire))
            .finish_non_exhaustive()
    }
}

/// Whether a [`WakeMark`]'s waker fired since the mark was taken, and the task to wake then.
#[derive(Debug)]
struct Mark {
    fired: AtomicBool,
    task: AtomicWaker,
}

impl Wake for Mark {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.fired.store(true, Ordering::Release);
        self.task.wake();
    }
}

impl WakeMark {
    /// A mark not fired yet.
    pub fn unmarked() -> Self {
        Self::with(false)
    }

    /// A mark taken as fired once: what it guards runs the first time it is asked.
    pub fn marked() -> Self {
        Self::with(true)
    }

    fn with(fired: bool) -> Self {
        let shared = Arc::new(Mark {
            fired: AtomicBool::new(fired),
            task: AtomicWaker::new(),
        });
        WakeMark {
            waker: Waker::from(Arc::clone(&shared)),
            shared,
        }
    }

    /// The waker that marks, to hand to what will wake the task.
    pub fn waker(&self) -> &Waker {
        &self.waker
    }

    /// Makes the task in `cx` the one the waker wakes.
    pub fn register(&self, cx: &Context<'_>) {
        self.shared.task.register(cx.waker());
    }

    /// Whether the waker fired since the mark was last taken; clears the mark.
    pub fn take(&self) -> bool {
        self.shared.fired.swap(false, Ordering::AcqRel)
    }
}

impl<F: Future + Unpin> WakeGated<F> {
    /// Polls the future if it was woken since its last poll; `Pending` otherwise, the task
    /// in `cx` to be woken with it.
    pub fn poll_gated(&mut self, cx: &mut Context<'_>) -> Poll<F::Output> {
        if !self.open(cx) {
            return Poll::Pending;
        }
        Pin::new(&mut self.inner).poll(&mut Context::from_waker(self.mark.waker()))
    }
}

impl<F: Future<Output = ()> + Unpin> WakeGated<F> {
    /// Polls the work in `slot` as [`poll_gated`](Self::poll_gated) does and empties the slot
    /// once it is over: `Ready` then, and at every poll after, so whoever keeps the slot reads
    /// from it whether the work is done (a run that is dropped while still in its slot is
    /// one that did not end).
    ///
    /// ```
    /// use std::task::{Context, Poll, Waker};
    ///
    /// use agent_loop::WakeGated;
    ///
    /// let mut cx = Context::from_waker(Waker::noop());
    /// let mut slot = Some(WakeGated::new(std::future::ready(())));
    /// assert_eq!(WakeGated::poll_slot(&mut slot, &mut cx), Poll::Ready(()));
    /// assert!(slot.is_none());
    /// assert_eq!(WakeGated::poll_slot(&mut slot, &mut cx), Poll::Ready(()));
    /// ```
    pub fn poll_slot(slot: &mut Option<Self>, cx: &mut Context<'_>) -> Poll<()> {
        let Some(work) = slot.as_mut() else {
            return Poll::Ready(());
        };
        let poll = work.poll_gated(cx);
        if poll.is_ready() {
            *slot = None;
        }
        poll
    }
}

impl<S: Stream + Unpin> WakeGated<S> {
    /// Polls the stream if it gave an item last time or was woken since; `Pending`
    /// otherwise, the task in `cx` to be woken with it.
    pub fn poll_next_gated(&mut self, cx: &mut Context<'_>) -> Poll<Option<S::Item>> {
        if !self.open(cx) {
            return Poll::Pending;
        }
        let polled =
            Pin::new(&mut self.inner).poll_next(&mut Context::from_waker(self.mark.waker()));
        // Another item may be ready at once.
        self.again = polled.is_ready();
        polled
    }
}

/// `future`'s output, or `None` once `cancel` is cancelled (checked first at each poll, as
/// [`CancellationToken::run_until_cancelled`] does).
///
/// For a future polled once per streamed delta: the token's own future takes its lock at each
/// poll, while here it is polled only when the cancellation woke it.
pub(crate) async fn until_cancelled<F: Future>(
    cancel: &CancellationToken,
    future: F,
) -> Option<F::Output> {
    let mut cancelled = WakeGated::new(Box::pin(cancel.cancelled()));
    let mut future = std::pin::pin!(future);
    std::future::poll_fn(|cx| {
        if cancelled.poll_gated(cx).is_ready() {
            return Poll::Ready(None);
        }
        future.as_mut().poll(cx).map(Some)
    })
    .await
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::sync::atomic::AtomicUsize;

    use super::*;

    /// Counts its polls; pending until `ready` is set, leaving its waker in `waker`.
    #[derive(Clone, Default)]
    struct Probe {
        polls: Arc<AtomicUsize>,
        waker: Arc<Mutex<Option<Waker>>>,
        items: Arc<Mutex<Vec<u32>>>,
        /// Wakes itself while polled (as a future that yields).
        wake_during_poll: bool,
    }

    impl Probe {
        fn polls(&self) -> usize {
            self.polls.load(Ordering::SeqCst)
        }

        fn wake(&self) {
            if let Some(waker) = self.waker.lock().unwrap().take() {
                waker.wake();
            }
        }
    }

    impl Stream for Probe {
        type Item = u32;

        fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<u32>> {
            self.polls.fetch_add(1, Ordering::SeqCst);
            *self.waker.lock().unwrap() = Some(cx.waker().clone());
            if self.wake_during_poll {
                cx.waker().wake_by_ref();
            }
            match self.items.lock().unwrap().pop() {
                Some(item) => Poll::Ready(Some(item)),
                None => Poll::Pending,
            }
        }
    }

    /// Counts the wakes of the task that polls the gate.
    #[derive(Default)]
    struct Task(AtomicUsize);

    impl Wake for Task {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn a_pending_stream_is_polled_again_only_once_woken_and_its_wake_reaches_the_task() {
        let probe = Probe::default();
        let task = Arc::new(Task::default());
        let waker = Waker::from(Arc::clone(&task));
        let mut cx = Context::from_waker(&waker);
        let mut gated = WakeGated::new(probe.clone());

        assert_eq!(gated.poll_next_gated(&mut cx), Poll::Pending);
        assert_eq!(gated.poll_next_gated(&mut cx), Poll::Pending);
        assert_eq!(probe.polls(), 1, "not woken: not polled again");

        probe.items.lock().unwrap().extend([2, 1]);
        probe.wake();
        assert_eq!(
            task.0.load(Ordering::SeqCst),
            1,
            "the wake reaches the task"
        );
        assert_eq!(gated.poll_next_gated(&mut cx), Poll::Ready(Some(1)));
        // After an item the stream is asked again, woken or not.
        assert_eq!(gated.poll_next_gated(&mut cx), Poll::Ready(Some(2)));
        assert_eq!(gated.poll_next_gated(&mut cx), Poll::Pending);
        assert_eq!(gated.poll_next_gated(&mut cx), Poll::Pending);
        assert_eq!(probe.polls(), 4);
    }

    #[test]
    fn a_wake_during_the_poll_is_kept_for_the_next_one() {
        let probe = Probe {
            wake_during_poll: true,
            ..Probe::default()
        };
        let mut cx = Context::from_waker(Waker::noop());
        let mut gated = WakeGated::new(probe.clone());
        for _ in 0..3 {
            assert_eq!(gated.poll_next_gated(&mut cx), Poll::Pending);
        }
        assert_eq!(probe.polls(), 3, "each poll woke it for the next");
    }

    #[test]
    fn a_future_is_polled_once_woken_and_taken_back_whole() {
        let probe = Probe::default();
        let mut cx = Context::from_waker(Waker::noop());
        let mut gated = WakeGated::new(Box::pin(async {
            let mut probe = probe.clone();
            futures::StreamExt::next(&mut probe).await
        }));
        assert_eq!(gated.poll_gated(&mut cx), Poll::Pending);
        assert_eq!(gated.poll_gated(&mut cx), Poll::Pending);
        assert_eq!(probe.polls(), 1);
        probe.items.lock().unwrap().push(7);
        probe.wake();
        assert_eq!(gated.poll_gated(&mut cx), Poll::Ready(Some(7)));
        assert_eq!(probe.polls(), 2);
        drop(gated.into_inner());
    }

    #[tokio::test]
    async fn until_cancelled_gives_the_output_or_none_once_cancelled() {
        let cancel = CancellationToken::new();
        assert_eq!(until_cancelled(&cancel, async { 5 }).await, Some(5));

        let (tx, rx) = tokio::sync::oneshot::channel::<u32>();
        let waiting = tokio::spawn({
            let cancel = cancel.clone();
            async move { until_cancelled(&cancel, rx).await }
        });
        tokio::task::yield_now().await;
        cancel.cancel();
        assert_eq!(waiting.await.unwrap(), None);
        drop(tx);

        // Already cancelled: none, even for a future that is ready.
        assert_eq!(until_cancelled(&cancel, async { 5 }).await, None);
    }
}

//! [`handoff`]: items a producer hands to the reader that polls it, inside that poll.

use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::task::{Context, Poll};

/// A queue from a producer to the reader that drives it: the producer (a run's driver) gives
/// its items while the reader polls it, and the reader takes them right after, in the same
/// call. No waker is left or woken: the reader is the task that is running, and what the
/// producer waits for wakes that task. A channel would pay for what this never needs (a
/// waker slot per item, a semaphore, a wake of the very task that sends), at every text
/// delta.
///
/// The reader owns the queue; once it is dropped, the producer's items are dropped as it
/// gives them, so a producer that goes on alone (a run whose client left) holds nothing.
/// [`WakeGated`](crate::WakeGated) is how such a reader polls its producer only when woken.
///
/// ```
/// let (giver, taker) = agent_loop::handoff::<u32>();
/// assert!(giver.give(1));
/// assert!(giver.give(2));
/// assert_eq!(taker.take(), Some(1));
/// assert_eq!(taker.take(), Some(2));
/// assert_eq!(taker.take(), None);
/// drop(taker);
/// assert!(!giver.give(3), "the reader is gone");
/// ```
pub fn handoff<T>() -> (Giver<T>, Taker<T>) {
    let queue = Arc::new(Mutex::new(VecDeque::new()));
    let giver = Giver {
        queue: Arc::downgrade(&queue),
    };
    (giver, Taker { queue })
}

/// The producer's end of a [`handoff`].
pub struct Giver<T> {
    queue: Weak<Mutex<VecDeque<T>>>,
}

impl<T> Giver<T> {
    /// Queues `item` for the reader; `false` (and `item` dropped) once the reader is gone.
    pub fn give(&self, item: T) -> bool {
        let Some(queue) = self.queue.upgrade() else {
            return false;
        };
        lock(&queue).push_back(item);
        true
    }
}

impl<T> Clone for Giver<T> {
    fn clone(&self) -> Self {
        Giver {
            queue: Weak::clone(&self.queue),
        }
    }
}

impl<T> fmt::Debug for Giver<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Giver")
            .field("reader", &(self.queue.strong_count() > 0))
            .finish()
    }
}

/// The reader's end of a [`handoff`].
pub struct Taker<T> {
    queue: Arc<Mutex<VecDeque<T>>>,
}

impl<T> Taker<T> {
    /// The oldest item given and not taken yet.
    pub fn take(&self) -> Option<T> {
        lock(&self.queue).pop_front()
    }

    /// The next item of a producer polled by `produce`: one it gave earlier (a poll may give
    /// several), else what it gives when polled now; `None` once `produce` is `Ready` (the
    /// producer is over) and everything it gave is taken. While the producer is pending it has
    /// left its wakers with what it waits for, and so has the caller's task.
    pub fn poll_take(
        &self,
        cx: &mut Context<'_>,
        produce: impl FnOnce(&mut Context<'_>) -> Poll<()>,
    ) -> Poll<Option<T>> {
        if let Some(item) = self.take() {
            return Poll::Ready(Some(item));
        }
        let over = produce(cx).is_ready();
        match self.take() {
            Some(item) => Poll::Ready(Some(item)),
            None if over => Poll::Ready(None),
            None => Poll::Pending,
        }
    }
}

impl<T> fmt::Debug for Taker<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Taker")
            .field("queued", &lock(&self.queue).len())
            .finish()
    }
}

/// The queue; a producer that panicked mid-push left it whole (`push_back` either happened
/// or not), so a poisoned lock is taken as it is.
fn lock<T>(queue: &Mutex<VecDeque<T>>) -> MutexGuard<'_, VecDeque<T>> {
    queue.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_come_out_in_the_order_given_from_every_giver() {
        let (giver, taker) = handoff();
        let other = giver.clone();
        assert!(giver.give("a"));
        assert!(other.give("b"));
        assert!(giver.give("c"));
        let taken: Vec<_> = std::iter::from_fn(|| taker.take()).collect();
        assert_eq!(taken, ["a", "b", "c"]);
    }

    #[test]
    fn a_producer_is_polled_only_once_what_it_gave_is_taken_and_ends_the_items() {
        let (giver, taker) = handoff();
        let mut cx = Context::from_waker(std::task::Waker::noop());
        let mut polls = 0;
        let mut produce = |cx: &mut Context<'_>, over: bool| {
            let _ = cx;
            polls += 1;
            giver.give(polls);
            giver.give(polls * 10);
            if over { Poll::Ready(()) } else { Poll::Pending }
        };
        assert_eq!(
            taker.poll_take(&mut cx, |cx| produce(cx, false)),
            Poll::Ready(Some(1))
        );
        assert_eq!(
            taker.poll_take(&mut cx, |cx| produce(cx, false)),
            Poll::Ready(Some(10))
        );
        assert_eq!(
            taker.poll_take(&mut cx, |cx| produce(cx, true)),
            Poll::Ready(Some(2))
        );
        assert_eq!(
            taker.poll_take(&mut cx, |_| Poll::Ready(())),
            Poll::Ready(Some(20))
        );
        assert_eq!(
            taker.poll_take(&mut cx, |_| Poll::Ready(())),
            Poll::Ready(None)
        );
        assert_eq!(polls, 2, "polled only when nothing was left to take");
        assert_eq!(taker.poll_take(&mut cx, |_| Poll::Pending), Poll::Pending);
    }

    #[test]
    fn a_gone_reader_keeps_nothing_given_after_it() {
        let (giver, taker) = handoff();
        let item = Arc::new(());
        assert!(giver.give(Arc::clone(&item)));
        drop(taker);
        assert_eq!(
            Arc::strong_count(&item),
            1,
            "what was queued went with the reader"
        );
        assert!(!giver.give(Arc::clone(&item)));
        assert_eq!(
            Arc::strong_count(&item),
            1,
            "given after it left: dropped at once"
        );
    }
}

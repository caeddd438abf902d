//! [`Gather`]: a chunk of events held for one turn of the scheduler, so that the deltas the
//! provider's last read brought go out with it in one write.

use std::future::Future as _;
use std::pin::pin;
use std::task::Context;

use agent_loop::WakeMark;

/// At most this many chunks go out at once between two holds that gained nothing.
const MAX_SKIP: u8 = 63;

/// Whether a body's ready chunk goes out now or waits one turn of the scheduler for more.
///
/// A busy relay reads many of a provider's deltas at once (at 200 streams a read brings about
/// twenty), but the provider's connection task hands them to the response one at a time, one
/// per wake of that task. A response that sent each as it came would write each on its own:
/// a `writev` and a pass of the connection per delta. Held until the tasks woken before it
/// have run (the provider's connection among them), a chunk takes the deltas that come in the
/// meantime and they go out in one write.
///
/// The hold ends when the scheduler wakes the hold's own waker, not at the body's next poll:
/// a connection polls its body again at once when it answered pending.
///
/// A hold costs a wake and a poll of the connection, so it is not made where it gains nothing:
/// the first two chunks go out at once (an answer's opening and its first delta, which a
/// client is waiting for), and after a hold that no delta joined (a relay with time to spare
/// reads each delta as it comes) the next chunk goes out at once, then the next 3, 7, … up to
/// [`MAX_SKIP`], until a hold gains again.
pub(super) struct Gather {
    /// Fired when the scheduler's turn is over.
    turn_over: WakeMark,
    hold: Hold,
    pace: Pace,
}

/// Whether a chunk is held, and whether events joined it since.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hold {
    Open,
    Holding { gained: bool },
}

impl Gather {
    /// A gather whose first chunks go out at once.
    pub(super) fn new() -> Self {
        Gather {
            turn_over: WakeMark::unmarked(),
            hold: Hold::Open,
            pace: Pace::new(),
        }
    }

    /// An event joined the chunk.
    pub(super) fn joined(&mut self) {
        if let Hold::Holding { gained } = &mut self.hold {
            *gained = true;
        }
    }

    /// Whether the ready chunk, to which more may still come, waits: `true` until the turn in
    /// which it was first asked is over, the task in `cx` woken then.
    pub(super) fn wait(&mut self, cx: &Context<'_>) -> bool {
        match self.hold {
            Hold::Open => {
                if !self.pace.hold_next() {
                    return false;
                }
                // A wake left over from a hold that ended early is not this one's.
                self.turn_over.take();
                self.turn_over.register(cx);
                // tokio wakes a yielding task only once the tasks woken before it have run
                // and it has looked at the sockets again; yielding with the mark's waker
                // asks that wake for the hold alone. Outside tokio the wake comes at once,
                // and the chunk goes.
                let _ = pin!(tokio::task::yield_now())
                    .poll(&mut Context::from_waker(self.turn_over.waker()));
                if self.turn_over.take() {
                    self.pace.held(false);
                    return false;
                }
                self.hold = Hold::Holding { gained: false };
                true
            }
            Hold::Holding { gained } => {
                if self.turn_over.take() {
                    self.end(gained);
                    return false;
                }
                self.turn_over.register(cx);
                true
            }
        }
    }

    /// The chunk goes now (the stream ended, or the chunk is full): a hold ends here.
    pub(super) fn send(&mut self) {
        if let Hold::Holding { gained } = self.hold {
            self.end(gained);
        }
    }

    fn end(&mut self, gained: bool) {
        self.hold = Hold::Open;
        self.pace.held(gained);
    }
}

/// How many chunks go out at once before the next hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Pace {
    /// Chunks still to send at once.
    skip: u8,
    /// Chunks sent at once after the last hold that gained nothing.
    after_fruitless: u8,
}

impl Pace {
    /// The first two chunks go at once: an answer's opening and the chunk with its first
    /// delta, which its client is waiting for.
    fn new() -> Self {
        Pace {
            skip: 2,
            after_fruitless: 0,
        }
    }

    /// Whether the next chunk is held; counts it among those sent at once otherwise.
    fn hold_next(&mut self) -> bool {
        if self.skip == 0 {
            return true;
        }
        self.skip -= 1;
        false
    }

    /// A hold ended, `gained` whether events joined its chunk.
    fn held(&mut self, gained: bool) {
        self.after_fruitless = if gained {
            0
        } else {
            (self.after_fruitless * 2 + 1).min(MAX_SKIP)
        };
        self.skip = self.after_fruitless;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn holds(pace: &mut Pace, chunks: usize) -> Vec<bool> {
        (0..chunks).map(|_| pace.hold_next()).collect()
    }

    #[test]
    fn the_first_two_chunks_go_at_once_and_the_third_is_held() {
        let mut pace = Pace::new();
        assert_eq!(holds(&mut pace, 3), [false, false, true]);
    }

    #[test]
    fn holds_that_gain_nothing_grow_apart_and_one_that_gains_brings_them_back() {
        let mut pace = Pace::new();
        pace.skip = 0;
        let mut between = Vec::new();
        for _ in 0..8 {
            pace.held(false);
            let run = holds(&mut pace, usize::from(MAX_SKIP) + 1);
            between.push(run.iter().position(|&hold| hold).expect("a hold"));
        }
        assert_eq!(between, [1, 3, 7, 15, 31, 63, 63, 63]);
        pace.held(true);
        assert_eq!(holds(&mut pace, 3), [true, true, true]);
    }

    #[test]
    fn outside_tokio_nothing_is_held() {
        let mut gather = Gather::new();
        gather.pace.skip = 0;
        let cx = Context::from_waker(std::task::Waker::noop());
        assert!(!gather.wait(&cx));
        assert_eq!(gather.hold, Hold::Open);
    }
}

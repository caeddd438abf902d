//! Leases, and the clock a single-process store reads them with.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};

/// A replica's hold on a run: it runs the run until the lease expires, and renews it before.
///
/// A lease is its (holder, epoch) pair: the epoch counts the run's claims, so a replica whose
/// lease was taken over cannot renew or release the new one, even under the same name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lease {
    /// The run held.
    pub run: String,
    /// The replica holding it.
    pub holder: String,
    /// Which claim of the run this is (1 for the first).
    pub epoch: u64,
    /// When it expires unless renewed, by the store's clock.
    pub expires: Timestamp,
}

/// Where a store that runs in one process reads the time: the system clock, or a
/// [`ManualClock`] in tests. (PostgreSQL reads the database's `now()` instead: replicas'
/// clocks need not agree.)
pub trait Clock: Send + Sync + fmt::Debug {
    /// Now.
    fn now(&self) -> Timestamp;
}

/// The system clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        crate::record::now()
    }
}

/// A clock that moves only when told: leases expire in a test without waiting.
///
/// ```
/// use std::time::Duration;
/// use conversation_tree::runs::{Clock, ManualClock};
///
/// let clock = ManualClock::new();
/// let before = clock.now();
/// clock.advance(Duration::from_secs(30));
/// assert_eq!(clock.now().duration_since(before).as_secs(), 30);
/// ```
#[derive(Clone, Debug)]
pub struct ManualClock(Arc<Mutex<Timestamp>>);

impl ManualClock {
    /// A clock showing the system time of its creation; clones share it.
    pub fn new() -> Self {
        ManualClock(Arc::new(Mutex::new(crate::record::now())))
    }

    /// Moves the clock forward by `by`.
    pub fn advance(&self, by: Duration) {
        let mut now = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        *now = add(*now, by);
    }
}

impl Default for ManualClock {
    fn default() -> Self {
        ManualClock::new()
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// `at + by`, saturating at the largest timestamp.
pub(crate) fn add(at: Timestamp, by: Duration) -> Timestamp {
    SignedDuration::try_from(by)
        .ok()
        .and_then(|by| at.checked_add(by).ok())
        .unwrap_or(Timestamp::MAX)
}

/// `at - by`, saturating at the smallest timestamp.
pub(crate) fn sub(at: Timestamp, by: Duration) -> Timestamp {
    SignedDuration::try_from(by)
        .ok()
        .and_then(|by| at.checked_sub(by).ok())
        .unwrap_or(Timestamp::MIN)
}

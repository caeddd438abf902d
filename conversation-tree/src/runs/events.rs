//! A run's stored events, and the notifications that tell followers a run changed.

use bytes::Bytes;
use futures::stream::BoxStream;
use serde::{Deserialize, Serialize};

use super::RunStatus;
use crate::{Result, StoreError};

/// The most events one read returns ([`RunStore::events_after`](super::RunStore::events_after)).
pub const MAX_EVENT_PAGE: usize = 1000;

/// One event of a run: its sequence number and the exact bytes a live client was sent (an SSE
/// event, opaque to the store).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunEvent {
    /// Its place in the run's stream: 0 for the first event, then one more each time.
    pub seq: u64,
    /// The bytes as sent: shared with the frame that went out, not a copy of it.
    pub data: Bytes,
}

impl RunEvent {
    /// Event `seq` holding `data`.
    pub fn new(seq: u64, data: impl Into<Bytes>) -> Self {
        RunEvent {
            seq,
            data: data.into(),
        }
    }
}

/// One run's events, stored with other runs' in one transaction by
/// [`RunStore::append_event_batches`](super::RunStore::append_event_batches).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventBatch<'a> {
    /// The run.
    pub run: &'a str,
    /// Its next events, continuing the stored ones (see
    /// [`RunStore::append_events`](super::RunStore::append_events)).
    pub events: &'a [RunEvent],
}

impl<'a> EventBatch<'a> {
    /// `events` of run `run`.
    pub fn new(run: &'a str, events: &'a [RunEvent]) -> Self {
        EventBatch { run, events }
    }
}

/// Checks that `events` continue a run whose last stored event is `last`: numbered from
/// `last + 1` (0 for a run without events), one more each, none repeated or skipped. Returns
/// the new last sequence number.
#[cfg(any(feature = "postgres", test))]
pub(crate) fn check_batch(run: &str, last: Option<u64>, events: &[RunEvent]) -> Result<u64> {
    check_seqs(run, last, events.iter().map(|event| event.seq))
}

/// Checks that the events numbered `seqs` continue a run whose last stored event is `last`
/// (see `check_batch`).
pub(crate) fn check_seqs(
    run: &str,
    last: Option<u64>,
    seqs: impl IntoIterator<Item = u64>,
) -> Result<u64> {
    let mut expected = last.map_or(0, |last| last + 1);
    for seq in seqs {
        if seq < expected {
            return Err(StoreError::DuplicateEvent {
                run: run.to_owned(),
                seq,
                expected,
            });
        }
        if seq > expected {
            return Err(StoreError::EventGap {
                run: run.to_owned(),
                found: seq,
                expected,
            });
        }
        if i64::try_from(seq).is_err() {
            return Err(StoreError::OutOfRange {
                what: "an event sequence number",
                value: seq,
            });
        }
        expected += 1;
    }
    Ok(expected.saturating_sub(1))
}

/// What changed in a run, as told to the followers of [`RunStore::run_changes`](super::RunStore::run_changes).
///
/// A notification is a hint to read the store again, never the data itself: a follower reads
/// the events after the last one it has ([`RunStore::events_after`](super::RunStore::events_after)).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "change", rename_all = "snake_case")]
#[non_exhaustive]
pub enum RunChange {
    /// Events up to `last_seq` were stored.
    Events {
        /// The run.
        run: String,
        /// Its last stored event now.
        last_seq: u64,
    },
    /// The run moved to `status`.
    Status {
        /// The run.
        run: String,
        /// Its new status.
        status: RunStatus,
    },
    /// A cancel was asked for: the worker holding the run stops it.
    CancelRequested {
        /// The run.
        run: String,
    },
    /// Notifications may have been lost (a follower fell behind, or the listening connection
    /// was re-established): read again whatever you follow.
    Missed,
}

impl RunChange {
    /// The run the change is about; `None` for [`RunChange::Missed`], which is about every run.
    pub fn run(&self) -> Option<&str> {
        match self {
            RunChange::Events { run, .. }
            | RunChange::Status { run, .. }
            | RunChange::CancelRequested { run } => Some(run),
            RunChange::Missed => None,
        }
    }

    /// The notification payload (JSON), as sent through PostgreSQL's `NOTIFY`.
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    pub(crate) fn payload(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// A change read back from a [`payload`](Self::payload); a payload this build cannot read
    /// (a newer replica's) is [`RunChange::Missed`], so followers read the store again.
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    pub(crate) fn from_payload(payload: &str) -> RunChange {
        serde_json::from_str(payload).unwrap_or(RunChange::Missed)
    }
}

/// A stream of [`RunChange`]s, from [`RunStore::run_changes`](super::RunStore::run_changes).
pub type RunChanges = BoxStream<'static, RunChange>;

/// The changes a broadcast channel carries, with lag reported as [`RunChange::Missed`]; ends
/// when the channel closes.
pub(crate) fn broadcast_changes(
    receiver: tokio::sync::broadcast::Receiver<RunChange>,
) -> RunChanges {
    use tokio::sync::broadcast::error::RecvError;
    Box::pin(futures::stream::unfold(
        receiver,
        |mut receiver| async move {
            match receiver.recv().await {
                Ok(change) => Some((change, receiver)),
                Err(RecvError::Lagged(_)) => Some((RunChange::Missed, receiver)),
                Err(RecvError::Closed) => None,
            }
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(seqs: &[u64]) -> Vec<RunEvent> {
        seqs.iter().map(|&seq| RunEvent::new(seq, "x")).collect()
    }

    #[test]
    fn a_batch_continues_the_last_event_without_gaps_or_repeats() {
        assert_eq!(check_batch("r", None, &events(&[0, 1, 2])).unwrap(), 2);
        assert_eq!(check_batch("r", Some(2), &events(&[3])).unwrap(), 3);
        assert!(matches!(
            check_batch("r", Some(2), &events(&[2])),
            Err(StoreError::DuplicateEvent {
                seq: 2,
                expected: 3,
                ..
            })
        ));
        assert!(matches!(
            check_batch("r", None, &events(&[0, 2])),
            Err(StoreError::EventGap {
                found: 2,
                expected: 1,
                ..
            })
        ));
        assert!(matches!(
            check_batch("r", None, &events(&[1])),
            Err(StoreError::EventGap {
                found: 1,
                expected: 0,
                ..
            })
        ));
    }

    #[test]
    fn payloads_round_trip_and_unknown_ones_mean_missed() {
        let change = RunChange::Events {
            run: "resp_1".to_owned(),
            last_seq: 7,
        };
        assert_eq!(
            change.payload(),
            r#"{"change":"events","run":"resp_1","last_seq":7}"#
        );
        assert_eq!(RunChange::from_payload(&change.payload()), change);
        let status = RunChange::Status {
            run: "resp_1".to_owned(),
            status: RunStatus::InProgress,
        };
        assert_eq!(RunChange::from_payload(&status.payload()), status);
        assert_eq!(
            RunChange::from_payload(r#"{"change":"paused","run":"r"}"#),
            RunChange::Missed
        );
    }
}

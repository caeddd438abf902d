//! Runs that outlive their request: run records, their stored events, leases, and the
//! notifications that let another replica follow a run live ([`RunStore`]).
//!
//! A **run** is one answer being produced for a client (a Chat Shell response, an OpenAI
//! Responses object), under the id that protocol gave it. Its record holds who started it,
//! the request needed to run it again, where it continues the conversation tree, and its
//! status. Its **events** are the exact bytes a live client was sent, numbered from 0, so a
//! client that comes back (`starting_after=N`, `Last-Event-ID`) is replayed the same stream on
//! any replica. A **lease** makes one replica its worker at a time.
//!
//! # States
//!
//! | from          | to                                               | when                                   |
//! |---------------|--------------------------------------------------|----------------------------------------|
//! | (created)     | `queued`                                         | [`RunStore::create_run`]               |
//! | `queued`      | `in_progress`                                    | a worker starts it                     |
//! | `queued`      | `failed`, `cancelled`                            | refused before it starts, cancelled    |
//! | `in_progress` | `completed`, `failed`, `cancelled`, `incomplete` | it ends                                |
//! | `in_progress` | `paused`                                         | its tool calls wait for approval       |
//! | `paused`      | `in_progress`                                    | taken to resume ([`RunStore::take_paused`]) |
//! | `paused`      | `failed`, `cancelled`                            | given up, cancelled                    |
//! | terminal      | (none)                                           | a finished run stays finished          |
//!
//! Any other change is [`StoreError::IllegalRunTransition`](crate::StoreError::IllegalRunTransition)
//! and writes nothing. A run taken over by another worker stays `in_progress`; its new worker
//! continues from [`Run::last_node`]. A paused run holds no lease and is never an orphan: it waits, for minutes or days,
//! for whoever the decisions reach, on any replica, to take it ([`RunStore::take_paused`],
//! atomic: of two deciders one wins); [`RunStore::take_expired_pause`] takes one nobody
//! decided about in time.
//!
//! # Leases
//!
//! A replica works on a run only while it holds its lease: [`RunStore::claim_run`] succeeds
//! only for a run that is unfinished and free (never leased, released, or expired), atomically,
//! so of many claimants one wins. The holder renews it ([`RunStore::renew_lease`]) well within
//! its time to live; a renewal that fails ([`StoreError::LeaseLost`](crate::StoreError::LeaseLost))
//! means another replica may have the run now, and the holder stops. A replica that dies stops
//! renewing: once the lease expires, [`RunStore::claim_orphaned_run`] hands the run to another.
//! Each claim increments the lease's epoch, so an old holder cannot renew or release a newer
//! lease; and its late event writes fail, as the new holder's sequence numbers are taken
//! ([`StoreError::DuplicateEvent`](crate::StoreError::DuplicateEvent)).
//!
//! **Time comes from the database.** On PostgreSQL every lease is set and compared with the
//! server's `now()`: replicas on different machines never compare their own clocks, which may
//! disagree by seconds. On SQLite (one process) the store's [`Clock`] is the time, the system
//! clock unless a test sets a [`ManualClock`] with
//! [`SqliteStore::with_clock`](crate::SqliteStore::with_clock).
//!
//! # Following a run
//!
//! [`RunStore::run_changes`] streams [`RunChange`]s: events stored, a status reached, a cancel
//! asked for. On PostgreSQL they travel through `NOTIFY` on one channel from whichever replica
//! wrote them, sent in the writing transaction (so a notification never announces what is not
//! committed), and arrive through one listening connection per store, re-established when it
//! drops (with [`RunChange::Missed`] after). On SQLite they come from this process. A change is
//! a hint to read the store again: subscribe, read the events after the last one you have,
//! then read again on each change.
//!
//! # Example
//!
//! ```
//! use std::time::Duration;
//! use conversation_tree::runs::{NewRun, RunEvent, RunMode, RunProtocol, RunStatus, RunStore, RunUpdate};
//! use conversation_tree::SqliteStore;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), conversation_tree::StoreError> {
//! let store = SqliteStore::open_in_memory().await?;
//! let spec = serde_json::json!({"model": "echo", "input": "Hi", "background": true});
//! let ttl = Duration::from_secs(15);
//! store
//!     .create_run(NewRun::new("resp_1", "token:4f1c", RunProtocol::Responses, RunMode::Background, spec))
//!     .await?;
//!
//! // One replica wins the run; another finds it held.
//! let lease = store.claim_run("resp_1", "replica-a", ttl).await?.expect("free");
//! assert!(store.claim_run("resp_1", "replica-b", ttl).await?.is_none());
//!
//! // The worker stores what it streams, in batches, and says how the run goes.
//! store.update_run("resp_1", RunUpdate::new().status(RunStatus::InProgress)).await?;
//! store.append_events("resp_1", &[RunEvent::new(0, "event: response.created\n\n")]).await?;
//! store.append_events("resp_1", &[RunEvent::new(1, "event: response.completed\n\n")]).await?;
//! store.renew_lease(&lease, ttl).await?;
//! store.update_run("resp_1", RunUpdate::new().status(RunStatus::Completed)).await?;
//!
//! // A client resuming after event 0 gets event 1, byte for byte; only the owner sees the run.
//! let replay = store.events_after("resp_1", Some(0), 100).await?;
//! assert_eq!(replay, [RunEvent::new(1, "event: response.completed\n\n")]);
//! assert!(store.run_of("resp_1", "token:other").await?.is_none());
//!
//! // A finished run stays finished.
//! let again = store.update_run("resp_1", RunUpdate::new().status(RunStatus::InProgress)).await;
//! assert!(again.is_err());
//! # Ok(())
//! # }
//! ```

mod events;
mod lease;
mod record;
pub(crate) mod row;
mod store;

#[cfg(feature = "postgres")]
pub(crate) use events::check_batch;
pub use events::{EventBatch, MAX_EVENT_PAGE, RunChange, RunChanges, RunEvent};
pub(crate) use events::{broadcast_changes, check_seqs};
pub use lease::{Clock, Lease, ManualClock, SystemClock};
pub(crate) use lease::{add, sub};
pub use record::{NewRun, PurgeReport, Run, RunMode, RunProtocol, RunStatus, RunUpdate};
pub use store::RunStore;

//! Runs, in flight and stored.
//!
//! - [`Runs`] (`local`): the runs in flight in this process: their cancel tokens, what a
//!   protocol shows of each while it runs, and the tracker graceful shutdown waits on. A run
//!   is a task of its own ([`Runs::spawn`]) or is polled by the connection of the client that
//!   reads it ([`Runs::attach`]), and becomes a task when that client leaves.
//! - [`RunRecords`]: the runs kept in the store, shared by every replica of one database:
//!   a run is created leased to this replica ([`RunRecords::start`]), its [`RunWorker`]
//!   renews the lease every third of its time to live and queues the run's events to the
//!   replica's event writer, which stores them off the served path; any replica reads it ([`RunRecords::get`]), follows its
//!   events live ([`RunRecords::follow`]) and cancels it ([`RunRecords::cancel`]).
//!
//! # A replica's tasks
//!
//! Each [`RunRecords`] has a name of its own (`replica-<uuid>`, logged at start) and these
//! tasks:
//!
//! - **cancel listener**: one subscription to the store's changes; a cancel asked for on any
//!   replica cancels the token of the run when this replica holds it. When notifications may
//!   have been lost, it reads again whether a held run was asked to stop.
//! - **takeover** (from the first [`RunRecords::on_takeover`]): every half lease (give or
//!   take a tenth), it claims runs whose lease expired or was released. A background run goes
//!   to its protocol's [`Resume`] (or, when this replica registered none for its protocol, is
//!   released for another); a foreground run, whose client was attached to the replica that
//!   stopped, ends `cancelled` with an error saying so; a run asked to stop ends `cancelled`.
//!   The first pass runs at once, so a SQLite server (one process) resumes at start the
//!   background runs a graceful stop released, and those of a killed process once their
//!   leases expire (within one `lease_ttl`).
//! - **expired approvals** (with the takeover, each pass): a run paused for approval
//!   ([`RunWorker::pause`]) waits unheld until someone decides ([`RunRecords::take_paused`],
//!   on any replica, once); one nobody decided about within `approval.timeout` is taken and
//!   handed to its protocol's [`Resume::expired`], which continues it with every pending call
//!   rejected ([`TIMED_OUT_REASON`]).
//! - **event writer** (from the first worker): stores the events every [`RunWorker`] pushes,
//!   many runs' in one transaction: a background run's within [`RunsConfig::batch`], a
//!   foreground run's within 250 ms (nobody reads them while it streams), a run's at once
//!   when it ends or pauses; each run's batch checked on its own: a
//!   run whose write collides with another replica's, or keeps failing, is given up alone.
//!   [`RunWorker::finish`] and [`RunWorker::pause`] wait until the run's events are stored.
//! - **retention**: at start and hourly, finished runs older than
//!   [`RunsConfig::retention`] are deleted with their events.
//!
//! A protocol's [`Resume`] continues an agent run below the last answer it logged
//! ([`last_answer`], [`continue_below`]): a model call in flight is made again, a tool call in
//! flight is answered by the integrity rules and never run twice.
//!
//! A worker whose lease renewal fails (another replica took the run) or whose event write
//! collides with another's cancels the run's token and writes nothing more.
//!
//! # Graceful stop
//!
//! [`Runs::shutdown`] lets runs finish for the grace period; then the background runs still
//! going are released instead of cancelled (their [`RunWorker::finish`] frees the lease and
//! keeps their status), so another replica, or this server at its next start, continues them
//! at once instead of waiting for the lease to expire. Foreground runs are cancelled, as
//! their clients are.
//!
//! # Example
//!
//! ```
//! use futures::StreamExt as _;
//! use service::{Principal, Service, ServiceConfig};
//! use service::runs::{NewRun, RunMode, RunProtocol, RunStatus};
//!
//! # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
//! let service = Service::open(ServiceConfig::default(), &[]).await?;
//! let records = service.run_records().expect("a store");
//! let owner = service.owner(Principal::SHARED);
//! let spec = serde_json::json!({"model": "echo", "input": "Hi"});
//! let worker = records
//!     .start(NewRun::new("resp_1", owner, RunProtocol::Responses, RunMode::Background, spec))
//!     .await?;
//! worker.in_progress().await?;
//! assert_eq!(worker.push("event: a\n\n"), 0);
//! assert_eq!(worker.push("event: b\n\n"), 1);
//! worker.finish(RunStatus::Completed, None).await?;
//!
//! // Any replica replays it to its owner, from where the client left.
//! let replay: Vec<_> = records.follow("resp_1", Principal::SHARED, Some(0)).collect().await;
//! assert_eq!(replay.len(), 1);
//! assert_eq!(replay[0].as_ref().unwrap().data, &b"event: b\n\n"[..]);
//! let run = records.get("resp_1", Principal::SHARED).await?.expect("kept");
//! assert_eq!(run.status, RunStatus::Completed);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```

mod attached;
pub(crate) mod config;
mod continuing;
mod follow;
mod local;
mod records;
mod tasks;
mod worker;
mod writer;

pub use attached::Attached;
pub use config::{DEFAULT_BATCH, DEFAULT_LEASE_TTL, DEFAULT_RETENTION, RunsConfig};
pub use continuing::{Continuing, continue_below, last_answer};
pub use local::{Ending, Registration, Runs};
pub use records::{Resume, RunRecords, TIMED_OUT_REASON};
pub use worker::RunWorker;

// The stored run's types, so that a protocol needs only this crate.
pub use conversation_tree::runs::{
    NewRun, Run, RunChange, RunEvent, RunMode, RunProtocol, RunStatus, RunUpdate,
};

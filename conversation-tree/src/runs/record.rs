//! The run record: its status and legal transitions, what creates it and what updates it.

use std::fmt;
use std::time::Duration;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use super::Lease;
use crate::NodeId;

/// Where a run is in its life. See the [module documentation](crate::runs) for the table of
/// transitions; [`RunStatus::can_become`] is that table.
///
/// Stored as its [`as_str`](Self::as_str) text, which is also OpenAI's spelling of a
/// Responses object's `status`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum RunStatus {
    /// Accepted, not started by a worker yet.
    Queued,
    /// A worker is answering.
    InProgress,
    /// Answered in full. Final.
    Completed,
    /// Stopped by an error ([`Run::error`] says which). Final.
    Failed,
    /// Stopped by a cancel. Final.
    Cancelled,
    /// Stopped by a limit (output tokens, rounds) with a partial answer. Final.
    Incomplete,
    /// Stopped before running tool calls that wait for a person's approval ([`Run::paused`]
    /// holds what resumes it). Not final: no replica holds it or takes it over; whoever the
    /// decisions reach takes it ([`RunStore::take_paused`](super::RunStore::take_paused)),
    /// and an undecided pause is taken when its time to decide ([`Run::decide_by`]) passes.
    Paused,
}

impl RunStatus {
    /// Every status, in the order of a run's life.
    pub const ALL: [RunStatus; 7] = [
        RunStatus::Queued,
        RunStatus::InProgress,
        RunStatus::Paused,
        RunStatus::Completed,
        RunStatus::Failed,
        RunStatus::Cancelled,
        RunStatus::Incomplete,
    ];

    /// The stored and shown name: `queued`, `in_progress`, `paused`, `completed`, `failed`,
    /// `cancelled`, `incomplete`.
    pub const fn as_str(self) -> &'static str {
        match self {
            RunStatus::Queued => "queued",
            RunStatus::InProgress => "in_progress",
            RunStatus::Completed => "completed",
            RunStatus::Failed => "failed",
            RunStatus::Cancelled => "cancelled",
            RunStatus::Incomplete => "incomplete",
            RunStatus::Paused => "paused",
        }
    }

    /// The status named `text` ([`as_str`](Self::as_str)), if any.
    pub fn parse(text: &str) -> Option<RunStatus> {
        RunStatus::ALL
            .into_iter()
            .find(|status| status.as_str() == text)
    }

    /// Whether the run is over: no transition leaves a terminal status.
    pub const fn is_terminal(self) -> bool {
        matches!(
            self,
            RunStatus::Completed | RunStatus::Failed | RunStatus::Cancelled | RunStatus::Incomplete
        )
    }

    /// Whether a run in this status may move to `to`: queued → in progress, failed or
    /// cancelled; in progress → paused or any terminal status; paused → in progress (taken
    /// to resume), failed or cancelled. Staying in a status is not a transition.
    pub const fn can_become(self, to: RunStatus) -> bool {
        match self {
            RunStatus::Queued | RunStatus::Paused => matches!(
                to,
                RunStatus::InProgress | RunStatus::Failed | RunStatus::Cancelled
            ),
            RunStatus::InProgress => to.is_terminal() || matches!(to, RunStatus::Paused),
            RunStatus::Completed
            | RunStatus::Failed
            | RunStatus::Cancelled
            | RunStatus::Incomplete => false,
        }
    }
}

impl fmt::Display for RunStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which front end a run answers, so a replica that takes it over replays the right protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum RunProtocol {
    /// Skein's Chat Shell protocol (`POST /v1/response`).
    ChatShell,
    /// OpenAI's Responses API (`POST /v1/responses`).
    Responses,
}

impl RunProtocol {
    /// The stored name: `chat_shell` or `responses`.
    pub const fn as_str(self) -> &'static str {
        match self {
            RunProtocol::ChatShell => "chat_shell",
            RunProtocol::Responses => "responses",
        }
    }

    pub(crate) fn parse(text: &str) -> Option<RunProtocol> {
        [RunProtocol::ChatShell, RunProtocol::Responses]
            .into_iter()
            .find(|protocol| protocol.as_str() == text)
    }
}

/// Whether a run lives on without its client.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunMode {
    /// Ends when its client leaves; a replica that finds it orphaned ends it instead of
    /// continuing it.
    Foreground,
    /// Goes on with no client attached; a replica that finds it orphaned continues it.
    Background,
}

impl RunMode {
    /// The stored name: `foreground` or `background`.
    pub const fn as_str(self) -> &'static str {
        match self {
            RunMode::Foreground => "foreground",
            RunMode::Background => "background",
        }
    }

    pub(crate) fn parse(text: &str) -> Option<RunMode> {
        [RunMode::Foreground, RunMode::Background]
            .into_iter()
            .find(|mode| mode.as_str() == text)
    }
}

/// A run to create with [`RunStore::create_run`](super::RunStore::create_run): queued, with no
/// events.
///
/// ```
/// use std::time::Duration;
/// use conversation_tree::runs::{NewRun, RunMode, RunProtocol};
///
/// let run = NewRun::new("resp_1", "token:4f1c", RunProtocol::Responses, RunMode::Background,
///     serde_json::json!({"model": "echo", "input": "Hi"}))
///     .leased_to("replica-a", Duration::from_secs(15));
/// assert_eq!(run.id(), "resp_1");
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct NewRun {
    pub(crate) id: String,
    pub(crate) owner: String,
    pub(crate) protocol: RunProtocol,
    pub(crate) mode: RunMode,
    pub(crate) spec: serde_json::Value,
    pub(crate) continues_from: Option<NodeId>,
    pub(crate) lease: Option<(String, Duration)>,
    /// Queued, or in progress from the start ([`NewRun::in_progress`]).
    pub(crate) status: RunStatus,
}

impl NewRun {
    /// The run `id` (the protocol's id, such as `resp_…`; 1 to 128 characters, no control
    /// character) of principal `owner` (the same opaque name as a conversation's owner, never
    /// a secret), answering `protocol`, with the request `spec` the service needs to run it
    /// again. The spec is stored in clear: it must hold no key or token.
    pub fn new(
        id: impl Into<String>,
        owner: impl Into<String>,
        protocol: RunProtocol,
        mode: RunMode,
        spec: serde_json::Value,
    ) -> Self {
        NewRun {
            id: id.into(),
            owner: owner.into(),
            protocol,
            mode,
            spec,
            continues_from: None,
            lease: None,
            status: RunStatus::Queued,
        }
    }

    /// Creates the run already [`InProgress`](RunStatus::InProgress) instead of queued: for a
    /// run that starts the moment it is stored, whose client waits for its first event, this
    /// saves the write that would move it there.
    #[must_use]
    pub fn in_progress(mut self) -> Self {
        self.status = RunStatus::InProgress;
        self
    }

    /// The conversation node the run continues from (`None`: a new conversation).
    #[must_use]
    pub fn continues_from(mut self, node: NodeId) -> Self {
        self.continues_from = Some(node);
        self
    }

    /// Creates the run already leased to `replica` for `ttl`, in the same transaction: no
    /// other replica can take a run over between its creation and its first claim.
    #[must_use]
    pub fn leased_to(mut self, replica: impl Into<String>, ttl: Duration) -> Self {
        self.lease = Some((replica.into(), ttl));
        self
    }

    /// The run's id.
    pub fn id(&self) -> &str {
        &self.id
    }
}

/// A stored run, as [`RunStore::run`](super::RunStore::run) reads it.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Run {
    /// The protocol's id of the run.
    pub id: String,
    /// The principal that started it: only it may read, resume or cancel it.
    pub owner: String,
    /// The front end it answers.
    pub protocol: RunProtocol,
    /// Whether it lives on without its client.
    pub mode: RunMode,
    /// Where it is in its life.
    pub status: RunStatus,
    /// The request it runs, as the service wrote it.
    pub spec: serde_json::Value,
    /// The node it continues from (`None`: a new conversation).
    pub continues_from: Option<NodeId>,
    /// The last node it recorded ([`RunUpdate::last_node`]): where a worker that takes it over
    /// continues.
    pub last_node: Option<NodeId>,
    /// Whether a cancel was asked for ([`RunStore::request_cancel`](super::RunStore::request_cancel)).
    pub cancel_requested: bool,
    /// Why it failed, when it did.
    pub error: Option<String>,
    /// When it was created.
    pub created: Timestamp,
    /// When its record last changed.
    pub updated: Timestamp,
    /// When it reached a terminal status.
    pub finished: Option<Timestamp>,
    /// The sequence number of its last stored event (`None`: none yet).
    pub last_seq: Option<u64>,
    /// Who holds it and until when; the lease may have expired. `None` when it is free.
    pub lease: Option<Lease>,
    /// What its protocol stored to resume it when it last paused for approval
    /// ([`RunUpdate::paused`]); kept once it is taken, until it pauses again.
    pub paused: Option<serde_json::Value>,
    /// When its last pause is answered as rejected if nobody decided by then.
    pub decide_by: Option<Timestamp>,
}

/// Changes to a run's record, applied by [`RunStore::update_run`](super::RunStore::update_run)
/// in one transaction.
///
/// ```
/// use conversation_tree::runs::{RunStatus, RunUpdate};
///
/// let failed = RunUpdate::new().status(RunStatus::Failed).error("the provider answered 500");
/// assert_eq!(failed.new_status(), Some(RunStatus::Failed));
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunUpdate {
    pub(crate) status: Option<RunStatus>,
    pub(crate) last_node: Option<NodeId>,
    pub(crate) error: Option<String>,
    pub(crate) pause: Option<Pause>,
}

/// What a pause stores: the protocol's document and how long a person has to decide.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Pause {
    pub(crate) document: serde_json::Value,
    pub(crate) decide_within: Duration,
}

impl RunUpdate {
    /// No change yet.
    pub fn new() -> Self {
        RunUpdate::default()
    }

    /// Moves the run to `status`, a legal transition from its current one
    /// ([`RunStatus::can_become`]). A run pauses with [`paused`](Self::paused) instead: asked
    /// here, `paused` is refused, since a paused run must say how to resume it.
    #[must_use]
    pub fn status(mut self, status: RunStatus) -> Self {
        self.status = Some(status);
        self.pause = None;
        self
    }

    /// Pauses the run until a person decides about its tool calls: `document` is what its
    /// protocol needs to resume it (stored in clear: no key or token), and a pause nobody
    /// decides within `decide_within` is taken by
    /// [`RunStore::take_expired_pause`](super::RunStore::take_expired_pause). The lease is
    /// freed: a paused run is no replica's.
    ///
    /// ```
    /// use std::time::Duration;
    /// use conversation_tree::runs::{RunStatus, RunUpdate};
    ///
    /// let pause = RunUpdate::new().paused(serde_json::json!({"pending": ["call_1"]}), Duration::from_secs(3600));
    /// assert_eq!(pause.new_status(), Some(RunStatus::Paused));
    /// ```
    #[must_use]
    pub fn paused(mut self, document: serde_json::Value, decide_within: Duration) -> Self {
        self.status = Some(RunStatus::Paused);
        self.pause = Some(Pause {
            document,
            decide_within,
        });
        self
    }

    /// Records the last node the run wrote to the tree.
    #[must_use]
    pub fn last_node(mut self, node: NodeId) -> Self {
        self.last_node = Some(node);
        self
    }

    /// Records why the run failed.
    #[must_use]
    pub fn error(mut self, error: impl Into<String>) -> Self {
        self.error = Some(error.into());
        self
    }

    /// The status this update moves the run to, if any.
    pub fn new_status(&self) -> Option<RunStatus> {
        self.status
    }
}

/// What [`RunStore::purge_runs`](super::RunStore::purge_runs) deleted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PurgeReport {
    /// Finished runs deleted with their events.
    pub runs: u64,
    /// Events deleted, those of deleted runs included.
    pub events: u64,
}

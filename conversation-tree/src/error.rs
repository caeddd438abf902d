//! The store's error type.

use std::error::Error as StdError;
use std::fmt;

use crate::NodeId;

/// Which database an error came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Backend {
    /// [`SqliteStore`](crate::SqliteStore).
    Sqlite,
    /// `PostgresStore` (feature `postgres`).
    Postgres,
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Backend::Sqlite => "SQLite",
            Backend::Postgres => "PostgreSQL",
        })
    }
}

/// Everything that can go wrong in this crate. Each message says what was wrong, where, and
/// what to do; none contains a password.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The file or database holds something other than a Skein store; it was left untouched.
    #[error(
        "{location} is not a Skein conversation store ({reason}); it was left untouched: \
         point Skein at a new file or database, or at an existing Skein store"
    )]
    NotAStore {
        /// The file path, or the PostgreSQL database.
        location: String,
        /// What gave it away.
        reason: String,
    },
    /// The store was written by a newer Skein; it was left untouched.
    #[error(
        "{location} has schema version {found}, but this build of Skein reads versions up to \
         {supported}; it was left untouched: upgrade Skein, or use another store"
    )]
    NewerSchema {
        /// The file path, or the PostgreSQL database.
        location: String,
        /// Schema version found.
        found: i64,
        /// Newest schema version this build knows.
        supported: i64,
    },
    /// A store opened read-only holds no Skein store yet (a missing or empty file, or a database
    /// without Skein's tables): a reader never creates one.
    #[error(
        "{location} holds no Skein conversation store yet ({reason}); opened read-only, it was \
         not created: the first command that logs a response creates it"
    )]
    NoStore {
        /// The file path, or the PostgreSQL database.
        location: String,
        /// What was found instead, e.g. `the file does not exist`.
        reason: String,
    },
    /// A store opened read-only has an older schema than this build reads: a reader does not
    /// upgrade it. It was left untouched.
    #[error(
        "{location} has schema version {found}, older than the version {current} this build \
         reads; opened read-only, it was not upgraded: run a command that writes to it once \
         (e.g. `skein run`, or open it with `SqliteStore::open` / `PostgresStore::connect`), \
         which upgrades it in place"
    )]
    OlderSchema {
        /// The file path, or the PostgreSQL database.
        location: String,
        /// Schema version found.
        found: i64,
        /// The schema version this build reads and writes.
        current: i64,
    },
    /// A write through a store opened read-only
    /// ([`SqliteStore::open_read_only`](crate::SqliteStore::open_read_only)).
    #[error(
        "{location} was opened read-only, so {operation} is not possible; open it for writing \
         (`SqliteStore::open`, `PostgresStore::connect`) to write"
    )]
    ReadOnly {
        /// The file path, or the PostgreSQL database.
        location: String,
        /// What the caller asked for, e.g. `"logging a response"`.
        operation: &'static str,
    },
    /// A conversation id was rejected.
    #[error("invalid conversation id {id:?}: {reason}; use 1 to 128 printable characters")]
    InvalidConversationId {
        /// The id as given.
        id: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A conversation owner name was rejected ([`Store::claim_conversation`](crate::Store::claim_conversation)).
    #[error(
        "invalid conversation owner ({owner_len} characters): {reason}; use 1 to 128 printable \
         characters, never a secret"
    )]
    InvalidOwner {
        /// Its length in characters (the name itself is not repeated: it may be sensitive).
        owner_len: usize,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A node label was rejected ([`NewResponse::label`](crate::NewResponse::label),
    /// [`Store::node_by_label`](crate::Store::node_by_label)).
    #[error(
        "invalid response label ({label_len} characters): {reason}; use 1 to 128 printable \
         characters, such as an id the front end minted"
    )]
    InvalidLabel {
        /// Its length in characters (the label itself is not repeated, as owners are not).
        label_len: usize,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A run id or replica name was rejected ([`RunStore`](crate::runs::RunStore)).
    #[error(
        "invalid {what} ({len} characters): {reason}; use 1 to 128 printable characters, such \
         as an id the front end minted"
    )]
    InvalidRunName {
        /// Which name: `run id` or `replica name`.
        what: &'static str,
        /// Its length in characters.
        len: usize,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A run id the store does not hold (never created, or purged).
    #[error(
        "run {run:?} does not exist in this store (never created, or purged after its \
         retention); check the id"
    )]
    UnknownRun {
        /// The run id.
        run: String,
    },
    /// A run created with an id the store holds already.
    #[error("run {run:?} exists already; mint a new id for a new run")]
    RunExists {
        /// The run id.
        run: String,
    },
    /// A status change the run's life does not allow; nothing was written.
    #[error(
        "run {run:?} cannot move from {from} to {to}: {}",
        if from.is_terminal() { "a finished run stays finished" } else { "see RunStatus::can_become for the legal transitions" }
    )]
    IllegalRunTransition {
        /// The run id.
        run: String,
        /// Its stored status.
        from: crate::runs::RunStatus,
        /// The status asked for.
        to: crate::runs::RunStatus,
    },
    /// An event numbered like one the run has already stored; nothing of the batch was
    /// written.
    #[error(
        "run {run:?} already has event {seq} (the next one is {expected}): another worker \
         wrote it; stop writing to this run"
    )]
    DuplicateEvent {
        /// The run id.
        run: String,
        /// The repeated number.
        seq: u64,
        /// The number the next event must have.
        expected: u64,
    },
    /// An event numbered past the next one; nothing of the batch was written.
    #[error(
        "run {run:?} would have a gap: event {found} came where {expected} was due; number \
         events without gaps from 0"
    )]
    EventGap {
        /// The run id.
        run: String,
        /// The number given.
        found: u64,
        /// The number the next event must have.
        expected: u64,
    },
    /// A lease that is no longer held: it expired, another replica took the run over, it was
    /// released, or the run finished.
    #[error(
        "the lease of {holder:?} on run {run:?} is no longer held (expired, taken over, \
         released, or the run finished): stop working on the run"
    )]
    LeaseLost {
        /// The run id.
        run: String,
        /// The replica that held it.
        holder: String,
    },
    /// A node id could not be parsed.
    #[error("invalid response id {text:?}: expected a positive integer such as 42")]
    InvalidNodeId {
        /// The text as given.
        text: String,
    },
    /// A node id that the store does not hold.
    #[error("response {id} does not exist in this store; list them with `skein logs`")]
    UnknownNode {
        /// The id.
        id: NodeId,
    },
    /// A parent named for a new node lives in another conversation.
    #[error(
        "response {parent} belongs to conversation {found:?}, not {expected:?}: a node's parent \
         must be in the same conversation"
    )]
    ParentInOtherConversation {
        /// The parent asked for.
        parent: NodeId,
        /// Its conversation.
        found: String,
        /// The conversation of the new node.
        expected: String,
    },
    /// Messages that do not form a turn: an AI message among a turn's input, or a response
    /// that is not an AI message.
    #[error("invalid turn: {reason}")]
    InvalidTurn {
        /// What is wrong, naming the message index.
        reason: String,
    },
    /// A value too large for the database (a token count above `i64::MAX`).
    #[error("{what} is too large to store ({value}); the limit is {}", i64::MAX)]
    OutOfRange {
        /// Which value.
        what: &'static str,
        /// The value.
        value: u64,
    },
    /// Stored data that cannot be read back; [`Store::verify`](crate::Store::verify) lists
    /// every such node.
    #[error(
        "stored {what} cannot be read: {reason}; run `Store::verify` to list every damaged row"
    )]
    Corrupt {
        /// Which row, e.g. `response 42`.
        what: String,
        /// What failed.
        reason: String,
    },
    /// The database stayed locked by another writer for longer than the busy timeout.
    #[error(
        "{location} stayed locked by another writer for more than {timeout_ms} ms while \
         {operation}; retry, or look for a process holding a long transaction"
    )]
    Busy {
        /// The file path.
        location: String,
        /// What the store was doing.
        operation: &'static str,
        /// The busy timeout.
        timeout_ms: u64,
    },
    /// Any other database error.
    #[error("{backend} failed while {operation}: {source}")]
    Database {
        /// Which database.
        backend: Backend,
        /// What the store was doing, e.g. `"logging a response"`.
        operation: &'static str,
        /// The driver's error.
        #[source]
        source: Box<dyn StdError + Send + Sync>,
    },
    /// A file-system error around the store file (creating its directory, reading it).
    #[error("cannot {operation} {path}: {source}")]
    Io {
        /// What the store was doing.
        operation: &'static str,
        /// The path.
        path: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The blocking task running a SQLite operation panicked or was cancelled.
    #[error("the SQLite worker task stopped while {operation}: {reason}")]
    Worker {
        /// What the store was doing.
        operation: &'static str,
        /// Why it stopped.
        reason: String,
    },
}

impl StoreError {
    pub(crate) fn database(
        backend: Backend,
        operation: &'static str,
        source: impl StdError + Send + Sync + 'static,
    ) -> Self {
        StoreError::Database {
            backend,
            operation,
            source: Box::new(source),
        }
    }
}

/// `Result` with [`StoreError`].
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// A store location fit to show: the password of a URL (`postgres://user:pass@host/db`)
/// replaced by `***`; anything else unchanged. Errors and logs name a location without its
/// secret.
///
/// ```
/// use conversation_tree::redact_location;
///
/// assert_eq!(redact_location("postgres://u:secret@h:5432/db"), "postgres://u:***@h:5432/db");
/// assert_eq!(redact_location("/var/lib/skein/logs.db"), "/var/lib/skein/logs.db");
/// ```
pub fn redact_location(location: &str) -> String {
    let Some((scheme, rest)) = location.split_once("://") else {
        return location.to_owned();
    };
    // Only the authority holds credentials: an `@` in the path is not one.
    let (authority, path) = match rest.find('/') {
        Some(slash) => rest.split_at(slash),
        None => (rest, ""),
    };
    let Some((userinfo, host)) = authority.rsplit_once('@') else {
        return location.to_owned();
    };
    match userinfo.split_once(':') {
        Some((user, _password)) => format!("{scheme}://{user}:***@{host}{path}"),
        None => location.to_owned(),
    }
}

//! `SqliteStore`: the embedded default, one file.
//!
//! rusqlite is synchronous, so every operation runs on tokio's blocking pool
//! (`spawn_blocking`), never on the async workers. One writer connection behind a mutex takes
//! all writes of this process (SQLite admits one writer at a time; queueing in-process avoids
//! its busy-wait backoff), and up to [`MAX_IDLE_READERS`] reader connections serve reads beside
//! it, which WAL mode allows. Other processes writing the same file wait up to
//! [`BUSY_TIMEOUT`] for the lock.
//!
//! A store opened with [`SqliteStore::open_read_only`] has no writer connection and only
//! read-only readers (see [`Inner::with_read_only`] for how they reach a file nobody else has
//! open without creating its `-wal` and `-shm` files).

mod cached;
mod run_events;
mod runs;
mod schema;
mod slots;
mod tx;

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use futures::FutureExt as _;
use messages::Message;
use rusqlite::{Connection, ErrorCode, OpenFlags, TransactionBehavior};

use crate::record::{self, NodeRow};
use crate::walk::{self, Mode, Plan, Progress, Step};
use crate::{
    Backend, Call, CallOptions, ConversationId, ConversationSummary, NewResponse, Node, NodeId,
    PathMatch, PathSummary, Result, Store, StoreError, Turn, VerifyReport,
};

use tx::SqliteTx;

/// How long a write waits for another process's write lock before failing with
/// [`StoreError::Busy`].
pub(crate) const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Reader connections kept open between reads.
const MAX_IDLE_READERS: usize = 4;

/// How often a read-only store reads a file nobody has open as an immutable file before it
/// joins the writer that keeps changing it (see [`Inner::with_read_only`]).
const IMMUTABLE_ATTEMPTS: usize = 3;

/// A conversation-tree store in one SQLite file (WAL mode), or in memory.
///
/// Opening a file checks it first without writing: a file that is not a Skein store, or that a
/// newer Skein wrote, is refused with [`StoreError::NotAStore`] or [`StoreError::NewerSchema`]
/// and left byte for byte as it was. A Skein store from an older version is upgraded in place
/// by the versioned migrations, in one transaction. Readers that must never write open it with
/// [`SqliteStore::open_read_only`] instead.
///
/// Cheap to clone: clones share the connections. Needs a tokio runtime (it uses
/// `spawn_blocking`).
#[derive(Clone)]
pub struct SqliteStore {
    inner: Arc<Inner>,
    /// The time of leases and retention ([`SqliteStore::with_clock`]).
    clock: Arc<dyn crate::runs::Clock>,
}

struct Inner {
    ctx: Ctx,
    /// `None` in memory, where every connection would be a separate database.
    path: Option<PathBuf>,
    /// `None` when opened read-only.
    writer: Option<Mutex<Connection>>,
    readers: Mutex<Vec<Connection>>,
    /// Changes to runs, told to this process's followers ([`crate::RunStore::run_changes`]).
    changes: tokio::sync::broadcast::Sender<crate::runs::RunChange>,
}

/// Where errors happened, for their messages.
#[derive(Clone, Debug)]
pub(crate) struct Ctx {
    location: Arc<str>,
}

impl Ctx {
    pub(crate) fn location(&self) -> &str {
        &self.location
    }

    /// Maps a rusqlite error met while doing `operation`.
    pub(crate) fn sql(&self, operation: &'static str) -> impl Fn(rusqlite::Error) -> StoreError {
        let location = self.location.clone();
        move |err| match err.sqlite_error_code() {
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => StoreError::Busy {
                location: location.to_string(),
                operation,
                timeout_ms: u64::try_from(BUSY_TIMEOUT.as_millis()).unwrap_or(u64::MAX),
            },
            _ => StoreError::database(Backend::Sqlite, operation, err),
        }
    }
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("location", &self.inner.ctx.location)
            .finish_non_exhaustive()
    }
}

impl SqliteStore {
    /// Opens the store at `path`, creating the file (and its directory) if missing and
    /// upgrading an older schema.
    pub async fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        let ctx = Ctx {
            location: path.display().to_string().into(),
        };
        blocking("opening the store", move || {
            let found = schema::inspect(&path, &ctx)?;
            if found == schema::Found::Empty
                && let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty())
            {
                std::fs::create_dir_all(dir).map_err(|source| StoreError::Io {
                    operation: "create the directory of",
                    path: path.display().to_string(),
                    source,
                })?;
            }
            let mut writer = Connection::open(&path).map_err(ctx.sql("opening the store"))?;
            schema::configure(&writer, &ctx, false)?;
            schema::migrate(&mut writer, &ctx)?;
            Ok(SqliteStore::from_writer(ctx, Some(path), writer))
        })
        .await
    }

    /// A store in memory, gone when the last clone is dropped: for tests and `--no-log` runs.
    pub async fn open_in_memory() -> Result<Self> {
        let ctx = Ctx {
            location: ":memory:".into(),
        };
        blocking("opening the store", move || {
            let mut writer = Connection::open_in_memory().map_err(ctx.sql("opening the store"))?;
            schema::configure(&writer, &ctx, true)?;
            schema::migrate(&mut writer, &ctx)?;
            Ok(SqliteStore::from_writer(ctx, None, writer))
        })
        .await
    }

    /// Opens the store at `path` for reading only: what commands that only read use
    /// (`skein logs`), so that they work on a file they may not write, beside a running
    /// writer, and never change the file.
    ///
    /// Nothing is written, ever. Every connection is opened with `SQLITE_OPEN_READ_ONLY`. A
    /// missing or empty file is [`StoreError::NoStore`] and is not created; a file an older
    /// Skein wrote is [`StoreError::OlderSchema`] and is not upgraded (a writing open such as
    /// [`SqliteStore::open`] upgrades it once); foreign and newer files are refused as by
    /// [`SqliteStore::open`]. Writes through the store fail with [`StoreError::ReadOnly`]:
    /// [`Store::log_response`] and [`Store::label_node`] always,
    /// [`Store::find_or_create_path`] when the messages would need a new branch or a cache-hit
    /// record (a walk through stored nodes only still answers).
    ///
    /// While another connection has the database open, its `-wal` and `-shm` files exist and
    /// readers join them like any WAL reader: they see the last committed state, do not block
    /// the writer, and wait up to 10 s for a lock (a writer in exclusive locking mode, a WAL
    /// recovery) instead of failing with "database is locked". While nobody has it open, the
    /// file alone holds every committed write: it is then read as an immutable file (SQLite's
    /// `immutable` URI parameter), which creates no `-wal` or `-shm` file, so a read-only file
    /// in a read-only directory can be read; the read is repeated if the file changed
    /// meanwhile (a writer started and checkpointed during it).
    ///
    /// # Example
    ///
    /// ```
    /// use conversation_tree::{
    ///     CallOptions, ConversationId, Message, NewResponse, SqliteStore, Store, StoreError,
    /// };
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), StoreError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("logs.db");
    /// // A missing file is an error, and is not created.
    /// let missing = SqliteStore::open_read_only(&path).await.unwrap_err();
    /// assert!(matches!(missing, StoreError::NoStore { .. }));
    /// assert!(!path.exists());
    ///
    /// // A writer logs a response ...
    /// let writer = SqliteStore::open(&path).await?;
    /// let conversation = ConversationId::random();
    /// let options = CallOptions::new("echo");
    /// let input = vec![Message::human("Capital of France?")];
    /// let answer = Message::ai("Paris");
    /// let response = NewResponse::new(conversation.clone(), None, input, answer, &options);
    /// writer.log_response(response.clone()).await?;
    ///
    /// // ... a reader lists it, damaged conversations included, and cannot write.
    /// let reader = SqliteStore::open_read_only(&path).await?;
    /// for summary in reader.conversations(10).await? {
    ///     match &summary.damaged {
    ///         Some(why) => println!("{} is damaged: {why}", summary.id),
    ///         None => println!("{}: {} responses", summary.id, summary.responses),
    ///     }
    /// }
    /// let refused = reader.log_response(response).await.unwrap_err();
    /// assert!(matches!(refused, StoreError::ReadOnly { .. }));
    /// # Ok(())
    /// # }
    /// ```
    pub async fn open_read_only(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        let ctx = Ctx {
            location: path.display().to_string().into(),
        };
        blocking("opening the store read-only", move || {
            let no_store = |reason: &str| StoreError::NoStore {
                location: ctx.location().to_owned(),
                reason: reason.to_owned(),
            };
            match std::fs::metadata(&path) {
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                    return Err(no_store("the file does not exist"));
                }
                Err(source) => {
                    return Err(StoreError::Io {
                        operation: "read",
                        path: path.display().to_string(),
                        source,
                    });
                }
                Ok(metadata) if metadata.is_dir() => {
                    return Err(ctx.not_a_store("it is a directory"));
                }
                Ok(metadata) if metadata.len() == 0 => return Err(no_store("the file is empty")),
                Ok(_) => {}
            }
            let store = SqliteStore::from_inner(Inner {
                ctx: ctx.clone(),
                path: Some(path),
                writer: None,
                readers: Mutex::new(Vec::new()),
                changes: tokio::sync::broadcast::Sender::new(runs::CHANGES_CAPACITY),
            });
            let found = store
                .inner
                .with_reader("opening the store read-only", schema::inspect_connection)?;
            match found {
                schema::Found::Empty => Err(no_store("the database has no tables yet")),
                schema::Found::Store(version) if version < schema::LATEST => {
                    Err(StoreError::OlderSchema {
                        location: ctx.location().to_owned(),
                        found: version,
                        current: schema::LATEST,
                    })
                }
                schema::Found::Store(_) => Ok(store),
            }
        })
        .await
    }

    fn from_writer(ctx: Ctx, path: Option<PathBuf>, writer: Connection) -> Self {
        SqliteStore::from_inner(Inner {
            ctx,
            path,
            writer: Some(Mutex::new(writer)),
            readers: Mutex::new(Vec::new()),
            changes: tokio::sync::broadcast::Sender::new(runs::CHANGES_CAPACITY),
        })
    }

    fn from_inner(inner: Inner) -> Self {
        SqliteStore {
            inner: Arc::new(inner),
            clock: Arc::new(crate::runs::SystemClock),
        }
    }

    /// Whether the store was opened with [`SqliteStore::open_read_only`].
    pub fn is_read_only(&self) -> bool {
        self.inner.writer.is_none()
    }

    /// The file the store lives in (`None` in memory).
    pub fn path(&self) -> Option<&Path> {
        self.inner.path.as_deref()
    }

    /// Runs `read` on a reader connection, on the blocking pool (more than once when a
    /// read-only store must read again, see [`Inner::with_read_only`]).
    async fn read<R, F>(&self, operation: &'static str, read: F) -> Result<R>
    where
        R: Send + 'static,
        F: Fn(&Connection, &Ctx) -> Result<R> + Send + 'static,
    {
        let inner = self.inner.clone();
        blocking(operation, move || inner.with_reader(operation, read)).await
    }

    /// Runs `write` on the writer connection, on the blocking pool.
    async fn write<R, F>(&self, operation: &'static str, write: F) -> Result<R>
    where
        R: Send + 'static,
        F: FnOnce(&mut Connection, &Ctx) -> Result<R> + Send + 'static,
    {
        let inner = self.inner.clone();
        blocking(operation, move || {
            let mut writer = inner.writer(operation)?;
            write(&mut writer, &inner.ctx)
        })
        .await
    }
}

impl Inner {
    /// The writer connection, locked; [`StoreError::ReadOnly`] for a read-only store.
    fn writer(&self, operation: &'static str) -> Result<std::sync::MutexGuard<'_, Connection>> {
        match &self.writer {
            Some(writer) => Ok(writer.lock().unwrap_or_else(PoisonError::into_inner)),
            None => Err(StoreError::ReadOnly {
                location: self.ctx.location().to_owned(),
                operation,
            }),
        }
    }

    fn with_reader<R>(
        &self,
        operation: &'static str,
        read: impl Fn(&Connection, &Ctx) -> Result<R>,
    ) -> Result<R> {
        let Some(path) = &self.path else {
            // In memory: the writer is the database.
            let writer = self.writer(operation)?;
            return read(&writer, &self.ctx);
        };
        if self.writer.is_none() {
            return self.with_read_only(path, operation, read);
        }
        self.with_pooled_reader(path, operation, read)
    }

    /// Reads through a read-only store. While another connection has the database open, its
    /// `-wal` and `-shm` files exist: read like any WAL reader, with locks and the busy
    /// timeout. While nobody has it open, there are none, and the file alone holds every
    /// committed write (the last connection to close checkpoints the WAL into it and deletes
    /// both files): read it as an immutable file, which needs no lock and creates neither file,
    /// so it works in a directory this process may not write. A writer that starts meanwhile
    /// writes to its new WAL and changes the file only when it checkpoints; if the file
    /// changed during the read, the read is repeated, and after [`IMMUTABLE_ATTEMPTS`] the
    /// reader joins the writer's WAL instead.
    fn with_read_only<R>(
        &self,
        path: &Path,
        operation: &'static str,
        read: impl Fn(&Connection, &Ctx) -> Result<R>,
    ) -> Result<R> {
        let io_error = |source| StoreError::Io {
            operation: "read",
            path: path.display().to_string(),
            source,
        };
        for _ in 0..IMMUTABLE_ATTEMPTS {
            if wal_files_exist(path) {
                break;
            }
            let before = FileStamp::of(path).map_err(io_error)?;
            let conn = open_immutable(path).map_err(|err| self.ctx.open_error(err))?;
            let result = read(&conn, &self.ctx);
            drop(conn);
            if FileStamp::of(path).map_err(io_error)? == before {
                return result;
            }
        }
        self.with_pooled_reader(path, operation, read)
    }

    fn with_pooled_reader<R>(
        &self,
        path: &Path,
        operation: &'static str,
        read: impl Fn(&Connection, &Ctx) -> Result<R>,
    ) -> Result<R> {
        let idle = self
            .readers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        let conn = match idle {
            Some(conn) => conn,
            None => self.open_reader(path).map_err(|err| match self.writer {
                Some(_) => self.ctx.sql(operation)(err),
                None => self.ctx.open_error(err),
            })?,
        };
        let result = read(&conn, &self.ctx);
        let mut readers = self.readers.lock().unwrap_or_else(PoisonError::into_inner);
        if readers.len() < MAX_IDLE_READERS {
            readers.push(conn);
        }
        result
    }

    fn open_reader(&self, path: &Path) -> rusqlite::Result<Connection> {
        let access = if self.writer.is_some() {
            OpenFlags::SQLITE_OPEN_READ_WRITE
        } else {
            OpenFlags::SQLITE_OPEN_READ_ONLY
        };
        let conn = Connection::open_with_flags(path, access | OpenFlags::SQLITE_OPEN_NO_MUTEX)?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        conn.pragma_update(None, "query_only", true)?;
        schema::tune(&conn)?;
        Ok(conn)
    }
}

/// Whether the database's `-wal` or `-shm` file exists: another connection has it open (or
/// one crashed with it open, leaving a WAL to recover).
fn wal_files_exist(path: &Path) -> bool {
    ["-wal", "-shm"].iter().any(|suffix| {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        // An error other than "not found" (a permission problem): assume it exists, and let
        // SQLite's own reader report what is wrong.
        !matches!(std::fs::symlink_metadata(name), Err(err) if err.kind() == std::io::ErrorKind::NotFound)
    })
}

/// What changes when anything writes the file.
#[derive(Debug, PartialEq, Eq)]
struct FileStamp {
    len: u64,
    modified: Option<SystemTime>,
    /// Device and inode: the file replaced by another.
    #[cfg(unix)]
    identity: (u64, u64),
}

impl FileStamp {
    fn of(path: &Path) -> std::io::Result<Self> {
        let metadata = std::fs::metadata(path)?;
        Ok(FileStamp {
            len: metadata.len(),
            modified: metadata.modified().ok(),
            #[cfg(unix)]
            identity: {
                use std::os::unix::fs::MetadataExt as _;
                (metadata.dev(), metadata.ino())
            },
        })
    }
}

/// A read-only connection to a file nobody has open, as an immutable file: no locks, no
/// `-wal` or `-shm` file. No memory map either: a writer could truncate the file under it.
fn open_immutable(path: &Path) -> rusqlite::Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_URI;
    let conn = Connection::open_with_flags(format!("{}?immutable=1", file_uri(path)), flags)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.pragma_update(None, "query_only", true)?;
    conn.pragma_update(None, "cache_size", -16 * 1024)?;
    Ok(conn)
}

/// `path` as a SQLite `file:` URI, every byte but unreserved ones and `/` percent-encoded.
fn file_uri(path: &Path) -> String {
    #[cfg(unix)]
    let bytes = {
        use std::os::unix::ffi::OsStrExt as _;
        path.as_os_str().as_bytes().to_vec()
    };
    #[cfg(not(unix))]
    let bytes = {
        // Windows: `C:\dir\file` is `file:/C:/dir/file`.
        let text = path.to_string_lossy().replace('\\', "/");
        let absolute = text.as_bytes().get(1) == Some(&b':');
        let text = if absolute { format!("/{text}") } else { text };
        text.into_bytes()
    };
    let mut uri = String::from("file:");
    for byte in bytes {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'/' | b'-' | b'.' | b'_' | b'~') {
            uri.push(char::from(byte));
        } else {
            uri.push_str(&format!("%{byte:02X}"));
        }
    }
    uri
}

/// Runs `work` on tokio's blocking pool.
async fn blocking<R: Send + 'static>(
    operation: &'static str,
    work: impl FnOnce() -> Result<R> + Send + 'static,
) -> Result<R> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|err| StoreError::Worker {
            operation,
            reason: err.to_string(),
        })?
}

/// Runs a shared algorithm over a [`SqliteTx`]: its statements are synchronous, so the future
/// is ready at once.
fn run_ready<F: Future>(operation: &'static str, future: F) -> Result<F::Output> {
    future.now_or_never().ok_or_else(|| StoreError::Worker {
        operation,
        reason: "a SQLite statement did not complete synchronously".to_owned(),
    })
}

#[async_trait]
impl Store for SqliteStore {
    async fn find_or_create_path_after(
        &self,
        conversation: &ConversationId,
        after: Option<NodeId>,
        messages: &[Message],
        options: &CallOptions,
    ) -> Result<PathMatch> {
        const OPERATION: &str = "matching a message array";
        let conversation = conversation.clone();
        let messages = messages.to_vec();
        let options = options.clone();
        let inner = self.inner.clone();
        blocking(OPERATION, move || {
            let plan = Plan::new(&messages, &options);
            let read = inner.with_reader(OPERATION, |conn, ctx| {
                let tx = conn.unchecked_transaction().map_err(ctx.sql(OPERATION))?;
                let stx = SqliteTx::new(&tx, ctx, OPERATION);
                let start = run_ready(OPERATION, Progress::after(&stx, &conversation, after))??;
                let walk = walk::walk(
                    &stx,
                    &conversation,
                    &messages,
                    &plan,
                    &options,
                    Mode::Read,
                    start,
                );
                run_ready(OPERATION, walk)?
            })?;
            let progress = match read {
                Step::Done(found) => return Ok(found),
                Step::NeedsWrite(progress) => progress,
            };
            // A read-only store answers a walk through stored nodes only.
            let mut writer = inner.writer(OPERATION)?;
            let sql = inner.ctx.sql(OPERATION);
            let tx = writer
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(&sql)?;
            let stx = SqliteTx::new(&tx, &inner.ctx, OPERATION);
            let mode = Mode::Write { at: record::now() };
            let walk = walk::walk(
                &stx,
                &conversation,
                &messages,
                &plan,
                &options,
                mode,
                progress,
            );
            let step = run_ready(OPERATION, walk)??;
            tx.commit().map_err(&sql)?;
            match step {
                Step::Done(found) => Ok(found),
                Step::NeedsWrite(_) => Err(StoreError::Worker {
                    operation: OPERATION,
                    reason: "a walk holding the write lock still asked for it".to_owned(),
                }),
            }
        })
        .await
    }

    async fn log_response(&self, response: NewResponse) -> Result<Node> {
        const OPERATION: &str = "logging a response";
        let now = record::now();
        self.write(OPERATION, move |conn, ctx| {
            let name = record::conversation_name(&response.input);
            // Hash and serialise before taking the write lock.
            let row = NodeRow::from_response(response, now)?;
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(ctx.sql(OPERATION))?;
            let stx = SqliteTx::new(&tx, ctx, OPERATION);
            let node = run_ready(OPERATION, walk::log(&stx, row, name.as_deref()))??;
            tx.commit().map_err(ctx.sql(OPERATION))?;
            Ok(node)
        })
        .await
    }

    async fn node(&self, id: NodeId) -> Result<Option<Node>> {
        self.read("reading a response", move |conn, ctx| {
            tx::node(conn, ctx, "reading a response", id)
        })
        .await
    }

    async fn node_by_label(&self, label: &str) -> Result<Option<Node>> {
        const OPERATION: &str = "finding a labelled response";
        crate::store::check_label(label)?;
        let label = label.to_owned();
        self.read(OPERATION, move |conn, ctx| {
            tx::node_by_label(conn, ctx, OPERATION, &label)
        })
        .await
    }

    async fn label_node(&self, label: &str, node: NodeId) -> Result<()> {
        const OPERATION: &str = "labelling a response";
        crate::store::check_label(label)?;
        let label = label.to_owned();
        self.write(OPERATION, move |conn, ctx| {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(ctx.sql(OPERATION))?;
            let stx = SqliteTx::new(&tx, ctx, OPERATION);
            run_ready(OPERATION, walk::label(&stx, &label, node))??;
            tx.commit().map_err(ctx.sql(OPERATION))
        })
        .await
    }

    async fn turn(&self, id: NodeId) -> Result<Turn> {
        self.read("reading a turn", move |conn, ctx| tx::turn(conn, ctx, id))
            .await
    }

    async fn children(&self, id: NodeId) -> Result<Vec<Node>> {
        self.read("listing children", move |conn, ctx| {
            tx::children(conn, ctx, id)
        })
        .await
    }

    async fn roots(&self, conversation: &ConversationId) -> Result<Vec<Node>> {
        let conversation = conversation.clone();
        self.read("listing roots", move |conn, ctx| {
            tx::roots(conn, ctx, &conversation)
        })
        .await
    }

    async fn path_to_root(&self, id: NodeId) -> Result<Vec<Node>> {
        self.read("reading a path", move |conn, ctx| {
            tx::path_to_root(conn, ctx, id)
        })
        .await
    }

    async fn messages_for_path(&self, id: NodeId) -> Result<Vec<Message>> {
        self.read("reading a path's messages", move |conn, ctx| {
            tx::messages_for_path(conn, ctx, id)
        })
        .await
    }

    async fn path_summary(&self, id: NodeId) -> Result<Option<PathSummary>> {
        self.read("reading a path's summary", move |conn, ctx| {
            tx::path_summary(conn, ctx, id)
        })
        .await
    }

    async fn conversations(&self, limit: usize) -> Result<Vec<ConversationSummary>> {
        self.read("listing conversations", move |conn, ctx| {
            tx::conversations(conn, ctx, None, limit)
        })
        .await
    }

    async fn conversation(&self, id: &ConversationId) -> Result<Option<ConversationSummary>> {
        let id = id.clone();
        self.read("reading a conversation", move |conn, ctx| {
            Ok(tx::conversations(conn, ctx, Some(&id), 1)?.pop())
        })
        .await
    }

    async fn conversation_nodes(&self, conversation: &ConversationId) -> Result<Vec<Node>> {
        let conversation = conversation.clone();
        self.read("listing a conversation", move |conn, ctx| {
            tx::conversation_nodes(conn, ctx, &conversation)
        })
        .await
    }

    async fn latest_node(&self, conversation: &ConversationId) -> Result<Option<Node>> {
        let conversation = conversation.clone();
        self.read("finding the latest response", move |conn, ctx| {
            tx::latest_node(conn, ctx, &conversation)
        })
        .await
    }

    async fn calls(&self, conversation: &ConversationId) -> Result<Vec<Call>> {
        let conversation = conversation.clone();
        self.read("listing calls", move |conn, ctx| {
            tx::calls(conn, ctx, &conversation)
        })
        .await
    }

    async fn claim_conversation(
        &self,
        conversation: &ConversationId,
        owner: &str,
    ) -> Result<crate::Claim> {
        const OPERATION: &str = "claiming a conversation";
        crate::store::check_owner(owner)?;
        let id = conversation.clone();
        let claimant = owner.to_owned();
        let stored = self
            .read(OPERATION, move |conn, ctx| {
                tx::conversation_owner(conn, ctx, OPERATION, &id)
            })
            .await?;
        if let Some(stored) = stored {
            return Ok(crate::Claim::of_stored(stored, owner));
        }
        // Missing: create it, unless another writer got there first.
        let id = conversation.clone();
        let now = record::now();
        self.write(OPERATION, move |conn, ctx| {
            tx::claim_conversation(conn, ctx, OPERATION, &id, &claimant, now)
        })
        .await
    }

    async fn lookup_path_hash(&self, path_hash: &str) -> Result<Vec<Node>> {
        let path_hash = path_hash.to_owned();
        self.read("looking up a path hash", move |conn, ctx| {
            tx::lookup_path_hash(conn, ctx, &path_hash)
        })
        .await
    }

    async fn verify(&self) -> Result<VerifyReport> {
        self.read("verifying the store", tx::verify).await
    }
}

#[cfg(test)]
mod read_only_tests;
#[cfg(test)]
mod tests;

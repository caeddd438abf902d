//! `SqliteStore`: the embedded default, one file.
//!
//! rusqlite is synchronous, so every operation runs on tokio's blocking pool
//! (`spawn_blocking`), never on the async workers. One writer connection behind a mutex takes
//! all writes of this process (SQLite admits one writer at a time; queueing in-process avoids
//! its busy-wait backoff), and up to [`MAX_IDLE_READERS`] reader connections serve reads beside
//! it, which WAL mode allows. Other processes writing the same file wait up to
//! [`BUSY_TIMEOUT`] for the lock.

mod schema;
mod tx;

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use futures::FutureExt as _;
use messages::Message;
use rusqlite::{Connection, ErrorCode, OpenFlags, TransactionBehavior};

use crate::record::{self, NodeRow};
use crate::walk::{self, Mode, Plan, Progress, Step};
use crate::{
    Backend, Call, CallOptions, ConversationId, ConversationSummary, NewResponse, Node, NodeId,
    PathMatch, Result, Store, StoreError, Turn, VerifyReport,
};

use tx::SqliteTx;

/// How long a write waits for another process's write lock before failing with
/// [`StoreError::Busy`].
pub(crate) const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Reader connections kept open between reads.
const MAX_IDLE_READERS: usize = 4;

/// A conversation-tree store in one SQLite file (WAL mode), or in memory.
///
/// Opening a file checks it first without writing: a file that is not a Skein store, or that a
/// newer Skein wrote, is refused with [`StoreError::NotAStore`] or [`StoreError::NewerSchema`]
/// and left byte for byte as it was. A Skein store from an older version is upgraded in place
/// by the versioned migrations, in one transaction.
///
/// Cheap to clone: clones share the connections. Needs a tokio runtime (it uses
/// `spawn_blocking`).
#[derive(Clone)]
pub struct SqliteStore {
    inner: Arc<Inner>,
}

struct Inner {
    ctx: Ctx,
    /// `None` in memory, where every connection would be a separate database.
    path: Option<PathBuf>,
    writer: Mutex<Connection>,
    readers: Mutex<Vec<Connection>>,
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

    fn from_writer(ctx: Ctx, path: Option<PathBuf>, writer: Connection) -> Self {
        SqliteStore {
            inner: Arc::new(Inner {
                ctx,
                path,
                writer: Mutex::new(writer),
                readers: Mutex::new(Vec::new()),
            }),
        }
    }

    /// The file the store lives in (`None` in memory).
    pub fn path(&self) -> Option<&Path> {
        self.inner.path.as_deref()
    }

    /// Runs `read` on a reader connection, on the blocking pool.
    async fn read<R, F>(&self, operation: &'static str, read: F) -> Result<R>
    where
        R: Send + 'static,
        F: FnOnce(&Connection, &Ctx) -> Result<R> + Send + 'static,
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
            let mut writer = inner.writer.lock().unwrap_or_else(PoisonError::into_inner);
            write(&mut writer, &inner.ctx)
        })
        .await
    }
}

impl Inner {
    fn with_reader<R>(
        &self,
        operation: &'static str,
        read: impl FnOnce(&Connection, &Ctx) -> Result<R>,
    ) -> Result<R> {
        let Some(path) = &self.path else {
            let writer = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
            return read(&writer, &self.ctx);
        };
        let idle = self
            .readers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        let conn = match idle {
            Some(conn) => conn,
            None => self.open_reader(path).map_err(self.ctx.sql(operation))?,
        };
        let result = read(&conn, &self.ctx);
        let mut readers = self.readers.lock().unwrap_or_else(PoisonError::into_inner);
        if readers.len() < MAX_IDLE_READERS {
            readers.push(conn);
        }
        result
    }

    fn open_reader(&self, path: &Path) -> rusqlite::Result<Connection> {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags)?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        conn.pragma_update(None, "query_only", true)?;
        schema::tune(&conn)?;
        Ok(conn)
    }
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
    async fn find_or_create_path(
        &self,
        conversation: &ConversationId,
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
                let walk = walk::walk(
                    &stx,
                    &conversation,
                    &messages,
                    &plan,
                    &options,
                    Mode::Read,
                    Progress::default(),
                );
                run_ready(OPERATION, walk)?
            })?;
            let progress = match read {
                Step::Done(found) => return Ok(found),
                Step::NeedsWrite(progress) => progress,
            };
            let mut writer = inner.writer.lock().unwrap_or_else(PoisonError::into_inner);
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
mod tests;

//! [`SqliteKnowledge`]: knowledge bases in the conversation store's SQLite file, searched with
//! FTS5 and BM25.
//!
//! The tables (`kb_meta`, `kb_bases`, `kb_documents` and the FTS5 table `kb_chunks`) sit beside
//! the conversation tree's in the same file. They are created with `IF NOT EXISTS` and
//! versioned by their own row in `kb_meta`: `PRAGMA user_version` and `application_id` belong
//! to the tree and are never read or written here. The conversation tree refuses a file that
//! has tables but not its `application_id`, so opening a file first opens it as a conversation
//! store ([`conversation_tree::SqliteStore::open`]), which creates, upgrades or refuses it;
//! the knowledge tables are added after.
//!
//! A document's chunks have consecutive rowids in `kb_chunks` (`kb_documents.first_chunk` and
//! `chunks` give the range), so replacing or removing a document deletes a rowid range instead
//! of scanning the index.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use conversation_tree::migrate::{self, Schema};
use rusqlite::{Connection, ErrorCode, OptionalExtension as _, TransactionBehavior, params};

use crate::KbError;
use crate::document::{Span, SpanKind};
use crate::error::{Backend, check_base_name};
use crate::storage::{Prepared, Search, Storage, blocking, count, schema, schema_error};
use crate::store::{AddReport, BaseSummary, Passage};

/// What opening a store is called in its errors.
const OPENING: &str = "opening the knowledge bases";

/// How long a write waits for another process's lock, as the conversation store does.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Reader connections kept open between reads.
const MAX_IDLE_READERS: usize = 4;

/// The knowledge tables in SQLite.
const SCHEMA: Schema = schema(&[SCHEMA_V1]);

/// Schema version 1.
const SCHEMA_V1: &str = "
CREATE TABLE IF NOT EXISTS kb_meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS kb_bases (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    created_utc TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS kb_documents (
    id INTEGER PRIMARY KEY,
    base_id INTEGER NOT NULL REFERENCES kb_bases (id),
    location TEXT NOT NULL,
    title TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('lines', 'pages')),
    first_chunk INTEGER NOT NULL,
    chunks INTEGER NOT NULL,
    added_utc TEXT NOT NULL,
    UNIQUE (base_id, location)
);
CREATE VIRTUAL TABLE IF NOT EXISTS kb_chunks USING fts5 (
    title,
    body,
    document_id UNINDEXED,
    span_start UNINDEXED,
    span_end UNINDEXED,
    tokenize = 'porter unicode61'
);
";

/// The current time as stored: RFC 3339, UTC, milliseconds.
const NOW: &str = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')";

/// Knowledge bases in a SQLite file (WAL mode), normally the conversation store's, or in
/// memory.
///
/// Used through [`KnowledgeStore`](crate::KnowledgeStore), which it converts into
/// (`KnowledgeStore::from`). rusqlite is synchronous: every operation runs on tokio's blocking
/// pool, so a tokio runtime is needed. One writer connection takes this process's writes; up
/// to four reader connections search beside it. Cheap to clone.
#[derive(Clone)]
pub struct SqliteKnowledge {
    inner: Arc<Inner>,
}

struct Inner {
    location: Arc<str>,
    /// `None` in memory, where every connection would be another database.
    path: Option<PathBuf>,
    writer: Mutex<Connection>,
    readers: Mutex<Vec<Connection>>,
}

impl std::fmt::Debug for SqliteKnowledge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteKnowledge")
            .field("location", &self.inner.location)
            .finish_non_exhaustive()
    }
}

impl SqliteKnowledge {
    /// Opens the knowledge bases in the SQLite file at `path`: the conversation store's file.
    ///
    /// The file is first opened as a conversation store, which creates it (and its directory)
    /// when missing, upgrades an older conversation schema, and refuses a file of another
    /// application or of a newer Skein ([`KbError::Store`], the file left untouched). Then the
    /// knowledge tables are created if missing, in one transaction; knowledge tables of a newer
    /// Skein are [`KbError::NewerSchema`].
    pub async fn open(path: impl AsRef<Path>) -> Result<Self, KbError> {
        let path = path.as_ref().to_path_buf();
        let location: Arc<str> = path.display().to_string().into();
        conversation_tree::SqliteStore::open(&path)
            .await
            .map_err(|source| KbError::Store {
                location: location.to_string(),
                source,
            })?;
        blocking(OPENING, move || {
            let writer = Connection::open(&path).map_err(sql(&location, OPENING))?;
            SqliteKnowledge::with_writer(writer, location, Some(path))
        })
        .await
    }

    /// Knowledge bases in memory, gone when the last clone is dropped: for tests and examples.
    pub async fn open_in_memory() -> Result<Self, KbError> {
        let location: Arc<str> = ":memory:".into();
        blocking(OPENING, move || {
            let writer = Connection::open_in_memory().map_err(sql(&location, OPENING))?;
            SqliteKnowledge::with_writer(writer, location, None)
        })
        .await
    }

    /// The store around its writer connection, configured and migrated; `path` is `None` in
    /// memory.
    fn with_writer(
        mut writer: Connection,
        location: Arc<str>,
        path: Option<PathBuf>,
    ) -> Result<Self, KbError> {
        configure(&writer, &location, path.is_some())?;
        migrate(&mut writer, &location)?;
        Ok(SqliteKnowledge {
            inner: Arc::new(Inner {
                location,
                path,
                writer: Mutex::new(writer),
                readers: Mutex::new(Vec::new()),
            }),
        })
    }

    /// The file's path as given, or `:memory:`.
    pub fn location(&self) -> &str {
        &self.inner.location
    }

    /// Runs `f` on a reader connection (the writer, in memory) on the blocking pool.
    async fn read<T: Send + 'static>(
        &self,
        operation: &'static str,
        f: impl FnOnce(&Connection, &str) -> Result<T, KbError> + Send + 'static,
    ) -> Result<T, KbError> {
        let inner = self.inner.clone();
        blocking(operation, move || {
            let Some(path) = &inner.path else {
                let writer = inner.writer.lock().unwrap_or_else(PoisonError::into_inner);
                return f(&writer, &inner.location);
            };
            let idle = inner
                .readers
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .pop();
            let reader = match idle {
                Some(reader) => reader,
                None => {
                    let reader = Connection::open(path).map_err(sql(&inner.location, operation))?;
                    configure(&reader, &inner.location, false)?;
                    reader
                }
            };
            let result = f(&reader, &inner.location);
            let mut readers = inner.readers.lock().unwrap_or_else(PoisonError::into_inner);
            if readers.len() < MAX_IDLE_READERS {
                readers.push(reader);
            }
            result
        })
        .await
    }
}

#[async_trait]
impl Storage for SqliteKnowledge {
    fn location(&self) -> &str {
        SqliteKnowledge::location(self)
    }

    async fn add(&self, base: &str, prepared: Vec<Prepared>) -> Result<AddReport, KbError> {
        let base = base.to_owned();
        let inner = self.inner.clone();
        blocking("adding documents", move || {
            let sql = sql(&inner.location, "adding documents");
            let mut writer = inner.writer.lock().unwrap_or_else(PoisonError::into_inner);
            let tx = writer
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(&sql)?;
            tx.execute(
                &format!(
                    "INSERT INTO kb_bases (name, created_utc) VALUES (?1, {NOW})
                     ON CONFLICT (name) DO NOTHING"
                ),
                [&base],
            )
            .map_err(&sql)?;
            let base_id: i64 = tx
                .query_row("SELECT id FROM kb_bases WHERE name = ?1", [&base], |row| {
                    row.get(0)
                })
                .map_err(&sql)?;
            let mut next_rowid: i64 = tx
                .query_row(
                    "SELECT coalesce((SELECT rowid FROM kb_chunks ORDER BY rowid DESC LIMIT 1), 0)",
                    [],
                    |row| row.get(0),
                )
                .map_err(&sql)?;
            next_rowid += 1;
            let mut report = AddReport::default();
            for document in prepared {
                let existing: Option<(i64, i64, i64)> = tx
                    .query_row(
                        "SELECT id, first_chunk, chunks FROM kb_documents
                         WHERE base_id = ?1 AND location = ?2",
                        params![base_id, document.location],
                        |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
                    )
                    .optional()
                    .map_err(&sql)?;
                if let Some((id, first, chunks)) = existing {
                    delete_chunks(&tx, first, chunks).map_err(&sql)?;
                    tx.execute("DELETE FROM kb_documents WHERE id = ?1", [id])
                        .map_err(&sql)?;
                    report.replaced += 1;
                }
                let count = i64::try_from(document.chunks.len()).unwrap_or(i64::MAX);
                tx.execute(
                    &format!(
                        "INSERT INTO kb_documents
                         (base_id, location, title, kind, first_chunk, chunks, added_utc)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, {NOW})"
                    ),
                    params![
                        base_id,
                        document.location,
                        document.title,
                        document.kind,
                        next_rowid,
                        count
                    ],
                )
                .map_err(&sql)?;
                let document_id = tx.last_insert_rowid();
                let mut insert = tx
                    .prepare_cached(
                        "INSERT INTO kb_chunks
                         (rowid, title, body, document_id, span_start, span_end)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                    )
                    .map_err(&sql)?;
                for (span, text) in &document.chunks {
                    insert
                        .execute(params![
                            next_rowid,
                            document.title,
                            text,
                            document_id,
                            span.start,
                            span.end
                        ])
                        .map_err(&sql)?;
                    next_rowid += 1;
                }
                drop(insert);
                report.documents += 1;
                report.chunks += document.chunks.len();
                if document.chunks.is_empty() {
                    report.empty.push(document.location);
                }
            }
            tx.commit().map_err(&sql)?;
            Ok(report)
        })
        .await
    }

    async fn candidates(&self, search: Search) -> Result<Vec<Passage>, KbError> {
        self.read("searching", move |conn, location| {
            let sql = sql(location, "searching");
            if !search.admit(&known_bases(conn).map_err(&sql)?)? {
                return Ok(Vec::new());
            }
            let bases_json =
                serde_json::to_string(&search.bases).unwrap_or_else(|_| "[]".to_owned());
            // kb_chunks drives the join (CROSS JOIN fixes the order): the full-text match runs
            // once, not once per document.
            let mut statement = conn
                .prepare_cached(
                    "SELECT b.name, d.title, d.location, d.kind, kb_chunks.span_start,
                            kb_chunks.span_end, kb_chunks.body, bm25(kb_chunks, 0.5, 1.0) AS rank
                     FROM kb_chunks
                     CROSS JOIN kb_documents AS d ON d.id = kb_chunks.document_id
                     CROSS JOIN kb_bases AS b ON b.id = d.base_id
                     WHERE kb_chunks MATCH ?1 AND b.name IN (SELECT value FROM json_each(?2))
                     ORDER BY rank, kb_chunks.rowid
                     LIMIT ?3",
                )
                .map_err(&sql)?;
            let rows = statement
                .query_map(
                    params![search.phrases.fts5(), bases_json, search.wanted()],
                    |row| {
                        let kind =
                            SpanKind::parse(&row.get::<_, String>(3)?).unwrap_or(SpanKind::Lines);
                        let span = Span {
                            kind,
                            start: row.get(4)?,
                            end: row.get(5)?,
                        };
                        let document: String = row.get(2)?;
                        Ok(Passage {
                            base: row.get(0)?,
                            title: row.get(1)?,
                            location: format!("{document}:{span}"),
                            document,
                            span,
                            text: row.get(6)?,
                            score: -row.get::<_, f64>(7)?,
                        })
                    },
                )
                .map_err(&sql)?;
            rows.collect::<Result<Vec<_>, _>>().map_err(&sql)
        })
        .await
    }

    async fn list(&self) -> Result<Vec<BaseSummary>, KbError> {
        self.read("listing knowledge bases", |conn, location| {
            let sql = sql(location, "listing knowledge bases");
            let mut statement = conn
                .prepare_cached(
                    "SELECT b.name, count(d.id), coalesce(sum(d.chunks), 0)
                     FROM kb_bases AS b LEFT JOIN kb_documents AS d ON d.base_id = b.id
                     GROUP BY b.id ORDER BY b.name",
                )
                .map_err(&sql)?;
            let rows = statement
                .query_map([], |row| {
                    Ok(BaseSummary {
                        name: row.get(0)?,
                        documents: count(row.get(1)?),
                        chunks: count(row.get(2)?),
                    })
                })
                .map_err(&sql)?;
            rows.collect::<Result<Vec<_>, _>>().map_err(&sql)
        })
        .await
    }

    async fn remove(&self, base: &str) -> Result<BaseSummary, KbError> {
        let base = base.to_owned();
        let inner = self.inner.clone();
        blocking("removing a knowledge base", move || {
            let sql = sql(&inner.location, "removing a knowledge base");
            let mut writer = inner.writer.lock().unwrap_or_else(PoisonError::into_inner);
            let tx = writer
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(&sql)?;
            let base_id: Option<i64> = tx
                .query_row("SELECT id FROM kb_bases WHERE name = ?1", [&base], |row| {
                    row.get(0)
                })
                .optional()
                .map_err(&sql)?;
            let Some(base_id) = base_id else {
                let known = known_bases(&tx).map_err(&sql)?;
                check_base_name(&base)?;
                return Err(KbError::UnknownBase { name: base, known });
            };
            let documents: Vec<(i64, i64)> = {
                let mut statement = tx
                    .prepare("SELECT first_chunk, chunks FROM kb_documents WHERE base_id = ?1")
                    .map_err(&sql)?;
                let rows = statement
                    .query_map([base_id], |row| Ok((row.get(0)?, row.get(1)?)))
                    .map_err(&sql)?;
                rows.collect::<Result<_, _>>().map_err(&sql)?
            };
            let mut summary = BaseSummary {
                name: base,
                documents: documents.len(),
                chunks: 0,
            };
            for (first, chunks) in documents {
                delete_chunks(&tx, first, chunks).map_err(&sql)?;
                summary.chunks += usize::try_from(chunks).unwrap_or(0);
            }
            tx.execute("DELETE FROM kb_documents WHERE base_id = ?1", [base_id])
                .map_err(&sql)?;
            tx.execute("DELETE FROM kb_bases WHERE id = ?1", [base_id])
                .map_err(&sql)?;
            tx.commit().map_err(&sql)?;
            Ok(summary)
        })
        .await
    }
}

/// Deletes the `count` chunks whose rowids start at `first`.
fn delete_chunks(conn: &Connection, first: i64, count: i64) -> rusqlite::Result<()> {
    if count > 0 {
        conn.execute(
            "DELETE FROM kb_chunks WHERE rowid BETWEEN ?1 AND ?2",
            [first, first + count - 1],
        )?;
    }
    Ok(())
}

fn known_bases(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let mut statement = conn.prepare_cached("SELECT name FROM kb_bases ORDER BY name")?;
    let rows = statement.query_map([], |row| row.get(0))?;
    rows.collect()
}

/// Per-connection settings: the busy timeout, foreign keys, and for the file's first
/// connection WAL mode (the conversation store has set it already; it persists in the file).
fn configure(conn: &Connection, location: &str, writer: bool) -> Result<(), KbError> {
    let sql = sql(location, "configuring the connection");
    conn.busy_timeout(BUSY_TIMEOUT).map_err(&sql)?;
    conn.pragma_update(None, "foreign_keys", true)
        .map_err(&sql)?;
    if writer && location != ":memory:" {
        let mode: String = conn
            .pragma_update_and_check(None, "journal_mode", "wal", |row| row.get(0))
            .map_err(&sql)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(KbError::NotAStore {
                location: location.to_owned(),
                reason: format!("it cannot use WAL mode (stays in {mode} mode)"),
            });
        }
        conn.pragma_update(None, "synchronous", "normal")
            .map_err(&sql)?;
    }
    conn.set_prepared_statement_cache_capacity(16);
    Ok(())
}

/// Creates the knowledge tables or checks their version; one write transaction, taken only
/// when something is to be written.
fn migrate(conn: &mut Connection, location: &str) -> Result<(), KbError> {
    migrate::sqlite::migrate(conn, &SCHEMA).map_err(|error| {
        schema_error(
            location,
            error,
            sql(location, "creating the knowledge tables"),
        )
    })?;
    Ok(())
}

/// Maps a rusqlite error met while doing `operation`.
fn sql(location: &str, operation: &'static str) -> impl Fn(rusqlite::Error) -> KbError {
    let location = location.to_owned();
    move |error| match error.sqlite_error_code() {
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => KbError::Busy {
            location: location.clone(),
            operation,
            timeout_ms: u64::try_from(BUSY_TIMEOUT.as_millis()).unwrap_or(u64::MAX),
        },
        _ => KbError::database(Backend::Sqlite, operation, error),
    }
}

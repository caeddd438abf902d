//! The SQLite schema: versioned migrations, and the checks that refuse foreign or newer files.
//!
//! The file is marked as Skein's by SQLite's `application_id` header field; `user_version`
//! holds the schema version (the number of migrations applied). A file is inspected read-only
//! before anything writes to it, so a file that is refused is left byte for byte as it was.

use std::path::Path;

use rusqlite::config::DbConfig;
use rusqlite::{Connection, ErrorCode, OpenFlags, TransactionBehavior};

use crate::{Result, StoreError};

use super::Ctx;

/// `application_id` of a Skein store: "SKEN".
pub(crate) const APPLICATION_ID: i32 = 0x534B_454E;

/// One schema step. Steps are applied in order, each once, inside one transaction per open.
pub(crate) struct Migration {
    pub(crate) version: i64,
    pub(crate) sql: &'static str,
}

/// Every migration, oldest first. Never edit a released one: add a new one.
pub(crate) const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        sql: include_str!("migrations/001_tree.sql"),
    },
    Migration {
        version: 2,
        sql: include_str!("migrations/002_calls.sql"),
    },
    Migration {
        version: 3,
        sql: include_str!("migrations/003_status.sql"),
    },
    Migration {
        version: 4,
        sql: include_str!("migrations/004_owner.sql"),
    },
    Migration {
        version: 5,
        sql: include_str!("migrations/005_labels.sql"),
    },
    Migration {
        version: 6,
        sql: include_str!("migrations/006_summaries.sql"),
    },
    Migration {
        version: 7,
        sql: include_str!("migrations/007_ttft.sql"),
    },
    Migration {
        version: 8,
        sql: include_str!("migrations/008_metadata.sql"),
    },
    Migration {
        version: 9,
        sql: include_str!("migrations/009_runs.sql"),
    },
    Migration {
        version: 10,
        sql: include_str!("migrations/010_token_slots.sql"),
    },
    Migration {
        version: 11,
        sql: include_str!("migrations/011_paused_runs.sql"),
    },
    Migration {
        version: 12,
        sql: include_str!("migrations/012_event_batches.sql"),
    },
];

/// The schema version this build writes.
pub(crate) const LATEST: i64 = MIGRATIONS.len() as i64;

/// What an existing file holds.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Found {
    /// Nothing yet: a missing or empty file, or a SQLite database without tables.
    Empty,
    /// A Skein store at this schema version.
    Store(i64),
}

/// Looks at `path` without writing to it.
pub(crate) fn inspect(path: &Path, ctx: &Ctx) -> Result<Found> {
    let metadata = match std::fs::metadata(path) {
        Ok(metadata) => metadata,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Found::Empty),
        Err(source) => {
            return Err(StoreError::Io {
                operation: "read",
                path: path.display().to_string(),
                source,
            });
        }
    };
    if metadata.is_dir() {
        return Err(ctx.not_a_store("it is a directory"));
    }
    if metadata.len() == 0 {
        return Ok(Found::Empty);
    }
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags).map_err(|err| ctx.open_error(err))?;
    inspect_connection(&conn, ctx)
}

/// Looks at the database `conn` reads, without writing to it.
pub(crate) fn inspect_connection(conn: &Connection, ctx: &Ctx) -> Result<Found> {
    let header = conn.query_row(
        "SELECT (SELECT application_id FROM pragma_application_id()),
                (SELECT user_version FROM pragma_user_version()),
                (SELECT count(*) FROM sqlite_schema)",
        [],
        |row| {
            Ok((
                row.get::<_, i32>(0)?,
                row.get::<_, i64>(1)?,
                row.get::<_, i64>(2)?,
            ))
        },
    );
    let (application_id, version, objects) = header.map_err(|err| ctx.open_error(err))?;
    classify(application_id, version, objects, ctx)
}

fn classify(application_id: i32, version: i64, objects: i64, ctx: &Ctx) -> Result<Found> {
    if application_id == 0 && objects == 0 {
        return Ok(Found::Empty);
    }
    if application_id != APPLICATION_ID {
        return Err(ctx.not_a_store(&format!(
            "it is a SQLite database of another application (application_id {application_id:#x}, \
             {objects} tables and indexes)"
        )));
    }
    if version > LATEST {
        return Err(StoreError::NewerSchema {
            location: ctx.location().to_owned(),
            found: version,
            supported: LATEST,
        });
    }
    Ok(Found::Store(version))
}

/// Sets the per-connection pragmas of a read-write connection.
pub(crate) fn configure(conn: &Connection, ctx: &Ctx, in_memory: bool) -> Result<()> {
    let sql = ctx.sql("configuring the connection");
    conn.busy_timeout(super::BUSY_TIMEOUT).map_err(&sql)?;
    conn.pragma_update(None, "foreign_keys", true)
        .map_err(&sql)?;
    if !in_memory {
        // WAL: readers do not block the writer nor it them. NORMAL sync is safe in WAL mode:
        // a killed process loses nothing committed; only a power cut can lose the last commits.
        let mode: String = conn
            .pragma_update_and_check(None, "journal_mode", "wal", |row| row.get(0))
            .map_err(&sql)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(ctx.not_a_store(&format!("it cannot use WAL mode (stays in {mode} mode)")));
        }
        conn.pragma_update(None, "synchronous", "normal")
            .map_err(&sql)?;
    }
    tune(conn).map_err(&sql)?;
    Ok(())
}

/// Settings of every connection, readers included: reads through a memory map instead of one
/// system call per page, a larger page cache, room in the statement cache for every statement
/// the store runs per request, and one query plan per statement.
///
/// The bundled SQLite may plan a statement anew for the values bound to it, and marks such a
/// statement to be compiled again whenever those values change: a cached statement whose
/// parameters differ on every request (a node id, a run id, a flag in a `CASE`) would then be
/// compiled on every request anyway. Our tables carry no planner statistics, so the plan made
/// once is the plan it would make again.
pub(crate) fn tune(conn: &Connection) -> rusqlite::Result<()> {
    conn.pragma_update(None, "mmap_size", 256 * 1024 * 1024)?;
    conn.pragma_update(None, "cache_size", -16 * 1024)?;
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    Ok(())
}

/// Statements each connection keeps compiled: more than the store has (about 50, counting
/// each variant of a query built from parts), so that none is evicted and compiled again.
const STATEMENT_CACHE: usize = 96;

/// Brings the schema to [`LATEST`] in one write transaction; returns the version it found.
pub(crate) fn migrate(conn: &mut Connection, ctx: &Ctx) -> Result<i64> {
    migrate_to(conn, ctx, LATEST)
}

/// Brings the schema to `target` (tests build older files with it).
pub(crate) fn migrate_to(conn: &mut Connection, ctx: &Ctx, target: i64) -> Result<i64> {
    let sql = ctx.sql("upgrading the schema");
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(&sql)?;
    // Read again under the write lock: another process may have migrated since `inspect`.
    let (application_id, version, objects) = tx
        .query_row(
            "SELECT (SELECT application_id FROM pragma_application_id()),
                    (SELECT user_version FROM pragma_user_version()),
                    (SELECT count(*) FROM sqlite_schema)",
            [],
            |row| {
                Ok((
                    row.get::<_, i32>(0)?,
                    row.get::<_, i64>(1)?,
                    row.get::<_, i64>(2)?,
                ))
            },
        )
        .map_err(&sql)?;
    let found = match classify(application_id, version, objects, ctx)? {
        Found::Empty => 0,
        Found::Store(version) => version,
    };
    for migration in MIGRATIONS
        .iter()
        .filter(|migration| migration.version > found && migration.version <= target)
    {
        tx.execute_batch(migration.sql).map_err(&sql)?;
        tx.pragma_update(None, "user_version", migration.version)
            .map_err(&sql)?;
    }
    if found == 0 {
        tx.pragma_update(None, "application_id", APPLICATION_ID)
            .map_err(&sql)?;
    }
    tx.commit().map_err(&sql)?;
    Ok(found)
}

impl Ctx {
    pub(super) fn not_a_store(&self, reason: &str) -> StoreError {
        StoreError::NotAStore {
            location: self.location().to_owned(),
            reason: reason.to_owned(),
        }
    }

    /// An error opening or inspecting the file: "not a database" is a refusal, not a crash.
    pub(super) fn open_error(&self, err: rusqlite::Error) -> StoreError {
        match err.sqlite_error_code() {
            Some(ErrorCode::NotADatabase) => self.not_a_store("it is not a SQLite database"),
            _ => self.sql("opening the store")(err),
        }
    }
}

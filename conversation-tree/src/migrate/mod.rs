//! Versioned schemas recorded in a meta table: the one migration runner of Skein's stores.
//!
//! A [`Schema`] names what a set of tables is (its meta table, the application it records, the
//! tables its migrations create) and lists its migrations. The runners apply the migrations a
//! database lacks, in one transaction, and refuse a database that is not theirs:
//!
//! - tables of the schema without its meta table belong to another application
//!   ([`Refusal::ForeignTable`]);
//! - a meta table naming another application, or no readable version, is another
//!   application's ([`Refusal::ForeignMeta`], [`Refusal::UnreadableVersion`]);
//! - a version newer than the last migration was written by a newer Skein
//!   ([`Refusal::Newer`]).
//!
//! A refusal rolls the transaction back, so a refused database is left as it was.
//!
//! The meta table has two rows, `application` and `schema_version` (the number of migrations
//! applied, as text). The PostgreSQL conversation store records itself in `skein_meta`, the
//! knowledge bases in `kb_meta`, on both backends. The SQLite conversation store is the
//! exception: its version lives in the file's header (`application_id`, `user_version`), so a
//! file that is not a SQLite store of ours is told apart before any table is read.
//!
//! Runners: [`postgres`] (feature `postgres`) and [`sqlite`].
//!
//! ```
//! use conversation_tree::migrate::{Schema, sqlite};
//!
//! const NOTES: Schema = Schema {
//!     holds: "notes of the example",
//!     meta_table: "notes_meta",
//!     application: "example-notes",
//!     tables: &["notes"],
//!     migrations: &[
//!         "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL);",
//!         "ALTER TABLE notes ADD COLUMN title TEXT;",
//!     ],
//!     lock: 0x4558_414D_504C_4531,
//! };
//!
//! let mut conn = rusqlite::Connection::open_in_memory().unwrap();
//! assert_eq!(sqlite::migrate(&mut conn, &NOTES).unwrap(), 0); // a new database
//! assert_eq!(sqlite::migrate(&mut conn, &NOTES).unwrap(), 2); // already up to date
//! assert_eq!(sqlite::version(&conn, &NOTES).unwrap(), Some(2));
//! ```

#[cfg(feature = "postgres")]
pub mod postgres;
pub mod sqlite;

/// A versioned set of tables, recorded in a meta table of its own.
#[derive(Clone, Copy, Debug)]
pub struct Schema {
    /// What the tables hold, for people: `a Skein conversation store`, `Skein knowledge
    /// bases` (a refusal says the meta table "does not name" it).
    pub holds: &'static str,
    /// The table that records the application and the schema version (`key`, `value`).
    pub meta_table: &'static str,
    /// The `application` value that marks the meta table as this schema's.
    pub application: &'static str,
    /// The tables the migrations create: finding one of them without the meta table means it
    /// belongs to another application.
    pub tables: &'static [&'static str],
    /// Every migration, oldest first; a migration's version is its position plus one. Never
    /// edit a released one: add a new one.
    pub migrations: &'static [&'static str],
    /// The key of the PostgreSQL advisory lock that serialises this schema's migrations, so
    /// that replicas starting together migrate once. Keep it stable across releases: an old
    /// and a new build must take the same lock. (SQLite takes the file's write lock instead.)
    pub lock: i64,
}

impl Schema {
    /// The schema version this build writes: the number of migrations.
    pub const fn latest(&self) -> i64 {
        self.migrations.len() as i64
    }

    /// The migrations to apply to a database at version `found`, with the version each one
    /// brings it to.
    pub fn pending(&self, found: i64) -> impl Iterator<Item = (i64, &'static str)> + use<> {
        (1..)
            .zip(self.migrations.iter().copied())
            .filter(move |(version, _)| *version > found)
    }

    /// The version recorded by the meta table's `application` and `schema_version` values,
    /// refused when they are not this schema's or the version is newer than
    /// [`latest`](Self::latest).
    pub fn recorded_version(
        &self,
        application: Option<&str>,
        schema_version: Option<&str>,
    ) -> Result<i64, Refusal> {
        if application != Some(self.application) {
            return Err(Refusal::ForeignMeta {
                meta_table: self.meta_table,
                holds: self.holds,
            });
        }
        let found = schema_version
            .and_then(|version| version.parse::<i64>().ok())
            .ok_or(Refusal::UnreadableVersion {
                meta_table: self.meta_table,
            })?;
        if found > self.latest() {
            return Err(Refusal::Newer {
                found,
                supported: self.latest(),
            });
        }
        Ok(found)
    }

    /// The refusal of a database holding `table` but no meta table.
    pub fn foreign_table(&self, table: &str) -> Refusal {
        Refusal::ForeignTable {
            table: table.to_owned(),
            meta_table: self.meta_table,
        }
    }
}

/// Why a database is not one a schema may migrate or read. Each message is the reason part of
/// the store's own error, which names the database and says what to do.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Refusal {
    /// One of the schema's tables exists without the meta table.
    #[error(
        "it has a table named {table} but no {meta_table} table, so the table belongs to \
         another application"
    )]
    ForeignTable {
        /// The table found.
        table: String,
        /// The meta table that is missing.
        meta_table: &'static str,
    },
    /// The meta table names another application.
    #[error("its {meta_table} table does not name {holds}")]
    ForeignMeta {
        /// The meta table.
        meta_table: &'static str,
        /// What this schema holds ([`Schema::holds`]).
        holds: &'static str,
    },
    /// The meta table holds no version that is a number.
    #[error("its {meta_table} table holds no readable schema_version")]
    UnreadableVersion {
        /// The meta table.
        meta_table: &'static str,
    },
    /// A newer Skein wrote the tables.
    #[error("it has schema version {found}, but this build reads versions up to {supported}")]
    Newer {
        /// The version found.
        found: i64,
        /// The newest version this build knows ([`Schema::latest`]).
        supported: i64,
    },
}

/// What stopped a migration or a check: a [`Refusal`], or the database's error `E`.
#[derive(Debug, thiserror::Error)]
pub enum SchemaError<E: std::error::Error + 'static> {
    /// The database is not one the schema may migrate or read; nothing was written.
    #[error(transparent)]
    Refused(#[from] Refusal),
    /// The database failed while `operation`.
    #[error("the database failed while {operation}: {source}")]
    Database {
        /// What the runner was doing, e.g. `upgrading the schema`.
        operation: &'static str,
        /// The driver's error.
        #[source]
        source: E,
    },
}

/// Maps a driver error met while doing `operation`.
fn database<E: std::error::Error + 'static>(
    operation: &'static str,
) -> impl Fn(E) -> SchemaError<E> {
    move |source| SchemaError::Database { operation, source }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCHEMA: Schema = Schema {
        holds: "test tables",
        meta_table: "t_meta",
        application: "test",
        tables: &["t"],
        migrations: &["CREATE TABLE t (x);", "ALTER TABLE t ADD COLUMN y;"],
        lock: 1,
    };

    #[test]
    fn pending_migrations_follow_the_version_found() {
        let versions: Vec<i64> = SCHEMA.pending(0).map(|(version, _)| version).collect();
        assert_eq!(versions, [1, 2]);
        assert_eq!(SCHEMA.pending(1).count(), 1);
        assert_eq!(SCHEMA.pending(2).count(), 0);
        assert_eq!(SCHEMA.latest(), 2);
    }

    #[test]
    fn the_recorded_version_is_checked() {
        assert_eq!(SCHEMA.recorded_version(Some("test"), Some("1")), Ok(1));
        assert_eq!(
            SCHEMA.recorded_version(Some("other"), Some("1")),
            Err(Refusal::ForeignMeta {
                meta_table: "t_meta",
                holds: "test tables"
            })
        );
        assert!(matches!(
            SCHEMA.recorded_version(Some("test"), Some("one")),
            Err(Refusal::UnreadableVersion { .. })
        ));
        assert_eq!(
            SCHEMA.recorded_version(Some("test"), Some("3")),
            Err(Refusal::Newer {
                found: 3,
                supported: 2
            })
        );
        assert_eq!(
            SCHEMA.foreign_table("t").to_string(),
            "it has a table named t but no t_meta table, so the table belongs to another \
             application"
        );
    }
}

//! The PostgreSQL schema: versioned migrations, and the checks that refuse foreign or newer
//! databases.
//!
//! `skein_meta` marks the database as Skein's and holds the schema version. The check runs in
//! the migration transaction before anything is written, and a refusal rolls it back, so a
//! refused database is left as it was.

use deadpool_postgres::Client;

use super::pg;
use crate::{Result, StoreError};

const APPLICATION: &str = "skein-conversation-tree";

/// Every migration, oldest first; the version is the position plus one.
const MIGRATIONS: &[&str] = &[
    include_str!("migrations/001_tree.sql"),
    include_str!("migrations/002_calls.sql"),
    include_str!("migrations/003_status.sql"),
    include_str!("migrations/004_owner.sql"),
    include_str!("migrations/005_labels.sql"),
    include_str!("migrations/006_summaries.sql"),
    include_str!("migrations/007_ttft.sql"),
];

/// The schema version this build writes.
const LATEST: i64 = MIGRATIONS.len() as i64;

/// Tables a Skein store creates: finding one without `skein_meta` means another application.
const OUR_TABLES: &[&str] = &["conversations", "responses", "calls", "labels", "summaries"];

/// Key of the advisory lock that serialises migrations ("SKENmigr").
const MIGRATION_LOCK: i64 = 0x534B_454E_6D69_6772;

pub(super) async fn migrate(client: &mut Client, location: &str) -> Result<()> {
    const OPERATION: &str = "upgrading the schema";
    let sql = pg(OPERATION);
    let tx = client.transaction().await.map_err(&sql)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await
        .map_err(&sql)?;
    let has_meta: bool = tx
        .query_one("SELECT to_regclass('skein_meta') IS NOT NULL", &[])
        .await
        .map_err(&sql)?
        .try_get(0)
        .map_err(&sql)?;
    let found = if has_meta {
        meta_version(&tx, location, OPERATION).await?
    } else {
        for table in OUR_TABLES {
            let exists: bool = tx
                .query_one("SELECT to_regclass($1) IS NOT NULL", &[table])
                .await
                .map_err(&sql)?
                .try_get(0)
                .map_err(&sql)?;
            if exists {
                return Err(StoreError::NotAStore {
                    location: location.to_owned(),
                    reason: format!(
                        "it has a table named {table} but no skein_meta table, so the table \
                         belongs to another application"
                    ),
                });
            }
        }
        tx.batch_execute(
            "CREATE TABLE skein_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
             INSERT INTO skein_meta (key, value) VALUES ('schema_version', '0');",
        )
        .await
        .map_err(&sql)?;
        tx.execute(
            "INSERT INTO skein_meta (key, value) VALUES ('application', $1)",
            &[&APPLICATION],
        )
        .await
        .map_err(&sql)?;
        0
    };
    for (version, migration) in (1..)
        .zip(MIGRATIONS)
        .filter(|(version, _)| *version > found)
    {
        tx.batch_execute(migration).await.map_err(&sql)?;
        tx.execute(
            "UPDATE skein_meta SET value = $1 WHERE key = 'schema_version'",
            &[&i64::to_string(&version)],
        )
        .await
        .map_err(&sql)?;
    }
    tx.commit().await.map_err(&sql)?;
    Ok(())
}

/// Checks, without writing, that the database holds a Skein store at the schema version this
/// build reads: what a read-only store does instead of migrating.
pub(super) async fn check_read_only(client: &Client, location: &str) -> Result<()> {
    const OPERATION: &str = "checking the schema";
    let sql = pg(OPERATION);
    let has_meta: bool = client
        .query_one("SELECT to_regclass('skein_meta') IS NOT NULL", &[])
        .await
        .map_err(&sql)?
        .try_get(0)
        .map_err(&sql)?;
    if !has_meta {
        for table in OUR_TABLES {
            let exists: bool = client
                .query_one("SELECT to_regclass($1) IS NOT NULL", &[table])
                .await
                .map_err(&sql)?
                .try_get(0)
                .map_err(&sql)?;
            if exists {
                return Err(StoreError::NotAStore {
                    location: location.to_owned(),
                    reason: format!(
                        "it has a table named {table} but no skein_meta table, so the table \
                         belongs to another application"
                    ),
                });
            }
        }
        return Err(StoreError::NoStore {
            location: location.to_owned(),
            reason: "the database has no Skein tables yet".to_owned(),
        });
    }
    let version = meta_version(client, location, OPERATION).await?;
    if version < LATEST {
        return Err(StoreError::OlderSchema {
            location: location.to_owned(),
            found: version,
            current: LATEST,
        });
    }
    Ok(())
}

/// The schema version `skein_meta` records, checked to be a Skein store this build can read.
async fn meta_version(
    client: &impl deadpool_postgres::GenericClient,
    location: &str,
    operation: &'static str,
) -> Result<i64> {
    let rows = client
        .query("SELECT key, value FROM skein_meta", &[])
        .await
        .map_err(pg(operation))?;
    let value = |key: &str| {
        rows.iter()
            .find(|row| row.try_get::<_, &str>(0).is_ok_and(|found| found == key))
            .and_then(|row| row.try_get::<_, String>(1).ok())
    };
    if value("application").as_deref() != Some(APPLICATION) {
        return Err(StoreError::NotAStore {
            location: location.to_owned(),
            reason: "its skein_meta table does not name a Skein conversation store".to_owned(),
        });
    }
    let version = value("schema_version")
        .and_then(|version| version.parse::<i64>().ok())
        .ok_or_else(|| StoreError::NotAStore {
            location: location.to_owned(),
            reason: "its skein_meta table holds no readable schema_version".to_owned(),
        })?;
    if version > LATEST {
        return Err(StoreError::NewerSchema {
            location: location.to_owned(),
            found: version,
            supported: LATEST,
        });
    }
    Ok(version)
}

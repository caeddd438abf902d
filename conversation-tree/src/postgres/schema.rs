//! The PostgreSQL schema of the conversation store: its migrations, run by
//! [`crate::migrate::postgres`], and the check a read-only store makes instead.
//!
//! `skein_meta` marks the database as Skein's and holds the schema version. The check runs in
//! the migration transaction before anything is written, and a refusal rolls it back, so a
//! refused database is left as it was.

use deadpool_postgres::Client;

use super::pg;
use crate::migrate::{self, Refusal, Schema, SchemaError};
use crate::{Result, StoreError};

/// The conversation store's tables and every migration, oldest first.
pub(super) const SCHEMA: Schema = Schema {
    holds: "a Skein conversation store",
    meta_table: "skein_meta",
    application: "skein-conversation-tree",
    tables: &[
        "conversations",
        "responses",
        "calls",
        "labels",
        "summaries",
        "runs",
        "run_events",
        "token_slots",
    ],
    migrations: &[
        include_str!("migrations/001_tree.sql"),
        include_str!("migrations/002_calls.sql"),
        include_str!("migrations/003_status.sql"),
        include_str!("migrations/004_owner.sql"),
        include_str!("migrations/005_labels.sql"),
        include_str!("migrations/006_summaries.sql"),
        include_str!("migrations/007_ttft.sql"),
        include_str!("migrations/008_metadata.sql"),
        include_str!("migrations/009_runs.sql"),
        include_str!("migrations/010_token_slots.sql"),
        include_str!("migrations/011_paused_runs.sql"),
    ],
    // "SKENmigr"
    lock: 0x534B_454E_6D69_6772,
};

pub(super) async fn migrate(client: &mut Client, location: &str) -> Result<()> {
    migrate::postgres::migrate(client, &SCHEMA)
        .await
        .map_err(|error| schema_error(location, "upgrading the schema", error))?;
    Ok(())
}

/// Checks, without writing, that the database holds a Skein store at the schema version this
/// build reads: what a read-only store does instead of migrating.
pub(super) async fn check_read_only(client: &Client, location: &str) -> Result<()> {
    let version = migrate::postgres::version(client, &SCHEMA)
        .await
        .map_err(|error| schema_error(location, "checking the schema", error))?;
    match version {
        None => Err(StoreError::NoStore {
            location: location.to_owned(),
            reason: "the database has no Skein tables yet".to_owned(),
        }),
        Some(found) if found < SCHEMA.latest() => Err(StoreError::OlderSchema {
            location: location.to_owned(),
            found,
            current: SCHEMA.latest(),
        }),
        Some(_) => Ok(()),
    }
}

/// The store's error for what stopped the runner while doing `operation`.
fn schema_error(
    location: &str,
    operation: &'static str,
    error: SchemaError<tokio_postgres::Error>,
) -> StoreError {
    match error {
        SchemaError::Database { source, .. } => pg(operation)(source),
        SchemaError::Refused(Refusal::Newer { found, supported }) => StoreError::NewerSchema {
            location: location.to_owned(),
            found,
            supported,
        },
        SchemaError::Refused(refusal) => StoreError::NotAStore {
            location: location.to_owned(),
            reason: refusal.to_string(),
        },
    }
}

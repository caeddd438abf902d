//! The SQLite runner: migrations in one write transaction, taken only when there is something
//! to write.

use rusqlite::{Connection, Error, OptionalExtension as _, TransactionBehavior};

use super::{Schema, SchemaError, database};

/// Brings the database to the schema's [`latest`](Schema::latest) version; returns the
/// version it found (0 for a database without the schema's tables).
///
/// A database already at the latest version is only read. Otherwise one immediate
/// transaction (the file's write lock) reads the version again, since another process may
/// have migrated meanwhile, creates the meta table when missing and applies each migration
/// with the version it brings. A refusal rolls it back, so a refused database is left as it
/// was.
pub fn migrate(conn: &mut Connection, schema: &Schema) -> Result<i64, SchemaError<Error>> {
    let sql = database("upgrading the schema");
    if let Some(found) = version(conn, schema)?
        && found == schema.latest()
    {
        return Ok(found);
    }
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(&sql)?;
    let found = match version(&tx, schema)? {
        Some(found) => found,
        None => {
            tx.execute_batch(&format!(
                "CREATE TABLE {} (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
                schema.meta_table
            ))
            .map_err(&sql)?;
            tx.execute(
                &format!(
                    "INSERT INTO {} (key, value) VALUES ('application', ?1), ('schema_version', '0')",
                    schema.meta_table
                ),
                [schema.application],
            )
            .map_err(&sql)?;
            0
        }
    };
    let record = format!(
        "UPDATE {} SET value = ?1 WHERE key = 'schema_version'",
        schema.meta_table
    );
    for (version, migration) in schema.pending(found) {
        tx.execute_batch(migration).map_err(&sql)?;
        tx.execute(&record, [version.to_string()]).map_err(&sql)?;
    }
    tx.commit().map_err(&sql)?;
    Ok(found)
}

/// The schema version the database holds, without writing: `None` when it has neither the
/// meta table nor any of the schema's tables. Refuses another application's tables and a
/// newer version, as [`migrate`] does.
pub fn version(conn: &Connection, schema: &Schema) -> Result<Option<i64>, SchemaError<Error>> {
    let sql = database("checking the schema");
    let exists = |table: &str| -> Result<bool, SchemaError<Error>> {
        conn.query_row(
            "SELECT count(*) > 0 FROM sqlite_schema WHERE type = 'table' AND name = ?1",
            [table],
            |row| row.get(0),
        )
        .map_err(&sql)
    };
    if !exists(schema.meta_table)? {
        for table in schema.tables {
            if exists(table)? {
                return Err(schema.foreign_table(table).into());
            }
        }
        return Ok(None);
    }
    let value = |key: &str| -> Result<Option<String>, SchemaError<Error>> {
        conn.query_row(
            &format!("SELECT value FROM {} WHERE key = ?1", schema.meta_table),
            [key],
            |row| row.get(0),
        )
        .optional()
        .map_err(&sql)
    };
    let version = schema.recorded_version(
        value("application")?.as_deref(),
        value("schema_version")?.as_deref(),
    )?;
    Ok(Some(version))
}

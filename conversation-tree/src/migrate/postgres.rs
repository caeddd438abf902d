//! The PostgreSQL runner: migrations in one transaction under the schema's advisory lock.

use tokio_postgres::{Client, Error, GenericClient};

use super::{Schema, SchemaError, database};

/// Brings the database to the schema's [`latest`](Schema::latest) version; returns the
/// version it found (0 for a database without the schema's tables).
///
/// Everything happens in one transaction under the advisory lock [`Schema::lock`]: the check,
/// the creation of the meta table and each migration with the version it brings. A refusal
/// rolls it back, so a refused database is left as it was.
pub async fn migrate(client: &mut Client, schema: &Schema) -> Result<i64, SchemaError<Error>> {
    let sql = database("upgrading the schema");
    let tx = client.transaction().await.map_err(&sql)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&schema.lock])
        .await
        .map_err(&sql)?;
    let found = match inspect(&tx, schema).await? {
        Some(version) => version,
        None => {
            tx.batch_execute(&format!(
                "CREATE TABLE {} (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
                schema.meta_table
            ))
            .await
            .map_err(&sql)?;
            tx.execute(
                &format!(
                    "INSERT INTO {} (key, value) VALUES ('application', $1), ('schema_version', '0')",
                    schema.meta_table
                ),
                &[&schema.application],
            )
            .await
            .map_err(&sql)?;
            0
        }
    };
    let record = format!(
        "UPDATE {} SET value = $1 WHERE key = 'schema_version'",
        schema.meta_table
    );
    for (version, migration) in schema.pending(found) {
        tx.batch_execute(migration).await.map_err(&sql)?;
        tx.execute(&record, &[&version.to_string()])
            .await
            .map_err(&sql)?;
    }
    tx.commit().await.map_err(&sql)?;
    Ok(found)
}

/// The schema version the database holds, without writing: `None` when it has neither the
/// meta table nor any of the schema's tables. Refuses another application's tables and a
/// newer version, as [`migrate`] does.
pub async fn version(client: &Client, schema: &Schema) -> Result<Option<i64>, SchemaError<Error>> {
    inspect(client, schema).await
}

async fn inspect(
    client: &impl GenericClient,
    schema: &Schema,
) -> Result<Option<i64>, SchemaError<Error>> {
    let sql = database("checking the schema");
    if !exists(client, schema.meta_table).await? {
        for table in schema.tables {
            if exists(client, table).await? {
                return Err(schema.foreign_table(table).into());
            }
        }
        return Ok(None);
    }
    let rows = client
        .query(
            &format!("SELECT key, value FROM {}", schema.meta_table),
            &[],
        )
        .await
        .map_err(&sql)?;
    let value = |key: &str| {
        rows.iter()
            .find(|row| row.try_get::<_, &str>(0).is_ok_and(|found| found == key))
            .and_then(|row| row.try_get::<_, &str>(1).ok())
    };
    let version = schema.recorded_version(value("application"), value("schema_version"))?;
    Ok(Some(version))
}

/// Whether a table (or any relation) of that name is on the search path.
async fn exists(client: &impl GenericClient, table: &str) -> Result<bool, SchemaError<Error>> {
    let sql = database("checking the schema");
    client
        .query_one("SELECT to_regclass($1) IS NOT NULL", &[&table])
        .await
        .map_err(&sql)?
        .try_get(0)
        .map_err(&sql)
}

//! Run records on PostgreSQL: every time is the server's `now()`, every change is announced
//! with `pg_notify` in the transaction that makes it (delivered at commit), and takeovers pick
//! orphaned runs with `FOR UPDATE SKIP LOCKED`.

use std::time::Duration;

use async_trait::async_trait;
use deadpool_postgres::GenericClient;
use tokio_postgres::Row;

use super::{PostgresStore, listen, pg};
use crate::runs::row::{self, RunRow};
use crate::runs::{
    EventBatch, Lease, MAX_EVENT_PAGE, NewRun, PurgeReport, Run, RunChange, RunChanges, RunEvent,
    RunStatus, RunStore, RunUpdate,
};
use crate::{NodeId, Result, StoreError};

const COLUMNS: &str = "id, owner, protocol, mode, status, spec_json, continues_from, \
     last_node, cancel_requested, error, created_utc, updated_utc, finished_utc, last_seq, \
     lease_holder, lease_epoch, lease_expires, paused_json, decide_by";

/// Runs no replica works on: unfinished, not paused (a paused run waits for its decisions),
/// never leased, released, or expired.
const ORPHANED: &str = "finished_utc IS NULL AND status <> 'paused' \
     AND (lease_expires IS NULL OR lease_expires <= now())";

/// Takes a paused run: in progress, leased to `$1` for `$2` microseconds.
const TAKE: &str = "UPDATE runs SET status = 'in_progress', lease_holder = $1, \
     lease_epoch = lease_epoch + 1, \
     lease_expires = now() + $2::bigint * interval '1 microsecond', updated_utc = now()";

/// What followers are told when a paused run is taken.
fn taken(run: &Run) -> RunChange {
    RunChange::Status {
        run: run.id.clone(),
        status: RunStatus::InProgress,
    }
}

/// Orphaned runs, the longest orphaned first.
const ORPHANED_ORDER: &str = "ORDER BY lease_expires NULLS FIRST, created_utc";

fn run_row(row: &Row) -> std::result::Result<RunRow, tokio_postgres::Error> {
    Ok(RunRow {
        id: row.try_get(0)?,
        owner: row.try_get(1)?,
        protocol: row.try_get(2)?,
        mode: row.try_get(3)?,
        status: row.try_get(4)?,
        spec_json: row.try_get(5)?,
        continues_from: row.try_get(6)?,
        last_node: row.try_get(7)?,
        cancel_requested: row.try_get(8)?,
        error: row.try_get(9)?,
        created: row.try_get(10)?,
        updated: row.try_get(11)?,
        finished: row.try_get(12)?,
        last_seq: row.try_get(13)?,
        lease_holder: row.try_get(14)?,
        lease_epoch: row.try_get(15)?,
        lease_expires: row.try_get(16)?,
        paused_json: row.try_get(17)?,
        decide_by: row.try_get(18)?,
    })
}

fn to_run(operation: &'static str, row: &Row) -> Result<Run> {
    run_row(row).map_err(pg(operation))?.into_run()
}

async fn read_run(
    client: &impl GenericClient,
    operation: &'static str,
    id: &str,
    lock: &str,
) -> Result<Option<Run>> {
    let sql = format!("SELECT {COLUMNS} FROM runs WHERE id = $1 {lock}");
    let row = client
        .query_opt(&sql, &[&id])
        .await
        .map_err(pg(operation))?;
    row.map(|row| to_run(operation, &row)).transpose()
}

async fn existing_run(
    client: &impl GenericClient,
    operation: &'static str,
    id: &str,
    lock: &str,
) -> Result<Run> {
    read_run(client, operation, id, lock)
        .await?
        .ok_or_else(|| StoreError::UnknownRun { run: id.to_owned() })
}

async fn check_node(
    client: &impl GenericClient,
    operation: &'static str,
    node: Option<NodeId>,
) -> Result<()> {
    let Some(node) = node else { return Ok(()) };
    let found = client
        .query_opt("SELECT 1 FROM responses WHERE id = $1", &[&node.get()])
        .await
        .map_err(pg(operation))?;
    found
        .map(|_| ())
        .ok_or(StoreError::UnknownNode { id: node })
}

/// Announces `change` to every replica when the transaction commits.
async fn notify(
    client: &impl GenericClient,
    operation: &'static str,
    change: &RunChange,
) -> Result<()> {
    client
        .execute(
            "SELECT pg_notify($1, $2)",
            &[&listen::CHANNEL, &change.payload()],
        )
        .await
        .map_err(pg(operation))?;
    Ok(())
}

fn micros(duration: Duration) -> i64 {
    i64::try_from(duration.as_micros()).unwrap_or(i64::MAX)
}

fn db_int(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// Leases run `id` to `holder` for `ttl` when it is unfinished and free now.
async fn claim(
    client: &impl GenericClient,
    operation: &'static str,
    id: &str,
    holder: &str,
    ttl: Duration,
) -> Result<Option<Lease>> {
    let sql = format!(
        "UPDATE runs SET lease_holder = $2, lease_epoch = lease_epoch + 1, \
         lease_expires = now() + $3::bigint * interval '1 microsecond', updated_utc = now() \
         WHERE id = $1 AND {ORPHANED} RETURNING lease_epoch, lease_expires"
    );
    let row = client
        .query_opt(&sql, &[&id, &holder, &micros(ttl)])
        .await
        .map_err(pg(operation))?;
    row.map(|row| {
        Ok(Lease {
            run: id.to_owned(),
            holder: holder.to_owned(),
            epoch: u64::try_from(row.try_get::<_, i64>(0).map_err(pg(operation))?).unwrap_or(0),
            expires: row.try_get(1).map_err(pg(operation))?,
        })
    })
    .transpose()
}

#[async_trait]
impl RunStore for PostgresStore {
    async fn create_run(&self, run: NewRun) -> Result<Run> {
        const OPERATION: &str = "creating a run";
        row::check_run_id(&run.id)?;
        crate::store::check_owner(&run.owner)?;
        if let Some((replica, _)) = &run.lease {
            row::check_replica(replica)?;
        }
        self.writable(OPERATION)?;
        let mut client = self.client(OPERATION).await?;
        let tx = client.transaction().await.map_err(pg(OPERATION))?;
        check_node(&tx, OPERATION, run.continues_from).await?;
        let holder = run.lease.as_ref().map(|(replica, _)| replica.as_str());
        let ttl = run.lease.as_ref().map(|(_, ttl)| micros(*ttl));
        let epoch: i64 = if holder.is_some() { 1 } else { 0 };
        let inserted = tx
            .execute(
                "INSERT INTO runs (id, owner, protocol, mode, status, spec_json, continues_from, \
                 created_utc, updated_utc, lease_holder, lease_epoch, lease_expires) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, now(), now(), $8, $9, \
                 now() + $10::bigint * interval '1 microsecond') \
                 ON CONFLICT (id) DO NOTHING",
                &[
                    &run.id,
                    &run.owner,
                    &run.protocol.as_str(),
                    &run.mode.as_str(),
                    &run.status.as_str(),
                    &run.spec.to_string(),
                    &run.continues_from.map(NodeId::get),
                    &holder,
                    &epoch,
                    &ttl,
                ],
            )
            .await
            .map_err(pg(OPERATION))?;
        if inserted == 0 {
            return Err(StoreError::RunExists { run: run.id });
        }
        let created = existing_run(&tx, OPERATION, &run.id, "").await?;
        tx.commit().await.map_err(pg(OPERATION))?;
        Ok(created)
    }

    async fn run(&self, id: &str) -> Result<Option<Run>> {
        const OPERATION: &str = "reading a run";
        row::check_run_id(id)?;
        let client = self.client(OPERATION).await?;
        read_run(&client, OPERATION, id, "").await
    }

    async fn update_run(&self, id: &str, update: RunUpdate) -> Result<Run> {
        const OPERATION: &str = "updating a run";
        row::check_run_id(id)?;
        self.writable(OPERATION)?;
        let mut client = self.client(OPERATION).await?;
        let tx = client.transaction().await.map_err(pg(OPERATION))?;
        let current = existing_run(&tx, OPERATION, id, "FOR UPDATE").await?;
        let to = row::check_transition(id, current.status, &update)?;
        check_node(&tx, OPERATION, update.last_node).await?;
        // A run that ends or pauses is no longer any replica's.
        let finishing = to.is_some_and(RunStatus::is_terminal);
        let freeing = finishing || update.pause.is_some();
        let paused_json = update
            .pause
            .as_ref()
            .map(|pause| pause.document.to_string());
        let decide_within = update
            .pause
            .as_ref()
            .map(|pause| micros(pause.decide_within));
        let sql = format!(
            "UPDATE runs SET status = COALESCE($2, status), \
             last_node = COALESCE($3, last_node), error = COALESCE($4, error), \
             updated_utc = now(), \
             finished_utc = CASE WHEN $5 THEN now() ELSE finished_utc END, \
             lease_holder = CASE WHEN $6 THEN NULL ELSE lease_holder END, \
             lease_expires = CASE WHEN $6 THEN NULL ELSE lease_expires END, \
             paused_json = COALESCE($7, paused_json), \
             decide_by = COALESCE(now() + $8::bigint * interval '1 microsecond', decide_by) \
             WHERE id = $1 RETURNING {COLUMNS}"
        );
        let row = tx
            .query_one(
                &sql,
                &[
                    &id,
                    &to.map(RunStatus::as_str),
                    &update.last_node.map(NodeId::get),
                    &update.error,
                    &finishing,
                    &freeing,
                    &paused_json,
                    &decide_within,
                ],
            )
            .await
            .map_err(pg(OPERATION))?;
        let run = to_run(OPERATION, &row)?;
        if let Some(status) = to {
            let change = RunChange::Status {
                run: id.to_owned(),
                status,
            };
            notify(&tx, OPERATION, &change).await?;
        }
        tx.commit().await.map_err(pg(OPERATION))?;
        Ok(run)
    }

    async fn request_cancel(&self, id: &str) -> Result<Run> {
        const OPERATION: &str = "asking a run to stop";
        row::check_run_id(id)?;
        self.writable(OPERATION)?;
        let mut client = self.client(OPERATION).await?;
        let tx = client.transaction().await.map_err(pg(OPERATION))?;
        let current = existing_run(&tx, OPERATION, id, "FOR UPDATE").await?;
        if current.status.is_terminal() {
            return Ok(current);
        }
        let sql = format!(
            "UPDATE runs SET cancel_requested = TRUE, updated_utc = now() WHERE id = $1 \
             RETURNING {COLUMNS}"
        );
        let row = tx.query_one(&sql, &[&id]).await.map_err(pg(OPERATION))?;
        let run = to_run(OPERATION, &row)?;
        let change = RunChange::CancelRequested { run: id.to_owned() };
        notify(&tx, OPERATION, &change).await?;
        tx.commit().await.map_err(pg(OPERATION))?;
        Ok(run)
    }

    async fn append_event_batches(
        &self,
        batches: &[EventBatch<'_>],
    ) -> Result<Vec<Result<Option<u64>>>> {
        if batches.is_empty() {
            return Ok(Vec::new());
        }
        self.writable("storing runs' events")?;
        let mut client = self.client("storing runs' events").await?;
        super::run_events::append(&mut client, batches).await
    }

    async fn events_after(
        &self,
        id: &str,
        after: Option<u64>,
        limit: usize,
    ) -> Result<Vec<RunEvent>> {
        const OPERATION: &str = "reading a run's events";
        row::check_run_id(id)?;
        let client = self.client(OPERATION).await?;
        let after = after.map_or(-1, db_int);
        let limit = row::limit(limit, MAX_EVENT_PAGE);
        // One statement, one snapshot: the run's existence and its events agree.
        let rows = client
            .query(
                "SELECT e.seq, e.data FROM runs r \
                 LEFT JOIN LATERAL (SELECT seq, data FROM run_events \
                   WHERE run_id = r.id AND seq > $2 ORDER BY seq LIMIT $3) e ON TRUE \
                 WHERE r.id = $1 ORDER BY e.seq",
                &[&id, &after, &limit],
            )
            .await
            .map_err(pg(OPERATION))?;
        if rows.is_empty() {
            return Err(StoreError::UnknownRun { run: id.to_owned() });
        }
        let mut events = Vec::with_capacity(rows.len());
        for row in rows {
            let seq: Option<i64> = row.try_get(0).map_err(pg(OPERATION))?;
            let Some(seq) = seq else { continue };
            events.push(RunEvent {
                seq: u64::try_from(seq).unwrap_or(0),
                data: row.try_get::<_, Vec<u8>>(1).map_err(pg(OPERATION))?.into(),
            });
        }
        Ok(events)
    }

    async fn claim_run(&self, id: &str, replica: &str, ttl: Duration) -> Result<Option<Lease>> {
        const OPERATION: &str = "claiming a run";
        row::check_run_id(id)?;
        row::check_replica(replica)?;
        self.writable(OPERATION)?;
        let client = self.client(OPERATION).await?;
        let lease = claim(&client, OPERATION, id, replica, ttl).await?;
        if lease.is_none() && read_run(&client, OPERATION, id, "").await?.is_none() {
            return Err(StoreError::UnknownRun { run: id.to_owned() });
        }
        Ok(lease)
    }

    async fn renew_lease(&self, lease: &Lease, ttl: Duration) -> Result<Lease> {
        const OPERATION: &str = "renewing a lease";
        self.writable(OPERATION)?;
        let client = self.client(OPERATION).await?;
        let row = client
            .query_opt(
                "UPDATE runs SET lease_expires = now() + $4::bigint * interval '1 microsecond' \
                 WHERE id = $1 AND lease_holder = $2 AND lease_epoch = $3 \
                 AND finished_utc IS NULL AND lease_expires > now() RETURNING lease_expires",
                &[
                    &lease.run,
                    &lease.holder,
                    &db_int(lease.epoch),
                    &micros(ttl),
                ],
            )
            .await
            .map_err(pg(OPERATION))?;
        match row {
            Some(row) => Ok(Lease {
                expires: row.try_get(0).map_err(pg(OPERATION))?,
                ..lease.clone()
            }),
            None => Err(StoreError::LeaseLost {
                run: lease.run.clone(),
                holder: lease.holder.clone(),
            }),
        }
    }

    async fn release_lease(&self, lease: &Lease) -> Result<()> {
        const OPERATION: &str = "releasing a lease";
        self.writable(OPERATION)?;
        let client = self.client(OPERATION).await?;
        client
            .execute(
                "UPDATE runs SET lease_holder = NULL, lease_expires = NULL \
                 WHERE id = $1 AND lease_holder = $2 AND lease_epoch = $3",
                &[&lease.run, &lease.holder, &db_int(lease.epoch)],
            )
            .await
            .map_err(pg(OPERATION))?;
        Ok(())
    }

    async fn orphaned_runs(&self, limit: usize) -> Result<Vec<Run>> {
        const OPERATION: &str = "listing orphaned runs";
        let client = self.client(OPERATION).await?;
        let sql = format!("SELECT {COLUMNS} FROM runs WHERE {ORPHANED} {ORPHANED_ORDER} LIMIT $1");
        let rows = client
            .query(&sql, &[&row::limit(limit, usize::MAX)])
            .await
            .map_err(pg(OPERATION))?;
        rows.iter().map(|row| to_run(OPERATION, row)).collect()
    }

    async fn claim_orphaned_run(&self, replica: &str, ttl: Duration) -> Result<Option<Run>> {
        const OPERATION: &str = "taking over an orphaned run";
        row::check_replica(replica)?;
        self.writable(OPERATION)?;
        let client = self.client(OPERATION).await?;
        // SKIP LOCKED: replicas looking at once each take a different run instead of queueing
        // on the same row.
        let sql = format!(
            "UPDATE runs SET lease_holder = $1, lease_epoch = lease_epoch + 1, \
             lease_expires = now() + $2::bigint * interval '1 microsecond', updated_utc = now() \
             WHERE id = (SELECT id FROM runs WHERE {ORPHANED} {ORPHANED_ORDER} LIMIT 1 \
             FOR UPDATE SKIP LOCKED) AND {ORPHANED} RETURNING {COLUMNS}"
        );
        let row = client
            .query_opt(&sql, &[&replica, &micros(ttl)])
            .await
            .map_err(pg(OPERATION))?;
        row.map(|row| to_run(OPERATION, &row)).transpose()
    }

    async fn take_paused(&self, id: &str, replica: &str, ttl: Duration) -> Result<Option<Run>> {
        const OPERATION: &str = "taking a paused run";
        row::check_run_id(id)?;
        row::check_replica(replica)?;
        self.writable(OPERATION)?;
        let mut client = self.client(OPERATION).await?;
        let tx = client.transaction().await.map_err(pg(OPERATION))?;
        let sql = format!("{TAKE} WHERE id = $3 AND status = 'paused' RETURNING {COLUMNS}");
        let row = tx
            .query_opt(&sql, &[&replica, &micros(ttl), &id])
            .await
            .map_err(pg(OPERATION))?;
        let Some(row) = row else {
            if read_run(&tx, OPERATION, id, "").await?.is_none() {
                return Err(StoreError::UnknownRun { run: id.to_owned() });
            }
            return Ok(None);
        };
        let run = to_run(OPERATION, &row)?;
        notify(&tx, OPERATION, &taken(&run)).await?;
        tx.commit().await.map_err(pg(OPERATION))?;
        Ok(Some(run))
    }

    async fn take_expired_pause(&self, replica: &str, ttl: Duration) -> Result<Option<Run>> {
        const OPERATION: &str = "taking an expired pause";
        row::check_replica(replica)?;
        self.writable(OPERATION)?;
        let mut client = self.client(OPERATION).await?;
        let tx = client.transaction().await.map_err(pg(OPERATION))?;
        // SKIP LOCKED: replicas sweeping at once take different pauses.
        let sql = format!(
            "{TAKE} WHERE id = (SELECT id FROM runs WHERE status = 'paused' \
             AND decide_by <= now() ORDER BY decide_by LIMIT 1 FOR UPDATE SKIP LOCKED) \
             AND status = 'paused' RETURNING {COLUMNS}"
        );
        let row = tx
            .query_opt(&sql, &[&replica, &micros(ttl)])
            .await
            .map_err(pg(OPERATION))?;
        let Some(row) = row else { return Ok(None) };
        let run = to_run(OPERATION, &row)?;
        notify(&tx, OPERATION, &taken(&run)).await?;
        tx.commit().await.map_err(pg(OPERATION))?;
        Ok(Some(run))
    }

    fn run_changes(&self) -> RunChanges {
        self.listener.changes()
    }

    async fn purge_runs(&self, older_than: Duration) -> Result<PurgeReport> {
        const OPERATION: &str = "purging old runs";
        self.writable(OPERATION)?;
        let mut client = self.client(OPERATION).await?;
        let tx = client.transaction().await.map_err(pg(OPERATION))?;
        let age = micros(older_than);
        let events = tx
            .execute(
                "DELETE FROM run_events WHERE (created_utc < now() - $1::bigint * interval '1 microsecond' \
                   AND run_id NOT IN (SELECT id FROM runs WHERE status = 'paused')) \
                 OR run_id IN (SELECT id FROM runs \
                   WHERE finished_utc < now() - $1::bigint * interval '1 microsecond')",
                &[&age],
            )
            .await
            .map_err(pg(OPERATION))?;
        let runs = tx
            .execute(
                "DELETE FROM runs WHERE finished_utc < now() - $1::bigint * interval '1 microsecond'",
                &[&age],
            )
            .await
            .map_err(pg(OPERATION))?;
        tx.commit().await.map_err(pg(OPERATION))?;
        Ok(PurgeReport { runs, events })
    }
}

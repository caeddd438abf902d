//! Run records on SQLite: every write on the one writer connection, in an immediate
//! transaction, so claims and appends are serialised by the file's write lock; times from the
//! store's [`Clock`]; changes told through an in-process broadcast.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use jiff::Timestamp;
use rusqlite::types::{Type, ValueRef};
use rusqlite::{Connection, OptionalExtension as _, TransactionBehavior, params};

use super::cached::Cached as _;
use super::{Ctx, SqliteStore, run_events};
use crate::runs::row::{self, RunRow};
use crate::runs::{
    self, Clock, EventBatch, Lease, MAX_EVENT_PAGE, NewRun, PurgeReport, Run, RunChange,
    RunChanges, RunEvent, RunStatus, RunStore, RunUpdate,
};
use crate::{Result, StoreError};

/// How many changes a slow follower may fall behind before it is told it
/// [`Missed`](RunChange::Missed) some.
pub(super) const CHANGES_CAPACITY: usize = 1024;

const SELECT_RUN: &str = "SELECT id, owner, protocol, mode, status, spec_json, continues_from, \
     last_node, cancel_requested, error, created_us, updated_us, finished_us, last_seq, \
     lease_holder, lease_epoch, lease_expires_us, paused_json, decide_by_us FROM runs";

/// Runs no replica works on: unfinished, not paused (a paused run waits for its decisions),
/// never leased, released, or expired at `?1`.
const ORPHANED: &str = "finished_us IS NULL AND status <> 'paused' \
     AND (lease_expires_us IS NULL OR lease_expires_us <= ?1)";

impl SqliteStore {
    /// The store reading the time of leases and retention from `clock` instead of the system
    /// clock: a test moves a [`ManualClock`](crate::runs::ManualClock) past a lease's expiry
    /// instead of waiting. Only this handle reads `clock`; clones made before keep theirs.
    #[must_use]
    pub fn with_clock(mut self, clock: impl Clock + 'static) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    fn tell(&self, change: RunChange) {
        // Nobody following is not an error.
        let _ = self.inner.changes.send(change);
    }

    /// Tells followers that a paused run was taken, and returns it.
    fn taken(&self, run: Option<Run>) -> Option<Run> {
        if let Some(run) = &run {
            self.tell(RunChange::Status {
                run: run.id.clone(),
                status: RunStatus::InProgress,
            });
        }
        run
    }
}

fn timestamp(column: usize, micros: i64) -> rusqlite::Result<Timestamp> {
    Timestamp::from_microsecond(micros)
        .map_err(|err| rusqlite::Error::FromSqlConversionFailure(column, Type::Integer, err.into()))
}

fn run_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<RunRow> {
    let optional_time = |column: usize| -> rusqlite::Result<Option<Timestamp>> {
        row.get::<_, Option<i64>>(column)?
            .map(|micros| timestamp(column, micros))
            .transpose()
    };
    Ok(RunRow {
        id: row.get(0)?,
        owner: row.get(1)?,
        protocol: row.get(2)?,
        mode: row.get(3)?,
        status: row.get(4)?,
        spec_json: row.get(5)?,
        continues_from: row.get(6)?,
        last_node: row.get(7)?,
        cancel_requested: row.get(8)?,
        error: row.get(9)?,
        created: timestamp(10, row.get(10)?)?,
        updated: timestamp(11, row.get(11)?)?,
        finished: optional_time(12)?,
        last_seq: row.get(13)?,
        lease_holder: row.get(14)?,
        lease_epoch: row.get(15)?,
        lease_expires: optional_time(16)?,
        paused_json: row.get(17)?,
        decide_by: optional_time(18)?,
    })
}

fn read_run(
    conn: &Connection,
    ctx: &Ctx,
    operation: &'static str,
    id: &str,
) -> Result<Option<Run>> {
    conn.prepare_cached(&format!("{SELECT_RUN} WHERE id = ?1"))
        .and_then(|mut statement| statement.query_row([id], run_row).optional())
        .map_err(ctx.sql(operation))?
        .map(RunRow::into_run)
        .transpose()
}

fn existing_run(conn: &Connection, ctx: &Ctx, operation: &'static str, id: &str) -> Result<Run> {
    read_run(conn, ctx, operation, id)?.ok_or_else(|| StoreError::UnknownRun { run: id.to_owned() })
}

fn check_node(
    conn: &Connection,
    ctx: &Ctx,
    operation: &'static str,
    node: Option<crate::NodeId>,
) -> Result<()> {
    let Some(node) = node else { return Ok(()) };
    let found = conn
        .query_row_cached(
            "SELECT 1 FROM responses WHERE id = ?1",
            [node.get()],
            |_| Ok(()),
        )
        .optional()
        .map_err(ctx.sql(operation))?;
    found.ok_or(StoreError::UnknownNode { id: node })
}

/// Leases run `id` to `holder` until `expires` when it is unfinished and free at `now`.
fn claim(
    conn: &Connection,
    ctx: &Ctx,
    operation: &'static str,
    id: &str,
    holder: &str,
    now: Timestamp,
    expires: Timestamp,
) -> Result<Option<Lease>> {
    let epoch: Option<i64> = conn
        .query_row_cached(
            &format!(
                "UPDATE runs SET lease_holder = ?2, lease_epoch = lease_epoch + 1, \
                 lease_expires_us = ?3, updated_us = ?1 WHERE id = ?4 AND {ORPHANED} \
                 RETURNING lease_epoch"
            ),
            params![now.as_microsecond(), holder, expires.as_microsecond(), id],
            |row| row.get(0),
        )
        .optional()
        .map_err(ctx.sql(operation))?;
    Ok(epoch.map(|epoch| Lease {
        run: id.to_owned(),
        holder: holder.to_owned(),
        epoch: u64::try_from(epoch).unwrap_or(0),
        expires,
    }))
}

/// Moves paused run `id` to in progress, leased to `holder` until `expires`; `None` when it is
/// not paused.
fn take(
    conn: &Connection,
    ctx: &Ctx,
    operation: &'static str,
    id: &str,
    holder: &str,
    now: Timestamp,
    expires: Timestamp,
) -> Result<Option<Run>> {
    let taken = conn
        .execute_cached(
            "UPDATE runs SET status = ?5, lease_holder = ?2, lease_epoch = lease_epoch + 1, \
             lease_expires_us = ?3, updated_us = ?1 WHERE id = ?4 AND status = ?6",
            params![
                now.as_microsecond(),
                holder,
                expires.as_microsecond(),
                id,
                RunStatus::InProgress.as_str(),
                RunStatus::Paused.as_str(),
            ],
        )
        .map_err(ctx.sql(operation))?;
    if taken == 0 {
        return Ok(None);
    }
    existing_run(conn, ctx, operation, id).map(Some)
}

/// Runs `work` in an immediate transaction of the writer connection.
fn in_write_tx<R>(
    conn: &mut Connection,
    ctx: &Ctx,
    operation: &'static str,
    work: impl FnOnce(&Connection) -> Result<R>,
) -> Result<R> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(ctx.sql(operation))?;
    let result = work(&tx)?;
    tx.commit().map_err(ctx.sql(operation))?;
    Ok(result)
}

#[async_trait]
impl RunStore for SqliteStore {
    async fn create_run(&self, run: NewRun) -> Result<Run> {
        const OPERATION: &str = "creating a run";
        row::check_run_id(&run.id)?;
        crate::store::check_owner(&run.owner)?;
        if let Some((replica, _)) = &run.lease {
            row::check_replica(replica)?;
        }
        let now = self.clock.now();
        self.write(OPERATION, move |conn, ctx| {
            in_write_tx(conn, ctx, OPERATION, |tx| {
                check_node(tx, ctx, OPERATION, run.continues_from)?;
                let (holder, epoch, expires) = match &run.lease {
                    Some((replica, ttl)) => (
                        Some(replica.as_str()),
                        1,
                        Some(runs::add(now, *ttl).as_microsecond()),
                    ),
                    None => (None, 0, None),
                };
                let inserted = tx
                    .execute_cached(
                        "INSERT INTO runs (id, owner, protocol, mode, status, spec_json, \
                         continues_from, created_us, updated_us, lease_holder, lease_epoch, \
                         lease_expires_us) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8, ?9, ?10, ?11) \
                         ON CONFLICT (id) DO NOTHING",
                        params![
                            run.id,
                            run.owner,
                            run.protocol.as_str(),
                            run.mode.as_str(),
                            run.status.as_str(),
                            run.spec.to_string(),
                            run.continues_from.map(crate::NodeId::get),
                            now.as_microsecond(),
                            holder,
                            epoch,
                            expires,
                        ],
                    )
                    .map_err(ctx.sql(OPERATION))?;
                if inserted == 0 {
                    return Err(StoreError::RunExists { run: run.id.clone() });
                }
                existing_run(tx, ctx, OPERATION, &run.id)
            })
        })
        .await
    }

    async fn run(&self, id: &str) -> Result<Option<Run>> {
        const OPERATION: &str = "reading a run";
        row::check_run_id(id)?;
        let id = id.to_owned();
        self.read(OPERATION, move |conn, ctx| {
            read_run(conn, ctx, OPERATION, &id)
        })
        .await
    }

    async fn update_run(&self, id: &str, update: RunUpdate) -> Result<Run> {
        const OPERATION: &str = "updating a run";
        row::check_run_id(id)?;
        let id = id.to_owned();
        let now = self.clock.now();
        let decide_by = update
            .pause
            .as_ref()
            .map(|pause| runs::add(now, pause.decide_within).as_microsecond());
        let now = now.as_microsecond();
        let asked = update.status;
        let run = self
            .write(OPERATION, move |conn, ctx| {
                in_write_tx(conn, ctx, OPERATION, |tx| {
                    let current = existing_run(tx, ctx, OPERATION, &id)?;
                    let to = row::check_transition(&id, current.status, &update)?;
                    check_node(tx, ctx, OPERATION, update.last_node)?;
                    // A run that ends or pauses is no longer any replica's.
                    let finishing = to.is_some_and(RunStatus::is_terminal);
                    let freeing = finishing || update.pause.is_some();
                    let paused_json = update
                        .pause
                        .as_ref()
                        .map(|pause| pause.document.to_string());
                    tx.execute_cached(
                        "UPDATE runs SET status = COALESCE(?2, status), \
                         last_node = COALESCE(?3, last_node), error = COALESCE(?4, error), \
                         updated_us = ?5, \
                         finished_us = CASE WHEN ?6 THEN ?5 ELSE finished_us END, \
                         lease_holder = CASE WHEN ?7 THEN NULL ELSE lease_holder END, \
                         lease_expires_us = CASE WHEN ?7 THEN NULL ELSE lease_expires_us END, \
                         paused_json = COALESCE(?8, paused_json), \
                         decide_by_us = COALESCE(?9, decide_by_us) \
                         WHERE id = ?1",
                        params![
                            id,
                            to.map(RunStatus::as_str),
                            update.last_node.map(crate::NodeId::get),
                            update.error,
                            now,
                            finishing,
                            freeing,
                            paused_json,
                            decide_by,
                        ],
                    )
                    .map_err(ctx.sql(OPERATION))?;
                    existing_run(tx, ctx, OPERATION, &id)
                })
            })
            .await?;
        if let Some(status) = asked {
            self.tell(RunChange::Status {
                run: run.id.clone(),
                status,
            });
        }
        Ok(run)
    }

    async fn request_cancel(&self, id: &str) -> Result<Run> {
        const OPERATION: &str = "asking a run to stop";
        row::check_run_id(id)?;
        let id = id.to_owned();
        let now = self.clock.now().as_microsecond();
        let (run, asked) = self
            .write(OPERATION, move |conn, ctx| {
                in_write_tx(conn, ctx, OPERATION, |tx| {
                    let current = existing_run(tx, ctx, OPERATION, &id)?;
                    if current.status.is_terminal() {
                        return Ok((current, false));
                    }
                    tx.execute_cached(
                        "UPDATE runs SET cancel_requested = 1, updated_us = ?2 WHERE id = ?1",
                        params![id, now],
                    )
                    .map_err(ctx.sql(OPERATION))?;
                    Ok((existing_run(tx, ctx, OPERATION, &id)?, true))
                })
            })
            .await?;
        if asked {
            self.tell(RunChange::CancelRequested {
                run: run.id.clone(),
            });
        }
        Ok(run)
    }

    async fn append_event_batches(
        &self,
        batches: &[EventBatch<'_>],
    ) -> Result<Vec<Result<Option<u64>>>> {
        if batches.is_empty() {
            return Ok(Vec::new());
        }
        let copied = run_events::CopiedBatches::new(batches);
        let now = self.clock.now().as_microsecond();
        let (results, written) = self
            .write(run_events::OPERATION, move |conn, ctx| {
                in_write_tx(conn, ctx, run_events::OPERATION, |tx| {
                    copied.append(tx, ctx, now)
                })
            })
            .await?;
        for (run, last_seq) in written {
            self.tell(RunChange::Events { run, last_seq });
        }
        Ok(results)
    }

    async fn events_after(
        &self,
        id: &str,
        after: Option<u64>,
        limit: usize,
    ) -> Result<Vec<RunEvent>> {
        const OPERATION: &str = "reading a run's events";
        row::check_run_id(id)?;
        let id = id.to_owned();
        let after = after.map_or(-1, |after| i64::try_from(after).unwrap_or(i64::MAX));
        let limit = row::limit(limit, MAX_EVENT_PAGE);
        self.read(OPERATION, move |conn, ctx| {
            let sql = ctx.sql(OPERATION);
            // One snapshot: the run's existence and its events agree.
            let tx = conn.unchecked_transaction().map_err(&sql)?;
            let known = tx
                .query_row_cached("SELECT 1 FROM runs WHERE id = ?1", [&id], |_| Ok(()))
                .optional()
                .map_err(&sql)?;
            if known.is_none() {
                return Err(StoreError::UnknownRun { run: id.clone() });
            }
            // The batches holding an event after `after`, in order, read until `limit`
            // events are taken.
            let mut statement = tx
                .prepare_cached(
                    "SELECT first_seq, lengths, data FROM run_event_batches \
                     WHERE run_id = ?1 AND last_seq > ?2 ORDER BY first_seq",
                )
                .map_err(&sql)?;
            let mut rows = statement.query(params![id, after]).map_err(&sql)?;
            let after = u64::try_from(after).ok();
            let limit = usize::try_from(limit).unwrap_or(usize::MAX);
            let mut events = Vec::new();
            while events.len() < limit {
                let Some(row) = rows.next().map_err(&sql)? else {
                    break;
                };
                let first = u64::try_from(row.get::<_, i64>(0).map_err(&sql)?).unwrap_or(0);
                let corrupt = |reason: &str| StoreError::Corrupt {
                    what: format!("the events of run {id} from {first}"),
                    reason: reason.to_owned(),
                };
                let (lengths, data) = match (row.get_ref(1), row.get_ref(2)) {
                    (Ok(ValueRef::Blob(lengths)), Ok(ValueRef::Blob(data))) => {
                        (Some(lengths), data)
                    }
                    (Ok(ValueRef::Null), Ok(ValueRef::Blob(data))) => (None, data),
                    _ => return Err(corrupt("the row is not a batch of events")),
                };
                run_events::split(first, lengths, data, after, &mut events, limit).ok_or_else(
                    || corrupt("the stored lengths do not add up to the stored bytes"),
                )?;
            }
            Ok(events)
        })
        .await
    }

    async fn claim_run(&self, id: &str, replica: &str, ttl: Duration) -> Result<Option<Lease>> {
        const OPERATION: &str = "claiming a run";
        row::check_run_id(id)?;
        row::check_replica(replica)?;
        let (id, replica) = (id.to_owned(), replica.to_owned());
        let now = self.clock.now();
        self.write(OPERATION, move |conn, ctx| {
            in_write_tx(conn, ctx, OPERATION, |tx| {
                existing_run(tx, ctx, OPERATION, &id)?;
                claim(tx, ctx, OPERATION, &id, &replica, now, runs::add(now, ttl))
            })
        })
        .await
    }

    async fn renew_lease(&self, lease: &Lease, ttl: Duration) -> Result<Lease> {
        const OPERATION: &str = "renewing a lease";
        let lease = lease.clone();
        let now = self.clock.now();
        let expires = runs::add(now, ttl);
        self.write(OPERATION, move |conn, ctx| {
            let renewed = conn
                .execute_cached(
                    "UPDATE runs SET lease_expires_us = ?4 WHERE id = ?1 AND lease_holder = ?2 \
                     AND lease_epoch = ?3 AND finished_us IS NULL AND lease_expires_us > ?5",
                    params![
                        lease.run,
                        lease.holder,
                        i64::try_from(lease.epoch).unwrap_or(-1),
                        expires.as_microsecond(),
                        now.as_microsecond(),
                    ],
                )
                .map_err(ctx.sql(OPERATION))?;
            if renewed == 0 {
                return Err(StoreError::LeaseLost {
                    run: lease.run,
                    holder: lease.holder,
                });
            }
            Ok(Lease { expires, ..lease })
        })
        .await
    }

    async fn release_lease(&self, lease: &Lease) -> Result<()> {
        const OPERATION: &str = "releasing a lease";
        let lease = lease.clone();
        self.write(OPERATION, move |conn, ctx| {
            conn.execute_cached(
                "UPDATE runs SET lease_holder = NULL, lease_expires_us = NULL \
                 WHERE id = ?1 AND lease_holder = ?2 AND lease_epoch = ?3",
                params![
                    lease.run,
                    lease.holder,
                    i64::try_from(lease.epoch).unwrap_or(-1)
                ],
            )
            .map_err(ctx.sql(OPERATION))?;
            Ok(())
        })
        .await
    }

    async fn orphaned_runs(&self, limit: usize) -> Result<Vec<Run>> {
        const OPERATION: &str = "listing orphaned runs";
        let now = self.clock.now().as_microsecond();
        let limit = row::limit(limit, usize::MAX);
        self.read(OPERATION, move |conn, ctx| {
            let mut statement = conn
                .prepare_cached(&format!(
                    "{SELECT_RUN} WHERE {ORPHANED} \
                     ORDER BY lease_expires_us IS NOT NULL, lease_expires_us, created_us LIMIT ?2"
                ))
                .map_err(ctx.sql(OPERATION))?;
            let rows = statement
                .query_map(params![now, limit], run_row)
                .and_then(Iterator::collect::<rusqlite::Result<Vec<_>>>)
                .map_err(ctx.sql(OPERATION))?;
            rows.into_iter().map(RunRow::into_run).collect()
        })
        .await
    }

    async fn claim_orphaned_run(&self, replica: &str, ttl: Duration) -> Result<Option<Run>> {
        const OPERATION: &str = "taking over an orphaned run";
        row::check_replica(replica)?;
        let replica = replica.to_owned();
        let now = self.clock.now();
        self.write(OPERATION, move |conn, ctx| {
            in_write_tx(conn, ctx, OPERATION, |tx| {
                let id: Option<String> = tx
                    .query_row_cached(
                        &format!(
                            "SELECT id FROM runs WHERE {ORPHANED} \
                             ORDER BY lease_expires_us IS NOT NULL, lease_expires_us, created_us \
                             LIMIT 1"
                        ),
                        [now.as_microsecond()],
                        |row| row.get(0),
                    )
                    .optional()
                    .map_err(ctx.sql(OPERATION))?;
                let Some(id) = id else { return Ok(None) };
                if claim(tx, ctx, OPERATION, &id, &replica, now, runs::add(now, ttl))?.is_none() {
                    return Ok(None);
                }
                existing_run(tx, ctx, OPERATION, &id).map(Some)
            })
        })
        .await
    }

    async fn take_paused(&self, id: &str, replica: &str, ttl: Duration) -> Result<Option<Run>> {
        const OPERATION: &str = "taking a paused run";
        row::check_run_id(id)?;
        row::check_replica(replica)?;
        let (id, replica) = (id.to_owned(), replica.to_owned());
        let now = self.clock.now();
        let taken = self
            .write(OPERATION, move |conn, ctx| {
                in_write_tx(conn, ctx, OPERATION, |tx| {
                    existing_run(tx, ctx, OPERATION, &id)?;
                    take(tx, ctx, OPERATION, &id, &replica, now, runs::add(now, ttl))
                })
            })
            .await?;
        Ok(self.taken(taken))
    }

    async fn take_expired_pause(&self, replica: &str, ttl: Duration) -> Result<Option<Run>> {
        const OPERATION: &str = "taking an expired pause";
        row::check_replica(replica)?;
        let replica = replica.to_owned();
        let now = self.clock.now();
        let taken = self
            .write(OPERATION, move |conn, ctx| {
                in_write_tx(conn, ctx, OPERATION, |tx| {
                    let id: Option<String> = tx
                        .query_row_cached(
                            "SELECT id FROM runs WHERE status = 'paused' AND decide_by_us <= ?1 \
                             ORDER BY decide_by_us LIMIT 1",
                            [now.as_microsecond()],
                            |row| row.get(0),
                        )
                        .optional()
                        .map_err(ctx.sql(OPERATION))?;
                    let Some(id) = id else { return Ok(None) };
                    take(tx, ctx, OPERATION, &id, &replica, now, runs::add(now, ttl))
                })
            })
            .await?;
        Ok(self.taken(taken))
    }

    fn run_changes(&self) -> RunChanges {
        runs::broadcast_changes(self.inner.changes.subscribe())
    }

    async fn purge_runs(&self, older_than: Duration) -> Result<PurgeReport> {
        const OPERATION: &str = "purging old runs";
        let cutoff = runs::sub(self.clock.now(), older_than).as_microsecond();
        self.write(OPERATION, move |conn, ctx| {
            in_write_tx(conn, ctx, OPERATION, |tx| {
                // Counted in events, not rows: a row holds a batch of them.
                let events: u64 = tx
                    .prepare(
                        "DELETE FROM run_event_batches WHERE (created_us < ?1 AND run_id NOT IN \
                         (SELECT id FROM runs WHERE status = 'paused')) OR run_id IN \
                         (SELECT id FROM runs WHERE finished_us < ?1) \
                         RETURNING last_seq - first_seq + 1",
                    )
                    .and_then(|mut statement| {
                        statement
                            .query_map([cutoff], |row| row.get::<_, i64>(0))?
                            .map(|events| events.map(|events| events.unsigned_abs()))
                            .sum::<rusqlite::Result<u64>>()
                    })
                    .map_err(ctx.sql(OPERATION))?;
                let runs = tx
                    .execute_cached("DELETE FROM runs WHERE finished_us < ?1", [cutoff])
                    .map_err(ctx.sql(OPERATION))?;
                Ok(PurgeReport {
                    runs: runs as u64,
                    events,
                })
            })
        })
        .await
    }
}

//! Storing many runs' events in one transaction on PostgreSQL: one statement locks the runs,
//! one inserts every event (`UNNEST` of arrays), one moves each run's last number and
//! notifies its followers.

use std::collections::HashMap;

use deadpool_postgres::{Client, Transaction};

use super::{listen, pg};
use crate::runs::{self, EventBatch, RunChange, row};
use crate::{Result, StoreError};

const OPERATION: &str = "storing runs' events";

/// Locks the runs in id order, so that two replicas writing the same runs at once never wait
/// on each other in a cycle; the row lock serialises appends to a run, and nothing else.
const LOCK_RUNS: &str = "SELECT id, last_seq FROM runs WHERE id = ANY($1) ORDER BY id FOR UPDATE";

const INSERT_EVENTS: &str = "INSERT INTO run_events (run_id, seq, data, created_utc) \
     SELECT run_id, seq, data, now() \
     FROM UNNEST($1::text[], $2::bigint[], $3::bytea[]) AS e (run_id, seq, data)";

/// Moves each run's last number, and tells the followers, in the order written.
const SET_LAST_AND_NOTIFY: &str = "WITH moved AS (UPDATE runs SET last_seq = u.last_seq, \
     updated_utc = now() FROM UNNEST($1::text[], $2::bigint[]) AS u (id, last_seq) \
     WHERE runs.id = u.id) \
     SELECT pg_notify($3, n.payload) FROM UNNEST($4::text[]) WITH ORDINALITY AS n (payload, i) \
     ORDER BY n.i";

/// The batches checked against the stored numbers: each one's result so far, and those to
/// write, in the order given.
struct Checked {
    results: Vec<Result<Option<u64>>>,
    writes: Vec<usize>,
}

/// [`RunStore::append_event_batches`](crate::runs::RunStore::append_event_batches).
pub(super) async fn append(
    client: &mut Client,
    batches: &[EventBatch<'_>],
) -> Result<Vec<Result<Option<u64>>>> {
    {
        let tx = client.transaction().await.map_err(pg(OPERATION))?;
        let checked = check(&tx, batches).await?;
        if let Ok(results) = write_together(&tx, batches, checked).await {
            tx.commit().await.map_err(pg(OPERATION))?;
            return Ok(results);
        }
        // A row one batch could not write undid them all (the transaction is rolled back
        // when dropped): each is written again on its own, so only the batch that fails is
        // left out.
    }
    let tx = client.transaction().await.map_err(pg(OPERATION))?;
    let checked = check(&tx, batches).await?;
    let results = write_each(&tx, batches, checked).await?;
    tx.commit().await.map_err(pg(OPERATION))?;
    Ok(results)
}

/// Locks the runs and checks each batch against its run's stored events and the batches of
/// that run before it.
async fn check(tx: &Transaction<'_>, batches: &[EventBatch<'_>]) -> Result<Checked> {
    let mut results: Vec<Result<Option<u64>>> = batches
        .iter()
        .map(|batch| row::check_run_id(batch.run).map(|()| None))
        .collect();
    let mut ids: Vec<&str> = batches
        .iter()
        .zip(&results)
        .filter(|(_, result)| result.is_ok())
        .map(|(batch, _)| batch.run)
        .collect();
    ids.sort_unstable();
    ids.dedup();
    let lock = tx.prepare_cached(LOCK_RUNS).await.map_err(pg(OPERATION))?;
    let rows = tx.query(&lock, &[&ids]).await.map_err(pg(OPERATION))?;
    let mut last: HashMap<String, Option<u64>> = HashMap::with_capacity(rows.len());
    for row in rows {
        let id: String = row.try_get(0).map_err(pg(OPERATION))?;
        let seq: Option<i64> = row.try_get(1).map_err(pg(OPERATION))?;
        last.insert(id, seq.and_then(|seq| u64::try_from(seq).ok()));
    }
    let mut writes = Vec::with_capacity(batches.len());
    for (index, batch) in batches.iter().enumerate() {
        if results[index].is_err() {
            continue;
        }
        let Some(stored) = last.get_mut(batch.run) else {
            results[index] = Err(StoreError::UnknownRun {
                run: batch.run.to_owned(),
            });
            continue;
        };
        if batch.events.is_empty() {
            results[index] = Ok(*stored);
            continue;
        }
        results[index] = runs::check_batch(batch.run, *stored, batch.events).map(|new_last| {
            *stored = Some(new_last);
            writes.push(index);
            Some(new_last)
        });
    }
    Ok(Checked { results, writes })
}

/// Writes every checked batch with one insert; an `Err` leaves the transaction unusable.
async fn write_together(
    tx: &Transaction<'_>,
    batches: &[EventBatch<'_>],
    checked: Checked,
) -> std::result::Result<Vec<Result<Option<u64>>>, tokio_postgres::Error> {
    if !checked.writes.is_empty() {
        let count = checked
            .writes
            .iter()
            .map(|&index| batches[index].events.len())
            .sum();
        let mut run_ids: Vec<&str> = Vec::with_capacity(count);
        let mut seqs: Vec<i64> = Vec::with_capacity(count);
        let mut data: Vec<&[u8]> = Vec::with_capacity(count);
        for &index in &checked.writes {
            for event in batches[index].events {
                run_ids.push(batches[index].run);
                seqs.push(db_int(event.seq));
                data.push(&event.data);
            }
        }
        let insert = tx.prepare_cached(INSERT_EVENTS).await?;
        tx.execute(&insert, &[&run_ids, &seqs, &data]).await?;
    }
    set_last_and_notify(tx, batches, &checked.writes, &checked.results).await?;
    Ok(checked.results)
}

/// Writes each checked batch within a savepoint of its own: one that fails is undone and left
/// out, with the later batches of its run (they would leave a gap).
async fn write_each(
    tx: &Transaction<'_>,
    batches: &[EventBatch<'_>],
    checked: Checked,
) -> Result<Vec<Result<Option<u64>>>> {
    let Checked {
        mut results,
        writes,
    } = checked;
    let insert = tx
        .prepare_cached(INSERT_EVENTS)
        .await
        .map_err(pg(OPERATION))?;
    let mut written = Vec::with_capacity(writes.len());
    // Runs a batch of which failed, and the number that batch started at.
    let mut failed: HashMap<&str, u64> = HashMap::new();
    for index in writes {
        let batch = batches[index];
        let first = batch.events.first().map_or(0, |event| event.seq);
        if let Some(&expected) = failed.get(batch.run) {
            results[index] = Err(StoreError::EventGap {
                run: batch.run.to_owned(),
                found: first,
                expected,
            });
            continue;
        }
        let run_ids = vec![batch.run; batch.events.len()];
        let seqs: Vec<i64> = batch.events.iter().map(|event| db_int(event.seq)).collect();
        let data: Vec<&[u8]> = batch.events.iter().map(|event| &event.data[..]).collect();
        tx.batch_execute("SAVEPOINT run_events")
            .await
            .map_err(pg(OPERATION))?;
        match tx.execute(&insert, &[&run_ids, &seqs, &data]).await {
            Ok(_) => written.push(index),
            Err(error) => {
                tx.batch_execute("ROLLBACK TO SAVEPOINT run_events")
                    .await
                    .map_err(pg(OPERATION))?;
                results[index] = Err(pg(OPERATION)(error));
                failed.insert(batch.run, first);
            }
        }
    }
    set_last_and_notify(tx, batches, &written, &results)
        .await
        .map_err(pg(OPERATION))?;
    Ok(results)
}

/// Moves the last number of every run written (batches `written`, whose `results` hold their
/// new last numbers) and notifies its followers, once per batch.
async fn set_last_and_notify(
    tx: &Transaction<'_>,
    batches: &[EventBatch<'_>],
    written: &[usize],
    results: &[Result<Option<u64>>],
) -> std::result::Result<(), tokio_postgres::Error> {
    if written.is_empty() {
        return Ok(());
    }
    let mut ids: Vec<&str> = Vec::with_capacity(written.len());
    let mut lasts: Vec<i64> = Vec::with_capacity(written.len());
    let mut places: HashMap<&str, usize> = HashMap::with_capacity(written.len());
    let mut payloads = Vec::with_capacity(written.len());
    for &index in written {
        let Ok(Some(last)) = &results[index] else {
            continue;
        };
        let run = batches[index].run;
        // A later batch of a run holds its last number.
        match places.get(run) {
            Some(&at) => lasts[at] = db_int(*last),
            None => {
                places.insert(run, ids.len());
                ids.push(run);
                lasts.push(db_int(*last));
            }
        }
        payloads.push(
            RunChange::Events {
                run: run.to_owned(),
                last_seq: *last,
            }
            .payload(),
        );
    }
    let statement = tx.prepare_cached(SET_LAST_AND_NOTIFY).await?;
    tx.query(&statement, &[&ids, &lasts, &listen::CHANNEL, &payloads])
        .await?;
    Ok(())
}

fn db_int(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

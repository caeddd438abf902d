//! Storing many runs' events in one transaction on SQLite: each run's batch checked and
//! written within a savepoint of its own, with cached statements.

use rusqlite::{Connection, OptionalExtension as _, params};

use super::Ctx;
use crate::runs::{self, EventBatch, row};
use crate::{Result, StoreError};

pub(super) const OPERATION: &str = "storing runs' events";

/// Runs' event batches copied for the writer thread: every event's bytes in one buffer, so a
/// write of any number of events costs one copy of their bytes and an allocation per run.
pub(super) struct CopiedBatches {
    bytes: Vec<u8>,
    batches: Vec<CopiedBatch>,
}

/// One run's batch in [`CopiedBatches`].
struct CopiedBatch {
    run: String,
    /// An unusable run id, refused before the store is read.
    refused: Option<StoreError>,
    /// Each event's number and where its bytes end in the buffer (they start where the
    /// previous event's end).
    events: Vec<(u64, usize)>,
}

/// What a write of [`CopiedBatches`] did: one result per batch, in order, and for each run
/// written, its new last number (what its followers are told).
pub(super) type Appended = (Vec<Result<Option<u64>>>, Vec<(String, u64)>);

impl CopiedBatches {
    pub(super) fn new(batches: &[EventBatch<'_>]) -> Self {
        let size = batches
            .iter()
            .flat_map(|batch| batch.events)
            .map(|event| event.data.len())
            .sum();
        let mut bytes = Vec::with_capacity(size);
        let batches = batches
            .iter()
            .map(|batch| CopiedBatch {
                run: batch.run.to_owned(),
                refused: row::check_run_id(batch.run).err(),
                events: batch
                    .events
                    .iter()
                    .map(|event| {
                        bytes.extend_from_slice(&event.data);
                        (event.seq, bytes.len())
                    })
                    .collect(),
            })
            .collect();
        CopiedBatches { bytes, batches }
    }

    /// Appends every batch in the transaction `tx`; an `Err` fails the transaction itself.
    pub(super) fn append(self, tx: &Connection, ctx: &Ctx, now: i64) -> Result<Appended> {
        let mut results = Vec::with_capacity(self.batches.len());
        let mut written = Vec::with_capacity(self.batches.len());
        let mut start = 0;
        for batch in self.batches {
            let from = start;
            start = batch.events.last().map_or(start, |&(_, end)| end);
            if let Some(refused) = batch.refused {
                results.push(Err(refused));
                continue;
            }
            let result = append_batch(tx, ctx, &batch, &self.bytes, from, now)?;
            if let (Ok(Some(last)), false) = (&result, batch.events.is_empty()) {
                written.push((batch.run, *last));
            }
            results.push(result);
        }
        Ok((results, written))
    }
}

/// Appends one run's `batch`, whose events' bytes start at `from` in `bytes`. The outer `Err`
/// fails the whole transaction; the inner one is this run's, whose writes are undone by
/// rolling back to its savepoint.
fn append_batch(
    tx: &Connection,
    ctx: &Ctx,
    batch: &CopiedBatch,
    bytes: &[u8],
    from: usize,
    now: i64,
) -> Result<Result<Option<u64>>> {
    let sql = ctx.sql(OPERATION);
    let stored: Option<Option<i64>> = match tx
        .prepare_cached("SELECT last_seq FROM runs WHERE id = ?1")
        .and_then(|mut statement| {
            statement
                .query_row([&batch.run], |row| row.get(0))
                .optional()
        }) {
        Ok(stored) => stored,
        Err(error) => return Ok(Err(sql(error))),
    };
    let Some(stored) = stored else {
        return Ok(Err(StoreError::UnknownRun {
            run: batch.run.clone(),
        }));
    };
    let stored = stored.and_then(|seq| u64::try_from(seq).ok());
    if batch.events.is_empty() {
        return Ok(Ok(stored));
    }
    let seqs = batch.events.iter().map(|&(seq, _)| seq);
    let last = match runs::check_seqs(&batch.run, stored, seqs) {
        Ok(last) => last,
        Err(refused) => return Ok(Err(refused)),
    };
    let run_statement = |statement: &str| {
        tx.prepare_cached(statement)
            .and_then(|mut statement| statement.execute([]))
            .map_err(&sql)
    };
    run_statement("SAVEPOINT run_events")?;
    let written = (|| {
        let mut insert = tx.prepare_cached(
            "INSERT INTO run_events (run_id, seq, data, created_us) VALUES (?1, ?2, ?3, ?4)",
        )?;
        let mut start = from;
        for &(seq, end) in &batch.events {
            // `check_seqs` bounds every number by i64::MAX.
            let seq = i64::try_from(seq).unwrap_or(i64::MAX);
            insert.execute(params![batch.run, seq, &bytes[start..end], now])?;
            start = end;
        }
        tx.prepare_cached("UPDATE runs SET last_seq = ?2, updated_us = ?3 WHERE id = ?1")?
            .execute(params![
                batch.run,
                i64::try_from(last).unwrap_or(i64::MAX),
                now
            ])?;
        Ok::<_, rusqlite::Error>(())
    })();
    match written {
        Ok(()) => {
            run_statement("RELEASE run_events")?;
            Ok(Ok(Some(last)))
        }
        Err(error) => {
            run_statement("ROLLBACK TO run_events")?;
            run_statement("RELEASE run_events")?;
            Ok(Err(sql(error)))
        }
    }
}

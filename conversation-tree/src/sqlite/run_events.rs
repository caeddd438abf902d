//! Storing many runs' events in one transaction on SQLite: each run's batch checked and
//! written within a savepoint of its own, as one row (`run_event_batches`: the events' bytes
//! back to back and their lengths), so that storing a batch costs one insert whatever its
//! size, and its bytes fill whole pages.

use bytes::Bytes;
use rusqlite::{Connection, OptionalExtension as _, params};

use super::Ctx;
use crate::runs::{self, EventBatch, RunEvent, row};
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
    let first = batch.events.first().map_or(0, |&(seq, _)| seq);
    let lengths = lengths(&batch.events, from);
    let written = (|| {
        // `check_seqs` bounds every number by i64::MAX.
        let number = |seq: u64| i64::try_from(seq).unwrap_or(i64::MAX);
        tx.prepare_cached(
            "INSERT INTO run_event_batches (run_id, first_seq, last_seq, lengths, data, \
             created_us) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )?
        .execute(params![
            batch.run,
            number(first),
            number(last),
            lengths,
            &bytes[from..batch.events.last().map_or(from, |&(_, end)| end)],
            now
        ])?;
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

/// The stored lengths of a batch's events whose bytes start at `from`: each event's length as
/// 8 little-endian bytes, or `None` for a batch of one event (its length is the row's).
fn lengths(events: &[(u64, usize)], from: usize) -> Option<Vec<u8>> {
    if events.len() < 2 {
        return None;
    }
    let mut lengths = Vec::with_capacity(events.len() * 8);
    let mut start = from;
    for &(_, end) in events {
        lengths.extend_from_slice(&((end - start) as u64).to_le_bytes());
        start = end;
    }
    Some(lengths)
}

/// The events of a stored batch numbered from `first`, whose bytes are `data` and lengths
/// `lengths` (see [`lengths`]), after number `after`; `None` when the lengths do not add up
/// to the bytes (a row this store did not write).
pub(super) fn split(
    first: u64,
    lengths: Option<&[u8]>,
    data: &[u8],
    after: Option<u64>,
    events: &mut Vec<RunEvent>,
    limit: usize,
) -> Option<()> {
    let keep = |seq: u64| after.is_none_or(|after| seq > after);
    let Some(lengths) = lengths else {
        if keep(first) && events.len() < limit {
            events.push(RunEvent {
                seq: first,
                data: Bytes::copy_from_slice(data),
            });
        }
        return Some(());
    };
    if lengths.len() % 8 != 0 {
        return None;
    }
    let mut start = 0usize;
    for (index, length) in lengths.chunks_exact(8).enumerate() {
        let length = usize::try_from(u64::from_le_bytes(length.try_into().ok()?)).ok()?;
        let end = start.checked_add(length).filter(|&end| end <= data.len())?;
        let seq = first.checked_add(index as u64)?;
        if keep(seq) && events.len() < limit {
            events.push(RunEvent {
                seq,
                data: Bytes::copy_from_slice(&data[start..end]),
            });
        }
        start = end;
    }
    (start == data.len()).then_some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split_all(first: u64, lengths: Option<&[u8]>, data: &[u8]) -> Option<Vec<RunEvent>> {
        let mut events = Vec::new();
        split(first, lengths, data, None, &mut events, usize::MAX).map(|()| events)
    }

    #[test]
    fn a_batch_splits_into_the_events_it_was_written_from() {
        let events = [(5, 3), (6, 3), (7, 8)];
        let stored = lengths(&events, 0).expect("three events have lengths");
        let read = split_all(5, Some(&stored), b"abcdefgh").expect("they add up");
        let expected = [
            RunEvent::new(5, b"abc".to_vec()),
            RunEvent::new(6, Vec::new()),
            RunEvent::new(7, b"defgh".to_vec()),
        ];
        assert_eq!(read, expected);
        let mut after_five = Vec::new();
        split(5, Some(&stored), b"abcdefgh", Some(5), &mut after_five, 1);
        assert_eq!(after_five, expected[1..2]);
        assert_eq!(lengths(&[(0, 4)], 0), None, "one event is the whole row");
    }

    #[test]
    fn lengths_that_do_not_add_up_are_refused() {
        let lengths = [2u64, 2].map(u64::to_le_bytes).concat();
        assert!(split_all(0, Some(&lengths), b"abc").is_none(), "short");
        assert!(split_all(0, Some(&lengths), b"abcde").is_none(), "long");
        assert!(split_all(0, Some(&lengths[..7]), b"abcd").is_none(), "cut");
        let huge = [u64::MAX].map(u64::to_le_bytes).concat();
        assert!(split_all(0, Some(&huge), b"abcd").is_none());
        assert!(split_all(0, Some(&lengths), b"abcd").is_some());
    }
}

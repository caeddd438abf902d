-- Schema version 12: a run's events stored a batch per row instead of a row per event.
--
-- A row per event made every stored event a B-tree insert into a table keyed by run id and
-- number, plus one into the index by time: each batch dirtied about a page per run and per
-- index, and the pages held about half their room (a 112-byte event cost 260 bytes on disk).
-- A batch is now one row, its bytes one blob written whole.
--
-- `data` holds the batch's events back to back, numbered `first_seq` to `last_seq`; `lengths`
-- holds each event's length in bytes, as 8-byte little-endian integers, or is NULL for a
-- batch of one event (the whole of `data`), which is how the events stored one per row before
-- this version are kept.
CREATE TABLE run_event_batches (
    run_id     TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    first_seq  INTEGER NOT NULL,
    last_seq   INTEGER NOT NULL,
    lengths    BLOB,
    data       BLOB NOT NULL,
    created_us INTEGER NOT NULL,
    PRIMARY KEY (run_id, first_seq),
    CHECK (last_seq >= first_seq),
    CHECK (lengths IS NOT NULL OR last_seq = first_seq)
) STRICT;

-- Retention: batches by when they were stored.
CREATE INDEX idx_run_event_batches_created ON run_event_batches (created_us);

INSERT INTO run_event_batches (run_id, first_seq, last_seq, lengths, data, created_us)
    SELECT run_id, seq, seq, NULL, data, created_us FROM run_events;

DROP TABLE run_events;

-- Schema version 8: run records, their stored events and their leases. A run outlives the
-- request that started it: a background response goes on with no client attached, a client
-- resumes its stream after N, and another process takes a run over once its lease expires.
--
-- Times are microseconds since the Unix epoch (UTC), as integers: leases and retention compare
-- them in SQL. `status` is text without a CHECK, so a new state is one more value, not a
-- migration. `spec_json` is the request the service needs to run the answer again, as it wrote
-- it. `last_seq` is the sequence number of the run's last stored event (NULL before the first),
-- kept with the run so an append checks it under the write lock it already holds.
-- `lease_epoch` counts claims: a lease is held by (holder, epoch), so a replica whose lease was
-- taken over cannot renew or release the new holder's lease by reusing its name.

CREATE TABLE runs (
    id               TEXT PRIMARY KEY NOT NULL,
    owner            TEXT NOT NULL,
    protocol         TEXT NOT NULL,
    mode             TEXT NOT NULL,
    status           TEXT NOT NULL,
    spec_json        TEXT NOT NULL,
    continues_from   INTEGER,
    last_node        INTEGER,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    error            TEXT,
    created_us       INTEGER NOT NULL,
    updated_us       INTEGER NOT NULL,
    finished_us      INTEGER,
    last_seq         INTEGER,
    lease_holder     TEXT,
    lease_epoch      INTEGER NOT NULL DEFAULT 0,
    lease_expires_us INTEGER
) STRICT;

-- Runs a worker may take over: unfinished ones, by lease expiry.
CREATE INDEX idx_runs_unfinished_lease ON runs (lease_expires_us) WHERE finished_us IS NULL;
-- Retention: finished runs by when they finished.
CREATE INDEX idx_runs_finished ON runs (finished_us) WHERE finished_us IS NOT NULL;

-- The exact bytes a live client was sent, one row per event, numbered without gaps from 0.
CREATE TABLE run_events (
    run_id     TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    data       BLOB NOT NULL,
    created_us INTEGER NOT NULL,
    PRIMARY KEY (run_id, seq)
) STRICT, WITHOUT ROWID;

CREATE INDEX idx_run_events_created ON run_events (created_us);

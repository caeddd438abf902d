-- Schema version 8: run records, their stored events and their leases. A run outlives the
-- request that started it: a background response goes on with no client attached, a client
-- resumes its stream after N on any replica, and another replica takes a run over once its
-- lease expires. Lease times are the database's `now()`: replicas' clocks need not agree.
--
-- `status` is text without a CHECK, so a new state is one more value, not a migration.
-- `spec_json` is the request the service needs to run the answer again, kept as the text it
-- wrote. `last_seq` is the sequence number of the run's last stored event (NULL before the
-- first), kept with the run so an append checks it under the run's row lock. `lease_epoch`
-- counts claims: a lease is held by (holder, epoch), so a replica whose lease was taken over
-- cannot renew or release the new holder's lease by reusing its name.

CREATE TABLE runs (
    id               TEXT PRIMARY KEY,
    owner            TEXT NOT NULL,
    protocol         TEXT NOT NULL,
    mode             TEXT NOT NULL,
    status           TEXT NOT NULL,
    spec_json        TEXT NOT NULL,
    continues_from   BIGINT,
    last_node        BIGINT,
    cancel_requested BOOLEAN NOT NULL DEFAULT FALSE,
    error            TEXT,
    created_utc      TIMESTAMPTZ NOT NULL,
    updated_utc      TIMESTAMPTZ NOT NULL,
    finished_utc     TIMESTAMPTZ,
    last_seq         BIGINT,
    lease_holder     TEXT,
    lease_epoch      BIGINT NOT NULL DEFAULT 0,
    lease_expires    TIMESTAMPTZ
);

-- Runs a worker may take over: unfinished ones, by lease expiry.
CREATE INDEX idx_runs_unfinished_lease ON runs (lease_expires) WHERE finished_utc IS NULL;
-- Retention: finished runs by when they finished.
CREATE INDEX idx_runs_finished ON runs (finished_utc) WHERE finished_utc IS NOT NULL;

-- The exact bytes a live client was sent, one row per event, numbered without gaps from 0.
CREATE TABLE run_events (
    run_id      TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq         BIGINT NOT NULL,
    data        BYTEA NOT NULL,
    created_utc TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (run_id, seq)
);

CREATE INDEX idx_run_events_created ON run_events (created_utc);

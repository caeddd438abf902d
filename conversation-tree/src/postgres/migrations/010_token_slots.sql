-- Schema version 10: per-caller concurrency slots, counted across every replica on this
-- database. An owner (a token's owner name, never the token) has rows 0..limit-1, created the
-- first time it is admitted; a row is held while `expires` is in the future. A replica claims
-- the lowest free row with `FOR UPDATE SKIP LOCKED`, so racing claims each take a different
-- row, renews the rows it holds while its requests run, and frees a row when its request ends.
-- A dead replica stops renewing: its rows free themselves at `expires` (the database's now()).

CREATE TABLE token_slots (
    owner   TEXT NOT NULL,
    slot    INTEGER NOT NULL,
    holder  TEXT,
    claim   TEXT,
    expires TIMESTAMPTZ,
    PRIMARY KEY (owner, slot)
);

-- A replica renews the slots it holds in one statement.
CREATE INDEX idx_token_slots_holder ON token_slots (holder) WHERE holder IS NOT NULL;

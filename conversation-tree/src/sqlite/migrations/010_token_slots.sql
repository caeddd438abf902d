-- Schema version 10: per-caller concurrency slots, counted across every process on this file.
-- An owner (a token's owner name, never the token) has rows 0..limit-1, created the first time
-- it is admitted; a row is held while `expires_us` (microseconds since the Unix epoch) is in
-- the future. Claims run under the file's write lock, so racing claims take different rows.
-- A process that dies stops renewing: its rows free themselves at `expires_us`.

CREATE TABLE token_slots (
    owner      TEXT NOT NULL,
    slot       INTEGER NOT NULL,
    holder     TEXT,
    claim      TEXT,
    expires_us INTEGER,
    PRIMARY KEY (owner, slot)
) STRICT, WITHOUT ROWID;

-- A process renews the slots it holds in one statement.
CREATE INDEX idx_token_slots_holder ON token_slots (holder) WHERE holder IS NOT NULL;

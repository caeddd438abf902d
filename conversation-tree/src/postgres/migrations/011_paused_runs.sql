-- Schema version 11: runs paused until a person decides about their tool calls. A paused run
-- holds no lease and is no replica's to take over; `paused_json` is what its protocol needs
-- to resume it (the paused run and its request), and `decide_by` when an undecided pause is
-- answered as rejected (the database's clock, as for leases).

ALTER TABLE runs ADD COLUMN paused_json TEXT;
ALTER TABLE runs ADD COLUMN decide_by TIMESTAMPTZ;

-- The sweep of pauses whose time to decide has passed.
CREATE INDEX idx_runs_paused ON runs (decide_by) WHERE status = 'paused';

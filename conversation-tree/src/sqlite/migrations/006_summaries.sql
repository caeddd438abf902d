-- Schema version 6: summaries that context compression wrote. A request sent with the
-- conversation's opening summarised is logged with that summary beside its answer, so a later
-- run continuing below the answer starts from the summary instead of summarising the whole
-- history again. The summary stands for the first `replaces` messages after the system
-- message; `replaced_hash` is their prompt hash, checked before the summary is used.
--
-- The node is the key: one summary per node, written in the node's own transaction. A path
-- finds its deepest summary by joining its nodes here.

CREATE TABLE summaries (
    node_id       INTEGER PRIMARY KEY NOT NULL REFERENCES responses (id),
    replaces      INTEGER NOT NULL,
    replaced_hash TEXT NOT NULL,
    -- Canonical transcript JSON (messages::transcript) of what stands in their place.
    messages_json TEXT NOT NULL
) STRICT;

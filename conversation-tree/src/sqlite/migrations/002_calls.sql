-- Schema version 2: one row per request answered with a node, cache hits included, so each
-- call keeps its own timestamp and hit rates can be analysed.

CREATE TABLE calls (
    id              INTEGER PRIMARY KEY,
    response_id     INTEGER NOT NULL REFERENCES responses (id),
    conversation_id TEXT NOT NULL REFERENCES conversations (id),
    kind            TEXT NOT NULL CHECK (kind IN ('generated', 'cache_hit', 'supplied')),
    model           TEXT,
    datetime_utc    TEXT NOT NULL
) STRICT;

CREATE INDEX idx_calls_conversation ON calls (conversation_id, id);
CREATE INDEX idx_calls_response ON calls (response_id);

-- Responses stored before this version each came from one call.
INSERT INTO calls (response_id, conversation_id, kind, model, datetime_utc)
SELECT id, conversation_id, CASE WHEN model IS NULL THEN 'supplied' ELSE 'generated' END, model,
       datetime_utc
FROM responses
ORDER BY id;

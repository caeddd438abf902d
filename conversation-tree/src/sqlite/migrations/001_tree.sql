-- Schema version 1: conversations and their responses, with the seed's hashes and indexes.

CREATE TABLE conversations (
    id          TEXT PRIMARY KEY NOT NULL,
    name        TEXT,
    created_utc TEXT NOT NULL,
    -- When the conversation was last answered: `skein chat -c` continues the most recent one.
    updated_utc TEXT NOT NULL
) STRICT;

CREATE INDEX idx_conversations_updated ON conversations (updated_utc);

-- One row per node: a turn's input messages and the answer, at one position of the tree.
CREATE TABLE responses (
    id                    INTEGER PRIMARY KEY,
    conversation_id       TEXT NOT NULL REFERENCES conversations (id),
    parent_response_id    INTEGER REFERENCES responses (id),
    prompt_hash           TEXT NOT NULL,
    response_hash         TEXT NOT NULL,
    path_hash             TEXT NOT NULL,
    -- Canonical transcript JSON (messages::transcript): the input messages, and the answer as a
    -- one-message transcript, reasoning and tool calls included.
    input_json            TEXT NOT NULL,
    response_json         TEXT NOT NULL,
    -- NULL when a caller supplied the answer instead of a model generating it.
    model                 TEXT,
    temperature           REAL,
    max_tokens            INTEGER,
    stop_json             TEXT NOT NULL DEFAULT '[]',
    cache_key             TEXT,
    input_tokens          INTEGER,
    output_tokens         INTEGER,
    cached_input_tokens   INTEGER,
    cache_creation_tokens INTEGER,
    reasoning_tokens      INTEGER,
    duration_ms           INTEGER,
    datetime_utc          TEXT NOT NULL
) STRICT;

CREATE INDEX idx_responses_prompt_hash ON responses (prompt_hash);
CREATE INDEX idx_responses_path_hash ON responses (path_hash);
CREATE INDEX idx_responses_conversation_parent_prompt
    ON responses (conversation_id, parent_response_id, prompt_hash);

-- A supplied answer is stored once per position. UNIQUE treats NULLs as distinct, so a plain
-- index on parent_response_id would let duplicate roots through: 0 (never an id) stands for
-- "no parent". Generated answers are not unique: each model call is kept, even when two agree.
CREATE UNIQUE INDEX idx_responses_supplied_once
    ON responses (conversation_id, coalesce(parent_response_id, 0), prompt_hash, response_hash)
    WHERE model IS NULL;

-- Schema version 1: conversations and their responses, with the seed's hashes and indexes.
-- Same tables as SQLite's (src/sqlite/migrations), in PostgreSQL types.

CREATE TABLE conversations (
    id          TEXT PRIMARY KEY,
    name        TEXT,
    created_utc TIMESTAMPTZ NOT NULL,
    updated_utc TIMESTAMPTZ NOT NULL
);

CREATE INDEX idx_conversations_updated ON conversations (updated_utc);

CREATE TABLE responses (
    id                    BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    conversation_id       TEXT NOT NULL REFERENCES conversations (id),
    parent_response_id    BIGINT REFERENCES responses (id),
    prompt_hash           TEXT NOT NULL,
    response_hash         TEXT NOT NULL,
    path_hash             TEXT NOT NULL,
    -- Canonical transcript JSON as text (jsonb would reorder keys and drop the exact form).
    input_json            TEXT NOT NULL,
    response_json         TEXT NOT NULL,
    model                 TEXT,
    temperature           DOUBLE PRECISION,
    max_tokens            BIGINT,
    stop_json             TEXT NOT NULL DEFAULT '[]',
    cache_key             TEXT,
    input_tokens          BIGINT,
    output_tokens         BIGINT,
    cached_input_tokens   BIGINT,
    cache_creation_tokens BIGINT,
    reasoning_tokens      BIGINT,
    duration_ms           BIGINT,
    datetime_utc          TIMESTAMPTZ NOT NULL
);

CREATE INDEX idx_responses_prompt_hash ON responses (prompt_hash);
CREATE INDEX idx_responses_path_hash ON responses (path_hash);
CREATE INDEX idx_responses_conversation_parent_prompt
    ON responses (conversation_id, parent_response_id, prompt_hash);

-- A supplied answer is stored once per position; 0 (never an id) stands for "no parent",
-- because UNIQUE treats NULLs as distinct.
CREATE UNIQUE INDEX idx_responses_supplied_once
    ON responses (conversation_id, coalesce(parent_response_id, 0), prompt_hash, response_hash)
    WHERE model IS NULL;

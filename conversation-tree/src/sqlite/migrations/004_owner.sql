-- Schema version 4: who a conversation belongs to. A server with several callers records the
-- caller that started a conversation (an opaque principal name, never a secret) and serves it
-- to that caller only. NULL: written before this version or by a single-user front end (the
-- CLI), which has no callers to tell apart.

ALTER TABLE conversations ADD COLUMN owner TEXT;

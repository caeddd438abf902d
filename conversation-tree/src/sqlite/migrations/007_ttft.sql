-- Schema version 7: time to first token of the call behind each node, in milliseconds: from
-- sending the request to the first text, reasoning or tool call, so a slow start can be told
-- from a slow answer. NULL when no output arrived, for answers supplied by a caller, and for
-- rows written before this version.

ALTER TABLE responses ADD COLUMN ttft_ms INTEGER;

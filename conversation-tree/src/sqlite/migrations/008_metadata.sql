-- Schema version 8: the metadata a request was tagged with (OpenAI's `metadata`: up to 16
-- string pairs), kept with its answer so that reading the response back shows it. A JSON
-- object of strings; NULL when the request had none, for answers supplied by a caller, and for
-- rows written before this version. Outside every hash: it describes the exchange, not what
-- was said, so it changes neither a node's place nor which stored answer a walk matches.

ALTER TABLE responses ADD COLUMN metadata_json TEXT;

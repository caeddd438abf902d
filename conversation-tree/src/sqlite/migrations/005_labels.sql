-- Schema version 5: labels naming nodes. A front end names an answer before it is written (an
-- OpenAI Responses API id goes to the client in the first stream event) and later finds the
-- node by that name, possibly after a restart. A label is written in its node's own
-- transaction, so a label never points at nothing and a written answer never lacks its label.
-- A label names one node: logging another node with it moves it there.
--
-- WITHOUT ROWID: the label is the only key, so the table is its own index. No index on
-- node_id: nothing looks labels up by node, and nodes are never deleted.

CREATE TABLE labels (
    label   TEXT PRIMARY KEY NOT NULL,
    node_id INTEGER NOT NULL REFERENCES responses (id)
) STRICT, WITHOUT ROWID;

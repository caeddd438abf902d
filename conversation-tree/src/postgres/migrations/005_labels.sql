-- Schema version 5: labels naming nodes. A front end names an answer before it is written (an
-- OpenAI Responses API id goes to the client in the first stream event) and later finds the
-- node by that name, possibly after a restart. A label is written in its node's own
-- transaction, so a label never points at nothing and a written answer never lacks its label.
-- A label names one node: logging another node with it moves it there.
--
-- No index on node_id: nothing looks labels up by node, and nodes are never deleted (so the
-- foreign key never searches this table).

CREATE TABLE labels (
    label   TEXT PRIMARY KEY,
    node_id BIGINT NOT NULL REFERENCES responses (id)
);

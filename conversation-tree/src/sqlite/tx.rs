//! SQLite statements: the shared algorithms' [`Tx`], and the read queries.

use jiff::Timestamp;
use messages::Message;
use rusqlite::{Connection, OptionalExtension, Row, params};

use super::Ctx;
use crate::record::{self, NodeColumns, NodeRow, StoredRow, SummaryRow};
use crate::walk::Tx;
use crate::{
    Call, CallKind, ConversationId, ConversationSummary, Node, NodeId, PathSummary, Result,
    StoreError, Turn, VerifyReport,
};

/// `SELECT` of the columns [`node_columns`] reads, from `responses r`.
macro_rules! select_nodes {
    ($($rest:literal),*) => {
        concat!(
            "SELECT r.id, r.conversation_id, r.parent_response_id, r.prompt_hash, \
             r.response_hash, r.path_hash, r.model, r.temperature, r.max_tokens, r.stop_json, \
             r.cache_key, r.input_tokens, r.output_tokens, r.cached_input_tokens, \
             r.cache_creation_tokens, r.reasoning_tokens, r.duration_ms, r.datetime_utc, \
             r.status, r.ttft_ms, r.metadata_json ",
            $($rest),*
        )
    };
}

/// The lookup every walk step makes; `IS ?2` matches a NULL parent at the roots and still uses
/// the (conversation_id, parent_response_id, prompt_hash) index (see the query-plan test).
pub(super) const CANDIDATES_SQL: &str = select_nodes!(
    "FROM responses r WHERE r.conversation_id = ?1 AND r.parent_response_id IS ?2 \
     AND r.prompt_hash = ?3 ORDER BY r.id"
);

pub(super) struct SqliteTx<'c> {
    conn: &'c Connection,
    ctx: &'c Ctx,
    operation: &'static str,
}

impl<'c> SqliteTx<'c> {
    pub(super) fn new(conn: &'c Connection, ctx: &'c Ctx, operation: &'static str) -> Self {
        SqliteTx {
            conn,
            ctx,
            operation,
        }
    }
}

impl Tx for SqliteTx<'_> {
    async fn lock_conversation(&self, _conversation: &ConversationId) -> Result<()> {
        // Writes run in BEGIN IMMEDIATE transactions: SQLite already admits one writer.
        Ok(())
    }

    async fn touch_conversation(
        &self,
        conversation: &ConversationId,
        name: Option<&str>,
        owner: Option<&str>,
        at: Timestamp,
    ) -> Result<()> {
        let at = format_time(at);
        // The owner is set by the insert only: a write never changes an existing owner.
        self.conn
            .prepare_cached(
                "INSERT INTO conversations (id, name, created_utc, updated_utc, owner) \
                 VALUES (?1, ?2, ?3, ?3, ?4) \
                 ON CONFLICT (id) DO UPDATE SET updated_utc = max(updated_utc, excluded.updated_utc), \
                 name = coalesce(name, excluded.name)",
            )
            .and_then(|mut statement| {
                statement.execute(params![conversation.as_str(), name, at, owner])
            })
            .map_err(self.ctx.sql(self.operation))?;
        Ok(())
    }

    async fn node(&self, id: NodeId) -> Result<Option<Node>> {
        node(self.conn, self.ctx, self.operation, id)
    }

    async fn candidates(
        &self,
        conversation: &ConversationId,
        parent: Option<NodeId>,
        prompt_hash: &str,
    ) -> Result<Vec<Node>> {
        query_nodes(
            self.conn,
            self.ctx,
            self.operation,
            CANDIDATES_SQL,
            params![conversation.as_str(), parent.map(NodeId::get), prompt_hash],
        )
    }

    async fn at_position(
        &self,
        conversation: &ConversationId,
        parent: Option<NodeId>,
    ) -> Result<Vec<Node>> {
        let sql = select_nodes!(
            "FROM responses r WHERE r.conversation_id = ?1 AND r.parent_response_id IS ?2 \
             ORDER BY r.id"
        );
        query_nodes(
            self.conn,
            self.ctx,
            self.operation,
            sql,
            params![conversation.as_str(), parent.map(NodeId::get)],
        )
    }

    async fn insert_node(&self, row: &NodeRow) -> Result<NodeId> {
        let usage = row.usage.unwrap_or_default();
        let has_usage = row.usage.is_some();
        let count = |value: u64| has_usage.then(|| i64::try_from(value).unwrap_or(i64::MAX));
        self.conn
            .prepare_cached(
                "INSERT INTO responses (conversation_id, parent_response_id, prompt_hash, \
                 response_hash, path_hash, input_json, response_json, model, temperature, \
                 max_tokens, stop_json, cache_key, input_tokens, output_tokens, \
                 cached_input_tokens, cache_creation_tokens, reasoning_tokens, duration_ms, \
                 datetime_utc, status, ttft_ms, metadata_json) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, \
                 ?17, ?18, ?19, ?20, ?21, ?22)",
            )
            .and_then(|mut statement| {
                statement.execute(params![
                    row.conversation.as_str(),
                    row.parent.map(NodeId::get),
                    row.prompt_hash,
                    row.response_hash,
                    row.path_hash,
                    row.input_json,
                    row.response_json,
                    row.model,
                    row.options.temperature,
                    row.options.max_tokens,
                    row.stop_json,
                    row.cache_key,
                    count(usage.input_tokens),
                    count(usage.output_tokens),
                    count(usage.cached_input_tokens),
                    count(usage.cache_creation_tokens),
                    count(usage.reasoning_tokens),
                    row.duration_ms(),
                    format_time(row.datetime_utc),
                    row.status.as_str(),
                    row.ttft_ms(),
                    row.metadata_json(),
                ])
            })
            .map_err(self.ctx.sql(self.operation))?;
        Ok(NodeId::from_db(self.conn.last_insert_rowid()))
    }

    async fn insert_call(
        &self,
        node: NodeId,
        conversation: &ConversationId,
        kind: CallKind,
        model: Option<&str>,
        at: Timestamp,
    ) -> Result<()> {
        self.conn
            .prepare_cached(
                "INSERT INTO calls (response_id, conversation_id, kind, model, datetime_utc) \
                 VALUES (?1, ?2, ?3, ?4, ?5)",
            )
            .and_then(|mut statement| {
                statement.execute(params![
                    node.get(),
                    conversation.as_str(),
                    kind.as_str(),
                    model,
                    format_time(at)
                ])
            })
            .map_err(self.ctx.sql(self.operation))?;
        Ok(())
    }

    async fn set_label(&self, label: &str, node: NodeId) -> Result<()> {
        self.conn
            .prepare_cached(
                "INSERT INTO labels (label, node_id) VALUES (?1, ?2) \
                 ON CONFLICT (label) DO UPDATE SET node_id = excluded.node_id",
            )
            .and_then(|mut statement| statement.execute(params![label, node.get()]))
            .map_err(self.ctx.sql(self.operation))?;
        Ok(())
    }

    async fn set_summary(&self, node: NodeId, summary: &SummaryRow) -> Result<()> {
        self.conn
            .prepare_cached(
                "INSERT INTO summaries (node_id, replaces, replaced_hash, messages_json) \
                 VALUES (?1, ?2, ?3, ?4)",
            )
            .and_then(|mut statement| {
                statement.execute(params![
                    node.get(),
                    summary.replaces,
                    summary.replaced_hash,
                    summary.messages_json
                ])
            })
            .map_err(self.ctx.sql(self.operation))?;
        Ok(())
    }
}

pub(super) fn node(
    conn: &Connection,
    ctx: &Ctx,
    operation: &'static str,
    id: NodeId,
) -> Result<Option<Node>> {
    let sql = select_nodes!("FROM responses r WHERE r.id = ?1");
    Ok(query_nodes(conn, ctx, operation, sql, [id.get()])?.pop())
}

/// The node `label` names, if any.
pub(super) fn node_by_label(
    conn: &Connection,
    ctx: &Ctx,
    operation: &'static str,
    label: &str,
) -> Result<Option<Node>> {
    let sql =
        select_nodes!("FROM labels l JOIN responses r ON r.id = l.node_id WHERE l.label = ?1");
    Ok(query_nodes(conn, ctx, operation, sql, [label])?.pop())
}

fn existing(conn: &Connection, ctx: &Ctx, operation: &'static str, id: NodeId) -> Result<Node> {
    node(conn, ctx, operation, id)?.ok_or(StoreError::UnknownNode { id })
}

pub(super) fn turn(conn: &Connection, ctx: &Ctx, id: NodeId) -> Result<Turn> {
    let json = conn
        .prepare_cached("SELECT input_json, response_json FROM responses WHERE id = ?1")
        .and_then(|mut statement| {
            statement
                .query_row([id.get()], |row| {
                    Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
                })
                .optional()
        })
        .map_err(ctx.sql("reading a turn"))?;
    let (input, response) = json.ok_or(StoreError::UnknownNode { id })?;
    record::turn_from_json(id, &input, &response)
}

pub(super) fn children(conn: &Connection, ctx: &Ctx, id: NodeId) -> Result<Vec<Node>> {
    let parent = existing(conn, ctx, "listing children", id)?;
    let sql = select_nodes!(
        "FROM responses r WHERE r.conversation_id = ?1 AND r.parent_response_id = ?2 \
         ORDER BY r.id"
    );
    query_nodes(
        conn,
        ctx,
        "listing children",
        sql,
        params![parent.conversation_id().as_str(), id.get()],
    )
}

pub(super) fn roots(
    conn: &Connection,
    ctx: &Ctx,
    conversation: &ConversationId,
) -> Result<Vec<Node>> {
    let sql = select_nodes!(
        "FROM responses r WHERE r.conversation_id = ?1 AND r.parent_response_id IS NULL \
         ORDER BY r.id"
    );
    query_nodes(conn, ctx, "listing roots", sql, [conversation.as_str()])
}

/// Ancestors by a recursive query, `id` first. Parents always have smaller ids, so it ends.
macro_rules! path_cte {
    () => {
        "WITH RECURSIVE path (id, depth) AS ( \
         SELECT id, 0 FROM responses WHERE id = ?1 \
         UNION ALL \
         SELECT r.parent_response_id, path.depth + 1 FROM responses r JOIN path ON r.id = path.id \
         WHERE r.parent_response_id IS NOT NULL) "
    };
}

pub(super) fn path_to_root(conn: &Connection, ctx: &Ctx, id: NodeId) -> Result<Vec<Node>> {
    let sql = concat!(
        path_cte!(),
        select_nodes!("FROM path JOIN responses r ON r.id = path.id ORDER BY path.depth")
    );
    let nodes = query_nodes(conn, ctx, "reading a path", sql, [id.get()])?;
    if nodes.is_empty() {
        return Err(StoreError::UnknownNode { id });
    }
    Ok(nodes)
}

/// The summary of the deepest node on the path from the root to `id` that has one.
pub(super) fn path_summary(
    conn: &Connection,
    ctx: &Ctx,
    id: NodeId,
) -> Result<Option<PathSummary>> {
    const OPERATION: &str = "reading a path's summary";
    existing(conn, ctx, OPERATION, id)?;
    let sql = concat!(
        path_cte!(),
        "SELECT s.node_id, s.replaces, s.replaced_hash, s.messages_json FROM path \
         JOIN summaries s ON s.node_id = path.id ORDER BY path.depth LIMIT 1"
    );
    let row = conn
        .prepare_cached(sql)
        .and_then(|mut statement| {
            statement
                .query_row([id.get()], |row| {
                    Ok((
                        row.get::<_, i64>(0)?,
                        row.get::<_, i64>(1)?,
                        row.get::<_, String>(2)?,
                        row.get::<_, String>(3)?,
                    ))
                })
                .optional()
        })
        .map_err(ctx.sql(OPERATION))?;
    row.map(|(node, replaces, hash, json)| {
        record::summary_from_columns(NodeId::from_db(node), replaces, hash, &json)
    })
    .transpose()
}

pub(super) fn messages_for_path(conn: &Connection, ctx: &Ctx, id: NodeId) -> Result<Vec<Message>> {
    let sql = concat!(
        path_cte!(),
        "SELECT r.id, r.input_json, r.response_json FROM path \
         JOIN responses r ON r.id = path.id ORDER BY path.depth DESC"
    );
    let rows = conn
        .prepare_cached(sql)
        .and_then(|mut statement| {
            statement
                .query_map([id.get()], |row| {
                    Ok((
                        row.get::<_, i64>(0)?,
                        row.get::<_, String>(1)?,
                        row.get::<_, String>(2)?,
                    ))
                })?
                .collect::<rusqlite::Result<Vec<_>>>()
        })
        .map_err(ctx.sql("reading a path's messages"))?;
    if rows.is_empty() {
        return Err(StoreError::UnknownNode { id });
    }
    let mut messages = Vec::new();
    for (node, input, response) in rows {
        let turn = record::turn_from_json(NodeId::from_db(node), &input, &response)?;
        messages.extend(turn.input);
        messages.push(turn.response);
    }
    Ok(messages)
}

/// The first response of a conversation that cannot be read back, as `response N: why`: what
/// SQLite can check without decoding messages (JSON syntax, a parseable timestamp).
macro_rules! first_damaged_response {
    () => {
        "(SELECT 'response ' || r.id || ': ' || CASE \
         WHEN typeof(r.input_json) <> 'text' OR NOT json_valid(r.input_json) \
         THEN 'its input_json is not valid JSON' \
         WHEN typeof(r.response_json) <> 'text' OR NOT json_valid(r.response_json) \
         THEN 'its response_json is not valid JSON' \
         WHEN typeof(r.stop_json) <> 'text' OR NOT json_valid(r.stop_json) \
         THEN 'its stop_json is not valid JSON' \
         WHEN typeof(r.datetime_utc) <> 'text' OR julianday(r.datetime_utc) IS NULL \
         THEN 'its datetime_utc ' || quote(r.datetime_utc) || ' is not a timestamp' \
         END AS damage \
         FROM responses r WHERE r.conversation_id = c.id AND damage IS NOT NULL \
         ORDER BY r.id LIMIT 1)"
    };
}

/// Lists conversations. A row that cannot be read does not fail the listing: its summary says
/// why in `damaged` (see [`ConversationSummary::damaged`]).
pub(super) fn conversations(
    conn: &Connection,
    ctx: &Ctx,
    only: Option<&ConversationId>,
    limit: usize,
) -> Result<Vec<ConversationSummary>> {
    use rusqlite::types::Value;
    let operation = "listing conversations";
    macro_rules! select_conversations {
        ($filter:literal) => {
            concat!(
                "SELECT c.id, c.name, c.created_utc, c.updated_utc, \
                 (SELECT count(*) FROM responses r WHERE r.conversation_id = c.id), ",
                first_damaged_response!(),
                " FROM conversations c ",
                $filter,
                " ORDER BY c.updated_utc DESC, c.id LIMIT ?1"
            )
        };
    }
    let sql = match only {
        Some(_) => select_conversations!("WHERE c.id = ?2"),
        None => select_conversations!(""),
    };
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows = conn
        .prepare_cached(sql)
        .and_then(|mut statement| {
            // Read as loose values: a column of the wrong type marks its row damaged.
            let map = |row: &Row<'_>| {
                Ok((
                    row.get::<_, Value>(0)?,
                    row.get::<_, Value>(1)?,
                    row.get::<_, Value>(2)?,
                    row.get::<_, Value>(3)?,
                    row.get::<_, i64>(4)?,
                    row.get::<_, Option<String>>(5)?,
                ))
            };
            match only {
                Some(id) => statement
                    .query_map(params![limit, id.as_str()], map)?
                    .collect(),
                None => statement
                    .query_map(params![limit], map)?
                    .collect::<rusqlite::Result<Vec<_>>>(),
            }
        })
        .map_err(ctx.sql(operation))?;
    Ok(rows.into_iter().map(summary).collect())
}

/// A `conversations` row as read, before its checks: id, name, created and updated time,
/// number of responses, the first damaged response.
type ConversationRow = (
    rusqlite::types::Value,
    rusqlite::types::Value,
    rusqlite::types::Value,
    rusqlite::types::Value,
    i64,
    Option<String>,
);

/// The summary of a row, with whatever cannot be read noted in `damaged`.
fn summary(row: ConversationRow) -> ConversationSummary {
    use rusqlite::types::Value;
    let (id, name, created, updated, responses, damaged_response) = row;
    let mut damage = Vec::new();
    let text = |value: Value, column: &str| match value {
        Value::Text(text) => Ok(text),
        Value::Integer(n) => Ok(n.to_string()),
        Value::Real(x) => Ok(x.to_string()),
        Value::Null => Err(format!("its {column} is NULL")),
        Value::Blob(_) => Err(format!("its {column} is a blob, not text")),
    };
    let id = match text(id, "id") {
        Ok(id) => ConversationId::new(id.clone()).unwrap_or_else(|err| {
            damage.push(err.to_string());
            ConversationId::from_damaged_row(id)
        }),
        Err(reason) => {
            damage.push(reason);
            ConversationId::from_damaged_row(String::new())
        }
    };
    let name = match name {
        Value::Null => None,
        name => text(name, "name")
            .map_err(|reason| damage.push(reason))
            .ok(),
    };
    let mut time = |value: Value, column: &str| {
        text(value, column)
            .and_then(|text| parse_time(&text).map_err(|reason| format!("{column}: {reason}")))
            .map_err(|reason| damage.push(reason))
            .ok()
    };
    let created = time(created, "created_utc");
    let updated = time(updated, "updated_utc");
    damage.extend(damaged_response);
    ConversationSummary {
        id,
        name,
        created_utc: created.or(updated).unwrap_or(Timestamp::UNIX_EPOCH),
        updated_utc: updated.or(created).unwrap_or(Timestamp::UNIX_EPOCH),
        responses: record::to_u64(responses),
        damaged: (!damage.is_empty()).then(|| damage.join("; ")),
    }
}

pub(super) fn conversation_nodes(
    conn: &Connection,
    ctx: &Ctx,
    conversation: &ConversationId,
) -> Result<Vec<Node>> {
    let sql = select_nodes!("FROM responses r WHERE r.conversation_id = ?1 ORDER BY r.id");
    query_nodes(
        conn,
        ctx,
        "listing a conversation",
        sql,
        [conversation.as_str()],
    )
}

pub(super) fn latest_node(
    conn: &Connection,
    ctx: &Ctx,
    conversation: &ConversationId,
) -> Result<Option<Node>> {
    let sql = select_nodes!(
        "FROM responses r WHERE r.id = \
         (SELECT response_id FROM calls WHERE conversation_id = ?1 ORDER BY id DESC LIMIT 1)"
    );
    Ok(query_nodes(
        conn,
        ctx,
        "finding the latest response",
        sql,
        [conversation.as_str()],
    )?
    .pop())
}

pub(super) fn calls(
    conn: &Connection,
    ctx: &Ctx,
    conversation: &ConversationId,
) -> Result<Vec<Call>> {
    let operation = "listing calls";
    let rows = conn
        .prepare_cached(
            "SELECT id, response_id, kind, model, datetime_utc FROM calls \
             WHERE conversation_id = ?1 ORDER BY id",
        )
        .and_then(|mut statement| {
            statement
                .query_map([conversation.as_str()], |row| {
                    Ok((
                        row.get::<_, i64>(0)?,
                        row.get::<_, i64>(1)?,
                        row.get::<_, String>(2)?,
                        row.get::<_, Option<String>>(3)?,
                        row.get::<_, String>(4)?,
                    ))
                })?
                .collect::<rusqlite::Result<Vec<_>>>()
        })
        .map_err(ctx.sql(operation))?;
    rows.into_iter()
        .map(|(id, node, kind, model, at)| {
            let node = NodeId::from_db(node);
            let corrupt = |reason: String| StoreError::Corrupt {
                what: format!("call {id}"),
                reason,
            };
            Ok(Call {
                id,
                node,
                kind: CallKind::parse(&kind)
                    .ok_or_else(|| corrupt(format!("unknown kind {kind:?}")))?,
                model,
                datetime_utc: parse_time(&at).map_err(corrupt)?,
            })
        })
        .collect()
}

pub(super) fn lookup_path_hash(conn: &Connection, ctx: &Ctx, path_hash: &str) -> Result<Vec<Node>> {
    let sql = select_nodes!("FROM responses r WHERE r.path_hash = ?1 ORDER BY r.id");
    query_nodes(conn, ctx, "looking up a path hash", sql, [path_hash])
}

pub(super) fn verify(conn: &Connection, ctx: &Ctx) -> Result<VerifyReport> {
    let sql = ctx.sql("verifying the store");
    let mut statement = conn
        .prepare(
            "SELECT r.id, r.conversation_id, r.prompt_hash, r.response_hash, r.path_hash, \
             r.input_json, r.response_json, r.temperature, r.max_tokens, r.stop_json, \
             p.id, p.conversation_id, p.path_hash \
             FROM responses r LEFT JOIN responses p ON p.id = r.parent_response_id ORDER BY r.id",
        )
        .map_err(&sql)?;
    let mut rows = statement.query([]).map_err(&sql)?;
    let mut report = VerifyReport::default();
    while let Some(row) = rows.next().map_err(&sql)? {
        let stored = stored_row(row).map_err(&sql)?;
        report.checked += 1;
        report.problems.extend(record::check(stored));
    }
    Ok(report)
}

fn stored_row(row: &Row<'_>) -> rusqlite::Result<StoredRow> {
    let parent = match row.get::<_, Option<i64>>(10)? {
        Some(id) => Some((NodeId::from_db(id), row.get(11)?, row.get(12)?)),
        None => None,
    };
    Ok(StoredRow {
        id: NodeId::from_db(row.get(0)?),
        conversation: row.get(1)?,
        prompt_hash: row.get(2)?,
        response_hash: row.get(3)?,
        path_hash: row.get(4)?,
        input_json: row.get(5)?,
        response_json: row.get(6)?,
        options: record::options_from_columns(row.get(7)?, row.get(8)?, &row.get::<_, String>(9)?),
        parent,
    })
}

fn query_nodes(
    conn: &Connection,
    ctx: &Ctx,
    operation: &'static str,
    sql: &str,
    params: impl rusqlite::Params,
) -> Result<Vec<Node>> {
    let raw = conn
        .prepare_cached(sql)
        .and_then(|mut statement| {
            statement
                .query_map(params, node_columns)?
                .collect::<rusqlite::Result<Vec<_>>>()
        })
        .map_err(ctx.sql(operation))?;
    raw.into_iter().map(NodeColumns::into_node).collect()
}

fn node_columns(row: &Row<'_>) -> rusqlite::Result<NodeColumns> {
    Ok(NodeColumns {
        id: row.get(0)?,
        conversation: row.get(1)?,
        parent: row.get(2)?,
        hashes: [row.get(3)?, row.get(4)?, row.get(5)?],
        model: row.get(6)?,
        temperature: row.get(7)?,
        max_tokens: row.get(8)?,
        stop_json: row.get(9)?,
        cache_key: row.get(10)?,
        usage: [
            row.get(11)?,
            row.get(12)?,
            row.get(13)?,
            row.get(14)?,
            row.get(15)?,
        ],
        duration_ms: row.get(16)?,
        datetime_utc: parse_time(&row.get::<_, String>(17)?),
        status: row.get(18)?,
        ttft_ms: row.get(19)?,
        metadata_json: row.get(20)?,
    })
}

/// Fixed-width RFC 3339 in UTC with microseconds, so text order is time order.
pub(super) fn format_time(at: Timestamp) -> String {
    format!("{at:.6}")
}

fn parse_time(text: &str) -> std::result::Result<Timestamp, String> {
    text.parse()
        .map_err(|err| format!("its timestamp {text:?} is not RFC 3339: {err}"))
}

/// The owner column of `conversation`: `None` when the store does not hold it, `Some(None)`
/// when it has no owner.
pub(super) fn conversation_owner(
    conn: &Connection,
    ctx: &Ctx,
    operation: &'static str,
    conversation: &ConversationId,
) -> Result<Option<Option<String>>> {
    conn.prepare_cached("SELECT owner FROM conversations WHERE id = ?1")
        .and_then(|mut statement| {
            statement
                .query_row(params![conversation.as_str()], |row| {
                    row.get::<_, Option<String>>(0)
                })
                .optional()
        })
        .map_err(ctx.sql(operation))
}

/// Creates `conversation` owned by `owner` if it is missing, in one immediate transaction,
/// and says whose it is.
pub(super) fn claim_conversation(
    conn: &mut Connection,
    ctx: &Ctx,
    operation: &'static str,
    conversation: &ConversationId,
    owner: &str,
    at: Timestamp,
) -> Result<crate::Claim> {
    let sql = ctx.sql(operation);
    let tx = conn
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(&sql)?;
    let inserted = tx
        .prepare_cached(
            "INSERT INTO conversations (id, name, created_utc, updated_utc, owner) \
             VALUES (?1, NULL, ?2, ?2, ?3) ON CONFLICT (id) DO NOTHING",
        )
        .and_then(|mut statement| {
            statement.execute(params![conversation.as_str(), format_time(at), owner])
        })
        .map_err(&sql)?;
    let claim = if inserted == 1 {
        crate::Claim::Created
    } else {
        conversation_owner(&tx, ctx, operation, conversation)?
            .map_or(crate::Claim::OtherOwner, |stored| {
                crate::Claim::of_stored(stored, owner)
            })
    };
    tx.commit().map_err(&sql)?;
    Ok(claim)
}

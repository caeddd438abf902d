//! PostgreSQL statements: the shared algorithms' [`Tx`], and the read queries.

use deadpool_postgres::GenericClient;
use jiff::Timestamp;
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use super::pg;
use crate::record::{self, NodeColumns, NodeRow, StoredRow, SummaryRow};
use crate::walk::Tx;
use crate::{
    Call, CallKind, ConversationId, ConversationSummary, Node, NodeId, Result, StoreError, Turn,
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

/// Children of a node with this prompt hash. PostgreSQL cannot use an index for
/// `IS NOT DISTINCT FROM`, so roots have their own statement.
pub(super) const CHILD_CANDIDATES_SQL: &str = select_nodes!(
    "FROM responses r WHERE r.conversation_id = $1 AND r.parent_response_id = $2 \
     AND r.prompt_hash = $3 ORDER BY r.id"
);

/// Roots with this prompt hash.
pub(super) const ROOT_CANDIDATES_SQL: &str = select_nodes!(
    "FROM responses r WHERE r.conversation_id = $1 AND r.parent_response_id IS NULL \
     AND r.prompt_hash = $2 ORDER BY r.id"
);

pub(super) struct PgTx<'c, C> {
    client: &'c C,
    operation: &'static str,
}

impl<'c, C: GenericClient> PgTx<'c, C> {
    pub(super) fn new(client: &'c C, operation: &'static str) -> Self {
        PgTx { client, operation }
    }
}

impl<C: GenericClient> Tx for PgTx<'_, C> {
    async fn lock_conversation(&self, conversation: &ConversationId) -> Result<()> {
        // Released at commit or rollback; other conversations are not held up.
        execute(
            self.client,
            self.operation,
            "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
            &[&conversation.as_str()],
        )
        .await
    }

    async fn touch_conversation(
        &self,
        conversation: &ConversationId,
        name: Option<&str>,
        owner: Option<&str>,
        at: Timestamp,
    ) -> Result<()> {
        // The owner is set by the insert only: a write never changes an existing owner.
        execute(
            self.client,
            self.operation,
            "INSERT INTO conversations (id, name, created_utc, updated_utc, owner) \
             VALUES ($1, $2, $3, $3, $4) \
             ON CONFLICT (id) DO UPDATE \
             SET updated_utc = GREATEST(conversations.updated_utc, EXCLUDED.updated_utc), \
             name = COALESCE(conversations.name, EXCLUDED.name)",
            &[&conversation.as_str(), &name, &at, &owner],
        )
        .await
    }

    async fn node(&self, id: NodeId) -> Result<Option<Node>> {
        node(self.client, self.operation, id).await
    }

    async fn candidates(
        &self,
        conversation: &ConversationId,
        parent: Option<NodeId>,
        prompt_hash: &str,
    ) -> Result<Vec<Node>> {
        let conversation = conversation.as_str();
        match parent {
            Some(parent) => {
                let params: [&(dyn ToSql + Sync); 3] = [&conversation, &parent.get(), &prompt_hash];
                query_nodes(self.client, self.operation, CHILD_CANDIDATES_SQL, &params).await
            }
            None => {
                let params: [&(dyn ToSql + Sync); 2] = [&conversation, &prompt_hash];
                query_nodes(self.client, self.operation, ROOT_CANDIDATES_SQL, &params).await
            }
        }
    }

    async fn at_position(
        &self,
        conversation: &ConversationId,
        parent: Option<NodeId>,
    ) -> Result<Vec<Node>> {
        let conversation = conversation.as_str();
        match parent {
            Some(parent) => {
                let sql = select_nodes!(
                    "FROM responses r WHERE r.conversation_id = $1 \
                     AND r.parent_response_id = $2 ORDER BY r.id"
                );
                query_nodes(
                    self.client,
                    self.operation,
                    sql,
                    &[&conversation, &parent.get()],
                )
                .await
            }
            None => {
                let sql = select_nodes!(
                    "FROM responses r WHERE r.conversation_id = $1 \
                     AND r.parent_response_id IS NULL ORDER BY r.id"
                );
                query_nodes(self.client, self.operation, sql, &[&conversation]).await
            }
        }
    }

    async fn insert_node(&self, row: &NodeRow) -> Result<NodeId> {
        let usage = row.usage.unwrap_or_default();
        let count = |value: u64| row.usage.map(|_| i64::try_from(value).unwrap_or(i64::MAX));
        let statement = self
            .client
            .prepare_cached(
                "INSERT INTO responses (conversation_id, parent_response_id, prompt_hash, \
                 response_hash, path_hash, input_json, response_json, model, temperature, \
                 max_tokens, stop_json, cache_key, input_tokens, output_tokens, \
                 cached_input_tokens, cache_creation_tokens, reasoning_tokens, duration_ms, \
                 datetime_utc, status, ttft_ms, metadata_json) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, \
                 $17, $18, $19, $20, $21, $22) RETURNING id",
            )
            .await
            .map_err(pg(self.operation))?;
        let inserted = self
            .client
            .query_one(
                &statement,
                &[
                    &row.conversation.as_str(),
                    &row.parent.map(NodeId::get),
                    &row.prompt_hash,
                    &row.response_hash,
                    &row.path_hash,
                    &row.input_json,
                    &row.response_json,
                    &row.model,
                    &row.options.temperature,
                    &row.options.max_tokens.map(i64::from),
                    &row.stop_json,
                    &row.cache_key,
                    &count(usage.input_tokens),
                    &count(usage.output_tokens),
                    &count(usage.cached_input_tokens),
                    &count(usage.cache_creation_tokens),
                    &count(usage.reasoning_tokens),
                    &row.duration_ms(),
                    &row.datetime_utc,
                    &row.status.as_str(),
                    &row.ttft_ms(),
                    &row.metadata_json(),
                ],
            )
            .await
            .map_err(pg(self.operation))?;
        Ok(NodeId::from_db(
            inserted.try_get(0).map_err(pg(self.operation))?,
        ))
    }

    async fn insert_call(
        &self,
        node: NodeId,
        conversation: &ConversationId,
        kind: CallKind,
        model: Option<&str>,
        at: Timestamp,
    ) -> Result<()> {
        execute(
            self.client,
            self.operation,
            "INSERT INTO calls (response_id, conversation_id, kind, model, datetime_utc) \
             VALUES ($1, $2, $3, $4, $5)",
            &[
                &node.get(),
                &conversation.as_str(),
                &kind.as_str(),
                &model,
                &at,
            ],
        )
        .await
    }

    async fn set_label(&self, label: &str, node: NodeId) -> Result<()> {
        execute(
            self.client,
            self.operation,
            "INSERT INTO labels (label, node_id) VALUES ($1, $2) \
             ON CONFLICT (label) DO UPDATE SET node_id = EXCLUDED.node_id",
            &[&label, &node.get()],
        )
        .await
    }

    async fn set_summary(&self, node: NodeId, summary: &SummaryRow) -> Result<()> {
        execute(
            self.client,
            self.operation,
            "INSERT INTO summaries (node_id, replaces, replaced_hash, messages_json) \
             VALUES ($1, $2, $3, $4)",
            &[
                &node.get(),
                &summary.replaces,
                &summary.replaced_hash,
                &summary.messages_json,
            ],
        )
        .await
    }
}

async fn execute(
    client: &impl GenericClient,
    operation: &'static str,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<()> {
    let statement = client.prepare_cached(sql).await.map_err(pg(operation))?;
    client
        .execute(&statement, params)
        .await
        .map_err(pg(operation))?;
    Ok(())
}

async fn query(
    client: &impl GenericClient,
    operation: &'static str,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<Vec<Row>> {
    let statement = client.prepare_cached(sql).await.map_err(pg(operation))?;
    client
        .query(&statement, params)
        .await
        .map_err(pg(operation))
}

async fn query_nodes(
    client: &impl GenericClient,
    operation: &'static str,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<Vec<Node>> {
    query(client, operation, sql, params)
        .await?
        .iter()
        .map(|row| node_columns(row).map_err(pg(operation))?.into_node())
        .collect()
}

fn node_columns(row: &Row) -> std::result::Result<NodeColumns, tokio_postgres::Error> {
    Ok(NodeColumns {
        id: row.try_get(0)?,
        conversation: row.try_get(1)?,
        parent: row.try_get(2)?,
        hashes: [row.try_get(3)?, row.try_get(4)?, row.try_get(5)?],
        model: row.try_get(6)?,
        temperature: row.try_get(7)?,
        max_tokens: row.try_get(8)?,
        stop_json: row.try_get(9)?,
        cache_key: row.try_get(10)?,
        usage: [
            row.try_get(11)?,
            row.try_get(12)?,
            row.try_get(13)?,
            row.try_get(14)?,
            row.try_get(15)?,
        ],
        duration_ms: row.try_get(16)?,
        datetime_utc: Ok(row.try_get(17)?),
        status: row.try_get(18)?,
        ttft_ms: row.try_get(19)?,
        metadata_json: row.try_get(20)?,
    })
}

pub(super) async fn node(
    client: &impl GenericClient,
    operation: &'static str,
    id: NodeId,
) -> Result<Option<Node>> {
    let sql = select_nodes!("FROM responses r WHERE r.id = $1");
    Ok(query_nodes(client, operation, sql, &[&id.get()])
        .await?
        .pop())
}

/// The node `label` names, if any.
pub(super) async fn node_by_label(
    client: &impl GenericClient,
    operation: &'static str,
    label: &str,
) -> Result<Option<Node>> {
    let sql =
        select_nodes!("FROM labels l JOIN responses r ON r.id = l.node_id WHERE l.label = $1");
    Ok(query_nodes(client, operation, sql, &[&label]).await?.pop())
}

async fn existing(
    client: &impl GenericClient,
    operation: &'static str,
    id: NodeId,
) -> Result<Node> {
    node(client, operation, id)
        .await?
        .ok_or(StoreError::UnknownNode { id })
}

pub(super) async fn turn(client: &impl GenericClient, id: NodeId) -> Result<Turn> {
    let rows = query(
        client,
        "reading a turn",
        "SELECT input_json, response_json FROM responses WHERE id = $1",
        &[&id.get()],
    )
    .await?;
    let row = rows.first().ok_or(StoreError::UnknownNode { id })?;
    let read = |index| row.try_get::<_, &str>(index).map_err(pg("reading a turn"));
    record::turn_from_json(id, read(0)?, read(1)?)
}

pub(super) async fn children(client: &impl GenericClient, id: NodeId) -> Result<Vec<Node>> {
    const OPERATION: &str = "listing children";
    let parent = existing(client, OPERATION, id).await?;
    let sql = select_nodes!(
        "FROM responses r WHERE r.conversation_id = $1 AND r.parent_response_id = $2 \
         ORDER BY r.id"
    );
    query_nodes(
        client,
        OPERATION,
        sql,
        &[&parent.conversation_id().as_str(), &id.get()],
    )
    .await
}

pub(super) async fn roots(
    client: &impl GenericClient,
    conversation: &ConversationId,
) -> Result<Vec<Node>> {
    let sql = select_nodes!(
        "FROM responses r WHERE r.conversation_id = $1 AND r.parent_response_id IS NULL \
         ORDER BY r.id"
    );
    query_nodes(client, "listing roots", sql, &[&conversation.as_str()]).await
}

/// Ancestors by a recursive query, `id` first. Parents always have smaller ids, so it ends.
macro_rules! path_cte {
    () => {
        "WITH RECURSIVE path (id, depth) AS ( \
         SELECT id, 0 FROM responses WHERE id = $1 \
         UNION ALL \
         SELECT r.parent_response_id, path.depth + 1 FROM responses r JOIN path ON r.id = path.id \
         WHERE r.parent_response_id IS NOT NULL) "
    };
}

pub(super) async fn path_to_root(client: &impl GenericClient, id: NodeId) -> Result<Vec<Node>> {
    let sql = concat!(
        path_cte!(),
        select_nodes!("FROM path JOIN responses r ON r.id = path.id ORDER BY path.depth")
    );
    let nodes = query_nodes(client, "reading a path", sql, &[&id.get()]).await?;
    if nodes.is_empty() {
        return Err(StoreError::UnknownNode { id });
    }
    Ok(nodes)
}

/// The stored summary of the deepest node on the path from the root to `id` that has one:
/// its node and columns.
pub(super) async fn path_summary_row(
    client: &impl GenericClient,
    id: NodeId,
) -> Result<Option<(NodeId, i64, String, String)>> {
    const OPERATION: &str = "reading a path's summary";
    existing(client, OPERATION, id).await?;
    let sql = concat!(
        path_cte!(),
        "SELECT s.node_id, s.replaces, s.replaced_hash, s.messages_json FROM path \
         JOIN summaries s ON s.node_id = path.id ORDER BY path.depth LIMIT 1"
    );
    let rows = query(client, OPERATION, sql, &[&id.get()]).await?;
    rows.first()
        .map(|row| {
            Ok((
                NodeId::from_db(row.try_get(0)?),
                row.try_get(1)?,
                row.try_get(2)?,
                row.try_get(3)?,
            ))
        })
        .transpose()
        .map_err(pg(OPERATION))
}

/// The stored JSON of each node from the root down to `id`.
pub(super) async fn path_json(
    client: &impl GenericClient,
    id: NodeId,
) -> Result<Vec<(NodeId, String, String)>> {
    let sql = concat!(
        path_cte!(),
        "SELECT r.id, r.input_json, r.response_json FROM path \
         JOIN responses r ON r.id = path.id ORDER BY path.depth DESC"
    );
    let rows = query(client, "reading a path's messages", sql, &[&id.get()]).await?;
    if rows.is_empty() {
        return Err(StoreError::UnknownNode { id });
    }
    rows.iter()
        .map(|row| {
            Ok((
                NodeId::from_db(row.try_get(0)?),
                row.try_get(1)?,
                row.try_get(2)?,
            ))
        })
        .collect::<std::result::Result<_, tokio_postgres::Error>>()
        .map_err(pg("reading a path's messages"))
}

pub(super) async fn conversations(
    client: &impl GenericClient,
    only: Option<&ConversationId>,
    limit: usize,
) -> Result<Vec<ConversationSummary>> {
    macro_rules! select_conversations {
        ($filter:literal) => {
            concat!(
                "SELECT c.id, c.name, c.created_utc, c.updated_utc, \
                 (SELECT count(*) FROM responses r WHERE r.conversation_id = c.id) \
                 FROM conversations c ",
                $filter,
                " ORDER BY c.updated_utc DESC, c.id LIMIT $1"
            )
        };
    }
    const OPERATION: &str = "listing conversations";
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows = match only {
        Some(id) => {
            let sql = select_conversations!("WHERE c.id = $2");
            query(client, OPERATION, sql, &[&limit, &id.as_str()]).await?
        }
        None => query(client, OPERATION, select_conversations!(""), &[&limit]).await?,
    };
    rows.iter()
        .map(|row| {
            // PostgreSQL types the columns; an id that is not a valid conversation id marks the
            // conversation damaged instead of failing the listing.
            let id: String = row.try_get(0).map_err(pg(OPERATION))?;
            let (id, damaged) = match ConversationId::new(id.clone()) {
                Ok(id) => (id, None),
                Err(err) => (ConversationId::from_damaged_row(id), Some(err.to_string())),
            };
            Ok(ConversationSummary {
                id,
                name: row.try_get(1).map_err(pg(OPERATION))?,
                created_utc: row.try_get(2).map_err(pg(OPERATION))?,
                updated_utc: row.try_get(3).map_err(pg(OPERATION))?,
                responses: record::to_u64(row.try_get(4).map_err(pg(OPERATION))?),
                damaged,
            })
        })
        .collect()
}

pub(super) async fn conversation_nodes(
    client: &impl GenericClient,
    conversation: &ConversationId,
) -> Result<Vec<Node>> {
    let sql = select_nodes!("FROM responses r WHERE r.conversation_id = $1 ORDER BY r.id");
    query_nodes(
        client,
        "listing a conversation",
        sql,
        &[&conversation.as_str()],
    )
    .await
}

pub(super) async fn latest_node(
    client: &impl GenericClient,
    conversation: &ConversationId,
) -> Result<Option<Node>> {
    let sql = select_nodes!(
        "FROM responses r WHERE r.id = \
         (SELECT response_id FROM calls WHERE conversation_id = $1 ORDER BY id DESC LIMIT 1)"
    );
    let conversation = conversation.as_str();
    let nodes = query_nodes(client, "finding the latest response", sql, &[&conversation]).await?;
    Ok(nodes.into_iter().next_back())
}

pub(super) async fn calls(
    client: &impl GenericClient,
    conversation: &ConversationId,
) -> Result<Vec<Call>> {
    const OPERATION: &str = "listing calls";
    let rows = query(
        client,
        OPERATION,
        "SELECT id, response_id, kind, model, datetime_utc FROM calls \
         WHERE conversation_id = $1 ORDER BY id",
        &[&conversation.as_str()],
    )
    .await?;
    rows.iter()
        .map(|row| {
            let id: i64 = row.try_get(0).map_err(pg(OPERATION))?;
            let kind: &str = row.try_get(2).map_err(pg(OPERATION))?;
            Ok(Call {
                id,
                node: NodeId::from_db(row.try_get(1).map_err(pg(OPERATION))?),
                kind: CallKind::parse(kind).ok_or_else(|| StoreError::Corrupt {
                    what: format!("call {id}"),
                    reason: format!("unknown kind {kind:?}"),
                })?,
                model: row.try_get(3).map_err(pg(OPERATION))?,
                datetime_utc: row.try_get(4).map_err(pg(OPERATION))?,
            })
        })
        .collect()
}

pub(super) async fn lookup_path_hash(
    client: &impl GenericClient,
    path_hash: &str,
) -> Result<Vec<Node>> {
    let sql = select_nodes!("FROM responses r WHERE r.path_hash = $1 ORDER BY r.id");
    query_nodes(client, "looking up a path hash", sql, &[&path_hash]).await
}

/// Up to 1,000 stored rows with ids above `after`, for [`record::check`].
pub(super) async fn stored_rows(client: &impl GenericClient, after: i64) -> Result<Vec<StoredRow>> {
    const OPERATION: &str = "verifying the store";
    let rows = query(
        client,
        OPERATION,
        "SELECT r.id, r.conversation_id, r.prompt_hash, r.response_hash, r.path_hash, \
         r.input_json, r.response_json, r.temperature, r.max_tokens, r.stop_json, \
         p.id, p.conversation_id, p.path_hash \
         FROM responses r LEFT JOIN responses p ON p.id = r.parent_response_id \
         WHERE r.id > $1 ORDER BY r.id LIMIT 1000",
        &[&after],
    )
    .await?;
    rows.iter()
        .map(|row| {
            let parent = match row.try_get::<_, Option<i64>>(10)? {
                Some(parent) => Some((NodeId::from_db(parent), row.try_get(11)?, row.try_get(12)?)),
                None => None,
            };
            Ok(StoredRow {
                id: NodeId::from_db(row.try_get(0)?),
                conversation: row.try_get(1)?,
                prompt_hash: row.try_get(2)?,
                response_hash: row.try_get(3)?,
                path_hash: row.try_get(4)?,
                input_json: row.try_get(5)?,
                response_json: row.try_get(6)?,
                options: record::options_from_columns(
                    row.try_get(7)?,
                    row.try_get(8)?,
                    row.try_get(9)?,
                ),
                parent,
            })
        })
        .collect::<std::result::Result<_, tokio_postgres::Error>>()
        .map_err(pg(OPERATION))
}

/// [`Store::claim_conversation`](crate::Store::claim_conversation): reads the owner, and
/// inserts the conversation only when it is missing (so a read-only session can answer for
/// stored conversations).
pub(super) async fn claim_conversation(
    client: &impl GenericClient,
    conversation: &ConversationId,
    owner: &str,
    at: Timestamp,
) -> Result<crate::Claim> {
    const OPERATION: &str = "claiming a conversation";
    const OWNER_SQL: &str = "SELECT owner FROM conversations WHERE id = $1";
    let read_owner = async || -> Result<Option<Option<String>>> {
        let statement = client
            .prepare_cached(OWNER_SQL)
            .await
            .map_err(pg(OPERATION))?;
        let row = client
            .query_opt(&statement, &[&conversation.as_str()])
            .await
            .map_err(pg(OPERATION))?;
        row.map(|row| row.try_get::<_, Option<String>>(0))
            .transpose()
            .map_err(pg(OPERATION))
    };
    let judge = |stored| crate::Claim::of_stored(stored, owner);
    if let Some(stored) = read_owner().await? {
        return Ok(judge(stored));
    }
    let statement = client
        .prepare_cached(
            "INSERT INTO conversations (id, name, created_utc, updated_utc, owner) \
             VALUES ($1, NULL, $2, $2, $3) ON CONFLICT (id) DO NOTHING",
        )
        .await
        .map_err(pg(OPERATION))?;
    let inserted = client
        .execute(&statement, &[&conversation.as_str(), &at, &owner])
        .await
        .map_err(pg(OPERATION))?;
    if inserted == 1 {
        return Ok(crate::Claim::Created);
    }
    // Someone else created it between the two statements.
    Ok(read_owner().await?.map_or(crate::Claim::OtherOwner, judge))
}

//! Query plans, which need the store's statements.

use super::PostgresStore;
use super::tx::{CHILD_CANDIDATES_SQL, ROOT_CANDIDATES_SQL};

/// With data where prompts repeat across conversations, as a shared system prompt makes them
/// (20,000 responses, 500 conversations, 20 distinct prompts, analysed), the walk's lookups for
/// a root and for a child are scans of the composite index on all three columns.
#[tokio::test]
async fn walk_lookups_use_the_composite_index() -> crate::Result<()> {
    let url = crate::testing::fresh_postgres_database().await;
    let store = PostgresStore::connect(&url).await?;
    let client = store.client("test").await?;
    let fill = "
        INSERT INTO conversations (id, created_utc, updated_utc)
            SELECT 'c' || g, now(), now() FROM generate_series(0, 499) g;
        INSERT INTO responses (conversation_id, parent_response_id, prompt_hash, response_hash,
                               path_hash, input_json, response_json, model, datetime_utc)
            SELECT 'c' || (g % 500), NULL, md5((g % 20)::text), md5(g::text), md5(g::text), '[]', '[]',
                   'm', now()
            FROM generate_series(1, 20000) g;
        UPDATE responses SET parent_response_id = id - 500 WHERE id > 500;
        ANALYZE;";
    client
        .batch_execute(fill)
        .await
        .map_err(super::pg("test"))?;
    let explain = |sql: &str| format!("EXPLAIN {sql}");
    let conversation = "c7";
    let prompt = "c4ca4238a0b923820dcc509a6f75849b"; // md5('1'): one of the 20
    let rows = client
        .query(&explain(ROOT_CANDIDATES_SQL), &[&conversation, &prompt])
        .await
        .map_err(super::pg("test"))?;
    let root_plan: Vec<String> = rows.iter().map(|row| row.get(0)).collect();
    let rows = client
        .query(
            &explain(CHILD_CANDIDATES_SQL),
            &[&conversation, &7_i64, &prompt],
        )
        .await
        .map_err(super::pg("test"))?;
    let child_plan: Vec<String> = rows.iter().map(|row| row.get(0)).collect();
    for (plan, parent) in [
        (root_plan, "(parent_response_id IS NULL)"),
        (child_plan, "(parent_response_id = '7'::bigint)"),
    ] {
        let text = plan.join("\n");
        assert!(
            text.contains("Index Scan using idx_responses_conversation_parent_prompt"),
            "{text}"
        );
        // All three columns are index conditions, none is a filter.
        let condition = plan
            .iter()
            .find(|line| line.contains("Index Cond:"))
            .unwrap_or_else(|| panic!("no index condition: {text}"));
        for column in ["(conversation_id = 'c7'::text)", parent, "(prompt_hash = "] {
            assert!(condition.contains(column), "{column} in {text}");
        }
        assert!(
            !text.contains("Filter:") && !text.contains("Seq Scan"),
            "{text}"
        );
    }
    Ok(())
}

/// A read-only store checks the schema without migrating, reads, and writes nothing: the
/// store refuses writes with a typed error, and its sessions are read-only on the server too.
#[tokio::test]
async fn a_read_only_store_reads_and_never_writes() -> crate::Result<()> {
    use crate::{CallOptions, ConversationId, Message, NewResponse, Store, StoreError};

    let url = crate::testing::fresh_postgres_database().await;
    let err = PostgresStore::connect_read_only(&url).await.unwrap_err();
    assert!(matches!(err, StoreError::NoStore { .. }), "{err}");

    let writer = PostgresStore::connect(&url).await?;
    let conversation = ConversationId::new("pg-read-only")?;
    let response = NewResponse::new(
        conversation.clone(),
        None,
        vec![Message::human("Capital of France?")],
        Message::ai("Paris"),
        &CallOptions::new("echo"),
    );
    let root = writer
        .log_response(response.clone().label("resp_pg_read_only"))
        .await?;
    let client = writer.client("test").await?;
    // A conversation whose id is not a valid conversation id is listed as damaged.
    client
        .batch_execute(
            "INSERT INTO conversations (id, created_utc, updated_utc) \
             VALUES ('', now() - interval '1 day', now() - interval '1 day')",
        )
        .await
        .map_err(super::pg("test"))?;

    let reader = PostgresStore::connect_read_only(&url).await?;
    let listed = reader.conversations(10).await?;
    assert_eq!(listed.len(), 2, "{listed:?}");
    assert_eq!(listed[0].id, conversation);
    assert_eq!(listed[0].damaged, None);
    assert!(
        listed[1]
            .damaged
            .as_deref()
            .is_some_and(|reason| reason.contains("empty")),
        "{listed:?}"
    );
    assert_eq!(
        reader.node_by_label("resp_pg_read_only").await?,
        Some(root.clone())
    );
    assert_eq!(reader.node_by_label("resp_none").await?, None);
    let err = reader.log_response(response).await.unwrap_err();
    assert!(matches!(err, StoreError::ReadOnly { .. }), "{err}");
    let err = reader
        .label_node("resp_pg_moved", root.id())
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::ReadOnly { .. }), "{err}");
    let err = reader.label_node("", root.id()).await.unwrap_err();
    assert!(matches!(err, StoreError::InvalidLabel { .. }), "{err}");
    assert_eq!(reader.node_by_label("resp_pg_moved").await?, None);
    let branch = [Message::human("Capital of France?"), Message::ai("Lyon")];
    let err = reader
        .find_or_create_path(&conversation, &branch, &CallOptions::new("echo"))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::ReadOnly { .. }), "{err}");
    let session = reader.client("test").await?;
    let refused = session
        .batch_execute("DELETE FROM calls")
        .await
        .expect_err("a read-only session wrote");
    assert_eq!(
        refused.code(),
        Some(&tokio_postgres::error::SqlState::READ_ONLY_SQL_TRANSACTION)
    );
    drop(session);

    // An older schema is refused, not upgraded.
    client
        .batch_execute(
            "UPDATE skein_meta SET value = (value::bigint - 1)::text \
             WHERE key = 'schema_version'",
        )
        .await
        .map_err(super::pg("test"))?;
    let err = PostgresStore::connect_read_only(&url).await.unwrap_err();
    assert!(matches!(err, StoreError::OlderSchema { .. }), "{err}");
    Ok(())
}

/// A database at schema version 7 (before metadata was recorded) is upgraded when a store
/// connects: its nodes read back with no metadata and still verify, and new nodes keep theirs.
#[tokio::test]
async fn a_version_7_database_gains_metadata() -> crate::Result<()> {
    use crate::migrate::{self, Schema};
    use crate::{CallOptions, ConversationId, Message, NewResponse, Store};

    let url = crate::testing::fresh_postgres_database().await;
    let (mut client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .map_err(super::pg("test"))?;
    let connection = tokio::spawn(connection);
    let version_7 = Schema {
        migrations: &super::schema::SCHEMA.migrations[..7],
        ..super::schema::SCHEMA
    };
    let found = migrate::postgres::migrate(&mut client, &version_7)
        .await
        .unwrap_or_else(|err| panic!("cannot build a version 7 database: {err}"));
    assert_eq!(found, 0);
    client
        .batch_execute(
            "INSERT INTO conversations (id, created_utc, updated_utc) \
             VALUES ('from-v7', now(), now())",
        )
        .await
        .map_err(super::pg("test"))?;
    let old_id: i64 = client
        .query_one(
            "INSERT INTO responses (conversation_id, prompt_hash, response_hash, path_hash, \
                                    input_json, response_json, model, datetime_utc) \
             VALUES ('from-v7', 'p', 'r', 'p', '[]', '[]', 'gpt-4', now()) RETURNING id",
            &[],
        )
        .await
        .map_err(super::pg("test"))?
        .get(0);
    drop(client);
    let _ = connection.await;

    let store = PostgresStore::connect(&url).await?;
    let client = store.client("test").await?;
    let version: String = client
        .query_one(
            "SELECT value FROM skein_meta WHERE key = 'schema_version'",
            &[],
        )
        .await
        .map_err(super::pg("test"))?
        .get(0);
    assert_eq!(version, super::schema::SCHEMA.latest().to_string());
    let old = store
        .node(crate::NodeId::from_db(old_id))
        .await?
        .expect("the old node is kept");
    assert!(old.metadata().is_empty());
    let pairs = std::collections::BTreeMap::from([("run".to_owned(), "7".to_owned())]);
    let new = store
        .log_response(
            NewResponse::new(
                ConversationId::new("from-v7")?,
                None,
                vec![Message::human("Again")],
                Message::ai("Hello again"),
                &CallOptions::new("gpt-4"),
            )
            .metadata(pairs.clone()),
        )
        .await?;
    let reopened = PostgresStore::connect(&url).await?;
    assert_eq!(
        reopened
            .node(new.id())
            .await?
            .map(|node| node.metadata().clone()),
        Some(pairs)
    );
    Ok(())
}

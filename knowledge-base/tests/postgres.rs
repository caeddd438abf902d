//! `PostgresKnowledge` against the behaviour suite, and beside the conversation store in the
//! same database.
//!
//! Each test gets a fresh database on the server `conversation_tree::testing::postgres_url`
//! names: `$SKEIN_PG_URL` (set by `cargo xtask ci` and `cargo xtask pg start`), or a throwaway
//! cluster this process starts. Without either, the tests fail; they never skip.

use conversation_tree::testing::fresh_postgres_database;
use conversation_tree::{CallOptions, ConversationId, Message, NewResponse, PostgresStore, Store};
use knowledge_base::{Document, KbError, KnowledgeStore, PostgresKnowledge};

/// A store in a fresh database.
async fn fresh() -> (KnowledgeStore, ()) {
    let url = fresh_postgres_database().await;
    (PostgresKnowledge::connect(&url).await.unwrap().into(), ())
}

suite!(fresh);

async fn query_strings(url: &str, sql: &str) -> Vec<String> {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    let connection = tokio::spawn(connection);
    let rows = client.query(sql, &[]).await.unwrap();
    drop(client);
    let _ = connection.await;
    rows.iter().map(|row| row.get(0)).collect()
}

async fn execute(url: &str, sql: &str) {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    let connection = tokio::spawn(connection);
    client.batch_execute(sql).await.unwrap();
    drop(client);
    let _ = connection.await;
}

async fn log_one(store: &PostgresStore) {
    let options = CallOptions::new("echo");
    let response = NewResponse::new(
        ConversationId::random(),
        None,
        vec![Message::human("hello")],
        Message::ai("hi"),
        &options,
    );
    store.log_response(response).await.unwrap();
}

/// Adds a one-line note to the base `notes`.
async fn add_notes(knowledge: &KnowledgeStore) {
    let note = Document::new("N", "n.md", "descaling monthly\n");
    knowledge.add("notes", vec![note]).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_conversation_store_shares_the_database_in_both_orders() {
    // Knowledge first, then the conversation store.
    let url = fresh_postgres_database().await;
    let knowledge = KnowledgeStore::from(PostgresKnowledge::connect(&url).await.unwrap());
    add_notes(&knowledge).await;
    let tree = PostgresStore::connect(&url).await.unwrap();
    log_one(&tree).await;
    PostgresStore::connect_read_only(&url).await.unwrap();
    assert_eq!(
        knowledge
            .search(&["notes"], "descaling", 5)
            .await
            .unwrap()
            .len(),
        1
    );

    // The conversation store first, then knowledge, then the store again.
    let url = fresh_postgres_database().await;
    let tree = PostgresStore::connect(&url).await.unwrap();
    log_one(&tree).await;
    let meta = "SELECT key || '=' || value FROM skein_meta ORDER BY key";
    let before = query_strings(&url, meta).await;
    let knowledge = KnowledgeStore::from(PostgresKnowledge::connect(&url).await.unwrap());
    add_notes(&knowledge).await;
    drop(tree);
    let tree = PostgresStore::connect(&url).await.unwrap();
    assert_eq!(tree.conversations(10).await.unwrap().len(), 1);
    assert!(tree.verify().await.unwrap().is_ok());
    PostgresStore::connect_read_only(&url).await.unwrap();
    assert_eq!(query_strings(&url, meta).await, before);
    // Reconnecting finds the tables at their version and leaves them.
    let again = KnowledgeStore::from(PostgresKnowledge::connect(&url).await.unwrap());
    assert_eq!(again.list().await.unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chunks_have_a_tsvector_with_a_gin_index() {
    let url = fresh_postgres_database().await;
    PostgresKnowledge::connect(&url).await.unwrap();
    let tables = query_strings(
        &url,
        "SELECT table_name::text FROM information_schema.tables \
         WHERE table_schema = 'public' ORDER BY table_name",
    )
    .await;
    assert_eq!(tables, ["kb_bases", "kb_chunks", "kb_documents", "kb_meta"]);
    let index = query_strings(
        &url,
        "SELECT indexdef FROM pg_indexes WHERE indexname = 'kb_chunks_tsv'",
    )
    .await;
    assert!(index[0].contains("USING gin (tsv)"), "{index:?}");
    let version = query_strings(
        &url,
        "SELECT value FROM kb_meta WHERE key = 'schema_version'",
    )
    .await;
    assert_eq!(version, ["1"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreign_and_newer_tables_are_refused() {
    let url = fresh_postgres_database().await;
    execute(&url, "CREATE TABLE kb_bases (x integer)").await;
    let error = PostgresKnowledge::connect(&url).await.unwrap_err();
    assert!(matches!(error, KbError::NotAStore { .. }), "{error:?}");
    let tables = query_strings(
        &url,
        "SELECT table_name::text FROM information_schema.tables WHERE table_schema = 'public'",
    )
    .await;
    assert_eq!(tables, ["kb_bases"], "the refusal wrote nothing");

    let url = fresh_postgres_database().await;
    PostgresKnowledge::connect(&url).await.unwrap();
    execute(
        &url,
        "UPDATE kb_meta SET value = '7' WHERE key = 'schema_version'",
    )
    .await;
    let error = PostgresKnowledge::connect(&url).await.unwrap_err();
    assert!(
        matches!(
            error,
            KbError::NewerSchema {
                found: 7,
                supported: 1,
                ..
            }
        ),
        "{error:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_store_opens_from_a_url_without_showing_its_password() {
    let url = fresh_postgres_database().await;
    let store = KnowledgeStore::open(&url).await.unwrap();
    assert!(matches!(store, KnowledgeStore::Postgres(_)));
    let error = KnowledgeStore::open("postgres://skein:hunter2@127.0.0.1:1/none")
        .await
        .unwrap_err();
    assert!(!error.to_string().contains("hunter2"), "{error}");
}

//! `SqliteKnowledge` against the behaviour suite, and beside the conversation store in the same
//! file.

use std::path::Path;

use conversation_tree::{
    CallOptions, ConversationId, Message, NewResponse, SqliteStore, Store, StoreError,
};
use knowledge_base::{Document, KbError, KnowledgeStore, SqliteKnowledge};
use rusqlite::Connection;
use tempfile::TempDir;

/// A store in a new file of a new temporary directory.
async fn fresh() -> (KnowledgeStore, TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteKnowledge::open(dir.path().join("skein.db"))
        .await
        .unwrap();
    (store.into(), dir)
}

suite!(fresh);

/// Logs one response in the conversation store at `path`; returns the conversation.
async fn log_one(store: &SqliteStore, question: &str) -> ConversationId {
    let conversation = ConversationId::random();
    let options = CallOptions::new("echo");
    let response = NewResponse::new(
        conversation.clone(),
        None,
        vec![Message::human(question)],
        Message::ai("answer"),
        &options,
    );
    store.log_response(response).await.unwrap();
    conversation
}

/// `application_id` and `user_version`: the conversation tree's header fields.
fn header(path: &Path) -> (i64, i64) {
    let conn = Connection::open(path).unwrap();
    conn.query_row(
        "SELECT (SELECT application_id FROM pragma_application_id()),
                (SELECT user_version FROM pragma_user_version())",
        [],
        |row| Ok((row.get(0)?, row.get(1)?)),
    )
    .unwrap()
}

async fn add_notes(store: &KnowledgeStore) {
    let notes = Document::new(
        "Notes",
        "notes.md",
        "The espresso machine is descaled monthly.\n",
    );
    store.add("notes", vec![notes]).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fresh_file_opened_for_knowledge_first_is_a_conversation_store_too() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested").join("skein.db");
    let knowledge = KnowledgeStore::from(SqliteKnowledge::open(&path).await.unwrap());
    add_notes(&knowledge).await;

    let tree = SqliteStore::open(&path).await.unwrap();
    log_one(&tree, "first").await;
    assert_eq!(tree.conversations(10).await.unwrap().len(), 1);
    let reader = SqliteStore::open_read_only(&path).await.unwrap();
    assert_eq!(reader.conversations(10).await.unwrap().len(), 1);

    drop(knowledge);
    let knowledge = KnowledgeStore::from(SqliteKnowledge::open(&path).await.unwrap());
    let found = knowledge.search(&["notes"], "descaled", 5).await.unwrap();
    assert_eq!(found[0].location, "notes.md:1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn knowledge_tables_leave_the_conversation_store_and_its_header_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("skein.db");
    let tree = SqliteStore::open(&path).await.unwrap();
    let conversation = log_one(&tree, "before").await;
    let before = header(&path);
    assert_ne!(before.0, 0, "the tree marks the file");

    let knowledge = KnowledgeStore::from(SqliteKnowledge::open(&path).await.unwrap());
    add_notes(&knowledge).await;
    assert_eq!(header(&path), before);

    // Both stores work side by side on the same file, and the tree reopens it.
    log_one(&tree, "during").await;
    drop(tree);
    let tree = SqliteStore::open(&path).await.unwrap();
    let conversations = tree.conversations(10).await.unwrap();
    assert_eq!(conversations.len(), 2);
    assert!(
        conversations
            .iter()
            .any(|summary| summary.id == conversation)
    );
    assert!(tree.verify().await.unwrap().is_ok());
    SqliteStore::open_read_only(&path).await.unwrap();
    assert_eq!(header(&path), before);
    assert_eq!(
        knowledge
            .search(&["notes"], "espresso", 5)
            .await
            .unwrap()
            .len(),
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_file_is_wal_with_an_fts5_porter_table_and_its_own_version() {
    let (_store, dir) = fresh().await;
    let conn = Connection::open(dir.path().join("skein.db")).unwrap();
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |row| row.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    let sql: String = conn
        .query_row(
            "SELECT sql FROM sqlite_schema WHERE name = 'kb_chunks'",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert!(
        sql.contains("fts5") && sql.contains("porter unicode61"),
        "{sql}"
    );
    let version: String = conn
        .query_row(
            "SELECT value FROM kb_meta WHERE key = 'schema_version'",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(version, "1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_applications_file_is_refused_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("other.db");
    {
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch("CREATE TABLE t (x); INSERT INTO t VALUES (1);")
            .unwrap();
    }
    let bytes = std::fs::read(&path).unwrap();
    let error = SqliteKnowledge::open(&path).await.unwrap_err();
    assert!(
        matches!(
            &error,
            KbError::Store {
                source: StoreError::NotAStore { .. },
                ..
            }
        ),
        "{error:?}"
    );
    assert!(error.to_string().contains("left untouched"), "{error}");
    assert_eq!(std::fs::read(&path).unwrap(), bytes);

    // kb_ tables without kb_meta in a Skein store are another application's too.
    let path = dir.path().join("skein.db");
    drop(SqliteStore::open(&path).await.unwrap());
    {
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch("CREATE TABLE kb_bases (x);").unwrap();
    }
    let error = SqliteKnowledge::open(&path).await.unwrap_err();
    assert!(matches!(error, KbError::NotAStore { .. }), "{error:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn newer_knowledge_tables_are_refused() {
    let (store, dir) = fresh().await;
    drop(store);
    let path = dir.path().join("skein.db");
    {
        let conn = Connection::open(&path).unwrap();
        conn.execute(
            "UPDATE kb_meta SET value = '99' WHERE key = 'schema_version'",
            [],
        )
        .unwrap();
    }
    let error = SqliteKnowledge::open(&path).await.unwrap_err();
    assert!(
        matches!(
            error,
            KbError::NewerSchema {
                found: 99,
                supported: 1,
                ..
            }
        ),
        "{error:?}"
    );
    // The conversation store does not care.
    SqliteStore::open(&path).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn searches_run_beside_a_writer() {
    let (store, _dir) = fresh().await;
    store
        .add("docs", crate::common::workspace_docs())
        .await
        .unwrap();
    let mut tasks = Vec::new();
    for round in 0..6 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            if round % 3 == 0 {
                store
                    .add("docs", crate::common::workspace_docs())
                    .await
                    .map(|_| 0)
            } else {
                store
                    .search(&["docs"], "loopback", 5)
                    .await
                    .map(|found| found.len())
            }
        }));
    }
    for task in tasks {
        task.await.unwrap().unwrap();
    }
    let after = store.search(&["docs"], "loopback", 5).await.unwrap();
    assert!(!after.is_empty());
}

#[tokio::test]
async fn memory_and_locations() {
    let store = KnowledgeStore::open(":memory:").await.unwrap();
    assert_eq!(store.location(), ":memory:");
    store
        .add("a", vec![Document::new("t", "x.md", "hello\n")])
        .await
        .unwrap();
    assert_eq!(store.search(&["a"], "hello", 5).await.unwrap().len(), 1);
    #[cfg(not(feature = "postgres"))]
    {
        let error = KnowledgeStore::open("postgres://u:secret@localhost/db")
            .await
            .unwrap_err();
        assert!(matches!(error, KbError::PostgresDisabled { .. }));
        assert!(!error.to_string().contains("secret"));
    }
}

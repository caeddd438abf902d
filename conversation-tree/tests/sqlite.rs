//! `SqliteStore` against the behaviour suite, and the checks on files it did not write.

use crate::common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use conversation_tree::{SqliteStore, Store, StoreError};
use tempfile::TempDir;

use common::Harness;

/// A store file in its own temporary directory.
struct SqliteHarness {
    dir: TempDir,
}

impl SqliteHarness {
    fn path(&self) -> PathBuf {
        self.dir.path().join("store").join("logs.db")
    }
}

impl Harness for SqliteHarness {
    async fn new() -> Self {
        SqliteHarness {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    async fn open(&self) -> Arc<dyn Store> {
        Arc::new(SqliteStore::open(self.path()).await.unwrap())
    }

    async fn execute(&self, sql: &str) {
        let conn = rusqlite::Connection::open(self.path()).unwrap();
        conn.execute_batch(sql).unwrap();
    }

    fn failing_insert_trigger(table: &str) -> String {
        format!(
            "CREATE TRIGGER fail_{table} BEFORE INSERT ON {table} \
             BEGIN SELECT RAISE(ABORT, 'injected failure'); END;"
        )
    }

    fn spec(&self) -> String {
        self.path().display().to_string()
    }

    async fn open_spec(spec: &str) -> Arc<dyn Store> {
        Arc::new(SqliteStore::open(spec).await.unwrap())
    }
}

suite!(SqliteHarness);

#[tokio::test]
async fn in_memory_store_works_and_each_is_separate() {
    let a = SqliteStore::open_in_memory().await.unwrap();
    let b = SqliteStore::open_in_memory().await.unwrap();
    let conversation = conversation_tree::ConversationId::random();
    let messages = [conversation_tree::Message::human("Hi")];
    common::step(
        &a,
        &conversation,
        &messages,
        conversation_tree::Message::ai("Hello"),
        &common::deterministic(),
    )
    .await;
    assert_eq!(a.conversations(10).await.unwrap().len(), 1);
    assert!(b.conversations(10).await.unwrap().is_empty());
    assert_eq!(a.path(), None);
}

async fn assert_refused_untouched(path: &Path, check: impl Fn(&StoreError) -> bool) {
    let before = std::fs::read(path).unwrap();
    let err = SqliteStore::open(path).await.unwrap_err();
    assert!(check(&err), "unexpected error: {err}");
    assert!(
        err.to_string().contains(&path.display().to_string()),
        "names the file: {err}"
    );
    assert!(
        err.to_string().contains("left untouched"),
        "says it did no harm: {err}"
    );
    assert_eq!(
        std::fs::read(path).unwrap(),
        before,
        "byte for byte as it was"
    );
}

#[tokio::test]
async fn a_file_that_is_not_a_database_is_refused_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.txt");
    std::fs::write(&path, "these are my notes, not a database\n".repeat(200)).unwrap();
    assert_refused_untouched(&path, |err| {
        matches!(err, StoreError::NotAStore { reason, .. } if reason.contains("not a SQLite database"))
    })
    .await;
}

#[tokio::test]
async fn another_applications_database_is_refused_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("logs.db");
    // Shaped like llm's logs.db: a `responses` table, no Skein marker.
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "CREATE TABLE responses (id TEXT PRIMARY KEY, model TEXT, prompt TEXT, response TEXT);
         INSERT INTO responses VALUES ('01j', 'gpt-4o', 'hi', 'hello');",
    )
    .unwrap();
    drop(conn);
    assert_refused_untouched(&path, |err| {
        matches!(err, StoreError::NotAStore { reason, .. } if reason.contains("another application"))
    })
    .await;
}

#[tokio::test]
async fn a_store_from_a_newer_schema_is_refused_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("logs.db");
    drop(SqliteStore::open(&path).await.unwrap());
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.pragma_update(None, "user_version", 99).unwrap();
    drop(conn);
    assert_refused_untouched(&path, |err| {
        matches!(
            err,
            StoreError::NewerSchema {
                found: 99,
                supported: 8,
                ..
            }
        )
    })
    .await;
}

#[tokio::test]
async fn an_empty_file_or_empty_database_becomes_a_store() {
    let dir = tempfile::tempdir().unwrap();
    let empty_file = dir.path().join("empty.db");
    std::fs::write(&empty_file, b"").unwrap();
    SqliteStore::open(&empty_file).await.unwrap();
    let empty_db = dir.path().join("empty-sqlite.db");
    rusqlite::Connection::open(&empty_db)
        .unwrap()
        .execute_batch("PRAGMA user_version = 0; VACUUM;")
        .unwrap();
    SqliteStore::open(&empty_db).await.unwrap();
    // Reopening a store is fine, and so is opening one twice at once.
    let (a, b) = tokio::join!(SqliteStore::open(&empty_db), SqliteStore::open(&empty_db));
    a.unwrap();
    b.unwrap();
}

#[tokio::test]
async fn a_directory_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let err = SqliteStore::open(dir.path()).await.unwrap_err();
    assert!(matches!(err, StoreError::NotAStore { .. }), "{err}");
}

#[tokio::test]
async fn supplied_roots_are_unique_despite_null_parents() {
    // The footgun: UNIQUE treats NULLs as distinct. The store's unique index maps the NULL
    // parent to a sentinel, so a second identical supplied root is rejected by the database
    // itself, not only by the store's own check.
    let harness = SqliteHarness::new().await;
    drop(harness.open().await);
    let insert = "INSERT INTO conversations (id, name, created_utc, updated_utc) VALUES ('c', NULL, '2025-01-01T00:00:00.000000Z', '2025-01-01T00:00:00.000000Z');
        INSERT INTO responses (conversation_id, prompt_hash, response_hash, path_hash, input_json, response_json, datetime_utc)
        VALUES ('c', 'p', 'r', 'p', '[]', '[]', '2025-01-01T00:00:00.000000Z');";
    harness.execute(insert).await;
    let conn = rusqlite::Connection::open(harness.path()).unwrap();
    let duplicate = conn.execute_batch(
        "INSERT INTO responses (conversation_id, prompt_hash, response_hash, path_hash, input_json, response_json, datetime_utc)
         VALUES ('c', 'p', 'r', 'p', '[]', '[]', '2025-01-01T00:00:00.000000Z');",
    );
    assert!(duplicate.unwrap_err().to_string().contains("UNIQUE"));
    // Generated answers (with a model) may repeat.
    conn.execute_batch(
        "INSERT INTO responses (conversation_id, prompt_hash, response_hash, path_hash, input_json, response_json, model, datetime_utc)
         VALUES ('c', 'p', 'r', 'p', '[]', '[]', 'm', '2025-01-01T00:00:00.000000Z'),
                ('c', 'p', 'r', 'p', '[]', '[]', 'm', '2025-01-01T00:00:00.000000Z');",
    )
    .unwrap();
}

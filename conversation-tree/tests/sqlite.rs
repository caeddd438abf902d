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

    fn failing_event_insert() -> String {
        Self::failing_insert_trigger("run_event_batches")
    }

    fn failing_event_insert_for(run: &str) -> String {
        format!(
            "CREATE TRIGGER fail_events_of_one_run BEFORE INSERT ON run_event_batches \
             WHEN NEW.run_id = '{run}' BEGIN SELECT RAISE(ABORT, 'injected failure'); END;"
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
                supported: 12,
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

/// Leases, takeovers and retention on the store's clock: a [`ManualClock`] moves past a
/// lease's expiry without waiting.
mod runs_on_a_manual_clock {
    use std::time::Duration;

    use conversation_tree::runs::{ManualClock, RunStatus, RunStore, RunUpdate};
    use conversation_tree::{SqliteStore, StoreError};

    use crate::common::runs::{batch, new_run};

    const TTL: Duration = Duration::from_secs(15);

    #[tokio::test]
    async fn an_expired_lease_is_taken_over_and_the_old_holder_is_fenced() {
        let clock = ManualClock::new();
        let store = SqliteStore::open_in_memory()
            .await
            .unwrap()
            .with_clock(clock.clone());
        store
            .create_run(new_run("resp_1").leased_to("replica-a", TTL))
            .await
            .unwrap();
        store
            .update_run("resp_1", RunUpdate::new().status(RunStatus::InProgress))
            .await
            .unwrap();
        store.append_events("resp_1", &batch(0..3)).await.unwrap();
        let old = store.run("resp_1").await.unwrap().unwrap().lease.unwrap();

        // Renewed in time, it stays held past its first expiry.
        clock.advance(Duration::from_secs(10));
        let old = store.renew_lease(&old, TTL).await.unwrap();
        clock.advance(Duration::from_secs(10));
        assert!(store.orphaned_runs(10).await.unwrap().is_empty());
        assert_eq!(
            store.claim_run("resp_1", "replica-b", TTL).await.unwrap(),
            None
        );

        // The holder dies: once the lease expires the run is orphaned, and taken over.
        clock.advance(TTL);
        let orphaned = store.orphaned_runs(10).await.unwrap();
        assert_eq!(
            orphaned
                .iter()
                .map(|run| run.id.as_str())
                .collect::<Vec<_>>(),
            ["resp_1"]
        );
        let taken = store
            .claim_orphaned_run("replica-b", TTL)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(taken.status, RunStatus::InProgress);
        assert_eq!(taken.last_seq, Some(2));
        let new = taken.lease.unwrap();
        assert_eq!((new.holder.as_str(), new.epoch), ("replica-b", 2));
        assert_eq!(
            store.claim_orphaned_run("replica-c", TTL).await.unwrap(),
            None
        );

        // The old holder wakes up: its renewal fails, and its next event is refused.
        let lost = store.renew_lease(&old, TTL).await.unwrap_err();
        assert!(matches!(lost, StoreError::LeaseLost { .. }), "{lost}");
        store.append_events("resp_1", &batch(3..4)).await.unwrap();
        let late = store
            .append_events("resp_1", &batch(3..4))
            .await
            .unwrap_err();
        assert!(matches!(late, StoreError::DuplicateEvent { .. }), "{late}");

        // An unrenewed lease is lost even when nobody took the run over.
        clock.advance(TTL + Duration::from_secs(1));
        assert!(matches!(
            store.renew_lease(&new, TTL).await,
            Err(StoreError::LeaseLost { .. })
        ));
    }

    #[tokio::test]
    async fn retention_is_measured_on_the_stores_clock() {
        let clock = ManualClock::new();
        let store = SqliteStore::open_in_memory()
            .await
            .unwrap()
            .with_clock(clock.clone());
        let day = Duration::from_secs(24 * 3600);
        store.create_run(new_run("resp_old")).await.unwrap();
        store.append_events("resp_old", &batch(0..2)).await.unwrap();
        store
            .update_run("resp_old", RunUpdate::new().status(RunStatus::Cancelled))
            .await
            .unwrap();
        clock.advance(Duration::from_secs(23 * 3600));
        store.create_run(new_run("resp_new")).await.unwrap();
        store.append_events("resp_new", &batch(0..1)).await.unwrap();
        store
            .update_run("resp_new", RunUpdate::new().status(RunStatus::Cancelled))
            .await
            .unwrap();

        // 23 h later nothing is a day old.
        assert_eq!(store.purge_runs(day).await.unwrap().runs, 0);
        // 25 h after the first run finished, it goes with its events; the second stays whole.
        clock.advance(Duration::from_secs(2 * 3600));
        let report = store.purge_runs(day).await.unwrap();
        assert_eq!((report.runs, report.events), (1, 2));
        assert_eq!(store.run("resp_old").await.unwrap(), None);
        assert_eq!(
            store.events_after("resp_new", None, 10).await.unwrap(),
            batch(0..1)
        );
    }

    #[tokio::test]
    async fn a_read_only_store_reads_runs_and_refuses_to_write_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("logs.db");
        let writer = SqliteStore::open(&path).await.unwrap();
        writer.create_run(new_run("resp_1")).await.unwrap();
        writer.append_events("resp_1", &batch(0..2)).await.unwrap();
        let reader = SqliteStore::open_read_only(&path).await.unwrap();
        assert_eq!(
            reader.events_after("resp_1", None, 10).await.unwrap(),
            batch(0..2)
        );
        let refused = reader.create_run(new_run("resp_2")).await.unwrap_err();
        assert!(matches!(refused, StoreError::ReadOnly { .. }), "{refused}");
    }
}

mod run_event_property {
    use std::sync::Arc;

    use conversation_tree::{SqliteStore, Store};
    use proptest::prelude::*;

    use crate::common::runs::{Append, readers_see_a_prefix_and_never_a_hole};

    fn append() -> impl Strategy<Value = Append> {
        // Mostly good batches; now and then a repeat or a gap.
        (
            1u64..8,
            prop_oneof![6 => Just(0i8), 1 => -3i8..0, 1 => 1i8..3],
        )
            .prop_map(|(len, shift)| Append { len, shift })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        #[test]
        fn interleaved_readers_see_a_prefix(appends in proptest::collection::vec(append(), 1..30)) {
            let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
            runtime.block_on(async {
                let dir = tempfile::tempdir().unwrap();
                let store: Arc<dyn Store> = Arc::new(SqliteStore::open(dir.path().join("logs.db")).await.unwrap());
                readers_see_a_prefix_and_never_a_hole(store, appends).await;
            });
        }
    }
}

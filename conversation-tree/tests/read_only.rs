//! `SqliteStore::open_read_only`: reading never writes (no file created, upgraded or changed,
//! no `-wal`/`-shm` left behind), a writer's lock is waited for, and one damaged conversation
//! does not hide the others.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use conversation_tree::{
    CallOptions, ConversationId, Message, NewResponse, Node, SqliteStore, Store, StoreError,
};

/// A store file with two conversations, written and closed by a writing store.
struct Fixture {
    dir: tempfile::TempDir,
    first: ConversationId,
    first_root: Node,
    second: ConversationId,
    second_root: Node,
}

impl Fixture {
    async fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path().join("logs.db")).await.unwrap();
        let first = ConversationId::new("first").unwrap();
        let second = ConversationId::new("second").unwrap();
        let first_root = log(&store, &first, "Capital of France?", "Paris").await;
        let second_root = log(&store, &second, "Capital of Germany?", "Berlin").await;
        drop(store);
        Fixture {
            dir,
            first,
            first_root,
            second,
            second_root,
        }
    }

    fn path(&self) -> PathBuf {
        self.dir.path().join("logs.db")
    }

    /// Runs SQL on the file through a plain read-write connection.
    fn execute(&self, sql: &str) {
        let conn = rusqlite::Connection::open(self.path()).unwrap();
        conn.execute_batch(sql).unwrap();
    }
}

/// Logs `answer` to `ask` as a root of `conversation`, labelled `resp_<conversation>`.
async fn log(store: &dyn Store, conversation: &ConversationId, ask: &str, answer: &str) -> Node {
    store
        .log_response(
            NewResponse::new(
                conversation.clone(),
                None,
                vec![Message::human(ask)],
                Message::ai(answer),
                &CallOptions::new("echo"),
            )
            .label(format!("resp_{conversation}")),
        )
        .await
        .unwrap()
}

/// The file's bytes and modification time, and which of its `-wal`/`-shm` files exist.
#[derive(Debug, PartialEq)]
struct Snapshot {
    bytes: Vec<u8>,
    modified: SystemTime,
    sidecars: Vec<String>,
}

fn snapshot(path: &Path) -> Snapshot {
    let sidecars = ["-wal", "-shm", "-journal"]
        .iter()
        .filter(|suffix| {
            let mut name = path.as_os_str().to_owned();
            name.push(suffix);
            Path::new(&name).exists()
        })
        .map(|suffix| (*suffix).to_owned())
        .collect();
    Snapshot {
        bytes: std::fs::read(path).unwrap(),
        modified: std::fs::metadata(path).unwrap().modified().unwrap(),
        sidecars,
    }
}

/// Every read of the store works, and every write is a typed [`StoreError::ReadOnly`].
async fn reads_all_and_writes_nothing(store: &SqliteStore, fixture: &Fixture) {
    assert!(store.is_read_only());
    let listed = store.conversations(10).await.unwrap();
    let ids: Vec<&ConversationId> = listed.iter().map(|summary| &summary.id).collect();
    assert_eq!(ids, [&fixture.second, &fixture.first]);
    assert!(listed.iter().all(|summary| summary.damaged.is_none()));
    let nodes = store.conversation_nodes(&fixture.first).await.unwrap();
    assert_eq!(nodes.len(), 1);
    assert_eq!(nodes[0], fixture.first_root);
    let turn = store.turn(fixture.second_root.id()).await.unwrap();
    assert_eq!(turn.response.text(), "Berlin");
    assert_eq!(
        store
            .messages_for_path(fixture.first_root.id())
            .await
            .unwrap()
            .len(),
        2
    );
    assert_eq!(store.calls(&fixture.first).await.unwrap().len(), 1);
    assert!(store.verify().await.unwrap().is_ok());
    assert_eq!(
        store.node_by_label("resp_second").await.unwrap().as_ref(),
        Some(&fixture.second_root)
    );
    assert_eq!(store.node_by_label("resp_none").await.unwrap(), None);

    // A walk through stored nodes to a new question needs no write: it answers.
    let options = CallOptions::new("echo");
    let continued = [
        Message::human("Capital of France?"),
        Message::ai("Paris"),
        Message::human("And Spain?"),
    ];
    let path = store
        .find_or_create_path(&fixture.first, &continued, &options)
        .await
        .unwrap();
    assert_eq!(path.parent(), Some(fixture.first_root.id()));

    // A new branch would need a write.
    let branch = [Message::human("Capital of France?"), Message::ai("Lyon")];
    let err = store
        .find_or_create_path(&fixture.first, &branch, &options)
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::ReadOnly { .. }), "{err}");
    let err = store
        .log_response(NewResponse::new(
            fixture.first.clone(),
            Some(fixture.first_root.id()),
            vec![Message::human("And Spain?")],
            Message::ai("Madrid"),
            &options,
        ))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::ReadOnly { .. }), "{err}");
    assert!(err.to_string().contains("read-only"), "{err}");
    // Labelling a stored node is a write too; an unusable label is refused before that.
    let err = store
        .label_node("resp_moved", fixture.first_root.id())
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::ReadOnly { .. }), "{err}");
    let err = store
        .label_node("", fixture.first_root.id())
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::InvalidLabel { .. }), "{err}");
    assert_eq!(store.node_by_label("resp_moved").await.unwrap(), None);
}

#[tokio::test]
async fn a_missing_or_empty_file_is_an_error_and_is_not_created() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nested").join("logs.db");
    let err = SqliteStore::open_read_only(&missing).await.unwrap_err();
    assert!(matches!(err, StoreError::NoStore { .. }), "{err}");
    assert!(err.to_string().contains("does not exist"), "{err}");
    assert!(!missing.parent().unwrap().exists());

    let empty = dir.path().join("empty.db");
    std::fs::write(&empty, b"").unwrap();
    let err = SqliteStore::open_read_only(&empty).await.unwrap_err();
    assert!(matches!(err, StoreError::NoStore { .. }), "{err}");
    assert_eq!(std::fs::read(&empty).unwrap(), b"");

    let foreign = dir.path().join("notes.txt");
    std::fs::write(
        &foreign,
        "not a database, just some text that is long enough",
    )
    .unwrap();
    let err = SqliteStore::open_read_only(&foreign).await.unwrap_err();
    assert!(matches!(err, StoreError::NotAStore { .. }), "{err}");
}

#[tokio::test]
async fn reads_and_refuses_writes_leaving_the_file_as_it_was() {
    let fixture = Fixture::new().await;
    let before = snapshot(&fixture.path());
    assert!(before.sidecars.is_empty(), "{:?}", before.sidecars);
    let store = SqliteStore::open_read_only(fixture.path()).await.unwrap();
    reads_all_and_writes_nothing(&store, &fixture).await;
    drop(store);
    assert_eq!(snapshot(&fixture.path()), before);
}

/// The file and its directory made read-only. Root ignores permission bits, so what this
/// checks everywhere is that nothing was created or changed; as another user the permissions
/// are enforced too.
#[tokio::test]
async fn reads_a_read_only_file_in_a_read_only_directory() {
    use std::os::unix::fs::PermissionsExt as _;

    let fixture = Fixture::new().await;
    let path = fixture.path();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
    std::fs::set_permissions(fixture.dir.path(), std::fs::Permissions::from_mode(0o555)).unwrap();
    let before = snapshot(&path);
    let store = SqliteStore::open_read_only(&path).await;
    let outcome = match store {
        Ok(store) => {
            reads_all_and_writes_nothing(&store, &fixture).await;
            Ok(())
        }
        Err(err) => Err(err),
    };
    let after = snapshot(&path);
    std::fs::set_permissions(fixture.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    outcome.unwrap();
    assert_eq!(after, before);
}

#[tokio::test]
async fn an_older_or_newer_schema_is_refused_untouched() {
    let fixture = Fixture::new().await;
    let version: i64 = rusqlite::Connection::open(fixture.path())
        .unwrap()
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .unwrap();
    fixture.execute(&format!("PRAGMA user_version = {}", version - 1));
    let before = snapshot(&fixture.path());
    let err = SqliteStore::open_read_only(fixture.path())
        .await
        .unwrap_err();
    match &err {
        StoreError::OlderSchema { found, current, .. } => {
            assert_eq!((*found, *current), (version - 1, version));
        }
        other => panic!("expected OlderSchema, got {other}"),
    }
    assert!(
        err.to_string().contains("run a command that writes"),
        "{err}"
    );
    assert_eq!(snapshot(&fixture.path()), before);

    fixture.execute(&format!("PRAGMA user_version = {}", version + 1));
    let err = SqliteStore::open_read_only(fixture.path())
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::NewerSchema { .. }), "{err}");
}

/// Beside a writer that has the file open and holds its write lock in an open transaction,
/// a reader reads the last committed state at once, and sees the write once committed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_beside_a_writer_holding_its_write_lock() {
    let fixture = Fixture::new().await;
    let writer = rusqlite::Connection::open(fixture.path()).unwrap();
    writer
        .execute_batch(
            "BEGIN IMMEDIATE;
             INSERT INTO conversations (id, name, created_utc, updated_utc)
                 VALUES ('third', 'pending', '2999-01-01T00:00:00.000000Z',
                         '2999-01-01T00:00:00.000000Z');",
        )
        .unwrap();
    let store = SqliteStore::open_read_only(fixture.path()).await.unwrap();
    let started = Instant::now();
    let listed = store.conversations(10).await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(listed.len(), 2, "{listed:?}");
    writer.execute_batch("COMMIT").unwrap();
    let listed = store.conversations(10).await.unwrap();
    assert_eq!(listed.len(), 3, "{listed:?}");
    assert_eq!(listed[0].id.as_str(), "third");
}

/// A writer in exclusive locking mode keeps even readers out until it closes: the reader waits
/// for it (busy timeout) instead of failing with "database is locked".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waits_for_a_writer_lock_instead_of_failing() {
    const HOLD: Duration = Duration::from_millis(1500);
    let fixture = Fixture::new().await;
    let path = fixture.path();
    let (locked_tx, locked_rx) = std::sync::mpsc::channel();
    let holder = std::thread::spawn(move || {
        let conn = rusqlite::Connection::open(path).unwrap();
        conn.execute_batch(
            "PRAGMA locking_mode = EXCLUSIVE;
             BEGIN IMMEDIATE;
             INSERT INTO conversations (id, name, created_utc, updated_utc)
                 VALUES ('third', 'locked', '2999-01-01T00:00:00.000000Z',
                         '2999-01-01T00:00:00.000000Z');
             COMMIT;",
        )
        .unwrap();
        locked_tx.send(Instant::now()).unwrap();
        std::thread::sleep(HOLD);
        drop(conn);
    });
    let locked_at = locked_rx.recv().unwrap();
    // A read-only connection that does not wait is refused while the lock is held.
    let probe = rusqlite::Connection::open_with_flags(
        fixture.path(),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .unwrap();
    probe.busy_timeout(Duration::ZERO).unwrap();
    let refused = probe.query_row("SELECT count(*) FROM conversations", [], |row| {
        row.get::<_, i64>(0)
    });
    assert!(refused.is_err(), "the lock did not keep readers out");
    drop(probe);

    let store = SqliteStore::open_read_only(fixture.path()).await.unwrap();
    let listed = store.conversations(10).await.unwrap();
    let waited = locked_at.elapsed();
    holder.join().unwrap();
    assert_eq!(listed.len(), 3, "{listed:?}");
    assert!(
        waited >= HOLD - Duration::from_millis(200),
        "read after {waited:?}, while the lock was held for {HOLD:?}"
    );
}

#[tokio::test]
async fn a_damaged_conversation_is_listed_as_such_beside_the_others() {
    let fixture = Fixture::new().await;
    let third = ConversationId::new("third").unwrap();
    let third_root = {
        let store = SqliteStore::open(fixture.path()).await.unwrap();
        log(&store, &third, "Capital of Italy?", "Rome").await
    };
    fixture.execute(&format!(
        "UPDATE responses SET input_json = '{{not json' WHERE id = {};
         UPDATE conversations SET updated_utc = 'yesterday' WHERE id = 'second';
         UPDATE responses SET datetime_utc = 'garbage' WHERE id = {};",
        fixture.first_root.id(),
        third_root.id()
    ));

    for store in [
        SqliteStore::open_read_only(fixture.path()).await.unwrap(),
        SqliteStore::open(fixture.path()).await.unwrap(),
    ] {
        let listed = store.conversations(10).await.unwrap();
        let mut damage: Vec<(&str, Option<&str>)> = listed
            .iter()
            .map(|summary| (summary.id.as_str(), summary.damaged.as_deref()))
            .collect();
        damage.sort_unstable();
        let first = format!(
            "response {}: its input_json is not valid JSON",
            fixture.first_root.id()
        );
        let third_reason = format!(
            "response {}: its datetime_utc 'garbage' is not a timestamp",
            third_root.id()
        );
        assert_eq!(damage.len(), 3, "{listed:?}");
        assert_eq!(damage[0], ("first", Some(first.as_str())));
        assert_eq!(damage[1].0, "second");
        let second = damage[1].1.expect("second is damaged");
        assert!(second.contains("updated_utc") && second.contains("yesterday"));
        assert_eq!(damage[2], ("third", Some(third_reason.as_str())));
        let second_summary = listed.iter().find(|s| s.id.as_str() == "second").unwrap();
        assert_eq!(second_summary.updated_utc, second_summary.created_utc);

        // One conversation at a time: the same note.
        let one = store.conversation(&fixture.first).await.unwrap().unwrap();
        assert_eq!(one.damaged.as_deref(), Some(first.as_str()));

        // Reading the damaged rows is an error naming the response, not a panic.
        let err = store.turn(fixture.first_root.id()).await.unwrap_err();
        assert!(matches!(err, StoreError::Corrupt { .. }), "{err}");
        assert!(
            err.to_string()
                .contains(&format!("response {}", fixture.first_root.id())),
            "{err}"
        );
        let err = store.conversation_nodes(&third).await.unwrap_err();
        assert!(
            err.to_string()
                .contains(&format!("response {}", third_root.id())),
            "{err}"
        );
        // The intact rows still read.
        let turn = store.turn(fixture.second_root.id()).await.unwrap();
        assert_eq!(turn.response.text(), "Berlin");
    }
}

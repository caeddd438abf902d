//! Schema upgrades and query plans, which need the store's internals.

use rusqlite::Connection;

use super::tx::{CANDIDATES_SQL, format_time};
use super::{Ctx, SqliteStore, schema};
use crate::record::{self, NodeRow};
use crate::{
    CallKind, CallOptions, ConversationId, HashOptions, Message, NewResponse, NodeId, Store,
};

fn ctx(path: &std::path::Path) -> Ctx {
    Ctx {
        location: path.display().to_string().into(),
    }
}

fn user_version(path: &std::path::Path) -> i64 {
    Connection::open(path)
        .and_then(|conn| conn.query_row("PRAGMA user_version", [], |row| row.get(0)))
        .unwrap_or(-1)
}

/// Inserts a row as schema version 1 had it (no status column).
fn insert_v1(conn: &Connection, ctx: &Ctx, row: &NodeRow) -> crate::Result<NodeId> {
    conn.execute(
        "INSERT INTO responses (conversation_id, parent_response_id, prompt_hash, response_hash, \
         path_hash, input_json, response_json, model, stop_json, datetime_utc) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        rusqlite::params![
            row.conversation.as_str(),
            row.parent.map(NodeId::get),
            row.prompt_hash,
            row.response_hash,
            row.path_hash,
            row.input_json,
            row.response_json,
            row.model,
            row.stop_json,
            super::tx::format_time(row.datetime_utc),
        ],
    )
    .map_err(ctx.sql("test"))?;
    Ok(NodeId::from_db(conn.last_insert_rowid()))
}

/// A file written at schema version 1 (before the `calls` table) opens, is upgraded in place,
/// keeps its nodes, gains one call per node, and labels its new nodes.
#[tokio::test]
async fn a_version_1_file_is_upgraded() -> crate::Result<()> {
    let dir = tempfile::tempdir().map_err(|source| crate::StoreError::Io {
        operation: "create",
        path: "a temporary directory".into(),
        source,
    })?;
    let path = dir.path().join("old.db");
    let ctx = ctx(&path);
    let conversation = ConversationId::new("from-v1")?;
    let options = HashOptions::default();
    let (root_id, child_id) = {
        let mut conn = Connection::open(&path).map_err(ctx.sql("test"))?;
        schema::configure(&conn, &ctx, false)?;
        assert_eq!(schema::migrate_to(&mut conn, &ctx, 1)?, 0);
        let tx = conn.transaction().map_err(ctx.sql("test"))?;
        let at = record::now();
        // As schema version 1 had it (no owner column).
        tx.execute(
            "INSERT INTO conversations (id, name, created_utc, updated_utc) \
             VALUES (?1, 'old', ?2, ?2)",
            rusqlite::params![conversation.as_str(), format_time(at)],
        )
        .map_err(ctx.sql("test"))?;
        let mut root = NodeRow::new(
            conversation.clone(),
            None,
            &[Message::human("Hi")],
            &Message::ai("Hello"),
            &options,
            at,
        )?;
        root.model = Some("gpt-4".into());
        let root_id = insert_v1(&tx, &ctx, &root)?;
        let mut child = NodeRow::new(
            conversation.clone(),
            Some(root_id),
            &[Message::human("More")],
            &Message::ai("Supplied"),
            &options,
            at,
        )?;
        child.set_parent_path(Some(&root.path_hash));
        let child_id = insert_v1(&tx, &ctx, &child)?;
        tx.commit().map_err(ctx.sql("test"))?;
        (root_id, child_id)
    };
    assert_eq!(user_version(&path), 1);

    let store = SqliteStore::open(&path).await?;
    assert_eq!(user_version(&path), schema::LATEST);
    let calls = store.calls(&conversation).await?;
    let backfilled: Vec<(NodeId, CallKind)> =
        calls.iter().map(|call| (call.node, call.kind)).collect();
    assert_eq!(
        backfilled,
        [
            (root_id, CallKind::Generated),
            (child_id, CallKind::Supplied)
        ]
    );
    assert_eq!(calls[0].model.as_deref(), Some("gpt-4"));
    assert!(store.verify().await?.is_ok());
    assert_eq!(
        store.messages_for_path(child_id).await?,
        [
            Message::human("Hi"),
            Message::ai("Hello"),
            Message::human("More"),
            Message::ai("Supplied")
        ]
    );
    assert_eq!(
        store
            .latest_node(&conversation)
            .await?
            .map(|node| node.id()),
        Some(child_id)
    );
    // The upgraded file labels new nodes.
    let labelled = store
        .log_response(
            NewResponse::new(
                conversation.clone(),
                Some(child_id),
                vec![Message::human("Later")],
                Message::ai("Labelled"),
                &CallOptions::new("gpt-4"),
            )
            .label("resp_after_upgrade"),
        )
        .await?;
    assert_eq!(
        store.node_by_label("resp_after_upgrade").await?,
        Some(labelled)
    );
    Ok(())
}

fn plan(conn: &Connection, sql: &str, params: impl rusqlite::Params) -> String {
    let mut statement = conn
        .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
        .unwrap_or_else(|err| panic!("cannot explain {sql}: {err}"));
    let rows = statement
        .query_map(params, |row| row.get::<_, String>(3))
        .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
        .unwrap_or_else(|err| panic!("cannot explain {sql}: {err}"));
    rows.join("\n")
}

/// The walk's lookup, for a root and for a child, searches the composite index on all three
/// columns: no scan, whatever the store holds.
#[tokio::test]
async fn walk_lookups_use_the_composite_index() {
    let store = SqliteStore::open_in_memory()
        .await
        .unwrap_or_else(|err| panic!("{err}"));
    let writer = store
        .inner
        .writer("test")
        .unwrap_or_else(|err| panic!("{err}"));
    let index = "USING INDEX idx_responses_conversation_parent_prompt \
                 (conversation_id=? AND parent_response_id=? AND prompt_hash=?)";
    for parent in [None, Some(7_i64)] {
        let detail = plan(&writer, CANDIDATES_SQL, rusqlite::params!["c", parent, "p"]);
        assert!(detail.contains(index), "parent {parent:?}: {detail}");
        assert!(!detail.contains("SCAN"), "parent {parent:?}: {detail}");
    }
    let path_lookup = "SELECT id FROM responses r WHERE r.path_hash = ?1 ORDER BY r.id";
    let detail = plan(&writer, path_lookup, ["p"]);
    assert!(
        detail.contains("INDEX idx_responses_path_hash (path_hash=?)"),
        "{detail}"
    );
    let latest =
        "SELECT response_id FROM calls WHERE conversation_id = ?1 ORDER BY id DESC LIMIT 1";
    let detail = plan(&writer, latest, ["c"]);
    assert!(detail.contains("idx_calls_conversation"), "{detail}");
    assert!(!detail.contains("TEMP B-TREE"), "no sort needed: {detail}");
}

#[test]
fn timestamps_sort_as_text() {
    let early = jiff::Timestamp::from_second(1_700_000_000).unwrap_or_default();
    let late = jiff::Timestamp::from_second(1_700_000_001).unwrap_or_default();
    let (early, late) = (format_time(early), format_time(late));
    assert_eq!(early, "2023-11-14T22:13:20.000000Z");
    assert!(early < late);
}

/// A file written at schema version 7 (before metadata was recorded) is upgraded in place:
/// its nodes read back with no metadata and still verify, and new nodes keep theirs.
#[tokio::test]
async fn a_version_7_file_gains_metadata() -> crate::Result<()> {
    let dir = tempfile::tempdir().map_err(|source| crate::StoreError::Io {
        operation: "create",
        path: "a temporary directory".into(),
        source,
    })?;
    let path = dir.path().join("v7.db");
    let ctx = ctx(&path);
    let conversation = ConversationId::new("from-v7")?;
    let old_id = {
        let mut conn = Connection::open(&path).map_err(ctx.sql("test"))?;
        schema::configure(&conn, &ctx, false)?;
        assert_eq!(schema::migrate_to(&mut conn, &ctx, 7)?, 0);
        let at = record::now();
        conn.execute(
            "INSERT INTO conversations (id, name, created_utc, updated_utc) \
             VALUES (?1, 'old', ?2, ?2)",
            rusqlite::params![conversation.as_str(), format_time(at)],
        )
        .map_err(ctx.sql("test"))?;
        let mut old = NodeRow::new(
            conversation.clone(),
            None,
            &[Message::human("Hi")],
            &Message::ai("Hello"),
            &HashOptions::default(),
            at,
        )?;
        old.model = Some("gpt-4".into());
        insert_v1(&conn, &ctx, &old)?
    };
    assert_eq!(user_version(&path), 7);

    let store = SqliteStore::open(&path).await?;
    assert_eq!(user_version(&path), schema::LATEST);
    let old = store.node(old_id).await?.expect("the old node is kept");
    assert!(old.metadata().is_empty());
    let pairs = std::collections::BTreeMap::from([("run".to_owned(), "7".to_owned())]);
    let new = store
        .log_response(
            NewResponse::new(
                conversation.clone(),
                Some(old_id),
                vec![Message::human("Again")],
                Message::ai("Hello again"),
                &CallOptions::new("gpt-4"),
            )
            .metadata(pairs.clone()),
        )
        .await?;
    drop(store);
    let store = SqliteStore::open(&path).await?;
    assert_eq!(
        store
            .node(new.id())
            .await?
            .map(|node| node.metadata().clone()),
        Some(pairs)
    );
    assert!(store.verify().await?.is_ok());
    Ok(())
}

/// A version 11 file keeps its runs' events, stored a row per event, when it moves to a batch
/// per row: they read back as they were, and the run takes new events after them.
#[tokio::test]
async fn a_version_11_file_keeps_its_events_in_batches() -> crate::Result<()> {
    use crate::runs::{RunEvent, RunStore as _};

    let dir = tempfile::tempdir().map_err(|source| crate::StoreError::Io {
        operation: "create",
        path: "a temporary directory".into(),
        source,
    })?;
    let path = dir.path().join("v11.db");
    let ctx = ctx(&path);
    let old = [
        RunEvent::new(0, b"id: 0\nevent: response.start\n\n".to_vec()),
        RunEvent::new(1, Vec::new()),
        RunEvent::new(2, vec![0, 255, 10]),
    ];
    {
        let mut conn = Connection::open(&path).map_err(ctx.sql("test"))?;
        schema::configure(&conn, &ctx, false)?;
        assert_eq!(schema::migrate_to(&mut conn, &ctx, 11)?, 0);
        conn.execute(
            "INSERT INTO runs (id, owner, protocol, mode, status, spec_json, created_us, \
             updated_us, last_seq) VALUES ('resp_old', 'shared', 'chat_shell', 'foreground', \
             'in_progress', '{}', 1, 1, 2)",
            [],
        )
        .map_err(ctx.sql("test"))?;
        for event in &old {
            conn.execute(
                "INSERT INTO run_events (run_id, seq, data, created_us) \
                 VALUES ('resp_old', ?1, ?2, 1)",
                rusqlite::params![event.seq as i64, &event.data[..]],
            )
            .map_err(ctx.sql("test"))?;
        }
    }
    assert_eq!(user_version(&path), 11);

    let store = SqliteStore::open(&path).await?;
    assert_eq!(user_version(&path), schema::LATEST);
    assert_eq!(store.events_after("resp_old", None, 100).await?, old);
    assert_eq!(store.events_after("resp_old", Some(0), 1).await?, old[1..2]);
    let new = [
        RunEvent::new(3, b"a".to_vec()),
        RunEvent::new(4, b"bc".to_vec()),
    ];
    store.append_events("resp_old", &new).await?;
    let all = store.events_after("resp_old", Some(1), 100).await?;
    assert_eq!(all, [old[2].clone(), new[0].clone(), new[1].clone()]);
    Ok(())
}

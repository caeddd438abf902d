//! `find_or_create_path` of a 20-message conversation on a store holding 1,000,000 responses.
//!
//! `cargo bench -p conversation-tree --bench find_or_create_path` (SQLite);
//! add `--features postgres` for PostgreSQL too (on `$SKEIN_PG_URL`, or a throwaway cluster).
//!
//! The big SQLite store is built once, in one transaction of batched inserts with real hashes
//! and transcripts (50,000 conversations of 20 nodes), and kept in
//! `target/bench-data/tree-1m.sqlite` for later runs; building it takes a few minutes. The
//! PostgreSQL store is filled in a fresh database by one `INSERT … SELECT` over
//! `generate_series` (same shape, SHA-256 filler hashes).

use std::hint::black_box;
use std::path::{Path, PathBuf};

use conversation_tree::{
    CallOptions, ConversationId, HashOptions, Message, NewResponse, Reuse, SqliteStore, Store,
    path_hash, prompt_hash, response_hash,
};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use tokio::runtime::Runtime;

const RESPONSES: i64 = 1_000_000;
const NODES_PER_CONVERSATION: i64 = 20;

fn store_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../target/bench-data")
        .join("tree-1m.sqlite")
}

fn sampling() -> CallOptions {
    CallOptions::new("bench-model").with_hash(HashOptions {
        temperature: Some(0.7),
        ..Default::default()
    })
}

/// The 1,000,000 filler responses, unless a previous run left them.
fn build_big_store(rt: &Runtime, path: &Path) -> SqliteStore {
    if let Ok(store) = rt.block_on(SqliteStore::open(path)) {
        let count: i64 = rusqlite::Connection::open(path)
            .and_then(|conn| conn.query_row("SELECT count(*) FROM responses", [], |row| row.get(0)))
            .unwrap_or(0);
        if count >= RESPONSES {
            return store;
        }
    }
    let _ = std::fs::remove_file(path);
    let store = rt
        .block_on(SqliteStore::open(path))
        .expect("create the bench store");
    eprintln!(
        "building a store of {RESPONSES} responses in {}",
        path.display()
    );
    let mut conn = rusqlite::Connection::open(path).expect("open the bench store");
    conn.pragma_update(None, "synchronous", "off")
        .expect("pragma");
    let tx = conn.transaction().expect("transaction");
    {
        let mut conversation = tx
            .prepare(
                "INSERT INTO conversations (id, name, created_utc, updated_utc) \
                 VALUES (?1, 'bench', '2025-01-01T00:00:00.000000Z', '2025-01-01T00:00:00.000000Z')",
            )
            .expect("prepare");
        let mut response = tx
            .prepare(
                "INSERT INTO responses (id, conversation_id, parent_response_id, prompt_hash, \
                 response_hash, path_hash, input_json, response_json, model, temperature, \
                 datetime_utc) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'bench-model', 0.7, \
                 '2025-01-01T00:00:00.000000Z')",
            )
            .expect("prepare");
        let options = sampling().hash;
        let system = Message::system("You are a helpful assistant.");
        for c in 0..RESPONSES / NODES_PER_CONVERSATION {
            let id = format!("bench-{c:06}");
            conversation.execute([&id]).expect("insert conversation");
            let mut parent: Option<(i64, String)> = None;
            for t in 0..NODES_PER_CONVERSATION {
                let row = c * NODES_PER_CONVERSATION + t + 1;
                let mut input = vec![Message::human(format!("conversation {c}, question {t}"))];
                if t == 0 {
                    input.insert(0, system.clone());
                }
                let answer = Message::ai(format!("conversation {c}, answer {t}"));
                let prompt = prompt_hash(&input, &options);
                let path = path_hash(parent.as_ref().map(|(_, path)| path.as_str()), &prompt);
                response
                    .execute(rusqlite::params![
                        row,
                        id,
                        parent.as_ref().map(|(id, _)| *id),
                        prompt,
                        response_hash(&answer),
                        path,
                        messages::transcript::to_json(&input),
                        messages::transcript::to_json(&[answer]),
                    ])
                    .expect("insert response");
                parent = Some((row, path));
            }
        }
    }
    tx.commit().expect("commit");
    conn.execute_batch("ANALYZE").expect("analyze");
    store
}

/// The conversation under test: a system prompt and nine answered questions, stored through
/// the API; the array adds a tenth question: 20 messages, 10 turns.
fn conversation(rt: &Runtime, store: &dyn Store) -> (ConversationId, Vec<Message>) {
    let conversation = ConversationId::new("bench-target").expect("id");
    let mut messages = vec![Message::system("You are a helpful assistant.")];
    for turn in 0..9 {
        messages.push(Message::human(format!(
            "Target question {turn}: {}",
            "detail ".repeat(40)
        )));
        let answer = Message::ai(format!("Target answer {turn}: {}", "reason ".repeat(60)));
        let path = rt
            .block_on(store.find_or_create_path(&conversation, &messages, &sampling()))
            .expect("find");
        if path.alternatives.is_empty() {
            let input = path.pending_input(&messages).to_vec();
            let entry = NewResponse::new(
                conversation.clone(),
                path.parent(),
                input,
                answer.clone(),
                &sampling(),
            );
            rt.block_on(store.log_response(entry)).expect("log");
        }
        messages.push(answer);
    }
    messages.push(Message::human("Target question 9: and now?"));
    assert_eq!(messages.len(), 20);
    (conversation, messages)
}

fn find_or_create_path(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let path = store_path();
    std::fs::create_dir_all(path.parent().expect("parent")).expect("bench-data directory");
    let store = build_big_store(&rt, &path);
    bench_store(c, &rt, "sqlite", &store);
    #[cfg(feature = "postgres")]
    {
        let store = postgres::build_big_store(&rt);
        bench_store(c, &rt, "postgres", &store);
    }
}

fn bench_store(c: &mut Criterion, rt: &Runtime, backend: &str, store: &dyn Store) {
    let (conversation, messages) = conversation(rt, store);
    let mut group = c.benchmark_group(format!("find_or_create_path/{backend} 1M responses"));
    group.throughput(Throughput::Elements(messages.len() as u64));
    // Nine answered turns found, the tenth a miss (sampling): reads only.
    group.bench_function("20 messages, miss", |b| {
        b.iter(|| {
            let found = rt
                .block_on(store.find_or_create_path(
                    &conversation,
                    black_box(&messages),
                    &sampling(),
                ))
                .expect("find");
            assert_eq!(found.turns.len(), 9);
        })
    });
    // The tenth turn answered before and reusable: the walk also writes the cache-hit call.
    let reuse = sampling().with_reuse(Reuse::Always);
    let path_match = rt
        .block_on(store.find_or_create_path(&conversation, &messages, &reuse))
        .expect("find");
    if path_match.cache_hit.is_none() {
        let input = path_match.pending_input(&messages).to_vec();
        let entry = NewResponse::new(
            conversation.clone(),
            path_match.parent(),
            input,
            Message::ai("done"),
            &reuse,
        );
        rt.block_on(store.log_response(entry)).expect("log");
    }
    group.bench_function("20 messages, cache hit recorded", |b| {
        b.iter(|| {
            let found = rt
                .block_on(store.find_or_create_path(&conversation, black_box(&messages), &reuse))
                .expect("find");
            assert!(found.cache_hit.is_some());
        })
    });
    group.finish();

    let mut group = c.benchmark_group(format!("log_response/{backend} 1M responses"));
    group.throughput(Throughput::Elements(1));
    let parent = path_match.parent();
    let mut round = 0u64;
    group.bench_function("one node", |b| {
        b.iter(|| {
            round += 1;
            let entry = NewResponse::new(
                conversation.clone(),
                parent,
                vec![Message::human(format!("extra question {round}"))],
                Message::ai("extra answer"),
                &sampling(),
            );
            rt.block_on(store.log_response(entry)).expect("log")
        })
    });
    group.finish();
}

#[cfg(feature = "postgres")]
mod postgres {
    use conversation_tree::PostgresStore;
    use conversation_tree::testing::fresh_postgres_database;
    use tokio::runtime::Runtime;

    use super::{NODES_PER_CONVERSATION, RESPONSES};

    pub(super) fn build_big_store(rt: &Runtime) -> PostgresStore {
        rt.block_on(async {
            let url = fresh_postgres_database().await;
            let store = PostgresStore::connect(&url).await.expect("connect");
            let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
                .await
                .expect("connect");
            let connection = tokio::spawn(connection);
            eprintln!("filling a PostgreSQL store with {RESPONSES} responses");
            let conversations = RESPONSES / NODES_PER_CONVERSATION;
            let fill = format!(
                "INSERT INTO conversations (id, name, created_utc, updated_utc)
                     SELECT 'bench-' || g, 'bench', now(), now()
                     FROM generate_series(0, {conversations} - 1) g;
                 INSERT INTO responses (id, conversation_id, parent_response_id, prompt_hash,
                         response_hash, path_hash, input_json, response_json, model,
                         temperature, datetime_utc)
                     OVERRIDING SYSTEM VALUE
                     SELECT g, 'bench-' || ((g - 1) / {NODES_PER_CONVERSATION}),
                            CASE WHEN (g - 1) % {NODES_PER_CONVERSATION} = 0 THEN NULL ELSE g - 1 END,
                            encode(sha256(('p' || g)::bytea), 'hex'),
                            encode(sha256(('r' || g)::bytea), 'hex'),
                            encode(sha256(('h' || g)::bytea), 'hex'),
                            '[]', '[]', 'bench-model', 0.7, now()
                     FROM generate_series(1, {RESPONSES}) g;
                 SELECT setval(pg_get_serial_sequence('responses', 'id'), {RESPONSES});
                 ANALYZE;"
            );
            client.batch_execute(&fill).await.expect("fill");
            drop(client);
            let _ = connection.await;
            store
        })
    }
}

criterion_group!(benches, find_or_create_path);
criterion_main!(benches);

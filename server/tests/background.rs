//! Background responses over loopback HTTP (`background: true`), on one server and between
//! replicas of one store: answered at once, read with `GET /v1/responses/{id}` until they end,
//! streamed again from any event (`?stream=true&starting_after=N`), cancelled from another
//! replica, and taken over when the replica running them dies. Expected shapes are the OpenAI
//! API reference's: statuses `queued`, `in_progress`, `completed`, `cancelled`; stream events
//! numbered by `sequence_number` from 0.

use std::sync::Arc;
use std::time::Duration;

use conversation_tree::{SqliteStore, Store};
use serde_json::{Value, json};
use server::{Server, ServerConfig};
use service::store::StoreKind;
use service::{RunsConfig, ServiceConfig};

use crate::support::{TestServer, client};

/// Short leases, so that a takeover happens within a test's patience.
pub(crate) fn config(store: &str) -> ServerConfig {
    ServerConfig {
        service: ServiceConfig {
            store: store.to_owned(),
            runs: RunsConfig {
                lease_ttl: Duration::from_secs(1),
                ..RunsConfig::default()
            },
            ..ServiceConfig::default()
        },
        ..ServerConfig::default()
    }
}

/// A request the echo model answers word by word, `delay_ms` apart.
fn slow(words: &str, delay_ms: u64) -> Value {
    let input = json!({"raw": words, "delay_ms": delay_ms}).to_string();
    json!({"model": "echo", "input": input, "background": true})
}

pub(crate) async fn post(server: &TestServer, body: &Value) -> reqwest::Response {
    client()
        .post(server.url("/v1/responses"))
        .json(body)
        .send()
        .await
        .unwrap()
}

pub(crate) async fn get(server: &TestServer, path: &str) -> reqwest::Response {
    client().get(server.url(path)).send().await.unwrap()
}

/// Polls `GET /v1/responses/{id}` until the response leaves `queued` and `in_progress`.
pub(crate) async fn poll_until_ended(server: &TestServer, id: &str) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let response = get(server, &format!("/v1/responses/{id}")).await;
        assert_eq!(response.status(), 200);
        let object: Value = response.json().await.unwrap();
        let status = object["status"].as_str().unwrap().to_owned();
        if status != "queued" && status != "in_progress" {
            return object;
        }
        assert!(tokio::time::Instant::now() < deadline, "{id} never ended");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The text of a response object's message items.
pub(crate) fn output_text(object: &Value) -> String {
    object["output"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|item| item["type"] == "message")
        .flat_map(|item| item["content"].as_array().unwrap().clone())
        .filter_map(|part| part["text"].as_str().map(str::to_owned))
        .collect()
}

/// The whole stored stream of response `id` from `server` (`?stream=true`), checked to be
/// numbered from 0 without a gap: each event's data and bytes.
pub(crate) async fn numbered_replay(server: &TestServer, id: &str) -> Vec<(Value, Vec<u8>)> {
    let replay = get(server, &format!("/v1/responses/{id}?stream=true"))
        .await
        .bytes()
        .await
        .unwrap();
    let events = frames(&replay);
    for (index, (data, _)) in events.iter().enumerate() {
        assert_eq!(data["sequence_number"], index as u64, "{data}");
    }
    events
}

/// The SSE frames of a stream, each with the bytes it was sent as.
pub(crate) fn frames(body: &[u8]) -> Vec<(Value, Vec<u8>)> {
    let text = std::str::from_utf8(body).unwrap();
    text.split_inclusive("\n\n")
        .map(|frame| {
            let data = frame
                .lines()
                .find_map(|line| line.strip_prefix("data: "))
                .expect("a data line");
            (
                serde_json::from_str(data).unwrap(),
                frame.as_bytes().to_vec(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_response_is_queued_then_completed_and_read_with_get() {
    let server = TestServer::start(config(":memory:")).await;
    let response = post(&server, &slow("one two three", 50)).await;
    assert_eq!(response.status(), 200);
    let queued: Value = response.json().await.unwrap();
    assert_eq!(queued["object"], "response");
    assert_eq!(queued["status"], "queued");
    assert_eq!(queued["background"], true);
    assert_eq!(queued["output"], json!([]));
    let id = queued["id"].as_str().unwrap();
    let done = poll_until_ended(&server, id).await;
    assert_eq!(done["status"], "completed");
    assert_eq!(done["id"], *id);
    assert_eq!(output_text(&done), "one two three");
    assert_eq!(done["created_at"], queued["created_at"]);
    // A completed background response continues like any stored one.
    let next = post(
        &server,
        &json!({"model": "echo", "previous_response_id": id, "input": "{\"raw\": \"again\"}"}),
    )
    .await;
    assert_eq!(next.status(), 200);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn background_needs_store() {
    let server = TestServer::start(config(":memory:")).await;
    let mut body = slow("hi", 0);
    body["store"] = json!(false);
    let response = post(&server, &body).await;
    assert_eq!(response.status(), 400);
    let error: Value = response.json().await.unwrap();
    assert_eq!(error["error"]["param"], "background");
    assert_eq!(error["error"]["type"], "invalid_request_error");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_stream_is_the_tail_of_the_full_stream_byte_for_byte() {
    let server = TestServer::start(config(":memory:")).await;
    let mut body = slow("alpha beta gamma delta", 20);
    body["stream"] = json!(true);
    let response = post(&server, &body).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let full = response.bytes().await.unwrap();
    let events = frames(&full);
    for (index, (data, _)) in events.iter().enumerate() {
        assert_eq!(data["sequence_number"], index as u64, "{data}");
    }
    assert_eq!(events[0].0["type"], "response.created");
    let (last, _) = events.last().unwrap();
    assert_eq!(last["type"], "response.completed");
    assert_eq!(output_text(&last["response"]), "alpha beta gamma delta");
    let id = last["response"]["id"].as_str().unwrap();
    for after in [0, 3, events.len() as u64 - 2] {
        let resumed = get(
            &server,
            &format!("/v1/responses/{id}?stream=true&starting_after={after}"),
        )
        .await;
        assert_eq!(resumed.status(), 200);
        let resumed = resumed.bytes().await.unwrap();
        let tail: Vec<u8> = events[after as usize + 1..]
            .iter()
            .flat_map(|(_, bytes)| bytes.clone())
            .collect();
        assert_eq!(resumed.as_ref(), tail.as_slice(), "after {after}");
    }
    let replay = get(&server, &format!("/v1/responses/{id}?stream=true")).await;
    assert_eq!(replay.bytes().await.unwrap(), full);
    // GET reads the same final object the stream ended with.
    let object: Value = get(&server, &format!("/v1/responses/{id}"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(object, last["response"]);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_leaves_a_background_stream_does_not_stop_it() {
    let server = TestServer::start(config(":memory:")).await;
    let mut body = slow("one two three four", 150);
    body["stream"] = json!(true);
    let mut response = post(&server, &body).await;
    let first = response.chunk().await.unwrap().expect("a first chunk");
    let (created, _) = frames(&first).into_iter().next().unwrap();
    let id = created["response"]["id"].as_str().unwrap().to_owned();
    drop(response);
    let in_progress: Value = get(&server, &format!("/v1/responses/{id}"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(in_progress["status"], "in_progress");
    // While it runs, GET shows the output so far: a prefix of the whole answer.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let partial = loop {
        let read: Value = get(&server, &format!("/v1/responses/{id}"))
            .await
            .json()
            .await
            .unwrap();
        if read["status"] != "in_progress" || !output_text(&read).is_empty() {
            break read;
        }
        assert!(tokio::time::Instant::now() < deadline, "no output seen");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let done = poll_until_ended(&server, &id).await;
    assert_eq!(done["status"], "completed");
    assert_eq!(output_text(&done), "one two three four");
    assert!(
        "one two three four".starts_with(&output_text(&partial)),
        "{partial}"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_response_cannot_be_continued_yet() {
    let server = TestServer::start(config(":memory:")).await;
    let queued: Value = post(&server, &slow("one two three four five", 200))
        .await
        .json()
        .await
        .unwrap();
    let id = queued["id"].as_str().unwrap();
    let next = post(
        &server,
        &json!({"model": "echo", "previous_response_id": id, "input": "more"}),
    )
    .await;
    assert_eq!(next.status(), 400);
    let error: Value = next.json().await.unwrap();
    assert_eq!(error["error"]["param"], "previous_response_id");
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("still in_progress")
            || error["error"]["message"]
                .as_str()
                .unwrap()
                .contains("still queued"),
        "{error}"
    );
    server.stop().await;
}

/// Two replicas serving one store.
async fn two_replicas(store: Arc<dyn Store>, kind: StoreKind) -> (TestServer, TestServer) {
    let a = Server::with_store(config(":memory:"), Arc::clone(&store), kind).unwrap();
    let b = Server::with_store(config(":memory:"), store, kind).unwrap();
    (TestServer::serve(a).await, TestServer::serve(b).await)
}

async fn a_cancel_on_another_replica_stops_the_response(a: TestServer, b: TestServer) {
    let queued: Value = post(&a, &slow("one two three four five six seven eight", 200))
        .await
        .json()
        .await
        .unwrap();
    let id = queued["id"].as_str().unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let cancelled = client()
        .post(b.url(&format!("/v1/responses/{id}/cancel")))
        .send()
        .await
        .unwrap();
    assert_eq!(cancelled.status(), 200);
    let cancelled: Value = cancelled.json().await.unwrap();
    assert_eq!(cancelled["status"], "cancelled");
    assert_eq!(cancelled["id"], *id);
    let text = output_text(&cancelled);
    assert!(
        !text.is_empty() && text.len() < "one two three four five six seven eight".len(),
        "{text:?}"
    );
    // A's worker stopped: the run holds nothing after its end.
    let on_a = poll_until_ended(&a, id).await;
    assert_eq!(on_a, cancelled);
    a.stop().await;
    b.stop().await;
}

async fn a_dead_replicas_response_is_taken_over(a: TestServer, b: TestServer) {
    let mut body = slow("one two three four five six", 150);
    body["stream"] = json!(true);
    let mut response = post(&a, &body).await;
    let first = response.chunk().await.unwrap().expect("a first chunk");
    let (created, _) = frames(&first).into_iter().next().unwrap();
    let id = created["response"]["id"].as_str().unwrap().to_owned();
    drop(response);
    tokio::time::sleep(Duration::from_millis(400)).await;
    // Replica A dies: its lease is no longer renewed, nothing more of it is written.
    a.server.service().run_records().unwrap().halt();
    let started = tokio::time::Instant::now();
    let done = poll_until_ended(&b, &id).await;
    let took = started.elapsed();
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(output_text(&done), "one two three four five six");
    assert!(took < Duration::from_secs(15), "taken over in {took:?}");
    // The stored stream: A's events, then B's from `response.in_progress` on, numbered on.
    let events = numbered_replay(&b, &id).await;
    let restarts = events
        .iter()
        .filter(|(data, _)| data["type"] == "response.in_progress")
        .count();
    assert_eq!(restarts, 2, "the first worker's, then the second's");
    assert_eq!(events.last().unwrap().0["response"], done);
    a.stop().await;
    b.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_a_cancel_on_another_replica_stops_the_response() {
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open_in_memory().await.unwrap());
    let (a, b) = two_replicas(store, StoreKind::Memory).await;
    a_cancel_on_another_replica_stops_the_response(a, b).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_a_dead_replicas_response_is_taken_over() {
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open_in_memory().await.unwrap());
    let (a, b) = two_replicas(store, StoreKind::Memory).await;
    a_dead_replicas_response_is_taken_over(a, b).await;
}

#[cfg(feature = "postgres")]
async fn postgres_replicas() -> (TestServer, TestServer) {
    let url = conversation_tree::testing::fresh_postgres_database().await;
    let a = Server::new(config(&url)).await.unwrap();
    let b = Server::new(config(&url)).await.unwrap();
    (TestServer::serve(a).await, TestServer::serve(b).await)
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_cancel_on_another_replica_stops_the_response() {
    let (a, b) = postgres_replicas().await;
    a_cancel_on_another_replica_stops_the_response(a, b).await;
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_dead_replicas_response_is_taken_over() {
    let (a, b) = postgres_replicas().await;
    a_dead_replicas_response_is_taken_over(a, b).await;
}

/// SQLite is one process: a background response its last process left unfinished is resumed
/// when the server starts again (once the dead process's lease expired).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_a_restart_resumes_an_unfinished_background_response() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("skein.db");
    let db = db.to_str().unwrap();
    let first = TestServer::start(config(db)).await;
    let queued: Value = post(&first, &slow("one two three four five", 200))
        .await
        .json()
        .await
        .unwrap();
    let id = queued["id"].as_str().unwrap().to_owned();
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Killed: nothing more is written, its lease is left to expire.
    first.server.service().run_records().unwrap().halt();
    first.stop().await;
    let second = TestServer::start(config(db)).await;
    let done = poll_until_ended(&second, &id).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(output_text(&done), "one two three four five");
    second.stop().await;
}

/// A server that stops while a background response runs releases it when its grace period is
/// over: the run keeps its status and events, no replica holds it, and the next server takes it
/// over at once (its first takeover pass), long before a lease would have expired.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopping_server_releases_its_background_runs_to_the_next() {
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open_in_memory().await.unwrap());
    let mut patient = config(":memory:");
    patient.service.runs.lease_ttl = Duration::from_secs(60);
    patient.shutdown_grace_secs = 0;
    let first = TestServer::serve(
        Server::with_store(patient.clone(), Arc::clone(&store), StoreKind::Memory).unwrap(),
    )
    .await;
    let queued: Value = post(&first, &slow("one two three four five", 200))
        .await
        .json()
        .await
        .unwrap();
    let id = queued["id"].as_str().unwrap().to_owned();
    tokio::time::sleep(Duration::from_millis(300)).await;
    first.stop().await;
    let run = store.run(&id).await.unwrap().expect("kept");
    assert_eq!(run.status, service::runs::RunStatus::InProgress);
    assert_eq!(run.lease, None, "released");
    let started = tokio::time::Instant::now();
    let next = TestServer::serve(
        Server::with_store(patient, Arc::clone(&store), StoreKind::Memory).unwrap(),
    )
    .await;
    let done = poll_until_ended(&next, &id).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(output_text(&done), "one two three four five");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "taken over at once"
    );
    next.stop().await;
}

/// Replicas share a PostgreSQL database: a kept foreground response has a run record there
/// (a SQLite store, one process, has no other replica to tell).
#[cfg(feature = "postgres")]
async fn a_foreground_response_is_seen_and_cancelled_from_another_replica(
    a: TestServer,
    b: TestServer,
) {
    let input = json!({"raw": "one two three four five six seven eight", "delay_ms": 200});
    let body = json!({"model": "echo", "input": input.to_string(), "stream": true});
    let mut response = post(&a, &body).await;
    let first = response.chunk().await.unwrap().expect("a first chunk");
    let (created, _) = frames(&first).into_iter().next().unwrap();
    let id = created["response"]["id"].as_str().unwrap().to_owned();
    // Its record is written off the served path: give it a moment.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    let seen = loop {
        let read = get(&b, &format!("/v1/responses/{id}")).await;
        if read.status() == 200 {
            break read.json::<Value>().await.unwrap();
        }
        assert!(tokio::time::Instant::now() < deadline, "never seen on B");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(seen["status"], "in_progress");
    assert_eq!(seen["background"], false);
    let cancelled = client()
        .post(b.url(&format!("/v1/responses/{id}/cancel")))
        .send()
        .await
        .unwrap();
    assert_eq!(cancelled.status(), 200);
    let cancelled: Value = cancelled.json().await.unwrap();
    assert_eq!(cancelled["status"], "cancelled");
    // A's client saw its stream end cancelled.
    let mut rest = Vec::new();
    while let Some(chunk) = response.chunk().await.unwrap() {
        rest.extend_from_slice(&chunk);
    }
    let (last, _) = frames(&rest).pop().expect("a last event");
    assert_eq!(last["type"], "response.failed");
    assert_eq!(last["response"]["status"], "cancelled");
    a.stop().await;
    b.stop().await;
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_foreground_response_is_seen_and_cancelled_from_another_replica() {
    let (a, b) = postgres_replicas().await;
    a_foreground_response_is_seen_and_cancelled_from_another_replica(a, b).await;
}

/// Only the token that started a background response reads, streams or cancels it: for any
/// other it does not exist.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_tokens_background_response_is_not_found() {
    let (owner, other) = ("sk-owner-0123456789", "sk-other-0123456789");
    let mut settings = config(":memory:");
    settings.tokens = [owner, other]
        .iter()
        .map(|token| server::schema::Secret::new(*token))
        .collect();
    let server = TestServer::start(settings).await;
    let created: Value = client()
        .post(server.url("/v1/responses"))
        .bearer_auth(owner)
        .json(&slow("one two three four", 100))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = created["id"].as_str().unwrap();
    for path in [
        format!("/v1/responses/{id}"),
        format!("/v1/responses/{id}?stream=true&starting_after=0"),
    ] {
        let read = client()
            .get(server.url(&path))
            .bearer_auth(other)
            .send()
            .await
            .unwrap();
        assert_eq!(read.status(), 404, "{path}");
    }
    let cancel = client()
        .post(server.url(&format!("/v1/responses/{id}/cancel")))
        .bearer_auth(other)
        .send()
        .await
        .unwrap();
    assert_eq!(cancel.status(), 404);
    let mine = client()
        .get(server.url(&format!("/v1/responses/{id}")))
        .bearer_auth(owner)
        .send()
        .await
        .unwrap();
    assert_eq!(mine.status(), 200);
    server.stop().await;
}

/// A worker that logged its answer whole and died before it recorded the run's end: the
/// replica that takes the run over ends it with the answer the tree holds, and does not ask
/// the model a second time (the conversation gains no second answer at the same place).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_whose_answer_is_logged_ends_with_it_when_taken_over() {
    use conversation_tree::runs::{NewRun, RunMode, RunProtocol};

    let store: Arc<dyn Store> = Arc::new(SqliteStore::open_in_memory().await.unwrap());
    let server = TestServer::serve(
        Server::with_store(config(":memory:"), Arc::clone(&store), StoreKind::Memory).unwrap(),
    )
    .await;
    // The answer, logged whole under its response id (a foreground response here).
    let request = json!({"model": "echo", "input": "{\"raw\": \"logged once\"}"});
    let answered: Value = post(&server, &request).await.json().await.unwrap();
    let id = answered["id"].as_str().unwrap().to_owned();
    let node = store.node_by_label(&id).await.unwrap().expect("logged");
    let before = store
        .conversation_nodes(node.conversation_id())
        .await
        .unwrap()
        .len();
    // The record its dead worker left: unfinished, held by no replica.
    let mut background = request.clone();
    background["background"] = json!(true);
    let spec = json!({"request": background, "response": {"id": id, "created_at": answered["created_at"]}});
    store
        .create_run(NewRun::new(
            id.clone(),
            "loopback",
            RunProtocol::Responses,
            RunMode::Background,
            spec,
        ))
        .await
        .unwrap();
    let done = poll_until_ended(&server, &id).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(output_text(&done), "logged once");
    assert_eq!(done["created_at"], answered["created_at"]);
    let after = store
        .conversation_nodes(node.conversation_id())
        .await
        .unwrap()
        .len();
    assert_eq!(after, before, "the model was not asked again");
    server.stop().await;
}

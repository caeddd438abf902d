//! Chat Shell runs that outlive their request, over loopback HTTP: `background` runs that
//! finish with no client, every SSE event numbered (`id:`), `GET /v1/response/{id}/events`
//! replaying the stored events after `Last-Event-ID` (or `?after=`) byte for byte and then
//! following live, an `EventSource`-style reconnection, another token's run answered 404, a
//! foreground client that leaves still cancelling its run, and (feature `postgres`) a second
//! replica that replays, follows, cancels and takes over a run of the first.
//!
//! The expected bytes are always those a live client of `POST /v1/response` received: a
//! replay is compared with the stream it replays, never with a rendering of Skein's own.

use crate::support;

use std::time::{Duration, Instant};

use conversation_tree::runs::RunStatus;
use futures::StreamExt as _;
use serde_json::{Value, json};
use server::ServerConfig;
use service::{Principal, ServiceConfig};
use support::{TestServer, client};
use tempfile::TempDir;

/// The longest any single wait of these tests may take.
const WAIT: Duration = Duration::from_secs(30);

/// A server logging into a SQLite file in `dir`.
fn sqlite_config(dir: &TempDir) -> ServerConfig {
    ServerConfig {
        service: ServiceConfig {
            store: dir.path().join("runs.db").to_str().unwrap().to_owned(),
            ..ServiceConfig::default()
        },
        ..ServerConfig::default()
    }
}

/// A request to the echo model whose prompt is `prompt` as JSON (the echo model's knobs).
fn echo(prompt: &Value) -> Value {
    json!({
        "model_config": {"model_id": "echo"},
        "input": {"text": prompt.to_string()},
    })
}

/// A two-round run: the echo model calls the calculator, then answers.
fn tool_round() -> Value {
    let mut body = echo(
        &json!({"tool_calls": [{"name": "calculator", "arguments": {"expression": "6 * 7"}}]}),
    );
    body["tools"] = json!({"builtin": {"calculator": {"enabled": true}}});
    body
}

/// `count` words, streamed one by one `delay_ms` apart.
fn slow(count: usize, delay_ms: u64) -> Value {
    let words: Vec<String> = (1..=count).map(|n| format!("w{n}")).collect();
    echo(&json!({"raw": words.join(" "), "delay_ms": delay_ms}))
}

/// The frames of an SSE body, each with its closing blank line, as sent.
fn frames(body: &str) -> Vec<String> {
    body.split_inclusive("\n\n").map(str::to_owned).collect()
}

/// The `id:` of a frame.
fn id_of(frame: &str) -> u64 {
    frame
        .lines()
        .find_map(|line| line.strip_prefix("id: "))
        .unwrap_or_else(|| panic!("a frame without an id: {frame:?}"))
        .parse()
        .expect("a numeric id")
}

/// The `event:` name of a frame.
fn name_of(frame: &str) -> &str {
    frame
        .lines()
        .find_map(|line| line.strip_prefix("event: "))
        .unwrap_or_else(|| panic!("a frame without a name: {frame:?}"))
}

/// The JSON `data:` of a frame.
fn data_of(frame: &str) -> Value {
    let data = frame
        .lines()
        .find_map(|line| line.strip_prefix("data: "))
        .unwrap_or_else(|| panic!("a frame without data: {frame:?}"));
    serde_json::from_str(data).expect("JSON data")
}

/// Asserts that the frames are numbered 0, 1, 2, … and end with `terminal`.
fn assert_numbered(frames: &[String], terminal: &str) {
    let ids: Vec<u64> = frames.iter().map(|frame| id_of(frame)).collect();
    let expected: Vec<u64> = (0..frames.len() as u64).collect();
    assert_eq!(ids, expected, "{frames:#?}");
    assert_eq!(name_of(&frames[0]), "response.start");
    assert_eq!(name_of(frames.last().unwrap()), terminal, "{frames:#?}");
}

/// The whole text of a response, read within [`WAIT`].
async fn text(response: reqwest::Response) -> String {
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    tokio::time::timeout(WAIT, response.text())
        .await
        .expect("timed out reading the stream")
        .unwrap()
}

/// `GET /v1/response/{id}/events` with `last` as `Last-Event-ID`, as `token`.
async fn replay(
    server: &TestServer,
    id: &str,
    last: Option<u64>,
    token: Option<&str>,
) -> reqwest::Response {
    let mut request = client().get(server.url(&format!("/v1/response/{id}/events")));
    if let Some(last) = last {
        request = request.header("Last-Event-ID", last.to_string());
    }
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    request.send().await.unwrap()
}

/// Posts `body` as `token`.
async fn post(server: &TestServer, body: &Value, token: Option<&str>) -> reqwest::Response {
    let mut request = client().post(server.url("/v1/response")).json(body);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    request.send().await.unwrap()
}

/// Starts a background run without streaming; its id.
async fn background(server: &TestServer, mut body: Value, token: Option<&str>) -> String {
    body["background"] = json!(true);
    body["features"] = json!({"streaming": false});
    let answer = post(server, &body, token).await;
    assert_eq!(answer.status(), 202);
    let answer: Value = answer.json().await.unwrap();
    assert_eq!(answer["status"], "queued");
    assert!(answer["conversation_id"].is_string(), "{answer}");
    answer["id"].as_str().expect("an id").to_owned()
}

/// The run's record, as its owner sees it.
async fn record(server: &TestServer, id: &str, owner: Principal) -> conversation_tree::runs::Run {
    server
        .server
        .service()
        .run_records()
        .expect("the server stores runs")
        .get(id, owner)
        .await
        .unwrap()
        .expect("the run is stored")
}

#[tokio::test]
async fn a_background_run_finishes_with_no_client_attached() {
    let dir = TempDir::new().unwrap();
    let server = TestServer::start(sqlite_config(&dir)).await;
    let id = background(&server, slow(5, 20), None).await;

    // Nobody reads it; the run goes on, and its events are there afterwards.
    let body = text(replay(&server, &id, None, None).await).await;
    let frames = frames(&body);
    assert_numbered(&frames, "response.done");
    let words: String = frames
        .iter()
        .filter(|frame| name_of(frame) == "content.delta")
        .map(|frame| data_of(frame)["text"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(words, "w1 w2 w3 w4 w5");
    assert_eq!(data_of(&frames[0])["id"], id.as_str());
    let run = record(&server, &id, Principal::SHARED).await;
    assert_eq!(run.status, RunStatus::Completed);
    assert_eq!(run.last_seq, Some(frames.len() as u64 - 1));
    // Its record names the answer it logged, as `response.done` does.
    let done = data_of(frames.last().unwrap());
    assert_eq!(
        run.last_node.map(|node| node.get()),
        done["node_ids"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()
            .as_i64()
    );
    server.stop().await;
}

#[tokio::test]
async fn every_event_is_numbered_and_a_resumed_stream_is_the_tail_byte_for_byte() {
    let dir = TempDir::new().unwrap();
    let server = TestServer::start(sqlite_config(&dir)).await;
    // A foreground stream, as a client reads it live.
    let live = text(post(&server, &tool_round(), None).await).await;
    let frames = frames(&live);
    assert_numbered(&frames, "response.done");
    assert!(
        frames.iter().any(|frame| name_of(frame) == "tool.done"),
        "{frames:#?}"
    );
    let id = data_of(&frames[0])["id"].as_str().unwrap().to_owned();

    // Without `Last-Event-ID`: everything; after event N: exactly the frames after it.
    assert_eq!(text(replay(&server, &id, None, None).await).await, live);
    for last in 0..frames.len() as u64 {
        let tail: String = frames[last as usize + 1..].concat();
        let resumed = text(replay(&server, &id, Some(last), None).await).await;
        assert_eq!(resumed, tail, "after event {last}");
    }
    // `?after=N` for clients that cannot set headers; the header wins when both are sent.
    let by_query = client()
        .get(server.url(&format!("/v1/response/{id}/events?after=2")))
        .send()
        .await
        .unwrap();
    assert_eq!(text(by_query).await, frames[3..].concat());
    let both = client()
        .get(server.url(&format!("/v1/response/{id}/events?after=0")))
        .header("Last-Event-ID", "3")
        .send()
        .await
        .unwrap();
    assert_eq!(text(both).await, frames[4..].concat());

    // A number that is not one is refused by name; an unknown run is 404.
    let bad = replay(&server, &id, None, None).await;
    drop(bad);
    let bad = client()
        .get(server.url(&format!("/v1/response/{id}/events")))
        .header("Last-Event-ID", "three")
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);
    let error: Value = bad.json().await.unwrap();
    assert!(
        error["message"].as_str().unwrap().contains("Last-Event-ID"),
        "{error}"
    );
    let unknown = replay(&server, "resp-00000000000000000000000000000000", None, None).await;
    assert_eq!(unknown.status(), 404);
    server.stop().await;
}

/// An `EventSource` that loses its connection reconnects with the `id` of the last event it
/// dispatched as `Last-Event-ID`: what it reads then continues its stream exactly.
#[tokio::test]
async fn an_event_source_that_reconnects_reads_the_rest_exactly() {
    let dir = TempDir::new().unwrap();
    let server = TestServer::start(sqlite_config(&dir)).await;
    let mut body = slow(20, 40);
    body["background"] = json!(true);
    let first = post(&server, &body, None).await;
    assert_eq!(first.status(), 200);
    // Read as an EventSource does, then lose the connection after four events.
    let mut events = eventsource_stream::EventStream::new(first.bytes_stream());
    let mut seen = Vec::new();
    while seen.len() < 4 {
        let event = tokio::time::timeout(WAIT, events.next())
            .await
            .expect("an event in time")
            .expect("the stream goes on")
            .expect("a well-formed event");
        seen.push(event);
    }
    drop(events);
    let id = serde_json::from_str::<Value>(&seen[0].data).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let last: u64 = seen.last().unwrap().id.parse().expect("the event's id");
    assert_eq!(last, 3);

    // The reconnection, while the run is still going (the background run did not stop).
    let rest = text(replay(&server, &id, Some(last), None).await).await;
    let rest_frames = frames(&rest);
    assert_eq!(id_of(&rest_frames[0]), last + 1);
    // What the client got in both connections is the run's whole stream, byte for byte.
    let whole = text(replay(&server, &id, None, None).await).await;
    let whole_frames = frames(&whole);
    assert_numbered(&whole_frames, "response.done");
    assert_eq!(whole_frames[4..].concat(), rest);
    for (event, frame) in seen.iter().zip(&whole_frames) {
        assert_eq!(event.id, id_of(frame).to_string());
        assert_eq!(event.event, name_of(frame));
        assert_eq!(
            serde_json::from_str::<Value>(&event.data).unwrap(),
            data_of(frame)
        );
    }
    server.stop().await;
}

#[tokio::test]
async fn another_tokens_run_is_not_found() {
    let dir = TempDir::new().unwrap();
    let (alice, bob) = ("runs-test-token-alice", "runs-test-token-bob");
    let server = TestServer::start(ServerConfig {
        tokens: vec![
            server::schema::Secret::new(alice),
            server::schema::Secret::new(bob),
        ],
        ..sqlite_config(&dir)
    })
    .await;
    let id = background(&server, slow(30, 50), Some(alice)).await;
    let theirs = replay(&server, &id, None, Some(bob)).await;
    assert_eq!(theirs.status(), 404);
    let cancel = client()
        .post(server.url(&format!("/v1/response/{id}/cancel")))
        .bearer_auth(bob)
        .send()
        .await
        .unwrap();
    assert_eq!(cancel.status(), 404);
    // The owner reads it, and cancels it.
    let mine = replay(&server, &id, None, Some(alice)).await;
    assert_eq!(mine.status(), 200);
    let cancel = client()
        .post(server.url(&format!("/v1/response/{id}/cancel")))
        .bearer_auth(alice)
        .send()
        .await
        .unwrap();
    assert_eq!(cancel.status(), 200);
    let frames = frames(&text(mine).await);
    assert_numbered(&frames, "response.cancelled");
    server.stop().await;
}

#[tokio::test]
async fn a_foreground_client_that_leaves_still_cancels_its_run() {
    let dir = TempDir::new().unwrap();
    let server = TestServer::start(sqlite_config(&dir)).await;
    let answer = post(&server, &slow(50, 100), None).await;
    let mut events = eventsource_stream::EventStream::new(answer.bytes_stream());
    let start = tokio::time::timeout(WAIT, events.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let id = serde_json::from_str::<Value>(&start.data).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    drop(events);

    // The run stops (long before its 5 s of words) and its stored stream says so.
    let started = Instant::now();
    let frames = frames(&text(replay(&server, &id, None, None).await).await);
    assert_numbered(&frames, "response.cancelled");
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        record(&server, &id, Principal::SHARED).await.status,
        RunStatus::Cancelled
    );
    server.stop().await;
}

/// A background run's stream may be left: the run goes on.
#[tokio::test]
async fn leaving_a_background_stream_does_not_cancel_the_run() {
    let dir = TempDir::new().unwrap();
    let server = TestServer::start(sqlite_config(&dir)).await;
    let mut body = slow(6, 30);
    body["background"] = json!(true);
    let answer = post(&server, &body, None).await;
    let mut events = eventsource_stream::EventStream::new(answer.bytes_stream());
    let start = events.next().await.unwrap().unwrap();
    let id = serde_json::from_str::<Value>(&start.data).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    drop(events);
    let frames = frames(&text(replay(&server, &id, None, None).await).await);
    assert_numbered(&frames, "response.done");
    server.stop().await;
}

/// A background run that calls the calculator, then answers slowly enough to be stopped.
fn background_tool_round() -> Value {
    let mut body = echo(&json!({
        "tool_calls": [{"name": "calculator", "arguments": {"expression": "6 * 7"}}],
        "delay_ms": 50,
    }));
    body["tools"] = json!({"builtin": {"calculator": {"enabled": true}}});
    body
}

/// Follows run `id` on `server` until its tool has returned.
async fn until_the_tool_returned(server: &TestServer, id: &str) {
    let mut followed = replay(server, id, None, None).await.bytes_stream();
    let mut seen = String::new();
    while !seen.contains("event: tool.done") {
        let chunk = tokio::time::timeout(WAIT, followed.next())
            .await
            .expect("the tool returns in time")
            .expect("the stream goes on")
            .unwrap();
        seen.push_str(std::str::from_utf8(&chunk).unwrap());
    }
}

/// Waits until run `id` ends, as `server` reads it.
async fn finished(server: &TestServer, id: &str) -> conversation_tree::runs::Run {
    let deadline = Instant::now() + WAIT;
    loop {
        let run = record(server, id, Principal::SHARED).await;
        if run.status.is_terminal() {
            return run;
        }
        assert!(Instant::now() < deadline, "not finished: {run:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The stream of a tool round whose second model call was made by the replica that took the
/// run over: one tool call (never run again), the answer after it, with its result, and
/// a `response.done` of the continuing replica's one model call.
fn assert_taken_over(frames: &[String]) {
    assert_numbered(frames, "response.done");
    let count = |name: &str| frames.iter().filter(|frame| name_of(frame) == name).count();
    assert_eq!(count("response.start"), 1, "{frames:#?}");
    assert_eq!(count("tool.start"), 1, "the tool ran once: {frames:#?}");
    assert_eq!(count("tool.done"), 1, "{frames:#?}");
    let done = data_of(frames.last().unwrap());
    assert_eq!(
        done["rounds"], 1,
        "the continuing replica's own model call: {done}"
    );
    let answer: String = frames
        .iter()
        .filter(|frame| name_of(frame) == "content.delta")
        .map(|frame| data_of(frame)["text"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        answer.contains("42"),
        "the tool's result is answered: {answer}"
    );
}

/// With SQLite (one process), a background run the process left unfinished is continued by
/// the next process on the same file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_run_left_unfinished_continues_at_the_next_start() {
    let dir = TempDir::new().unwrap();
    let config = || {
        let mut config = sqlite_config(&dir);
        config.service.runs.lease_ttl = Duration::from_secs(1);
        config
    };
    let first = TestServer::start(config()).await;
    let id = background(&first, background_tool_round(), None).await;
    until_the_tool_returned(&first, &id).await;
    // The process stops working as a killed one would.
    first.server.service().run_records().unwrap().halt();
    first.stop().await;

    let next = TestServer::start(config()).await;
    let run = finished(&next, &id).await;
    assert_eq!(run.status, RunStatus::Completed, "{run:?}");
    let frames = frames(&text(replay(&next, &id, None, None).await).await);
    assert_taken_over(&frames);
    next.stop().await;
}

/// A server that stops leaves its background runs to the next one: their live streams end
/// without a last event (nothing is cancelled), and the client that reconnects with its last
/// id reads the rest as the next server writes it, one stream with no gap and no repeat.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopping_server_leaves_its_background_runs_to_the_next_one() {
    let dir = TempDir::new().unwrap();
    let config = || {
        let mut config = sqlite_config(&dir);
        config.service.runs.lease_ttl = Duration::from_secs(1);
        config.shutdown_grace_secs = 0;
        config
    };
    let mut first = TestServer::start(config()).await;
    let mut body = background_tool_round();
    body["background"] = json!(true);
    let live = post(&first, &body, None).await;
    let mut live = live.bytes_stream();
    let mut seen = String::new();
    while !seen.contains("event: tool.done") {
        let chunk = tokio::time::timeout(WAIT, live.next())
            .await
            .unwrap()
            .unwrap();
        seen.push_str(std::str::from_utf8(&chunk.unwrap()).unwrap());
    }
    first.begin_stop();
    while let Some(chunk) = tokio::time::timeout(WAIT, live.next()).await.unwrap() {
        seen.push_str(std::str::from_utf8(&chunk.unwrap()).unwrap());
    }
    first.stopped().await;
    let seen = frames(&seen);
    assert!(
        !seen
            .iter()
            .any(|frame| name_of(frame).starts_with("response.c")),
        "a run left to another server is not cancelled: {seen:#?}"
    );
    let id = data_of(&seen[0])["id"].as_str().unwrap().to_owned();
    let last = id_of(seen.last().unwrap());

    let next = TestServer::start(config()).await;
    let rest = text(replay(&next, &id, Some(last), None).await).await;
    let whole = frames(&text(replay(&next, &id, None, None).await).await);
    assert_taken_over(&whole);
    assert_eq!(
        whole[..seen.len()],
        seen[..],
        "the live part is the stored part"
    );
    assert_eq!(whole[seen.len()..].concat(), rest);
    next.stop().await;
}

/// A replica killed while a tool ran left the model's tool call logged and no result: the
/// run is continued after that call, which the integrity rules answer (the model reads that
/// it was not handled); the tool is never run again behind the model's back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_call_in_flight_when_the_replica_died_is_answered_not_run_again() {
    use conversation_tree::runs::{NewRun, RunMode, RunProtocol};
    use conversation_tree::{CallOptions, ConversationId, Message, NewResponse, ToolCall};

    let dir = TempDir::new().unwrap();
    let mut config = sqlite_config(&dir);
    config.service.runs.lease_ttl = Duration::from_secs(1);
    let server = TestServer::start(config).await;
    let store = std::sync::Arc::clone(server.server.chat().store());
    // What the dead replica had written: the question and the model's tool call, labelled
    // with the run, and the run's record (background, held by no replica).
    let id = "resp-0123456789abcdef0123456789abcdef";
    let prompt =
        json!({"tool_calls": [{"name": "calculator", "arguments": {"expression": "6 * 7"}}]});
    let conversation = "conv-killed-mid-tool";
    store
        .log_response(
            NewResponse::new(
                ConversationId::new(conversation).unwrap(),
                None,
                vec![Message::human(prompt.to_string())],
                Message::ai_tool_calls(
                    None,
                    vec![ToolCall::new(
                        "echo_call_1",
                        "calculator",
                        r#"{"expression":"6 * 7"}"#,
                    )],
                ),
                &CallOptions::new("echo"),
            )
            .label(format!("chat-shell:{id}")),
        )
        .await
        .unwrap();
    let mut request = echo(&prompt);
    request["tools"] = json!({"builtin": {"calculator": {"enabled": true}}});
    request["session_id"] = json!(conversation);
    request["background"] = json!(true);
    let spec = json!({
        "request": request,
        "request_id": "req-killed",
        "conversation": conversation,
        "client_conversation": conversation,
        "owner": null,
        "offered_bases": [],
    });
    store
        .create_run(NewRun::new(
            id,
            "loopback",
            RunProtocol::ChatShell,
            RunMode::Background,
            spec,
        ))
        .await
        .unwrap();

    let run = finished(&server, id).await;
    assert_eq!(run.status, RunStatus::Completed, "{run:?}");
    let frames = frames(&text(replay(&server, id, None, None).await).await);
    assert_numbered(&frames, "response.done");
    assert!(
        !frames.iter().any(|frame| name_of(frame) == "tool.start"),
        "the tool ran again: {frames:#?}"
    );
    let answer: String = frames
        .iter()
        .filter(|frame| name_of(frame) == "content.delta")
        .map(|frame| data_of(frame)["text"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        answer.contains(chain_ast::FALLBACK_RESPONSE_CONTENT),
        "the model read that the call was not handled: {answer}"
    );
    // The tree goes on below the call: one question, one call, its answer, the reply.
    let nodes = store
        .conversation_nodes(&ConversationId::new(conversation).unwrap())
        .await
        .unwrap();
    assert_eq!(nodes.len(), 2, "{nodes:#?}");
    assert_eq!(nodes[1].parent(), Some(nodes[0].id()));
    // The run's record names where it ended in the tree.
    assert_eq!(run.last_node, Some(nodes[1].id()));
    server.stop().await;
}

#[cfg(feature = "postgres")]
mod postgres {
    use super::*;

    /// A replica on the PostgreSQL database `url`, whose leases live `lease_ttl`.
    async fn replica(url: &str, lease_ttl: Duration) -> TestServer {
        TestServer::start(ServerConfig {
            service: ServiceConfig {
                store: url.to_owned(),
                runs: service::RunsConfig {
                    lease_ttl,
                    ..service::RunsConfig::default()
                },
                ..ServiceConfig::default()
            },
            ..ServerConfig::default()
        })
        .await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn another_replica_follows_a_run_live_and_replays_it_byte_for_byte() {
        let url = conversation_tree::testing::fresh_postgres_database().await;
        let a = replica(&url, Duration::from_secs(10)).await;
        let b = replica(&url, Duration::from_secs(10)).await;
        let mut body = slow(12, 50);
        body["background"] = json!(true);
        // A's client reads the live stream; B's follows from the start, and another B client
        // comes back after event 5.
        let live = post(&a, &body, None).await;
        let mut live = live.bytes_stream();
        let first = live.next().await.unwrap().unwrap();
        let start = frames(std::str::from_utf8(&first).unwrap())[0].clone();
        let id = data_of(&start)["id"].as_str().unwrap().to_owned();
        let followed = replay(&b, &id, None, None).await;
        let mut rest = Vec::from(&first[..]);
        while let Some(chunk) = live.next().await {
            rest.extend_from_slice(&chunk.unwrap());
        }
        let live = String::from_utf8(rest).unwrap();
        assert_numbered(&frames(&live), "response.done");
        assert_eq!(text(followed).await, live);
        let resumed = text(replay(&b, &id, Some(5), None).await).await;
        assert_eq!(resumed, frames(&live)[6..].concat());
        a.stop().await;
        b.stop().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn a_cancel_on_another_replica_stops_the_run() {
        let url = conversation_tree::testing::fresh_postgres_database().await;
        let a = replica(&url, Duration::from_secs(10)).await;
        let b = replica(&url, Duration::from_secs(10)).await;
        let id = background(&a, slow(100, 100), None).await;
        // Wait for the run to be under way, through B.
        let mut followed = replay(&b, &id, None, None).await.bytes_stream();
        followed.next().await.unwrap().unwrap();
        let started = Instant::now();
        let cancel = client()
            .post(b.url(&format!("/v1/response/{id}/cancel")))
            .send()
            .await
            .unwrap();
        assert_eq!(cancel.status(), 200);
        assert_eq!(
            cancel.json::<Value>().await.unwrap(),
            json!({"success": true, "message": "Request cancelled"})
        );
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        let frames = frames(&text(replay(&b, &id, None, None).await).await);
        assert_numbered(&frames, "response.cancelled");
        assert_eq!(
            record(&a, &id, Principal::SHARED).await.status,
            RunStatus::Cancelled
        );
        a.stop().await;
        b.stop().await;
    }

    /// A replica that stops working (as a killed one would) leaves its background run; the
    /// other takes it over once the lease expires and finishes it, without running its tool
    /// again, and the stream goes on with the next numbers.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn a_background_run_of_a_stopped_replica_is_finished_by_another() {
        let url = conversation_tree::testing::fresh_postgres_database().await;
        let ttl = Duration::from_secs(1);
        let a = replica(&url, ttl).await;
        // B is up before A stops, as a replica behind the same load balancer is.
        let b = replica(&url, ttl).await;
        let id = background(&a, background_tool_round(), None).await;
        // Let the first round's answer be logged and its tool run, then stop A.
        until_the_tool_returned(&a, &id).await;
        a.server.service().run_records().unwrap().halt();

        let run = finished(&b, &id).await;
        assert_eq!(run.status, RunStatus::Completed, "{run:?}");
        let frames = frames(&text(replay(&b, &id, None, None).await).await);
        assert_taken_over(&frames);
        a.stop().await;
        b.stop().await;
    }
}

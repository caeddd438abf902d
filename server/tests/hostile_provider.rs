//! The provider as the attacker, end to end: the server on a loopback port in front of a
//! loopback fake provider that sends tool-call indexes meant to size allocations, one endless
//! SSE line, an endless error body, and error texts echoing the request's key. The client
//! must get a clean terminal event, the server must stay up (and small), and the key must
//! reach neither the client, nor the logs, nor the conversation store.

use crate::support;

use std::fmt::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use futures::StreamExt as _;
use providers::Provider;
use serde_json::{Value, json};
use server::ServerConfig;
use server::schema::Secret;
use service::ServiceConfig;
use service::config::ProviderBaseUrls;
use service::keys::ProviderKeys;
use support::TestServer;
use tokio::net::TcpListener;

/// What the fake provider answers: given the request's headers, body and how many requests
/// came before it.
type Answer = Arc<dyn Fn(&HeaderMap, &[u8], usize) -> Response + Send + Sync>;

#[derive(Clone)]
struct Fake {
    answer: Answer,
    seen: Arc<AtomicUsize>,
}

/// A provider on an ephemeral loopback port answering every POST with `answer`; returns its
/// address (`127.0.0.1:PORT`).
async fn fake_provider(answer: Answer) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let fake = Fake {
        answer,
        seen: Arc::new(AtomicUsize::new(0)),
    };
    let app = Router::new()
        .fallback(
            |State(fake): State<Fake>, headers: HeaderMap, body: Bytes| async move {
                let n = fake.seen.fetch_add(1, Ordering::SeqCst);
                (fake.answer)(&headers, &body, n)
            },
        )
        .with_state(fake);
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    addr.to_string()
}

fn sse_response(body: impl Into<Body>) -> Response {
    Response::builder()
        .status(200)
        .header("content-type", "text/event-stream")
        .body(body.into())
        .unwrap()
}

/// A body of `pieces` 64 KiB pieces of `fill` after `head`, made as it is read, counting the
/// bytes handed to the connection.
fn endless_body(head: &'static str, pieces: usize, sent: Arc<AtomicUsize>) -> Body {
    let piece = Bytes::from(vec![b'a'; 64 * 1024]);
    let stream = futures::stream::once(async move { Bytes::from_static(head.as_bytes()) })
        .chain(futures::stream::iter(0..pieces).map(move |_| {
            sent.fetch_add(piece.len(), Ordering::SeqCst);
            piece.clone()
        }))
        .map(Ok::<_, std::io::Error>);
    Body::from_stream(stream)
}

const OPENAI_KEY: &str = "sk-openai-SERVERKEY-1111111111";
const ANTHROPIC_KEY: &str = "sk-ant-SERVERKEY-2222222222";
const GEMINI_KEY: &str = "AIza-SERVERKEY-3333333333";

/// A server whose three providers are all `provider`, with the server's own keys, storing
/// conversations in `store`.
async fn server(provider: &str, store: &str) -> TestServer {
    let mut keys = ProviderKeys::default();
    keys.set(Provider::OpenAi, Secret::new(OPENAI_KEY));
    keys.set(Provider::Anthropic, Secret::new(ANTHROPIC_KEY));
    keys.set(Provider::Google, Secret::new(GEMINI_KEY));
    TestServer::start(ServerConfig {
        service: ServiceConfig {
            keys,
            store: store.to_owned(),
            base_urls: ProviderBaseUrls::from([
                (Provider::OpenAi, format!("http://{provider}/v1")),
                (Provider::Anthropic, format!("http://{provider}")),
                (Provider::Google, format!("http://{provider}/v1beta")),
                (Provider::OpenRouter, format!("http://{provider}/api/v1")),
            ]),
            ..ServiceConfig::default()
        },
        ..ServerConfig::default()
    })
    .await
}

fn ask(model_id: &str, text: &str) -> Value {
    json!({
        "model_config": {"model_id": model_id, "max_retries": 0},
        "input": {"text": text},
    })
}

/// The raw SSE text of an answer and its events as (name, data).
async fn answer(server: &TestServer, body: &Value) -> (String, Vec<(String, Value)>) {
    let response = server.post(body).await;
    assert_eq!(response.status(), 200);
    let text = response.text().await.unwrap();
    let events = text
        .split("\n\n")
        .filter(|block| !block.trim().is_empty())
        .map(|block| {
            let mut name = String::new();
            let mut data = String::new();
            for line in block.lines() {
                if let Some(value) = line.strip_prefix("event:") {
                    name = value.trim().to_owned();
                } else if let Some(value) = line.strip_prefix("data:") {
                    data.push_str(value.trim_start());
                }
            }
            (name, serde_json::from_str(&data).unwrap_or(Value::Null))
        })
        .collect();
    (text, events)
}

fn last<'a>(events: &'a [(String, Value)], name: &str) -> &'a Value {
    let (last, data) = events.last().expect("events");
    assert_eq!(last, name, "{events:?}");
    data
}

/// The echo model still answers: the server is up.
async fn still_up(server: &TestServer) {
    let (_, events) = answer(
        server,
        &json!({"model_config": {"model_id": "echo"}, "input": {"text": "{\"raw\": \"alive\"}"}}),
    )
    .await;
    last(&events, "response.done");
}

fn chat_chunk(delta: Value, finish: Value) -> String {
    let chunk = json!({"id": "chatcmpl-x", "model": "m", "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    format!("data: {chunk}\n\n")
}

#[tokio::test]
async fn tool_call_indexes_from_the_wire_neither_crash_nor_grow_the_server() {
    // "add twice": two calls with the indexes that aborted (4294967295: a 103 GB allocation)
    // or panicked (u64::MAX) the process, then text after the tool round. "many calls": more
    // distinct calls than an answer may open.
    let provider = fake_provider(Arc::new(|_, body, _| {
        let body = String::from_utf8_lossy(body);
        let tool_round = !body.contains("\"role\":\"tool\"");
        let mut sse = String::new();
        if body.contains("many calls") {
            for i in 0..=providers::MAX_OPEN_BLOCKS as u64 {
                sse += &chat_chunk(
                    json!({"tool_calls": [{"index": u64::MAX - i, "id": format!("c{i}"),
                        "function": {"name": "calculator", "arguments": ""}}]}),
                    Value::Null,
                );
            }
        } else if tool_round {
            let arguments = "{\"expression\": \"1+1\"}";
            for (index, id) in [
                (json!(4_294_967_295_u64), "call_a"),
                (json!(u64::MAX), "call_b"),
            ] {
                sse += &chat_chunk(
                    json!({"tool_calls": [{"index": index, "id": id, "type": "function",
                        "function": {"name": "calculator", "arguments": arguments}}]}),
                    Value::Null,
                );
            }
            sse += &chat_chunk(json!({}), json!("tool_calls"));
        } else {
            sse += &chat_chunk(json!({"content": "both calls answered"}), Value::Null);
            sse += &chat_chunk(json!({}), json!("stop"));
        }
        sse += "data: [DONE]\n\n";
        sse_response(sse)
    }))
    .await;
    let server = server(&provider, ":memory:").await;

    let mut request = ask("gpt-4o-mini", "add twice");
    request["tools"] = json!({"builtin": {"calculator": {}}});
    let (_, events) = answer(&server, &request).await;
    last(&events, "response.done");
    let tools: Vec<_> = events
        .iter()
        .filter(|(name, _)| name == "tool.done")
        .collect();
    assert_eq!(tools.len(), 2, "{events:?}");

    let (_, events) = answer(&server, &ask("gpt-4o-mini", "many calls")).await;
    let error = last(&events, "response.error");
    let message = error["message"].as_str().unwrap_or_default();
    assert!(message.contains("MAX_TOOL_CALLS"), "{error}");

    still_up(&server).await;
    server.stop().await;
}

/// A size from `/proc/self/status` (`VmRSS`, the resident set; `VmHWM`, its peak), in bytes.
fn memory(field: &str) -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|value| {
            value
                .trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<usize>()
                .ok()
        })
        .map_or(0, |kb| kb * 1024)
}

#[tokio::test]
async fn an_endless_sse_line_ends_at_the_event_cap_without_growing_the_server() {
    let sent = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&sent);
    // 256 MiB of one `data:` line without a newline: the old server buffered all of it.
    let provider = fake_provider(Arc::new(move |_, _, n| {
        if n == 0 {
            sse_response(endless_body("data: ", 4096, Arc::clone(&counter)))
        } else {
            sse_response(chat_chunk(json!({"content": "fine"}), json!("stop")) + "data: [DONE]\n\n")
        }
    }))
    .await;
    let server = server(&provider, ":memory:").await;
    still_up(&server).await;
    let before = memory("VmHWM");

    let (_, events) = answer(&server, &ask("gpt-4o-mini", "stream forever")).await;
    let error = last(&events, "response.error");
    let message = error["message"].as_str().unwrap_or_default();
    assert!(message.contains("max_sse_event_bytes"), "{error}");
    let cap = providers::Limits::DEFAULT_MAX_SSE_EVENT_BYTES;
    assert!(message.contains(&cap.to_string()), "{error}");

    // Reading stopped at the cap (plus what sat in socket buffers)...
    let sent = sent.load(Ordering::SeqCst);
    assert!(sent < 4 * cap, "{sent} bytes of the line were read");
    // ...and the process's peak grew by a few times the cap (the framing buffer doubles as
    // it grows; the allocator keeps some), never by the 256 MiB line.
    let grown = memory("VmHWM").saturating_sub(before);
    assert!(
        grown < 12 * cap,
        "the peak resident set grew by {grown} bytes"
    );

    let (_, events) = answer(&server, &ask("gpt-4o-mini", "again")).await;
    last(&events, "response.done");
    server.stop().await;
}

#[tokio::test]
async fn an_endless_error_body_is_read_only_up_to_its_cap() {
    let sent = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&sent);
    let provider = fake_provider(Arc::new(move |_, _, _| {
        Response::builder()
            .status(StatusCode::BAD_REQUEST)
            .header("content-type", "text/plain")
            .body(endless_body("error: ", 16 * 1024, Arc::clone(&counter)))
            .unwrap()
    }))
    .await;
    let server = server(&provider, ":memory:").await;

    let (_, events) = answer(&server, &ask("gpt-4o-mini", "fail at length")).await;
    let error = last(&events, "response.error");
    let message = error["message"].as_str().unwrap_or_default();
    assert!(message.contains("max_error_body_bytes"), "{error}");
    assert!(message.contains("65536"), "{error}");
    // 1 GiB offered; the connection was dropped after the cap (plus socket buffers).
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert!(sent.load(Ordering::SeqCst) < 64 << 20);

    still_up(&server).await;
    server.stop().await;
}

/// A provider that sends its headers and a role-only chunk at once, then stalls before its
/// first token: the time to first token is measured to that token, not to the headers, and
/// reported in `response.done`, in the stored node and in the log line of the call.
#[tokio::test]
async fn a_provider_that_stalls_before_its_first_token_is_timed_to_that_token() {
    const STALL: Duration = Duration::from_millis(300);
    let stall_ms = u64::try_from(STALL.as_millis()).unwrap();
    let logs = logs();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("conversations.sqlite");
    let stalling: Answer = Arc::new(|_, _, _| {
        let role = chat_chunk(json!({"role": "assistant"}), Value::Null);
        let text = chat_chunk(json!({"content": "late"}), Value::Null);
        let end = chat_chunk(json!({}), json!("stop")) + "data: [DONE]\n\n";
        let body = futures::stream::once(async move { role })
            .chain(futures::stream::once(async move {
                tokio::time::sleep(STALL).await;
                text
            }))
            .chain(futures::stream::once(async move { end }))
            .map(Ok::<_, std::io::Error>);
        sse_response(Body::from_stream(body))
    });
    let provider = fake_provider(stalling).await;
    let server = server(&provider, store.to_str().unwrap()).await;
    let (_, events) = answer(&server, &ask("gpt-4o-mini", "anyone there?")).await;
    let done = last(&events, "response.done");
    let ttft = done["ttft_ms"].as_u64().expect("response.done has ttft_ms");
    assert!(ttft >= stall_ms, "{done}");
    let calls = done["model_calls"].as_array().expect("model_calls");
    assert_eq!(calls.len(), 1, "{done}");
    assert_eq!(calls[0]["ttft_ms"], json!(ttft), "{done}");
    assert!(calls[0]["duration_ms"].as_u64().unwrap() >= ttft, "{done}");
    assert_eq!(calls[0]["cached"], json!(false), "{done}");
    server.stop().await;

    let node: conversation_tree::NodeId = done["node_ids"][0].to_string().parse().unwrap();
    let store = conversation_tree::SqliteStore::open_read_only(&store)
        .await
        .unwrap();
    let node = conversation_tree::Store::node(&store, node)
        .await
        .unwrap()
        .expect("the answer is stored");
    let stored = node
        .ttft()
        .expect("the stored node has its time to first token");
    assert!(stored >= STALL, "{stored:?}");
    assert!(node.duration().unwrap() >= stored, "{node:?}");

    let logged = logs.lock().unwrap().clone();
    let line = logged
        .lines()
        .find(|line| line.contains("model call answered"))
        .unwrap_or_else(|| panic!("no log line for the model call: {logged}"));
    let logged_ttft: u64 = line
        .split("ttft_ms=")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|ms| ms.parse().ok())
        .unwrap_or_else(|| panic!("the log line has no ttft_ms: {line}"));
    assert!(logged_ttft >= stall_ms, "{line}");
}

/// Every log line the process writes (a minimal `tracing` subscriber: the tests must see
/// what an operator's log would hold).
fn logs() -> &'static Mutex<String> {
    static LOGS: OnceLock<Mutex<String>> = OnceLock::new();
    LOGS.get_or_init(|| {
        let _ = tracing::subscriber::set_global_default(Capture);
        Mutex::new(String::new())
    })
}

struct Capture;

struct Fields<'a>(&'a mut String);

impl tracing::field::Visit for Fields<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        let _ = write!(self.0, " {}={value:?}", field.name());
    }

    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        let _ = write!(self.0, " {}={value}", field.name());
    }
}

impl Capture {
    fn write(&self, name: &str, record: impl FnOnce(&mut Fields<'_>)) {
        let mut line = format!("{name}:");
        record(&mut Fields(&mut line));
        line.push('\n');
        let mut logs = logs()
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        logs.push_str(&line);
    }
}

impl tracing::Subscriber for Capture {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }

    fn new_span(&self, span: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        self.write(span.metadata().name(), |fields| span.record(fields));
        tracing::span::Id::from_u64(1)
    }

    fn record(&self, _: &tracing::span::Id, values: &tracing::span::Record<'_>) {
        self.write("record", |fields| values.record(fields));
    }

    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}

    fn event(&self, event: &tracing::Event<'_>) {
        self.write(event.metadata().target(), |fields| event.record(fields));
    }

    fn enter(&self, _: &tracing::span::Id) {}

    fn exit(&self, _: &tracing::span::Id) {}
}

/// Answers every request with an error echoing its credential headers, in the error shape
/// of the provider the path names; `in_stream` sends it as an in-stream error after a 200.
fn echoing(in_stream: bool) -> Answer {
    Arc::new(move |headers, _, _| {
        let echo: String = ["authorization", "x-api-key", "x-goog-api-key"]
            .iter()
            .filter_map(|name| {
                let value = headers.get(*name)?.to_str().ok()?;
                Some(format!("{name}: {value}; "))
            })
            .collect();
        let message = format!("invalid credentials, you sent {echo}");
        let (status, body) = if headers.contains_key("x-api-key") {
            let error = json!({"type": "error", "error": {"type": "authentication_error", "message": message}});
            if in_stream {
                let start = json!({"type": "message_start", "message": {"id": "msg", "model": "m", "usage": {"input_tokens": 1}}});
                let text = json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": "partial "}});
                (
                    200,
                    format!(
                        "event: message_start\ndata: {start}\n\nevent: content_block_start\ndata: {text}\n\nevent: error\ndata: {error}\n\n"
                    ),
                )
            } else {
                (401, error.to_string())
            }
        } else if headers.contains_key("x-goog-api-key") {
            let error =
                json!({"error": {"code": 403, "status": "PERMISSION_DENIED", "message": message}});
            if in_stream {
                let text = json!({"candidates": [{"content": {"parts": [{"text": "partial "}], "role": "model"}, "index": 0}]});
                (200, format!("data: {text}\n\ndata: {error}\n\n"))
            } else {
                (403, error.to_string())
            }
        } else {
            let error = json!({"error": {"message": message, "type": "invalid_request_error", "code": "invalid_api_key"}});
            if in_stream {
                (
                    200,
                    chat_chunk(json!({"content": "partial "}), Value::Null)
                        + &format!("data: {error}\n\n"),
                )
            } else {
                (401, error.to_string())
            }
        };
        Response::builder()
            .status(status)
            .header(
                "content-type",
                if status == 200 {
                    "text/event-stream"
                } else {
                    "application/json"
                },
            )
            .body(Body::from(body))
            .unwrap()
    })
}

#[tokio::test]
async fn keys_echoed_by_a_provider_reach_no_client_log_or_store() {
    let logs = logs();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("conversations.sqlite");
    for in_stream in [false, true] {
        let provider = fake_provider(echoing(in_stream)).await;
        let server = server(&provider, store.to_str().unwrap()).await;
        for (model_id, key) in [
            ("gpt-4o-mini", OPENAI_KEY),
            ("claude-sonnet-4-5", ANTHROPIC_KEY),
            ("gemini-2.5-flash", GEMINI_KEY),
        ] {
            let (text, events) = answer(&server, &ask(model_id, "who am I?")).await;
            let error = last(&events, "response.error");
            let message = error["message"].as_str().unwrap_or_default();
            assert!(message.contains("[REDACTED]"), "{model_id}: {error}");
            assert!(
                !text.contains("SERVERKEY"),
                "{model_id} in_stream={in_stream}: {text}"
            );
            assert!(!text.contains(&key[..12]), "{model_id}: {text}");
        }
        still_up(&server).await;
        server.stop().await;
    }
    let logged = logs.lock().unwrap().clone();
    assert!(!logged.is_empty(), "the capture sees the server's logs");
    assert!(!logged.contains("SERVERKEY"), "{logged}");
    // The store (every file of the SQLite database, WAL included) holds the conversations
    // and none of the keys.
    let mut stored = Vec::new();
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        stored.extend(std::fs::read(entry.unwrap().path()).unwrap());
    }
    assert!(
        stored
            .windows(b"who am I?".len())
            .any(|w| w == b"who am I?"),
        "the prompts were stored"
    );
    assert!(
        !stored
            .windows(b"SERVERKEY".len())
            .any(|w| w == b"SERVERKEY")
    );
}

#[tokio::test]
async fn the_operator_sets_the_provider_caps() {
    // A 64 KiB event: fine under the default cap, refused under an operator's 16 KiB one.
    let big = chat_chunk(json!({"content": "x".repeat(64 * 1024)}), json!("stop"));
    let provider = fake_provider(Arc::new(move |_, _, _| {
        sse_response(big.clone() + "data: [DONE]\n\n")
    }))
    .await;
    let config = |limits| ServerConfig {
        service: ServiceConfig {
            provider_limits: limits,
            base_urls: ProviderBaseUrls::from([(
                Provider::OpenAi,
                format!("http://{provider}/v1"),
            )]),
            keys: {
                let mut keys = ProviderKeys::default();
                keys.set(Provider::OpenAi, Secret::new(OPENAI_KEY));
                keys
            },
            ..ServiceConfig::default()
        },
        ..ServerConfig::default()
    };
    let roomy = TestServer::start(config(providers::Limits::default())).await;
    let (_, events) = answer(&roomy, &ask("gpt-4o-mini", "big")).await;
    last(&events, "response.done");
    roomy.stop().await;

    let tight = TestServer::start(config(providers::Limits {
        max_sse_event_bytes: 16 * 1024,
        ..providers::Limits::default()
    }))
    .await;
    let (_, events) = answer(&tight, &ask("gpt-4o-mini", "big")).await;
    let error = last(&events, "response.error");
    let message = error["message"].as_str().unwrap_or_default();
    assert!(message.contains("max_sse_event_bytes"), "{error}");
    assert!(message.contains("16384"), "{error}");
    tight.stop().await;
}

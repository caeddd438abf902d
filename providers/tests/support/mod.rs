//! Test support shared by every provider's adapter tests (OpenAI, Anthropic, Gemini).
//!
//! Use it from a test file with `mod support;` and:
//!
//! - [`fixture`] / [`fixture_text`] / [`fixture_json`]: read a recorded file from
//!   `tests/fixtures/<provider>/` (byte-exact copies of `shared/fixtures/providers`; the
//!   `.gitattributes` there keeps git from touching their bytes).
//! - [`Replay`]: a wiremock server answering one path with a fixture **byte for byte**, with
//!   the content type its extension implies (`.sse` → `text/event-stream`, `.json` →
//!   `application/json`) and, when `<name>.headers.json` exists, its recorded status and
//!   headers. `Replay::sequence` answers successive requests with successive responses (e.g.
//!   a 429 then a 200). [`Replay::requests`] returns the JSON bodies the adapter sent, for
//!   snapshots and for comparing with `*.request.json` / `*.followup.request.json`.
//! - [`jsonl_as_sse`]: turns a `*.jsonl` payload-per-line file into SSE bytes (one `data:`
//!   event per line, `event:` = the payload's `type`).
//! - [`split_at`]: re-splits a body into chunks at given byte offsets (TCP chunking tests).
//! - [`config`]: a `ModelConfig` pointing at the mock server with a dummy key and a retry
//!   policy with millisecond backoff.
//! - [`streamed`]: runs `stream`, checks the event-stream invariants (one `Done`, last; at most
//!   one `Usage`; deltas agree with the whole parts) and returns the events and the collected
//!   response. [`decoded`] does the same for a stream decoded without HTTP.
//! - [`apis`]: every API an adapter speaks, each with a replayed answer and its model, for
//!   checking one option on all of them.
#![allow(dead_code, unreachable_pub)]

pub mod apis;

use std::path::PathBuf;
use std::time::Duration;

use futures::StreamExt;
use providers::{
    ChatModel, ChatRequest, ChatResponse, ContentPart, EventStream, ModelConfig, ProviderError,
    RetryPolicy, StreamEvent, collect,
};
use serde_json::Value;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// Path of a fixture file, e.g. `fixture_path("openai/chat_text.json")`.
pub fn fixture_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// The bytes of a fixture file.
pub fn fixture(name: &str) -> Vec<u8> {
    let path = fixture_path(name);
    std::fs::read(&path).unwrap_or_else(|err| panic!("cannot read {}: {err}", path.display()))
}

/// A fixture file as text.
pub fn fixture_text(name: &str) -> String {
    String::from_utf8(fixture(name)).unwrap_or_else(|err| panic!("{name} is not UTF-8: {err}"))
}

/// A fixture file parsed as JSON.
pub fn fixture_json(name: &str) -> Value {
    serde_json::from_slice(&fixture(name)).unwrap_or_else(|err| panic!("{name}: {err}"))
}

/// Whether a fixture file exists.
pub fn fixture_exists(name: &str) -> bool {
    fixture_path(name).exists()
}

/// The content type a fixture's extension implies.
pub fn content_type(name: &str) -> &'static str {
    if name.ends_with(".sse") || name.ends_with(".jsonl") {
        "text/event-stream; charset=utf-8"
    } else {
        "application/json"
    }
}

/// One canned HTTP response.
#[derive(Clone, Debug)]
pub struct Canned {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub content_type: String,
    pub delay: Duration,
}

impl Canned {
    /// A fixture file as a response: status 200 (or the recorded one from
    /// `<name>.headers.json`), recorded headers (minus framing headers wiremock sets itself),
    /// the body byte for byte.
    pub fn fixture(name: &str) -> Self {
        let stem = name.rsplit_once('.').map_or(name, |(stem, _)| stem);
        let headers_file = format!("{stem}.headers.json");
        let mut canned = Canned {
            status: 200,
            headers: Vec::new(),
            body: if name.ends_with(".jsonl") {
                jsonl_as_sse(&fixture_text(name))
            } else {
                fixture(name)
            },
            content_type: content_type(name).to_owned(),
            delay: Duration::ZERO,
        };
        if fixture_exists(&headers_file) {
            let recorded = fixture_json(&headers_file);
            if let Some(code) = recorded.pointer("/status/code").and_then(Value::as_u64) {
                canned.status = code as u16;
            }
            if let Some(map) = recorded.get("headers").and_then(Value::as_object) {
                for (name, values) in map {
                    let lower = name.to_ascii_lowercase();
                    if matches!(
                        lower.as_str(),
                        "transfer-encoding" | "content-length" | "connection" | "content-encoding"
                    ) {
                        continue;
                    }
                    for value in values.as_array().into_iter().flatten() {
                        if let Some(value) = value.as_str() {
                            if lower == "content-type" {
                                canned.content_type = value.to_owned();
                            } else {
                                canned.headers.push((name.clone(), value.to_owned()));
                            }
                        }
                    }
                }
            }
        }
        canned
    }

    /// An error response: `status` with a fixture body (JSON).
    pub fn error(status: u16, name: &str) -> Self {
        Canned {
            status,
            headers: Vec::new(),
            body: fixture(name),
            content_type: "application/json".into(),
            delay: Duration::ZERO,
        }
    }

    /// Adds a response header.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Replaces the body.
    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.body = body.into();
        self
    }

    fn template(&self) -> ResponseTemplate {
        let mut template = ResponseTemplate::new(self.status)
            .set_body_raw(self.body.clone(), &self.content_type)
            .set_delay(self.delay);
        for (name, value) in &self.headers {
            template = template.append_header(name.as_str(), value.as_str());
        }
        template
    }
}

struct Sequence {
    responses: Vec<Canned>,
    next: std::sync::atomic::AtomicUsize,
}

impl Respond for Sequence {
    fn respond(&self, _: &Request) -> ResponseTemplate {
        let i = self.next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let canned = self
            .responses
            .get(i)
            .or(self.responses.last())
            .expect("a sequence has at least one response");
        canned.template()
    }
}

/// A mock server replaying canned responses on one POST path.
pub struct Replay {
    pub server: MockServer,
}

impl Replay {
    /// Serves the fixture `name` on POST `path`.
    pub async fn fixture(path_: &str, name: &str) -> Self {
        Self::sequence(path_, vec![Canned::fixture(name)]).await
    }

    /// Serves `responses` to successive requests on POST `path` (the last one repeats).
    pub async fn sequence(path_: &str, responses: Vec<Canned>) -> Self {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path(path_))
            .respond_with(Sequence {
                responses,
                next: Default::default(),
            })
            .mount(&server)
            .await;
        Replay { server }
    }

    /// The server's base URL (`http://127.0.0.1:PORT`).
    pub fn url(&self) -> String {
        self.server.uri()
    }

    /// The JSON bodies of the requests received so far, in order.
    pub async fn requests(&self) -> Vec<Value> {
        self.server
            .received_requests()
            .await
            .unwrap_or_default()
            .iter()
            .map(|request| {
                serde_json::from_slice(&request.body).expect("the adapter sent a JSON body")
            })
            .collect()
    }

    /// The raw requests received so far (headers included).
    pub async fn raw_requests(&self) -> Vec<Request> {
        self.server.received_requests().await.unwrap_or_default()
    }
}

/// A `*.jsonl` file (one SSE payload per line) as SSE bytes.
pub fn jsonl_as_sse(text: &str) -> Vec<u8> {
    let mut out = String::new();
    for line in text.lines().filter(|line| !line.trim().is_empty()) {
        let kind = serde_json::from_str::<Value>(line)
            .ok()
            .and_then(|v| v.get("type").and_then(Value::as_str).map(str::to_owned));
        if let Some(kind) = kind {
            out.push_str("event: ");
            out.push_str(&kind);
            out.push('\n');
        }
        out.push_str("data: ");
        out.push_str(line);
        out.push_str("\n\n");
    }
    out.into_bytes()
}

/// Splits `body` at the given byte offsets (sorted, deduplicated, clamped).
pub fn split_at(body: &[u8], offsets: &[usize]) -> Vec<Vec<u8>> {
    let mut cuts: Vec<usize> = offsets.iter().map(|&o| o.min(body.len())).collect();
    cuts.sort_unstable();
    cuts.dedup();
    let mut pieces = Vec::new();
    let mut start = 0;
    for cut in cuts {
        pieces.push(body[start..cut].to_vec());
        start = cut;
    }
    pieces.push(body[start..].to_vec());
    pieces
}

/// A configuration for `model_id` against `base_url` with a dummy key and fast retries.
pub fn config(model_id: &str, base_url: &str) -> ModelConfig {
    ModelConfig {
        api_key: Some("test-key-123".into()),
        base_url: Some(base_url.to_owned()),
        retry: fast_retries(),
        ..ModelConfig::new(model_id)
    }
}

/// Three retries with millisecond backoff and no jitter.
pub fn fast_retries() -> RetryPolicy {
    RetryPolicy {
        max_retries: 3,
        initial_backoff: Duration::from_millis(1),
        max_backoff: Duration::from_millis(5),
        max_retry_after: Duration::from_secs(2),
        jitter: false,
    }
}

/// Streams `request` through `model`: the events and the collected response (or the first
/// error), after checking the stream's invariants.
pub async fn streamed(
    model: &dyn ChatModel,
    request: ChatRequest,
) -> Result<(Vec<StreamEvent>, ChatResponse), ProviderError> {
    decoded(model.stream(request).await?).await
}

/// Reads a whole event stream; see [`streamed`].
pub async fn decoded(
    mut stream: EventStream,
) -> Result<(Vec<StreamEvent>, ChatResponse), ProviderError> {
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        events.push(event?);
    }
    check_invariants(&events);
    let replay: EventStream = Box::pin(futures::stream::iter(events.clone().into_iter().map(Ok)));
    let response = collect(replay).await?;
    Ok((events, response))
}

/// The invariants every stream keeps (see `StreamEvent`).
pub fn check_invariants(events: &[StreamEvent]) {
    let dones = events
        .iter()
        .filter(|e| matches!(e, StreamEvent::Done { .. }))
        .count();
    assert_eq!(dones, 1, "exactly one Done: {events:?}");
    assert!(
        matches!(events.last(), Some(StreamEvent::Done { .. })),
        "Done is last"
    );
    let usages = events
        .iter()
        .filter(|e| matches!(e, StreamEvent::Usage(_)))
        .count();
    assert!(usages <= 1, "at most one Usage");
    // Reasoning deltas add up to the whole blocks' text (when the stream sent deltas).
    let deltas: String = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ReasoningDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    let blocks: String = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Reasoning(r) => Some(r.text.as_str()),
            _ => None,
        })
        .collect();
    if !deltas.is_empty() {
        assert_eq!(
            deltas, blocks,
            "reasoning deltas add up to the reasoning blocks"
        );
    }
    // Every call's argument deltas add up to the whole call's arguments.
    let calls: Vec<&providers::ToolCall> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ToolCall(call) => Some(call),
            _ => None,
        })
        .collect();
    for (index, call) in calls.iter().enumerate() {
        let pieces: String = events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::ToolCallDelta {
                    index: i,
                    arguments,
                    ..
                } if *i == index => Some(arguments.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(
            pieces, call.arguments,
            "argument deltas of call {index} add up"
        );
    }
}

/// All text deltas joined.
pub fn delta_text(events: &[StreamEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::TextDelta(text) => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// The reasoning parts of a response.
pub fn reasoning_parts(response: &ChatResponse) -> Vec<&providers::Reasoning> {
    response
        .message
        .parts
        .iter()
        .filter_map(|part| match part {
            ContentPart::Reasoning(r) => Some(r),
            _ => None,
        })
        .collect()
}

/// The tool calls of a response as (id, name, arguments).
/// The tool calls of the answer, in order.
pub fn tool_calls(response: &ChatResponse) -> Vec<providers::ToolCall> {
    response.message.tool_calls().cloned().collect()
}

/// The reasoning parts of the answer, in order.
pub fn reasoning(response: &ChatResponse) -> Vec<providers::Reasoning> {
    reasoning_parts(response).into_iter().cloned().collect()
}

pub fn calls(response: &ChatResponse) -> Vec<(String, String, String)> {
    response
        .message
        .tool_calls()
        .map(|c| (c.id.clone(), c.name.clone(), c.arguments.clone()))
        .collect()
}

//! Shared by the end-to-end tests: a server on a loopback port, an SSE client, and the
//! recorded provider fixtures of `providers/tests/fixtures`.
#![allow(dead_code, unreachable_pub)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use futures::StreamExt as _;
use providers::Provider;
use serde_json::Value;
use server::schema::Secret;
use server::{Server, ServerConfig, ServerError};
use service::ServiceConfig;
use service::config::ProviderBaseUrls;
use service::keys::ProviderKeys;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use wiremock::{Mock, MockServer, ResponseTemplate};

/// A server listening on an ephemeral loopback port.
pub struct TestServer {
    pub addr: SocketAddr,
    pub server: Server,
    stop: Option<oneshot::Sender<()>>,
    handle: JoinHandle<Result<(), ServerError>>,
}

impl TestServer {
    pub async fn start(config: ServerConfig) -> Self {
        let server = Server::new(config).await.expect("the server starts");
        Self::serve(server).await
    }

    /// Serves `server` (built by the test, e.g. on a store it shares with another).
    pub async fn serve(server: Server) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let serving = server.clone();
        let handle = tokio::spawn(async move {
            serving
                .serve(listener, async move {
                    let _ = stopped.await;
                })
                .await
        });
        TestServer {
            addr,
            server,
            stop: Some(stop),
            handle,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Posts a request body to `/v1/response`.
    pub async fn post(&self, body: &Value) -> reqwest::Response {
        client()
            .post(self.url("/v1/response"))
            .json(body)
            .send()
            .await
            .expect("the server answers")
    }

    /// Begins the graceful shutdown, returning when the server has stopped.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        self.handle.await.unwrap().unwrap();
    }

    /// Begins the graceful shutdown without waiting for it.
    pub fn begin_stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }

    pub async fn stopped(self) {
        self.handle.await.unwrap().unwrap();
    }
}

/// A reqwest client (installing the process's TLS provider first, which reqwest requires).
pub fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}

/// One SSE event: its name and its JSON payload.
#[derive(Clone, Debug)]
pub struct Sse {
    pub name: String,
    pub data: Value,
}

/// Every event of a `text/event-stream` answer, in order.
pub async fn events(response: reqwest::Response) -> Vec<Sse> {
    assert_eq!(response.status(), 200, "a streaming answer");
    assert_eq!(
        response.headers()["content-type"].to_str().unwrap(),
        "text/event-stream"
    );
    let mut stream = eventsource_stream::EventStream::new(response.bytes_stream());
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        let event = event.expect("a well-formed SSE event");
        events.push(Sse {
            name: event.event,
            data: serde_json::from_str(&event.data).expect("JSON data"),
        });
    }
    events
}

pub fn names(events: &[Sse]) -> Vec<&str> {
    events.iter().map(|event| event.name.as_str()).collect()
}

/// The concatenated `text` of every `content.delta`.
pub fn content(events: &[Sse]) -> String {
    events
        .iter()
        .filter(|event| event.name == "content.delta")
        .map(|event| event.data["text"].as_str().unwrap_or_default())
        .collect()
}

/// The last event's payload, asserting it is `name`.
pub fn terminal<'a>(events: &'a [Sse], name: &str) -> &'a Value {
    let last = events.last().expect("at least one event");
    assert_eq!(last.name, name, "{:?}", names(events));
    &last.data
}

/// A recorded provider response, byte for byte.
pub fn fixture(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../providers/tests/fixtures")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|err| panic!("cannot read {}: {err}", path.display()))
}

/// Answers POSTs to `path` with the fixture files in turn (the last one repeats).
pub async fn replay(mock: &MockServer, path: &str, fixtures: &[&str]) {
    let bodies: Vec<Vec<u8>> = fixtures.iter().map(|name| fixture(name)).collect();
    let counter = std::sync::atomic::AtomicUsize::new(0);
    Mock::given(wiremock::matchers::method("POST"))
        .and(wiremock::matchers::path(path))
        .respond_with(move |_: &wiremock::Request| {
            let i = counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let body = bodies[i.min(bodies.len() - 1)].clone();
            ResponseTemplate::new(200).set_body_raw(body, "text/event-stream")
        })
        .mount(mock)
        .await;
}

/// The signature of the thinking block in `anthropic/stream_thinking_tool_use.sse`, as a
/// client that resends it carries it.
pub const CLAUDE_SIGNATURE: &str = "EoQDCm0IDhgCKkCDzGs2kL2PgnDCZU/nM2wG2P1VIXCRHVnhDDzBQxNF1fl4QBXEKLxRItNJ2MwFdW9eeZPhsxSQIxD54cv3zs29MhljbGF1ZGUtaGFpa3UtNC01LTIwMjUxMDAxOABCCHRoaW5raW5nEgy/OWlwTmmqUjC6L70aDJ4P0R5NfuIe9U5zAiIwCxPduXS2UxCNxJCee3i91qK3cAyAgxCjL2wkQ5UD56iX1hXGOyuNaiH5k+dF5OCQKsQBxiAo+NjC61hV8nRYtaiP+C4inOcuMKuTG9Z1rysxTXkKBTl3oMiOlnEPHHPpKpg4sYF2G5VoTg8JTon20hdZw4GfTEVupnU1qAmnMqyAgke9SoV7HBW/PyA/FxL/q33xJ2gKFiD+BsgI9Z0koMmFKCvm2MoYE6u+ONEwKdFQXL1FKRW6t/bYbJGrLJLwxilsL82h9j4xjggjMn8Npvpn+zsrDPW/8PuLd4Pu+/EsjoneYwyxQQtUVgzhVGhhANWRjSBwUxgB";

/// Answers Anthropic's `/v1/messages` with a recorded tool round: a thinking block and a
/// `tool_use` first (signed with [`CLAUDE_SIGNATURE`]), then the text after the tool result.
pub async fn replay_claude_tool_round(mock: &MockServer) {
    replay(
        mock,
        "/v1/messages",
        &[
            "anthropic/stream_thinking_tool_use.sse",
            "anthropic/stream_text_after_tool.sse",
        ],
    )
    .await;
}

/// A server whose OpenAI, Anthropic and Gemini models all use `mock`, for loopback callers.
pub fn keyed(mock: &MockServer) -> ServerConfig {
    let mut keys = ProviderKeys::default();
    keys.set(Provider::OpenAi, Secret::new("sk-server-test"));
    keys.set(Provider::Anthropic, Secret::new("sk-ant-server-test"));
    keys.set(Provider::Google, Secret::new("g-server-test"));
    ServerConfig {
        service: ServiceConfig {
            keys,
            base_urls: ProviderBaseUrls::from([
                (Provider::OpenAi, format!("{}/v1", mock.uri())),
                (Provider::Anthropic, mock.uri()),
                (Provider::Google, format!("{}/v1beta", mock.uri())),
            ]),
            ..ServiceConfig::default()
        },
        ..ServerConfig::default()
    }
}

/// The JSON bodies the provider mock received, in order.
pub async fn received(mock: &MockServer) -> Vec<Value> {
    mock.received_requests()
        .await
        .unwrap_or_default()
        .iter()
        .map(|request| serde_json::from_slice(&request.body).unwrap_or(Value::Null))
        .collect()
}

/// The write lock of a SQLite store, held by another connection until dropped: the server's
/// writes wait for it (up to the store's busy timeout, 10 s), its reads go on. A test holds it
/// to stop the server at the instant before a commit, for as long as it needs to look.
pub struct WriteLock(rusqlite::Connection);

impl WriteLock {
    /// Takes the write lock of the store at `db` (waiting for a write in progress).
    pub fn take(db: &Path) -> WriteLock {
        let conn = rusqlite::Connection::open(db).expect("the store opens");
        conn.busy_timeout(std::time::Duration::from_secs(10))
            .unwrap();
        conn.execute_batch("BEGIN IMMEDIATE")
            .expect("the write lock");
        WriteLock(conn)
    }
}

impl Drop for WriteLock {
    fn drop(&mut self) {
        let _ = self.0.execute_batch("ROLLBACK");
    }
}

//! Test helpers (feature `testing`): a loopback OpenAI-compatible provider that streams as
//! slowly and as long as asked, and says which of its streams the client closed.
//!
//! It answers `POST /v1/chat/completions` with `deltas` text chunks (`"w0 "`, `"w1 "`, …),
//! sleeping `delay` before each, then a usage chunk and `data: [DONE]`, in OpenAI's exact
//! framing. Point a model at [`StreamingProvider::base_url`] (with any key). The end-to-end
//! tests use it to see that a client disconnect closes the upstream connection; the load
//! bench (`cargo xtask bench`) uses it as the provider of 200 concurrent streams.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::response::Response;
use axum::routing::post;
use axum::serve::ListenerExt as _;
use futures::StreamExt as _;
use serde_json::json;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// Counts of what the provider's streams did.
#[derive(Debug, Default)]
struct Counters {
    started: AtomicUsize,
    completed: AtomicUsize,
    dropped: AtomicUsize,
}

/// A running loopback provider; stops when dropped.
#[derive(Debug)]
pub struct StreamingProvider {
    addr: SocketAddr,
    counters: Arc<Counters>,
    stop: CancellationToken,
}

#[derive(Clone, Debug)]
struct Script {
    deltas: usize,
    delay: Duration,
    counters: Arc<Counters>,
}

impl StreamingProvider {
    /// Starts a provider on an ephemeral loopback port whose answers stream `deltas` chunks,
    /// `delay` apart.
    pub async fn start(deltas: usize, delay: Duration) -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let counters = Arc::new(Counters::default());
        let script = Script {
            deltas,
            delay,
            counters: Arc::clone(&counters),
        };
        let app = Router::new()
            .route("/v1/chat/completions", post(stream_answer))
            .with_state(script);
        let stop = CancellationToken::new();
        let stopped = stop.clone();
        tokio::spawn(async move {
            // Without TCP_NODELAY each delta would wait for the reader's delayed ACK (~40 ms).
            let listener = listener.tap_io(|tcp| {
                let _ = tcp.set_nodelay(true);
            });
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async move { stopped.cancelled().await })
                .await;
        });
        Ok(StreamingProvider {
            addr,
            counters,
            stop,
        })
    }

    /// The OpenAI-style base URL (`http://127.0.0.1:PORT/v1`).
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Streams begun.
    pub fn started(&self) -> usize {
        self.counters.started.load(Ordering::SeqCst)
    }

    /// Streams that sent everything.
    pub fn completed(&self) -> usize {
        self.counters.completed.load(Ordering::SeqCst)
    }

    /// Streams whose client closed the connection before the end.
    pub fn dropped(&self) -> usize {
        self.counters.dropped.load(Ordering::SeqCst)
    }
}

impl Drop for StreamingProvider {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Counts a stream as dropped unless it was marked complete.
struct Tracker {
    counters: Arc<Counters>,
    complete: bool,
}

impl Drop for Tracker {
    fn drop(&mut self) {
        let counter = if self.complete {
            &self.counters.completed
        } else {
            &self.counters.dropped
        };
        counter.fetch_add(1, Ordering::SeqCst);
    }
}

async fn stream_answer(State(script): State<Script>) -> Response {
    script.counters.started.fetch_add(1, Ordering::SeqCst);
    let tracker = Tracker {
        counters: Arc::clone(&script.counters),
        complete: false,
    };
    let chunk = |delta: serde_json::Value, finish: serde_json::Value, usage: serde_json::Value| {
        let payload = json!({
            "id": "chatcmpl-loopback",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "loopback",
            "choices": if usage.is_null() {
                json!([{"index": 0, "delta": delta, "finish_reason": finish}])
            } else {
                json!([])
            },
            "usage": usage,
        });
        Bytes::from(format!("data: {payload}\n\n"))
    };
    let deltas = script.deltas;
    let body = futures::stream::unfold(
        (0usize, tracker),
        move |(step, mut tracker)| async move {
            let frame = match step {
                _ if step < deltas => {
                    tokio::time::sleep(script.delay).await;
                    chunk(json!({"content": format!("w{step} ")}), json!(null), json!(null))
                }
                _ if step == deltas => chunk(json!({}), json!("stop"), json!(null)),
                _ if step == deltas + 1 => chunk(
                    json!({}),
                    json!(null),
                    json!({"prompt_tokens": 1, "completion_tokens": deltas, "total_tokens": deltas + 1}),
                ),
                _ if step == deltas + 2 => {
                    tracker.complete = true;
                    Bytes::from_static(b"data: [DONE]\n\n")
                }
                _ => return None,
            };
            Some((Ok::<_, std::convert::Infallible>(frame), (step + 1, tracker)))
        },
    )
    .boxed();
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from_stream(body))
        .unwrap_or_default()
}

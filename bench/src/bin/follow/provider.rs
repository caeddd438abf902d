//! The loopback provider: an OpenAI Chat Completions endpoint whose every answer streams
//! `deltas` text chunks (`"w0 "`, `"w1 "`, …) at a steady pace, then a finish chunk, a usage
//! chunk and `data: [DONE]`. It notes the instant it wrote each delta of each run (the run's
//! number is the first `follow-run-N` in the prompt), to measure how long a delta takes from
//! the model to a client.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use std::time::Instant;

use axum::serve::ListenerExt as _;
use serde_json::{Value, json};

/// The prefix of a run's number in its prompt.
pub(crate) const TAG_PREFIX: &str = "follow-run-";

/// When the provider wrote each delta, per (run number, delta index).
#[derive(Clone, Debug, Default)]
pub(crate) struct Sent(Arc<Mutex<HashMap<(usize, usize), Instant>>>);

impl Sent {
    fn note(&self, run: usize, delta: usize) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert((run, delta), Instant::now());
    }

    /// When delta `delta` of run `run` was written, if it was.
    pub(crate) fn at(&self, run: usize, delta: usize) -> Option<Instant> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&(run, delta))
            .copied()
    }
}

/// Serves on a free loopback port until the runtime ends; returns its base URL
/// (`http://127.0.0.1:PORT/v1`) and the record of when it wrote each delta.
pub(crate) async fn start(deltas: usize, delay: Duration) -> Result<(String, Sent), String> {
    let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .await
        .map_err(|err| format!("cannot start the loopback provider: {err}"))?;
    let address = listener.local_addr().map_err(|err| err.to_string())?;
    let sent = Sent::default();
    let noted = sent.clone();
    let app = axum::Router::new().route(
        "/v1/chat/completions",
        axum::routing::post(move |body: axum::body::Bytes| {
            let sent = noted.clone();
            async move { answer(tag_in(&String::from_utf8_lossy(&body)), deltas, delay, sent) }
        }),
    );
    // Each delta leaves when it is produced, not after the peer's delayed ACK, so that the
    // replicas see the steady pace the bench asks for.
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    tokio::spawn(async move {
        if let Err(err) = axum::serve(listener, app).await {
            eprintln!("follow: the loopback provider stopped: {err}");
        }
    });
    Ok((format!("http://{address}/v1"), sent))
}

/// The run number of the first `follow-run-N` in `text`.
pub(crate) fn tag_in(text: &str) -> Option<usize> {
    let start = text.find(TAG_PREFIX)? + TAG_PREFIX.len();
    let digits: String = text[start..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

fn chunk(choices: Value, usage: Value) -> bytes::Bytes {
    let payload = json!({
        "id": "chatcmpl-follow",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "loopback",
        "choices": choices,
        "usage": usage,
    });
    bytes::Bytes::from(format!("data: {payload}\n\n"))
}

fn answer(
    run: Option<usize>,
    deltas: usize,
    delay: Duration,
    sent: Sent,
) -> axum::response::Response {
    let body = futures::stream::unfold(0usize, move |step| {
        let sent = sent.clone();
        async move {
            let frame = if step < deltas {
                tokio::time::sleep(delay).await;
                if let Some(run) = run {
                    sent.note(run, step);
                }
                chunk(
                    json!([{"index": 0, "delta": {"content": format!("w{step} ")}, "finish_reason": null}]),
                    Value::Null,
                )
            } else if step == deltas {
                chunk(
                    json!([{"index": 0, "delta": {}, "finish_reason": "stop"}]),
                    Value::Null,
                )
            } else if step == deltas + 1 {
                chunk(
                    json!([]),
                    json!({"prompt_tokens": 1, "completion_tokens": deltas, "total_tokens": deltas + 1}),
                )
            } else if step == deltas + 2 {
                bytes::Bytes::from_static(b"data: [DONE]\n\n")
            } else {
                return None;
            };
            Some((Ok::<_, Infallible>(frame), step + 1))
        }
    });
    axum::response::Response::builder()
        .header("content-type", "text/event-stream")
        .body(axum::body::Body::from_stream(body))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_run_number_is_read_from_the_prompt() {
        assert_eq!(
            tag_in(r#"{"input": "Say hello (follow-run-17)."}"#),
            Some(17)
        );
        assert_eq!(tag_in("no tag"), None);
    }
}

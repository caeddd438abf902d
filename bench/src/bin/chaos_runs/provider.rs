//! The scripted loopback provider: an OpenAI Chat Completions endpoint that calls the
//! `calculator` tool on the first rounds of a run and then answers with a text, every chunk a
//! little apart, so that a replica killed at a random instant is usually in the middle of a
//! model call.
//!
//! Every answer depends only on the run's tag (`chaos-run-N` in the prompt) and the round (the
//! number of tool results in the request), so a model call made again after a takeover gets
//! the same answer, and the harness knows each run's final text in advance.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::serve::ListenerExt as _;
use serde_json::{Value, json};

/// Tool rounds before the answer, per run.
pub(crate) const TOOL_ROUNDS: usize = 2;
/// Words of the final answer.
const ANSWER_WORDS: usize = 40;
/// The prefix of a run's tag in its prompt.
pub(crate) const TAG_PREFIX: &str = "chaos-run-";

/// The final answer of the run tagged `tag`.
pub(crate) fn answer_text(tag: usize) -> String {
    (0..ANSWER_WORDS)
        .map(|word| format!("r{tag}w{word} "))
        .collect()
}

/// The id of the tool call of `round` of the run tagged `tag`.
pub(crate) fn call_id(tag: usize, round: usize) -> String {
    format!("call_{tag}_{round}")
}

/// Model calls the provider answered, per (run tag, round).
#[derive(Clone, Debug, Default)]
pub(crate) struct Calls(Arc<Mutex<HashMap<(usize, usize), usize>>>);

impl Calls {
    fn count(&self, tag: usize, round: usize) {
        let mut calls = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        *calls.entry((tag, round)).or_default() += 1;
    }

    /// How many times each round was asked for, per (tag, round).
    pub(crate) fn snapshot(&self) -> HashMap<(usize, usize), usize> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// The running provider.
pub(crate) struct Provider {
    /// `http://127.0.0.1:PORT/v1`.
    pub(crate) base_url: String,
    /// The calls it answered.
    pub(crate) calls: Calls,
}

impl Provider {
    /// Serves on a free loopback port until the runtime ends.
    pub(crate) async fn start(chunk_delay: Duration) -> Result<Self, String> {
        let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .await
            .map_err(|err| format!("cannot start the loopback provider: {err}"))?;
        let address = listener.local_addr().map_err(|err| err.to_string())?;
        let calls = Calls::default();
        let counted = calls.clone();
        let app = axum::Router::new().route(
            "/v1/chat/completions",
            axum::routing::post(move |body: axum::body::Bytes| {
                let calls = counted.clone();
                async move { answer(&body, chunk_delay, &calls) }
            }),
        );
        // Each chunk leaves when it is produced, not after the peer's delayed ACK.
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        tokio::spawn(async move {
            if let Err(err) = axum::serve(listener, app).await {
                eprintln!("chaos-runs: the loopback provider stopped: {err}");
            }
        });
        Ok(Provider {
            base_url: format!("http://{address}/v1"),
            calls,
        })
    }
}

/// The run tag and round of a request body: the first `chaos-run-N` in it, and its number of
/// tool messages.
pub(crate) fn tag_and_round(body: &Value) -> Option<(usize, usize)> {
    let messages = body.get("messages")?.as_array()?;
    let tag = tag_in(&serde_json::to_string(messages).ok()?)?;
    let offered_tools = body
        .get("tools")
        .and_then(Value::as_array)
        .is_some_and(|tools| !tools.is_empty());
    // Without tools to call, the answer comes at once.
    let round = if offered_tools {
        messages
            .iter()
            .filter(|message| message.get("role").and_then(Value::as_str) == Some("tool"))
            .count()
    } else {
        TOOL_ROUNDS
    };
    Some((tag, round))
}

/// The run tag of the first `chaos-run-N` in `text`.
pub(crate) fn tag_in(text: &str) -> Option<usize> {
    let start = text.find(TAG_PREFIX)? + TAG_PREFIX.len();
    let digits: String = text[start..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// The chunks (JSON payloads) of the answer to round `round` of run `tag`.
pub(crate) fn script(tag: usize, round: usize) -> Vec<Value> {
    let chunk = |delta: Value, finish: Value| {
        json!({
            "id": format!("chatcmpl-chaos-{tag}-{round}"),
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "chaos-loopback",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        })
    };
    let mut chunks = Vec::new();
    if round < TOOL_ROUNDS {
        let id = call_id(tag, round);
        chunks.push(chunk(
            json!({"role": "assistant", "tool_calls": [{"index": 0, "id": id, "type": "function",
                "function": {"name": "calculator", "arguments": ""}}]}),
            Value::Null,
        ));
        let arguments = format!("{{\"expression\": \"{tag} + {round}\"}}");
        for piece in arguments.as_bytes().chunks(6) {
            let piece = String::from_utf8_lossy(piece);
            chunks.push(chunk(
                json!({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}),
                Value::Null,
            ));
        }
        chunks.push(chunk(json!({}), json!("tool_calls")));
    } else {
        chunks.push(chunk(
            json!({"role": "assistant", "content": ""}),
            Value::Null,
        ));
        for word in answer_text(tag).split_inclusive(' ') {
            chunks.push(chunk(json!({"content": word}), Value::Null));
        }
        chunks.push(chunk(json!({}), json!("stop")));
    }
    chunks.push(json!({
        "id": format!("chatcmpl-chaos-{tag}-{round}"),
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "chaos-loopback",
        "choices": [],
        "usage": {"prompt_tokens": 10, "completion_tokens": chunks.len(), "total_tokens": 10 + chunks.len()},
    }));
    chunks
}

fn answer(body: &[u8], delay: Duration, calls: &Calls) -> axum::response::Response {
    let request: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let Some((tag, round)) = tag_and_round(&request) else {
        return axum::response::Response::builder()
            .status(400)
            .header("content-type", "application/json")
            .body(axum::body::Body::from(
                r#"{"error": {"message": "the chaos provider answers only prompts tagged chaos-run-N", "type": "invalid_request_error"}}"#,
            ))
            .unwrap_or_default();
    };
    calls.count(tag, round);
    let frames: Vec<bytes::Bytes> = script(tag, round)
        .into_iter()
        .map(|chunk| bytes::Bytes::from(format!("data: {chunk}\n\n")))
        .chain([bytes::Bytes::from_static(b"data: [DONE]\n\n")])
        .collect();
    let body = futures::stream::unfold(frames.into_iter(), move |mut frames| async move {
        let frame = frames.next()?;
        tokio::time::sleep(delay).await;
        Some((Ok::<_, Infallible>(frame), frames))
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
    fn the_round_is_the_number_of_tool_results() {
        let body = json!({"tools": [{"type": "function"}], "messages": [
            {"role": "user", "content": "Please compute (chaos-run-17)."},
            {"role": "assistant", "tool_calls": [{"id": "call_17_0"}]},
            {"role": "tool", "tool_call_id": "call_17_0", "content": "17"},
        ]});
        assert_eq!(tag_and_round(&body), Some((17, 1)));
        let plain = json!({"messages": [{"role": "user", "content": "chaos-run-4"}]});
        assert_eq!(tag_and_round(&plain), Some((4, TOOL_ROUNDS)));
    }

    #[test]
    fn tool_rounds_come_first_then_the_answer() {
        let first = script(3, 0);
        assert_eq!(
            first[0]["choices"][0]["delta"]["tool_calls"][0]["id"],
            "call_3_0"
        );
        let arguments: String = first[1..]
            .iter()
            .filter_map(|chunk| {
                chunk["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"].as_str()
            })
            .collect();
        assert_eq!(arguments, r#"{"expression": "3 + 0"}"#);
        let last = script(3, TOOL_ROUNDS);
        let text: String = last
            .iter()
            .filter_map(|chunk| chunk["choices"][0]["delta"]["content"].as_str())
            .collect();
        assert_eq!(text, answer_text(3));
    }
}

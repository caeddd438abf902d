//! A provider as the attacker: numbers that used to size allocations (tool-call indexes,
//! content-block indexes), endless SSE lines and error bodies, absurd usage counts, keys
//! echoed back in errors, redirects to another origin, and configurations that try to override framing or credential
//! headers. Every provider here is a loopback fake; nothing reaches the internet.
#![cfg(all(feature = "openai", feature = "anthropic", feature = "gemini"))]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::StreamExt as _;
use proptest::prelude::*;
use providers::{
    ChatModel, ChatRequest, EventStream, Limit, Limits, MAX_OPEN_BLOCKS, MAX_TOOL_CALLS, Message,
    ModelConfig, Provider, ProviderError, RetryPolicy, StreamEvent, anthropic, gemini,
    model_from_config, openai,
};
use serde_json::json;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpListener;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

fn request() -> ChatRequest {
    ChatRequest::new(vec![Message::human("hi")])
}

/// Every item of a stream: the events, then the error that ended it (if any).
async fn drain(mut stream: EventStream) -> (Vec<StreamEvent>, Option<ProviderError>) {
    let mut events = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(event) => events.push(event),
            Err(err) => {
                assert!(stream.next().await.is_none(), "nothing after an error");
                return (events, Some(err));
            }
        }
    }
    (events, None)
}

fn sse(events: &[serde_json::Value]) -> Vec<String> {
    events.iter().map(|e| format!("data: {e}\n\n")).collect()
}

fn chat_call(index: serde_json::Value, id: &str, args: &str) -> serde_json::Value {
    json!({"id": "c", "model": "m", "choices": [{"index": 0, "delta": {"tool_calls": [
        {"index": index, "id": id, "type": "function", "function": {"name": "f", "arguments": args}}
    ]}}]})
}

fn tool_calls(events: &[StreamEvent]) -> Vec<(String, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ToolCall(call) => Some((call.id.clone(), call.arguments.clone())),
            _ => None,
        })
        .collect()
}

/// A Chat Completions call in two fragments whose `index` is `index` arrives once, whole.
async fn assert_chat_call_kept(index: serde_json::Value) {
    let mut body = sse(&[
        chat_call(index.clone(), "call_a", "{\"x\":"),
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": index, "function": {"arguments": "1}"}}
        ]}}]}),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
    ]);
    body.push("data: [DONE]\n\n".into());
    let (events, error) = drain(openai::decode_chat_stream(futures::stream::iter(body))).await;
    assert_eq!(error, None, "{index}");
    assert_eq!(
        tool_calls(&events),
        [("call_a".into(), "{\"x\":1}".into())],
        "{index}"
    );
}

#[tokio::test]
async fn chat_tool_call_indexes_are_keys_not_sizes() {
    // 4294967295 used to allocate ~103 GB and abort; u64::MAX overflowed `index + 1`.
    for index in [json!(4_294_967_295_u64), json!(u64::MAX), json!(usize::MAX)] {
        assert_chat_call_kept(index).await;
    }
}

#[tokio::test]
async fn too_many_distinct_tool_calls_end_the_answer_with_a_typed_error() {
    let events: Vec<_> = (0..=MAX_TOOL_CALLS as u64)
        .map(|i| chat_call(json!(i * 1_000_003), &format!("call_{i}"), "{}"))
        .collect();
    let (events, error) = drain(openai::decode_chat_stream(futures::stream::iter(sse(
        &events,
    ))))
    .await;
    let error = error.expect("the stream fails");
    assert!(
        matches!(
            error,
            ProviderError::LimitExceeded {
                provider: Provider::OpenAi,
                limit: Limit::ToolCalls,
                max,
                ..
            } if max == MAX_TOOL_CALLS as u64
        ),
        "{error:?}"
    );
    assert!(error.to_string().contains("MAX_TOOL_CALLS"), "{error}");
    // `Started`, then a start and an argument delta per call that fitted.
    assert!(events.len() <= 2 * MAX_TOOL_CALLS + 1, "{}", events.len());
}

#[tokio::test]
async fn responses_output_indexes_open_at_most_the_cap() {
    let mut body: Vec<String> = vec![format!(
        "event: response.created\ndata: {}\n\n",
        json!({"type": "response.created", "response": {"id": "r", "model": "m"}})
    )];
    for i in 0..=MAX_OPEN_BLOCKS as u64 {
        let event = json!({"type": "response.output_item.added", "output_index": u64::MAX - i,
            "item": {"type": "function_call", "call_id": format!("c{i}"), "name": "f"}});
        body.push(format!(
            "event: response.output_item.added\ndata: {event}\n\n"
        ));
    }
    let (_, error) = drain(openai::decode_responses_stream(futures::stream::iter(body))).await;
    assert!(
        matches!(
            error,
            Some(ProviderError::LimitExceeded {
                limit: Limit::OpenBlocks,
                ..
            })
        ),
        "{error:?}"
    );
}

#[tokio::test]
async fn anthropic_block_indexes_open_at_most_the_cap() {
    let start = json!({"type": "message_start", "message": {"id": "msg", "model": "m", "usage": {"input_tokens": 1}}});
    let mut body = vec![format!("event: message_start\ndata: {start}\n\n")];
    // A huge index is just a key: one block, closed normally.
    let huge = json!({"type": "content_block_start", "index": u64::MAX,
        "content_block": {"type": "text", "text": "hi"}});
    body.push(format!("event: content_block_start\ndata: {huge}\n\n"));
    for i in 0..=MAX_OPEN_BLOCKS {
        let event = json!({"type": "content_block_start", "index": i,
            "content_block": {"type": "thinking", "thinking": "t"}});
        body.push(format!("event: content_block_start\ndata: {event}\n\n"));
    }
    let (events, error) = drain(anthropic::decode_stream(futures::stream::iter(body))).await;
    assert!(
        matches!(
            error,
            Some(ProviderError::LimitExceeded {
                provider: Provider::Anthropic,
                limit: Limit::OpenBlocks,
                ..
            })
        ),
        "{error:?}"
    );
    assert!(events.contains(&StreamEvent::TextDelta("hi".into())));
}

/// Wire indexes that are no key: negative, too large for any integer type, fractions, text.
const NOT_INDEXES: [&str; 5] = ["-1", "1e26", "18446744073709551616", "0.5", "\"0\""];

/// One Anthropic tool call whose block events carry `index` (left out when `None`).
fn anthropic_call(index: Option<&str>) -> Vec<String> {
    let index = index.map_or(String::new(), |index| format!(r#""index":{index},"#));
    [
        ("message_start", r#"{"type":"message_start","message":{"id":"msg","model":"m","usage":{"input_tokens":1}}}"#.to_owned()),
        ("content_block_start", format!(r#"{{"type":"content_block_start",{index}"content_block":{{"type":"tool_use","id":"toolu_1","name":"f","input":{{}}}}}}"#)),
        ("content_block_delta", format!(r#"{{"type":"content_block_delta",{index}"delta":{{"type":"input_json_delta","partial_json":"{{\"x\":1}}"}}}}"#)),
        ("content_block_stop", format!(r#"{{"type":"content_block_stop",{index}"x":0}}"#)),
        ("message_delta", r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":5}}"#.to_owned()),
        ("message_stop", r#"{"type":"message_stop"}"#.to_owned()),
    ]
    .into_iter()
    .map(|(name, data)| format!("event: {name}\ndata: {data}\n\n"))
    .collect()
}

#[tokio::test]
async fn an_anthropic_block_index_that_is_no_key_refuses_the_answer() {
    // The call is there with a usable index.
    let (events, error) = drain(anthropic::decode_stream(futures::stream::iter(
        anthropic_call(Some("0")),
    )))
    .await;
    assert_eq!(error, None);
    assert_eq!(
        tool_calls(&events),
        [("toolu_1".into(), "{\"x\":1}".into())]
    );
    // Without one it was dropped and the answer ended as a plain `tool_use` stop with no call.
    for index in NOT_INDEXES.map(Some).into_iter().chain([None]) {
        let (events, error) = drain(anthropic::decode_stream(futures::stream::iter(
            anthropic_call(index),
        )))
        .await;
        let Some(ProviderError::Decode {
            provider: Provider::Anthropic,
            message,
            ..
        }) = error
        else {
            panic!("{index:?}: {error:?} after {events:?}");
        };
        assert!(message.contains("`index`"), "{message}");
        assert!(message.contains("content_block_start"), "{message}");
        if let Some(index) = index {
            assert!(message.contains(index), "{message}");
        }
        assert!(
            !events.iter().any(|e| matches!(e, StreamEvent::Done { .. })),
            "{index:?}: {events:?}"
        );
    }
}

/// One answer of `MAX_TOOL_CALLS + 1` calls in `protocol`'s stream format, each call closed
/// before the next opens (so never more than one is open).
fn sequential_calls(protocol: &str) -> Vec<String> {
    let calls = 0..=MAX_TOOL_CALLS;
    let event = |kind: &str, data: serde_json::Value| format!("event: {kind}\ndata: {data}\n\n");
    match protocol {
        "chat" => sse(&calls
            .map(|i| chat_call(json!(i), &format!("call_{i}"), "{}"))
            .collect::<Vec<_>>()),
        "responses" => calls
            .flat_map(|i| {
                let item = json!({"type": "function_call", "call_id": format!("c{i}"),
                    "name": "f", "arguments": "{}"});
                [
                    event(
                        "response.output_item.added",
                        json!({"type": "response.output_item.added",
                        "output_index": i, "item": item}),
                    ),
                    event(
                        "response.output_item.done",
                        json!({"type": "response.output_item.done",
                        "output_index": i, "item": item}),
                    ),
                ]
            })
            .collect(),
        "anthropic" => {
            let start = json!({"type": "message_start",
                "message": {"id": "msg", "model": "m", "usage": {"input_tokens": 1}}});
            let mut body = vec![event("message_start", start)];
            for i in calls {
                body.push(event(
                    "content_block_start",
                    json!({"type": "content_block_start",
                    "index": i, "content_block": {"type": "tool_use", "id": format!("toolu_{i}"),
                    "name": "f", "input": {}}}),
                ));
                body.push(event(
                    "content_block_delta",
                    json!({"type": "content_block_delta",
                    "index": i, "delta": {"type": "input_json_delta", "partial_json": "{}"}}),
                ));
                body.push(event(
                    "content_block_stop",
                    json!({"type": "content_block_stop", "index": i}),
                ));
            }
            body
        }
        "gemini" => sse(&calls
            .map(|_| {
                json!({"responseId": "r", "candidates": [{"content": {"role": "model",
                "parts": [{"functionCall": {"name": "f", "args": {}}}]}}]})
            })
            .collect::<Vec<_>>()),
        other => unreachable!("no protocol {other}"),
    }
}

#[tokio::test]
async fn tool_calls_per_answer_are_capped_for_every_protocol() {
    // One Anthropic, Gemini or Responses answer used to run 20,000 calls in one round: only
    // OpenAI Chat stopped, because its parser remembered every call.
    for (protocol, provider) in [
        ("chat", Provider::OpenAi),
        ("responses", Provider::OpenAi),
        ("anthropic", Provider::Anthropic),
        ("gemini", Provider::Google),
    ] {
        let body = futures::stream::iter(sequential_calls(protocol));
        let stream = match protocol {
            "chat" => openai::decode_chat_stream(body),
            "responses" => openai::decode_responses_stream(body),
            "anthropic" => anthropic::decode_stream(body),
            _ => gemini::decode_stream(body),
        };
        let (events, error) = drain(stream).await;
        let error = error.unwrap_or_else(|| panic!("{protocol}: the answer is not ended"));
        assert!(
            matches!(
                &error,
                ProviderError::LimitExceeded { provider: p, limit: Limit::ToolCalls, max, .. }
                    if *p == provider && *max == MAX_TOOL_CALLS as u64
            ),
            "{protocol}: {error:?}"
        );
        assert!(
            error.to_string().contains("MAX_TOOL_CALLS"),
            "{protocol}: {error}"
        );
        assert!(tool_calls(&events).len() <= MAX_TOOL_CALLS, "{protocol}");
        assert!(
            !events.iter().any(|e| matches!(e, StreamEvent::Done { .. })),
            "{protocol}"
        );
    }
}

#[tokio::test]
async fn a_chat_tool_call_index_that_is_no_key_keeps_the_call() {
    // Chat Completions places index-less fragments by id and order, so such an index is read
    // as none: the call arrives once, whole.
    for index in NOT_INDEXES {
        let index: serde_json::Value = serde_json::from_str(index).unwrap();
        assert_chat_call_kept(index).await;
    }
}

#[tokio::test]
async fn a_responses_output_index_that_is_no_key_never_drops_or_doubles_the_call() {
    // Left out (`None`), the index means the item opened last.
    for index in NOT_INDEXES.into_iter().map(Some).chain([None]) {
        let field = index.map_or(String::new(), |index| format!(",\"output_index\":{index}"));
        let event = |kind: &str, rest: &str| {
            format!("event: {kind}\ndata: {{\"type\":\"{kind}\"{field}{rest}}}\n\n")
        };
        let body = vec![
            "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"r\",\"model\":\"m\"}}\n\n".to_owned(),
            event("response.output_item.added", r#","item":{"type":"function_call","call_id":"call_a","name":"f"}"#),
            event("response.function_call_arguments.delta", r#","delta":"{\"x\":1}""#),
            event("response.output_item.done", r#","item":{"type":"function_call","call_id":"call_a","name":"f","arguments":"{\"x\":1}"}"#),
            "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"status\":\"completed\"}}\n\n".to_owned(),
        ];
        let (events, error) =
            drain(openai::decode_responses_stream(futures::stream::iter(body))).await;
        match error {
            None => assert_eq!(
                tool_calls(&events),
                [("call_a".into(), "{\"x\":1}".into())],
                "{index:?}"
            ),
            Some(ProviderError::Decode { message, .. }) if index.is_some() => {
                assert!(message.contains("`output_index`"), "{index:?}: {message}");
                assert!(tool_calls(&events).is_empty(), "{index:?}: {events:?}");
            }
            Some(other) => panic!("{index:?}: {other:?}"),
        }
    }
}

/// A body of `total` bytes with no newline, produced lazily; counts the pieces pulled.
fn endless_line(
    total: usize,
    pulled: Arc<AtomicUsize>,
) -> impl futures::Stream<Item = Vec<u8>> + Send {
    const PIECE: usize = 64 * 1024;
    let mut body = b"data: ".to_vec();
    body.resize(PIECE, b'a');
    futures::stream::iter(0..total / PIECE).map(move |_| {
        pulled.fetch_add(1, Ordering::SeqCst);
        body.clone()
    })
}

#[tokio::test]
async fn an_endless_sse_line_stops_at_the_event_cap() {
    let pulled = Arc::new(AtomicUsize::new(0));
    let stream = openai::decode_chat_stream(endless_line(64 << 20, Arc::clone(&pulled)));
    let (_, error) = drain(stream).await;
    let max = Limits::DEFAULT_MAX_SSE_EVENT_BYTES as u64;
    assert!(
        matches!(
            error,
            Some(ProviderError::LimitExceeded { limit: Limit::SseEvent, max: m, .. }) if m == max
        ),
        "{error:?}"
    );
    let message = error.unwrap().to_string();
    assert!(message.contains("max_sse_event_bytes"), "{message}");
    // Reading stopped at the cap: 8 MiB of a 64 MiB line, in 64 KiB pieces.
    let pieces = pulled.load(Ordering::SeqCst);
    assert!(pieces <= (max as usize) / (64 * 1024) + 1, "{pieces}");
}

#[tokio::test]
async fn many_lines_and_comments_are_not_one_event() {
    // 12 MiB of comments and of small events in total, each far below the cap: fine.
    let mut body = Vec::new();
    let event = chat_call(json!(0), "call_a", "");
    for i in 0..120_000 {
        body.push(format!(": keep-alive {i:080}\r\n"));
        if i % 1000 == 0 {
            body.push(format!("data: {event}\r\n\r\n"));
        }
    }
    body.push(
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\r\n\r\n"
            .into(),
    );
    body.push("data: [DONE]\r\n\r\n".into());
    let (events, error) = drain(openai::decode_chat_stream(futures::stream::iter(body))).await;
    assert_eq!(error, None);
    assert!(matches!(events.last(), Some(StreamEvent::Done { .. })));
}

#[tokio::test]
async fn absurd_usage_numbers_do_not_fail_a_streamed_answer() {
    for number in [
        "1e400",
        "-1",
        "18446744073709551615",
        "1.5",
        "\"many\"",
        "1e30",
    ] {
        let body = vec![
            "data: {\"id\":\"c\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"answer\"}}]}\n\n".to_owned(),
            "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n".to_owned(),
            format!(
                "data: {{\"choices\":[],\"usage\":{{\"prompt_tokens\":{number},\"completion_tokens\":3}}}}\n\n"
            ),
            "data: [DONE]\n\n".to_owned(),
        ];
        let (events, error) = drain(openai::decode_chat_stream(futures::stream::iter(body))).await;
        assert_eq!(error, None, "{number}");
        assert!(events.contains(&StreamEvent::TextDelta("answer".into())));
        assert!(matches!(events.last(), Some(StreamEvent::Done { .. })));
        let usage = events.iter().find_map(|e| match e {
            StreamEvent::Usage(usage) => Some(*usage),
            _ => None,
        });
        // The bad count is ignored (`1e400`, which no JSON parser reads, drops the report).
        assert!(
            usage.is_none_or(|u| u.input_tokens == 0 && u.output_tokens == 3),
            "{number}: {usage:?}"
        );
        assert!(usage.is_some() || number == "1e400", "{number}");
    }
    // Gemini used to add two wire counts (overflow panic in debug builds).
    let event = json!({"candidates": [{"content": {"parts": [{"text": "ok"}], "role": "model"},
        "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": u64::MAX, "toolUsePromptTokenCount": u64::MAX,
            "candidatesTokenCount": u64::MAX, "thoughtsTokenCount": u64::MAX}});
    let (events, error) = drain(gemini::decode_stream(futures::stream::iter(sse(&[event])))).await;
    assert_eq!(error, None);
    assert!(matches!(events.last(), Some(StreamEvent::Done { .. })));
}

/// A loopback HTTP server answering every request with `head` and then `body_len` bytes of
/// `filler` (no newline), counting the bytes it managed to write.
async fn endless_server(head: &'static str, body_len: usize, written: Arc<AtomicUsize>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let written = Arc::clone(&written);
            tokio::spawn(async move {
                let mut request = Vec::new();
                let mut buf = [0u8; 4096];
                // Read the head and the (small) body; the request is not inspected.
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                if socket.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                let piece = vec![b'x'; 64 * 1024];
                let mut sent = 0;
                while sent < body_len {
                    if socket.write_all(&piece).await.is_err() {
                        return;
                    }
                    sent += piece.len();
                    written.fetch_add(piece.len(), Ordering::SeqCst);
                }
            });
        }
    });
    format!("http://{addr}/v1")
}

fn model(base_url: &str, limits: Limits) -> Box<dyn ChatModel> {
    let mut config = ModelConfig::new("gpt-4o");
    config.api_key = Some("sk-test".into());
    config.base_url = Some(base_url.into());
    config.retry = RetryPolicy::none();
    config.limits = limits;
    model_from_config(&config).unwrap()
}

#[tokio::test]
async fn an_endless_error_body_is_cut_at_the_configured_cap() {
    let written = Arc::new(AtomicUsize::new(0));
    let url = endless_server(
        "HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n",
        256 << 20,
        Arc::clone(&written),
    )
    .await;
    let limits = Limits {
        max_error_body_bytes: 1024,
        ..Limits::default()
    };
    let error = model(&url, limits).stream(request()).await.err().unwrap();
    assert!(
        matches!(
            &error,
            ProviderError::Http {
                status: 500,
                body_cut_at: Some(cap),
                ..
            } if cap.get() == 1024
        ),
        "{error:?}"
    );
    assert!(
        error.to_string().contains("max_error_body_bytes"),
        "{error}"
    );
    // The reader stopped: the server could not write the 256 MiB (socket buffers hold a few).
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert!(written.load(Ordering::SeqCst) < 64 << 20);
}

#[tokio::test]
async fn an_endless_sse_line_over_http_stops_at_the_configured_cap() {
    let written = Arc::new(AtomicUsize::new(0));
    let url = endless_server(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\ndata: ",
        256 << 20,
        Arc::clone(&written),
    )
    .await;
    let limits = Limits {
        max_sse_event_bytes: 100_000,
        ..Limits::default()
    };
    let stream = model(&url, limits).stream(request()).await.unwrap();
    let (_, error) = drain(stream).await;
    assert!(
        matches!(
            error,
            Some(ProviderError::LimitExceeded {
                limit: Limit::SseEvent,
                max: 100_000,
                ..
            })
        ),
        "{error:?}"
    );
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert!(written.load(Ordering::SeqCst) < 64 << 20);
}

/// Echoes the request's credential headers back in the body, as some proxies do.
fn echo_headers(
    status: u16,
    content_type: &'static str,
    body: fn(&str) -> String,
) -> impl Fn(&Request) -> ResponseTemplate {
    move |request: &Request| {
        let credentials: Vec<String> = ["authorization", "x-api-key", "x-goog-api-key"]
            .iter()
            .filter_map(|name| {
                let value = request.headers.get(*name)?.to_str().ok()?;
                Some(format!("{name}: {value}"))
            })
            .collect();
        ResponseTemplate::new(status).set_body_raw(body(&credentials.join("; ")), content_type)
    }
}

#[tokio::test]
async fn keys_echoed_in_errors_are_redacted_for_every_provider() {
    const KEY: &str = "sk-very-secret-key-4242424242";
    /// (model id, status, content type, the body around the echoed headers)
    type Case = (&'static str, u16, &'static str, fn(&str) -> String);
    let cases: [Case; 7] = [
        ("gpt-4o", 401, "application/json", |echo| {
            json!({"error": {"message": format!("bad key, you sent {echo}"), "type": "invalid_request_error"}}).to_string()
        }),
        ("gpt-4o", 502, "text/html", |echo| {
            format!("<html>proxy error for {echo}</html>")
        }),
        ("gpt-4o", 200, "text/event-stream", |echo| {
            format!(
                "data: {}\n\n",
                json!({"error": {"message": format!("denied {echo}")}})
            )
        }),
        ("claude-sonnet-4-5", 401, "application/json", |echo| {
            json!({"type": "error", "error": {"type": "authentication_error", "message": format!("invalid {echo}")}}).to_string()
        }),
        ("claude-sonnet-4-5", 200, "text/event-stream", |echo| {
            format!(
                "event: error\ndata: {}\n\n",
                json!({"type": "error", "error": {"type": "invalid_request_error", "message": format!("invalid {echo}")}})
            )
        }),
        ("gemini-2.5-flash", 400, "application/json", |echo| {
            json!({"error": {"code": 400, "status": "INVALID_ARGUMENT", "message": format!("API key not valid: {echo}")}}).to_string()
        }),
        ("gemini-2.5-flash", 200, "text/event-stream", |echo| {
            format!(
                "data: {}\n\n",
                json!({"error": {"code": 403, "status": "PERMISSION_DENIED", "message": format!("denied {echo}")}})
            )
        }),
    ];
    for (model_id, status, content_type, body) in cases {
        let mock = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(echo_headers(status, content_type, body))
            .mount(&mock)
            .await;
        let base = match model_id {
            "gpt-4o" => format!("{}/v1", mock.uri()),
            "gemini-2.5-flash" => format!("{}/v1beta", mock.uri()),
            _ => mock.uri(),
        };
        let mut config = ModelConfig::new(model_id);
        config.api_key = Some(KEY.into());
        config.base_url = Some(base);
        config.retry = RetryPolicy::none();
        let model = model_from_config(&config).unwrap();
        let error = match model.stream(request()).await {
            Err(err) => err,
            Ok(stream) => drain(stream).await.1.expect("the stream fails"),
        };
        let shown = format!("{error} {error:?}");
        assert!(!shown.contains("4242"), "{model_id} {status}: {shown}");
        assert!(shown.contains("[REDACTED]"), "{model_id} {status}: {shown}");
        let complete = model.complete(request()).await.unwrap_err();
        let shown = format!("{complete} {complete:?}");
        assert!(!shown.contains("4242"), "{model_id} {status}: {shown}");
    }
}

#[tokio::test]
async fn a_redirect_is_not_followed_and_the_error_names_where_it_pointed() {
    const KEY: &str = "sk-redirected-key-5151515151";
    // Another origin on loopback: anything reaching it would be the key and the conversation.
    let elsewhere = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200))
        .mount(&elsewhere)
        .await;
    let to = format!("{}/v1/steal?key={KEY}", elsewhere.uri());
    for (model_id, status) in [
        ("gpt-4o", 307),
        ("gpt-4o", 302),
        ("claude-sonnet-4-5", 308),
        ("claude-sonnet-4-5", 301),
        ("gemini-2.5-flash", 307),
        ("gemini-2.5-flash", 303),
    ] {
        let provider = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(status).insert_header("location", to.as_str()))
            .mount(&provider)
            .await;
        let mut config = ModelConfig::new(model_id);
        config.api_key = Some(KEY.into());
        config.base_url = Some(provider.uri());
        let model = model_from_config(&config).unwrap();
        let streamed = model.stream(request()).await.err();
        let completed = model.complete(request()).await.err();
        for error in [streamed, completed] {
            let error = error.expect("a redirect is an error");
            assert!(
                matches!(&error, ProviderError::Redirected { status: s, location: Some(_), .. } if *s == status),
                "{model_id} {status}: {error:?}"
            );
            assert!(!error.is_retryable());
            let shown = error.to_string();
            assert!(
                shown.contains(&format!("`{}/v1/steal?key=[REDACTED]`", elsewhere.uri())),
                "{model_id} {status}: {shown}"
            );
            assert!(!format!("{shown} {error:?}").contains("5151"), "{shown}");
        }
        let asked = provider.received_requests().await.unwrap_or_default();
        assert_eq!(
            asked.len(),
            2,
            "{model_id} {status}: one request per call, no retry"
        );
    }
    let reached = elsewhere.received_requests().await.unwrap_or_default();
    let leaked: Vec<_> = reached
        .iter()
        .map(|request| format!("{} {:?}", request.url, request.headers))
        .collect();
    assert!(leaked.is_empty(), "followed the redirect: {leaked:?}");
}

#[test]
fn default_headers_cannot_override_framing_or_the_key() {
    let keyed = |name: &str| {
        let mut config = ModelConfig::new("gpt-4o");
        config.api_key = Some("sk-server".into());
        config.default_headers.insert(name.into(), "x".into());
        config
    };
    for name in [
        "Host",
        "authorization",
        "Content-Length",
        "transfer-encoding",
        "Connection",
        "TE",
        "Upgrade",
        "Proxy-Authorization",
        "X-Api-Key",
        "x-goog-api-key",
        "Cookie",
    ] {
        let error = model_from_config(&keyed(name)).err().expect(name);
        assert!(
            matches!(&error, ProviderError::ForbiddenHeader { name: n, .. } if n == name),
            "{error:?}"
        );
        assert!(error.to_string().contains(name), "{error}");
    }
    assert!(model_from_config(&keyed("X-Team")).is_ok());
    // Without a key the caller may bring its own credential, never its own framing.
    let mut own = ModelConfig::new("gpt-4o");
    own.base_url = Some("http://127.0.0.1:9/v1".into());
    own.default_headers
        .insert("Authorization".into(), "Bearer mine".into());
    assert!(model_from_config(&own).is_ok());
    own.default_headers.insert("Host".into(), "evil".into());
    assert!(matches!(
        model_from_config(&own),
        Err(ProviderError::ForbiddenHeader { .. })
    ));
}

/// A number as a provider might write it in any numeric field.
fn wire_number() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<u64>().prop_map(|n| n.to_string()),
        any::<i64>().prop_map(|n| n.to_string()),
        any::<f64>()
            .prop_filter("JSON numbers are finite", |f| f.is_finite())
            .prop_map(|f| format!("{f:e}")),
        Just("4294967295".to_owned()),
        Just("18446744073709551615".to_owned()),
        Just("18446744073709551616".to_owned()),
        Just("-1".to_owned()),
        Just("1e400".to_owned()),
        (0u64..4).prop_map(|n| n.to_string()),
    ]
}

/// Event templates of each decoder with `#` where a number goes.
const CHAT: &[&str] = &[
    r#"{"id":"c","model":"m","choices":[{"index":#,"delta":{"content":"t"}}]}"#,
    r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":#,"id":"call","function":{"name":"f","arguments":"{}"}}]}}]}"#,
    r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":#,"function":{"arguments":"1"}}]}}]}"#,
    r#"{"choices":[{"index":#,"delta":{},"finish_reason":"tool_calls"}]}"#,
    r#"{"choices":[],"usage":{"prompt_tokens":#,"completion_tokens":#,"prompt_tokens_details":{"cached_tokens":#},"completion_tokens_details":{"reasoning_tokens":#},"prompt_cache_hit_tokens":#}}"#,
];
const RESPONSES: &[&str] = &[
    r#"{"type":"response.created","response":{"id":"r","model":"m"}}"#,
    r#"{"type":"response.output_item.added","output_index":#,"item":{"type":"function_call","call_id":"c","name":"f"}}"#,
    r#"{"type":"response.output_item.added","output_index":#,"item":{"type":"reasoning","id":"rs"}}"#,
    r#"{"type":"response.function_call_arguments.delta","output_index":#,"delta":"{}"}"#,
    r#"{"type":"response.reasoning_summary_part.added","output_index":#,"summary_index":#}"#,
    r#"{"type":"response.reasoning_summary_text.delta","output_index":#,"summary_index":#,"delta":"t"}"#,
    r#"{"type":"response.output_item.done","output_index":#,"item":{"type":"function_call","call_id":"c","name":"f","arguments":"{}"}}"#,
    r#"{"type":"response.completed","response":{"status":"completed","usage":{"input_tokens":#,"output_tokens":#,"input_tokens_details":{"cached_tokens":#},"output_tokens_details":{"reasoning_tokens":#}}}}"#,
];
const ANTHROPIC: &[&str] = &[
    r#"{"type":"message_start","message":{"id":"m","model":"m","usage":{"input_tokens":#,"cache_read_input_tokens":#,"cache_creation_input_tokens":#,"output_tokens":#}}}"#,
    r#"{"type":"content_block_start","index":#,"content_block":{"type":"tool_use","id":"t","name":"f","input":{}}}"#,
    r#"{"type":"content_block_start","index":#,"content_block":{"type":"thinking","thinking":"t"}}"#,
    r#"{"type":"content_block_delta","index":#,"delta":{"type":"input_json_delta","partial_json":"{}"}}"#,
    r#"{"type":"content_block_delta","index":#,"delta":{"type":"thinking_delta","thinking":"t"}}"#,
    r#"{"type":"content_block_stop","index":#}"#,
    r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":#,"output_tokens_details":{"thinking_tokens":#}}}"#,
];
const GEMINI: &[&str] = &[
    r#"{"candidates":[{"content":{"parts":[{"text":"t"}],"role":"model"},"index":#}],"usageMetadata":{"promptTokenCount":#,"candidatesTokenCount":#,"cachedContentTokenCount":#,"thoughtsTokenCount":#,"toolUsePromptTokenCount":#}}"#,
    r#"{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":{"n":#}}}],"role":"model"},"index":#}]}"#,
    r#"{"candidates":[{"content":{"parts":[{"text":"t","thought":true}]},"finishReason":"STOP","index":#}],"usageMetadata":{"promptTokenCount":#}}"#,
];

/// The SSE body of `picks` (template, numbers) from `templates`.
fn body(templates: &[&str], picks: &[(usize, Vec<String>)], with_names: bool) -> Vec<String> {
    picks
        .iter()
        .map(|(template, numbers)| {
            let template = templates[template % templates.len()];
            let mut numbers = numbers.iter().cycle();
            let data: String = template
                .split('#')
                .enumerate()
                .map(|(i, piece)| {
                    if i == 0 {
                        piece.to_owned()
                    } else {
                        format!("{}{piece}", numbers.next().unwrap())
                    }
                })
                .collect();
            if with_names {
                let name = serde_json::from_str::<serde_json::Value>(&data)
                    .ok()
                    .and_then(|v| v["type"].as_str().map(str::to_owned))
                    .unwrap_or_else(|| "message".into());
                format!("event: {name}\ndata: {data}\n\n")
            } else {
                format!("data: {data}\n\n")
            }
        })
        .collect()
}

/// Decodes on the current thread (every piece is ready, so nothing waits).
fn run(stream: EventStream) -> (Vec<StreamEvent>, Option<ProviderError>) {
    futures::executor::block_on(drain(stream))
}

/// The stream's contract under any numbers: it ends (no panic) with one `Done` or an error,
/// and what it built is bounded by what it was sent and by the block cap.
fn check(events: &[StreamEvent], error: Option<&ProviderError>, sent: usize) {
    let done = events
        .iter()
        .filter(|e| matches!(e, StreamEvent::Done { .. }))
        .count();
    assert!(done <= 1);
    assert!(error.is_none() || done == 0);
    let calls = events
        .iter()
        .filter(|e| matches!(e, StreamEvent::ToolCall(_)))
        .count();
    assert!(calls <= sent.min(MAX_OPEN_BLOCKS + sent));
    assert!(
        events.len() <= 4 * sent + 4,
        "{} events for {sent}",
        events.len()
    );
}

fn picks() -> impl Strategy<Value = Vec<(usize, Vec<String>)>> {
    prop::collection::vec(
        (0usize..16, prop::collection::vec(wire_number(), 1..6)),
        1..24,
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn chat_decoder_takes_any_numbers(picks in picks()) {
        let mut body = body(CHAT, &picks, false);
        body.push("data: [DONE]\n\n".into());
        let (events, error) = run(openai::decode_chat_stream(futures::stream::iter(body)));
        check(&events, error.as_ref(), picks.len());
    }

    #[test]
    fn responses_decoder_takes_any_numbers(picks in picks()) {
        let body = body(RESPONSES, &picks, true);
        let (events, error) = run(openai::decode_responses_stream(futures::stream::iter(body)));
        check(&events, error.as_ref(), picks.len());
    }

    #[test]
    fn anthropic_decoder_takes_any_numbers(picks in picks()) {
        let mut body = body(ANTHROPIC, &picks, true);
        body.push("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n".into());
        let (events, error) = run(anthropic::decode_stream(futures::stream::iter(body)));
        check(&events, error.as_ref(), picks.len());
    }

    #[test]
    fn gemini_decoder_takes_any_numbers(picks in picks()) {
        let body = body(GEMINI, &picks, false);
        let (events, error) = run(gemini::decode_stream(futures::stream::iter(body)));
        check(&events, error.as_ref(), picks.len());
    }
}

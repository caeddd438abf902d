//! Anthropic failures: every recorded error body, retries (529 and 429 then 200, `retry-after`,
//! in-band `overloaded_error` before any content), no retry on 4xx or once content flowed,
//! truncated and malformed streams, invalid tool input JSON, and keys kept out of errors.

use crate::support;

use std::time::{Duration, Instant};

use futures::StreamExt;
use providers::{
    ChatModel, ChatRequest, FinishReason, Message, ModelConfig, Provider, ProviderError,
    RetryPolicy, StreamEvent, model_from_config,
};
use support::{Canned, Replay, config, fixture, fixture_text, streamed};

const PATH: &str = "/v1/messages";
const KEY: &str = "sk-ant-api03-SECRET-do-not-leak";

fn model(replay: &Replay, retry: RetryPolicy) -> Box<dyn ChatModel> {
    let config = ModelConfig {
        api_key: Some(KEY.into()),
        retry,
        ..config("claude-sonnet-4-5", &replay.url())
    };
    model_from_config(&config).expect("the Anthropic model builds")
}

fn request() -> ChatRequest {
    ChatRequest::new(vec![Message::human("Hi")])
}

fn assert_keyless(err: &ProviderError) {
    assert!(!err.to_string().contains(KEY), "{err}");
    assert!(!format!("{err:?}").contains(KEY), "{err:?}");
}

/// Reads a stream to its end: the events, then the error that ended it (if any).
async fn drain(
    model: &dyn ChatModel,
) -> Result<(Vec<StreamEvent>, Option<ProviderError>), ProviderError> {
    let mut stream = model.stream(request()).await?;
    let mut events = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(event) => events.push(event),
            Err(err) => return Ok((events, Some(err))),
        }
    }
    Ok((events, None))
}

/// The SSE events of a recorded stream, as separate strings.
fn events_of(name: &str) -> Vec<String> {
    fixture_text(&format!("anthropic/{name}"))
        .split_inclusive("\n\n")
        .map(str::to_owned)
        .collect()
}

fn sse(body: impl Into<Vec<u8>>) -> Canned {
    Canned::fixture("anthropic/stream_text.sse").body(body)
}

const OVERLOADED_EVENT: &str = "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n";

#[tokio::test]
async fn every_recorded_error_body() {
    let cases = [
        (
            400,
            "error_400_invalid_request.json",
            "invalid_request_error",
            "This model does not support effort level 'xhigh'. Supported levels: high, low, max, medium.",
            "req_011Ca7jT9AHpgXgdv8igm4z9",
            false,
        ),
        (
            401,
            "error_401_authentication.json",
            "authentication_error",
            "invalid x-api-key",
            "req_011CWdMEehrhsdujMyQ9pChP",
            false,
        ),
        (
            404,
            "error_404_model_not_found.json",
            "not_found_error",
            "model: this-model-does-not-exist-12345",
            "req_011CWbzicpaYMyAiiXobLkzi",
            false,
        ),
        (
            404,
            "error_404_not_found.json",
            "not_found_error",
            "model: claude-does-not-exist",
            "req_011CVEA3SF7rnb3DuBZytqQa",
            false,
        ),
        (
            529,
            "error_529_overloaded.json",
            "overloaded_error",
            "Overloaded",
            "req_011CX7J5ZXp3npD8nY7VYZvm",
            true,
        ),
    ];
    for (status, name, kind, message, request_id, retryable) in cases {
        let replay = Replay::sequence(
            PATH,
            vec![Canned::error(status, &format!("anthropic/{name}"))],
        )
        .await;
        let model = model(&replay, support::fast_retries());
        let from_complete = model.complete(request()).await.expect_err(name);
        let from_stream = model.stream(request()).await.err().expect(name);
        assert_eq!(from_complete, from_stream, "{name}");
        let ProviderError::Http {
            provider,
            status: got_status,
            error_type,
            code,
            message: got_message,
            request_id: got_id,
            retryable: got_retryable,
            retry_after,
            body_cut_at: None,
        } = &from_complete
        else {
            panic!("{name}: {from_complete:?}");
        };
        assert_eq!(*provider, Provider::Anthropic);
        assert_eq!(*got_status, status, "{name}");
        assert_eq!(error_type.as_deref(), Some(kind), "{name}");
        assert_eq!(code.as_deref(), None);
        assert_eq!(got_message, message, "{name}");
        assert_eq!(got_id.as_deref(), Some(request_id), "{name}");
        assert_eq!(*got_retryable, retryable, "{name}");
        assert_eq!(from_complete.is_retryable(), retryable);
        assert_eq!(*retry_after, None);
        let shown = from_complete.to_string();
        assert!(shown.contains(kind) && shown.contains(message), "{shown}");
        assert_keyless(&from_complete);
        // 4xx is never retried; 529 is, three times per call, for both calls.
        let attempts = if retryable { 2 * 4 } else { 2 };
        assert_eq!(replay.requests().await.len(), attempts, "{name}");
    }
}

#[tokio::test]
async fn overloaded_529_then_success() {
    let overloaded = Canned::error(529, "anthropic/error_529_overloaded.json");
    let replay = Replay::sequence(
        PATH,
        vec![
            overloaded.clone(),
            Canned::fixture("anthropic/stream_text.sse"),
        ],
    )
    .await;
    let (_, answer) = streamed(model(&replay, support::fast_retries()).as_ref(), request())
        .await
        .expect("the retry succeeds");
    assert_eq!(answer.message.text(), "- Captain\n- Scoop");
    assert_eq!(replay.requests().await.len(), 2);

    let replay = Replay::sequence(
        PATH,
        vec![
            overloaded,
            Canned::fixture("anthropic/message_cache_read.json"),
        ],
    )
    .await;
    let answer = model(&replay, support::fast_retries())
        .complete(request())
        .await
        .expect("the retry succeeds");
    assert_eq!(answer.message.text(), "OK");
    assert_eq!(replay.requests().await.len(), 2);
}

/// No real Anthropic 429 was recorded (WIRE.md §10); the body is the documented envelope.
fn rate_limited(retry_after: &str) -> Canned {
    Canned::error(429, "anthropic/error_529_overloaded.json")
        .body(r#"{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"},"request_id":"req_rate"}"#)
        .header("retry-after", retry_after)
}

#[tokio::test]
async fn rate_limit_429_then_success_honours_retry_after() {
    let replay = Replay::sequence(
        PATH,
        vec![
            rate_limited("1"),
            Canned::fixture("anthropic/stream_thinking_text.sse"),
        ],
    )
    .await;
    let started = Instant::now();
    let (_, answer) = streamed(model(&replay, support::fast_retries()).as_ref(), request())
        .await
        .expect("the retry succeeds");
    // The policy's own backoff is a few milliseconds: the wait is the server's.
    assert!(
        started.elapsed() >= Duration::from_millis(950),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(answer.finish_reason, FinishReason::Stop);
    assert_eq!(replay.requests().await.len(), 2);
}

#[tokio::test]
async fn a_wait_longer_than_allowed_is_returned_not_slept() {
    let replay = Replay::sequence(PATH, vec![rate_limited("30")]).await;
    let err = model(&replay, support::fast_retries())
        .complete(request())
        .await
        .expect_err("30 s is over the 2 s limit");
    assert_eq!(err.status(), Some(429));
    assert_eq!(err.error_type(), Some("rate_limit_error"));
    assert_eq!(err.retry_after(), Some(Duration::from_secs(30)));
    assert!(err.is_retryable());
    assert_eq!(replay.requests().await.len(), 1);
}

/// A 200 whose stream reports `overloaded_error` before any content is retried; the caller
/// never sees the failed attempt.
#[tokio::test]
async fn in_band_overloaded_before_content_is_retried() {
    let start = &events_of("stream_text.sse")[0];
    let failing = sse(format!("{start}{OVERLOADED_EVENT}"));
    let replay = Replay::sequence(
        PATH,
        vec![
            failing.clone(),
            Canned::fixture("anthropic/stream_text.sse"),
        ],
    )
    .await;
    let (events, answer) = streamed(model(&replay, support::fast_retries()).as_ref(), request())
        .await
        .expect("the second attempt streams");
    assert_eq!(answer.message.text(), "- Captain\n- Scoop");
    let starts = events
        .iter()
        .filter(|e| matches!(e, StreamEvent::Started { .. }))
        .count();
    assert_eq!(starts, 1);
    assert_eq!(replay.requests().await.len(), 2);

    // Always overloaded: the retries run out and `stream` itself fails.
    let replay = Replay::sequence(PATH, vec![failing]).await;
    let err = model(&replay, support::fast_retries())
        .stream(request())
        .await
        .err()
        .expect("every attempt is overloaded");
    assert_eq!(
        err,
        ProviderError::Stream {
            provider: Provider::Anthropic,
            error_type: Some("overloaded_error".into()),
            message: "Overloaded".into(),
            retryable: true,
        }
    );
    assert_eq!(replay.requests().await.len(), 4);
}

#[tokio::test]
async fn in_band_error_after_content_ends_the_stream_without_retry() {
    let events = events_of("stream_text.sse");
    // message_start, content_block_start, ping, the first text delta, then the error.
    let body = format!("{}{OVERLOADED_EVENT}", events[..4].concat());
    let replay = Replay::sequence(PATH, vec![sse(body)]).await;
    let model = model(&replay, support::fast_retries());
    let (events, err) = drain(model.as_ref()).await.expect("the stream starts");
    assert!(
        events.contains(&StreamEvent::TextDelta("-".into())),
        "{events:?}"
    );
    assert!(!events.iter().any(|e| matches!(e, StreamEvent::Done { .. })));
    let err = err.expect("the error ends the stream");
    assert_eq!(err.error_type(), Some("overloaded_error"));
    assert!(err.is_retryable(), "the caller may try again");
    assert_eq!(
        replay.requests().await.len(),
        1,
        "no automatic retry once text flowed"
    );
}

#[tokio::test]
async fn non_retryable_in_band_error_is_returned_at_once() {
    let start = &events_of("stream_text.sse")[0];
    let body = format!(
        "{start}event: error\ndata: {{\"type\":\"error\",\"error\":{{\"type\":\"invalid_request_error\",\"message\":\"prompt is too long\"}}}}\n\n"
    );
    let replay = Replay::sequence(PATH, vec![sse(body)]).await;
    let err = model(&replay, support::fast_retries())
        .stream(request())
        .await
        .err()
        .expect("the stream fails before content");
    assert_eq!(err.error_type(), Some("invalid_request_error"));
    assert!(!err.is_retryable());
    assert!(err.to_string().contains("prompt is too long"));
    assert_eq!(replay.requests().await.len(), 1);
}

#[tokio::test]
async fn truncated_streams() {
    let events = events_of("stream_thinking_tool_use.sse");
    let stop = events
        .iter()
        .position(|e| e.contains("message_delta"))
        .expect("message_delta");

    // Cut inside the tool_use block: what arrived is delivered, then a truncation error.
    let body = events[..stop - 1].concat();
    let replay = Replay::sequence(PATH, vec![sse(body)]).await;
    let (events_seen, err) = drain(model(&replay, RetryPolicy::none()).as_ref())
        .await
        .expect("the stream starts");
    assert!(
        events_seen
            .iter()
            .any(|e| matches!(e, StreamEvent::Reasoning(_)))
    );
    let err = err.expect("a truncation error");
    assert!(
        matches!(
            err,
            ProviderError::StreamTruncated {
                provider: Some(Provider::Anthropic),
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.is_retryable());

    // Cut in the middle of an event's JSON line: the partial event never parses.
    let whole = fixture("anthropic/stream_thinking_tool_use.sse");
    let replay = Replay::sequence(PATH, vec![sse(whole[..whole.len() / 2].to_vec())]).await;
    let (_, err) = drain(model(&replay, RetryPolicy::none()).as_ref())
        .await
        .expect("starts");
    assert!(
        matches!(err, Some(ProviderError::StreamTruncated { .. })),
        "{err:?}"
    );

    // Only `message_stop` lost: the stop reason already said the answer is complete.
    let body = events[..=stop].concat();
    let replay = Replay::sequence(PATH, vec![sse(body)]).await;
    let (_, answer) = streamed(model(&replay, RetryPolicy::none()).as_ref(), request())
        .await
        .expect("complete without message_stop");
    assert_eq!(answer.finish_reason, FinishReason::ToolCalls);
    assert_eq!(answer.message.tool_calls().count(), 1);
    assert_eq!(answer.usage.output_tokens, 92);

    // An empty 200 body.
    let replay = Replay::sequence(PATH, vec![sse(Vec::new())]).await;
    let err = model(&replay, RetryPolicy::none())
        .stream(request())
        .await
        .err();
    assert!(
        matches!(err, Some(ProviderError::StreamTruncated { .. })),
        "{err:?}"
    );
}

#[tokio::test]
async fn malformed_events() {
    let start = events_of("stream_text.sse")[0].clone();
    let cases: [(Vec<u8>, &str); 3] = [
        (
            format!("{start}event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\"unterminated}}\n\n").into_bytes(),
            "invalid JSON",
        ),
        (
            [start.as_bytes(), b"event: ping\ndata: {\"type\": \"ping\", \xff}\n\n"].concat(),
            "UTF-8",
        ),
        (
            format!("{start}event: content_block_start\ndata: [1, 2, 3]\n\n").into_bytes(),
            "invalid JSON",
        ),
    ];
    for (body, says) in cases {
        let replay = Replay::sequence(PATH, vec![sse(body)]).await;
        let err = model(&replay, RetryPolicy::none())
            .stream(request())
            .await
            .err()
            .expect("a decode error before content");
        assert!(
            matches!(
                err,
                ProviderError::Decode {
                    provider: Provider::Anthropic,
                    ..
                }
            ),
            "{err:?}"
        );
        assert!(err.to_string().contains(says), "{err}");
        assert!(!err.is_retryable());
    }

    // Lines that are not SSE fields, comments and unknown events are skipped, as the SSE
    // rules say; the stream still needs its end.
    let body = format!(
        ": comment\nnonsense line\n\n{start}event: brand_new_event\ndata: {{\"type\":\"brand_new_event\"}}\n\n{}",
        events_of("stream_text.sse")[1..].concat()
    );
    let replay = Replay::sequence(PATH, vec![sse(body)]).await;
    let (_, answer) = streamed(model(&replay, RetryPolicy::none()).as_ref(), request())
        .await
        .expect("unknown lines and events are skipped");
    assert_eq!(answer.message.text(), "- Captain\n- Scoop");

    // A non-streamed body that is not a message.
    let replay = Replay::sequence(
        PATH,
        vec![Canned::fixture("anthropic/message_cache_read.json").body("<html>bad gateway</html>")],
    )
    .await;
    let err = model(&replay, RetryPolicy::none())
        .complete(request())
        .await
        .expect_err("HTML");
    assert!(
        matches!(err, ProviderError::Decode { ref excerpt, .. } if excerpt.starts_with("<html>")),
        "{err:?}"
    );

    // An error envelope with status 200.
    let replay = Replay::sequence(
        PATH,
        vec![Canned::fixture("anthropic/error_529_overloaded.json")],
    )
    .await;
    let err = model(&replay, RetryPolicy::none())
        .complete(request())
        .await
        .expect_err("error body");
    assert_eq!(err.error_type(), Some("overloaded_error"));
    assert!(err.is_retryable());
}

/// The model may stream input JSON that does not parse; the call keeps it exactly as written
/// (the caller's tool reports the problem), and sending it back uses `{}`, the only input the
/// API would accept.
#[tokio::test]
async fn invalid_json_in_input_deltas_is_kept_verbatim() {
    let body = fixture_text("anthropic/stream_server_tool_then_tool_use.sse").replace(
        r#""partial_json":": \"EUR\"}"}"#,
        r#""partial_json":": \"EUR\", oops"}"#,
    );
    let replay = Replay::sequence(PATH, vec![sse(body)]).await;
    let (_, answer) = streamed(model(&replay, RetryPolicy::none()).as_ref(), request())
        .await
        .expect("the stream completes");
    let call = answer
        .message
        .tool_calls()
        .next()
        .expect("the client call")
        .clone();
    assert_eq!(
        call.arguments,
        r#"{"from_currency": "USD", "to_currency": "EUR", oops"#
    );
    assert!(serde_json::from_str::<serde_json::Value>(&call.arguments).is_err());

    let followup = ChatRequest::new(vec![
        Message::human("rate?"),
        answer.message,
        Message::tool_response(call.id.clone(), call.name, "error: invalid arguments"),
    ]);
    let replay = Replay::fixture(PATH, "anthropic/message_text_after_tool.json").await;
    model(&replay, RetryPolicy::none())
        .complete(followup)
        .await
        .expect("answer");
    let sent = replay.requests().await.remove(0);
    let tool_use = &sent["messages"][1]["content"][1];
    assert_eq!(tool_use["id"], call.id);
    assert_eq!(tool_use["input"], serde_json::json!({}));
}

#[tokio::test]
async fn transport_errors_hide_the_key() {
    // Nothing listens on port 9 of localhost.
    let config = ModelConfig {
        api_key: Some(KEY.into()),
        base_url: Some("http://127.0.0.1:9".into()),
        retry: RetryPolicy::none(),
        ..ModelConfig::new("claude-sonnet-4-5")
    };
    assert!(!format!("{config:?}").contains(KEY));
    let model = model_from_config(&config).expect("builds");
    let err = model
        .complete(request())
        .await
        .expect_err("connection refused");
    assert!(matches!(err, ProviderError::Transport { .. }), "{err:?}");
    assert!(err.is_retryable());
    assert_keyless(&err);
}

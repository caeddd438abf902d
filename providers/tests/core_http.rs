//! The shared core through the OpenAI adapter: chunking, truncation, malformed streams,
//! cancellation, timeouts, transport errors, configuration, fuzzing of the stream parsers.

use crate::support;

use std::time::Duration;

use futures::StreamExt;
use proptest::prelude::*;
use providers::openai::{decode_chat_stream, decode_responses_stream};
use providers::{
    ChatModel, ChatRequest, FinishReason, Message, ModelConfig, Provider, ProviderError,
    RetryPolicy, StreamEvent, TimeoutPhase, Timeouts, detect_provider, model_from_config,
};
use support::{calls, decoded, fixture, split_at};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const CHAT_STREAMS: &[&str] = &[
    "openai/chat_stream_tool_call.sse",
    "openai/chat_stream_text_after_tool.sse",
    "openai/chat_stream_parallel_tools.sse",
    "openai/chat_stream_parallel_same_tool.sse",
    "openai/chat_stream_tool_call_obfuscation.sse",
    "deepseek/chat_stream_reasoning_content.sse",
];

const RESPONSES_STREAMS: &[&str] = &[
    "openai/responses_stream_function_call.sse",
    "openai/responses_stream_reasoning_function_call.sse",
    "openai/responses_stream_reasoning_followup_text.sse",
    "openai/responses_stream_parallel_function_calls.sse",
    "openai/responses_stream_reasoning_summary.sse",
    "openai/responses_stream_text.sse",
];

fn decode(name: &str, pieces: Vec<Vec<u8>>) -> providers::EventStream {
    let body = futures::stream::iter(pieces);
    if name.contains("responses_") {
        decode_responses_stream(body)
    } else {
        decode_chat_stream(body)
    }
}

async fn parse(name: &str, pieces: Vec<Vec<u8>>) -> Result<providers::ChatResponse, ProviderError> {
    decoded(decode(name, pieces))
        .await
        .map(|(_, response)| response)
}

/// Every recorded stream parses to the same answer however TCP splits it: at every byte (so
/// inside multi-byte characters and between `\r` and `\n`), and at pseudo-random offsets.
#[tokio::test]
async fn chunking_never_changes_the_answer() {
    for name in CHAT_STREAMS.iter().chain(RESPONSES_STREAMS) {
        let body = fixture(name);
        let whole = parse(name, vec![body.clone()]).await.expect("parses whole");
        let bytes: Vec<Vec<u8>> = body.iter().map(|b| vec![*b]).collect();
        assert_eq!(
            parse(name, bytes).await.expect("parses bytewise"),
            whole,
            "{name} bytewise"
        );
        let mut seed = 0x9e37_79b9_u64;
        let offsets: Vec<usize> = (0..40)
            .map(|_| {
                seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                (seed >> 33) as usize % body.len().max(1)
            })
            .collect();
        assert_eq!(
            parse(name, split_at(&body, &offsets))
                .await
                .expect("parses"),
            whole,
            "{name} random"
        );
    }
}

/// No recording interleaves parallel argument fragments; reorder one that way (WIRE.md §10).
#[tokio::test]
async fn interleaved_parallel_argument_fragments() {
    let text = String::from_utf8(fixture("openai/chat_stream_parallel_tools.sse")).expect("utf-8");
    let events: Vec<&str> = text.split("\n\n").filter(|e| !e.is_empty()).collect();
    let (second, rest): (Vec<&str>, Vec<&str>) =
        events.iter().partition(|e| e.contains(r#""index":1"#));
    // Put the second call's fragments right after the first call's opening fragment.
    let first_open = rest
        .iter()
        .position(|e| e.contains(r#""index":0,"id""#))
        .expect("call 0 opens");
    let mut reordered: Vec<&str> = rest[..=first_open].to_vec();
    reordered.extend(&second);
    reordered.extend(&rest[first_open + 1..]);
    let body = reordered.join("\n\n") + "\n\n";
    let response = parse("chat", vec![body.into_bytes()])
        .await
        .expect("parses");
    assert_eq!(
        calls(&response),
        [
            (
                "call_NS4iQj14cDFwc0BnrKqDHavt".into(),
                "get_weather".into(),
                r#"{"city": "Mexico City"}"#.into()
            ),
            (
                "call_SkGkkGDvHQEEk0CGbnAh2AQw".into(),
                "get_product_name".into(),
                "{}".into()
            ),
        ]
    );
}

#[tokio::test]
async fn truncated_streams_are_errors() {
    let body = String::from_utf8(fixture("openai/chat_stream_tool_call.sse")).expect("utf-8");
    let before_finish = &body[..body
        .find(r#""finish_reason":"tool_calls""#)
        .expect("has finish")];
    let cut = &before_finish[..before_finish.rfind("\n\n").expect("event boundary") + 2];
    let error = parse("chat", vec![cut.as_bytes().to_vec()])
        .await
        .expect_err("truncated");
    assert!(
        matches!(
            error,
            ProviderError::StreamTruncated {
                provider: Some(Provider::OpenAi),
                ..
            }
        ),
        "{error:?}"
    );
    assert!(error.is_retryable());

    // Cut mid-event: the half event is never dispatched, still truncated.
    let error = parse("chat", vec![body.as_bytes()[..700].to_vec()])
        .await
        .expect_err("truncated");
    assert!(matches!(error, ProviderError::StreamTruncated { .. }));

    // Ending after the finish reason without `[DONE]` is accepted (some servers omit it).
    let no_done = &body[..body.find("data: [DONE]").expect("has DONE")];
    let response = parse("chat", vec![no_done.as_bytes().to_vec()])
        .await
        .expect("complete enough");
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);

    let body =
        String::from_utf8(fixture("openai/responses_stream_function_call.sse")).expect("utf-8");
    let cut = &body[..body
        .find("event: response.completed")
        .expect("has completed")];
    let error = parse("responses_", vec![cut.as_bytes().to_vec()])
        .await
        .expect_err("truncated");
    assert!(
        matches!(error, ProviderError::StreamTruncated { .. }),
        "{error:?}"
    );
}

#[tokio::test]
async fn malformed_events_are_decode_errors_with_the_payload() {
    let body = "data: {\"id\":\"x\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\ndata: {not json at all\n\n";
    let mut stream = decode("chat", vec![body.as_bytes().to_vec()]);
    let mut seen = Vec::new();
    while let Some(item) = stream.next().await {
        seen.push(item);
    }
    assert!(matches!(seen[0], Ok(StreamEvent::Started { .. })));
    assert_eq!(
        seen[1],
        Ok(StreamEvent::TextDelta("Hi".into())),
        "events before the error arrive"
    );
    match seen.last() {
        Some(Err(ProviderError::Decode { excerpt, .. })) => assert_eq!(excerpt, "{not json at all"),
        other => panic!("expected a decode error last, got {other:?}"),
    }

    let error = parse("chat", vec![vec![0xff, 0xfe, b'\n', b'\n']])
        .await
        .expect_err("not UTF-8");
    assert!(
        matches!(
            error,
            ProviderError::Decode { .. } | ProviderError::StreamTruncated { .. }
        ),
        "{error:?}"
    );
}

/// Arguments are kept exactly as the model wrote them, even when they are not JSON.
#[tokio::test]
async fn invalid_json_in_argument_deltas_is_kept_verbatim() {
    let chunk = |delta: &str| {
        format!(
            "data: {{\"id\":\"c\",\"choices\":[{{\"index\":0,\"delta\":{delta},\"finish_reason\":null}}]}}\n\n"
        )
    };
    let body = [
        chunk(r#"{"tool_calls":[{"index":0,"id":"call_x","type":"function","function":{"name":"f","arguments":""}}]}"#),
        chunk(r#"{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\": 1,"}}]}"#),
        chunk(r#"{"tool_calls":[{"index":0,"function":{"arguments":" \"b\": tru"}}]}"#),
        "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n".to_owned(),
    ]
    .concat();
    let response = parse("chat", vec![body.into_bytes()])
        .await
        .expect("parses");
    assert_eq!(
        calls(&response),
        [("call_x".into(), "f".into(), r#"{"a": 1, "b": tru"#.into())]
    );
}

/// A tiny HTTP server: sends `head` and `first_event`, then reports whether the client closed
/// the connection within `wait`.
async fn slow_server(first_event: &'static str) -> (String, tokio::task::JoinHandle<bool>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let handle = tokio::spawn(async move {
        let Ok((mut socket, _)) = listener.accept().await else {
            return false;
        };
        let mut request = vec![0_u8; 65_536];
        let _ = socket.read(&mut request).await;
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
        let chunk = format!("{:x}\r\n{first_event}\r\n", first_event.len());
        if socket.write_all(head.as_bytes()).await.is_err()
            || socket.write_all(chunk.as_bytes()).await.is_err()
        {
            return false;
        }
        let mut buf = [0_u8; 1024];
        matches!(
            tokio::time::timeout(Duration::from_secs(5), socket.read(&mut buf)).await,
            Ok(Ok(0)) | Ok(Err(_))
        )
    });
    (url, handle)
}

const FIRST: &str = "data: {\"id\":\"c\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n";

#[tokio::test]
async fn dropping_the_stream_closes_the_connection() {
    let (url, server) = slow_server(FIRST).await;
    let model = model_from_config(&support::config("gpt-4o", &url)).expect("builds");
    let mut stream = model
        .stream(ChatRequest::new(vec![Message::human("hi")]))
        .await
        .expect("starts");
    assert!(matches!(
        stream.next().await,
        Some(Ok(StreamEvent::Started { .. }))
    ));
    assert_eq!(
        stream.next().await,
        Some(Ok(StreamEvent::TextDelta("Hel".into())))
    );
    drop(stream);
    assert!(
        server.await.expect("server task"),
        "the server saw the connection close"
    );
}

/// The idle timeout of [`model_with_idle_timeout`].
const IDLE: Duration = Duration::from_millis(150);

/// A model of the server at `url` whose stream times out after [`IDLE`] of silence.
fn model_with_idle_timeout(url: &str) -> Box<dyn ChatModel> {
    let mut cfg = support::config("gpt-4o", url);
    cfg.timeouts = Timeouts {
        idle: IDLE,
        ..Timeouts::default()
    };
    model_from_config(&cfg).expect("builds")
}

/// The error of a stream silent for [`IDLE`].
fn idle_timeout() -> ProviderError {
    ProviderError::Timeout {
        provider: Provider::OpenAi,
        phase: TimeoutPhase::Idle,
        after: IDLE,
    }
}

/// A server that sends `deltas` text deltas `every` apart, then falls silent without ending
/// the answer.
async fn trickling_server(deltas: usize, every: Duration) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    tokio::spawn(async move {
        let Ok((mut socket, _)) = listener.accept().await else {
            return;
        };
        let mut request = vec![0_u8; 65_536];
        let _ = socket.read(&mut request).await;
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
        if socket.write_all(head.as_bytes()).await.is_err() {
            return;
        }
        for n in 0..deltas {
            tokio::time::sleep(every).await;
            let event = format!(
                "data: {{\"id\":\"c\",\"model\":\"m\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"w{n} \"}}}}]}}\n\n"
            );
            let chunk = format!("{:x}\r\n{event}\r\n", event.len());
            if socket.write_all(chunk.as_bytes()).await.is_err() {
                return;
            }
        }
        let mut buf = [0_u8; 1024];
        let _ = tokio::time::timeout(Duration::from_secs(5), socket.read(&mut buf)).await;
    });
    url
}

/// The idle timeout counts from the last chunk: an answer whose chunks keep coming runs past
/// it as long as it likes, and the silence after them ends it.
#[tokio::test]
async fn the_idle_timeout_counts_from_the_last_chunk() {
    let url = trickling_server(8, Duration::from_millis(60)).await;
    let model = model_with_idle_timeout(&url);
    let started = std::time::Instant::now();
    let mut stream = model
        .stream(ChatRequest::new(vec![Message::human("hi")]))
        .await
        .expect("starts");
    let mut text = String::new();
    let mut last_delta = started.elapsed();
    let error = loop {
        match stream.next().await {
            Some(Ok(StreamEvent::TextDelta(delta))) => {
                text.push_str(&delta);
                last_delta = started.elapsed();
            }
            Some(Ok(_)) => {}
            Some(Err(error)) => break error,
            None => panic!("the stream ended without its timeout"),
        }
    };
    let silence = started.elapsed() - last_delta;
    assert_eq!(
        text, "w0 w1 w2 w3 w4 w5 w6 w7 ",
        "every chunk before the silence"
    );
    assert_eq!(error, idle_timeout());
    assert!(
        silence >= Duration::from_millis(140),
        "timed out {silence:?} after the last chunk, before the idle time"
    );
    assert!(
        last_delta >= Duration::from_millis(400),
        "the chunks came for {last_delta:?}, past the idle time"
    );
}

#[tokio::test]
async fn idle_and_first_byte_timeouts() {
    let (url, _server) = slow_server(FIRST).await;
    let model = model_with_idle_timeout(&url);
    let stream = model
        .stream(ChatRequest::new(vec![Message::human("hi")]))
        .await
        .expect("starts");
    let error = decoded(stream).await.expect_err("stalls");
    assert_eq!(error, idle_timeout());

    let server = wiremock::MockServer::start().await;
    wiremock::Mock::given(wiremock::matchers::any())
        .respond_with(wiremock::ResponseTemplate::new(200).set_delay(Duration::from_secs(2)))
        .mount(&server)
        .await;
    let mut cfg = support::config("gpt-4o", &server.uri());
    cfg.retry = RetryPolicy::none();
    cfg.timeouts.first_byte = Duration::from_millis(100);
    let error = model_from_config(&cfg)
        .expect("builds")
        .complete(ChatRequest::new(vec![Message::human("hi")]))
        .await
        .expect_err("times out");
    assert!(
        matches!(
            error,
            ProviderError::Timeout {
                phase: TimeoutPhase::FirstByte,
                ..
            }
        ),
        "{error:?}"
    );
}

/// One model configuration used from one runtime, then another while the first stays alive
/// but idle (a blocking CLI runtime beside a server's), then from a third after the first is
/// dropped: every answer arrives. A keep-alive connection is driven by an I/O task on the
/// runtime that opened it; handed to a request on another runtime, it made that request wait
/// for a runtime that never ran (or fail with "dispatch task is gone" when it shut down).
#[test]
fn each_runtime_answers_over_connections_of_its_own() {
    let runtime = || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime")
    };
    let first = runtime();
    let replay = first.block_on(support::Replay::fixture(
        "/v1/chat/completions",
        "openai/chat_text.json",
    ));
    let mut cfg = support::config("gpt-4o", &format!("{}/v1", replay.url()));
    cfg.retry = RetryPolicy::none();
    cfg.timeouts.first_byte = Duration::from_secs(5);
    let model = model_from_config(&cfg).expect("builds");
    let ask = |runtime: &tokio::runtime::Runtime| {
        runtime.block_on(async {
            let answer = model
                .complete(ChatRequest::new(vec![Message::human("hi")]))
                .await;
            // Lets the runtime put the finished connection back into its idle pool.
            for _ in 0..16 {
                tokio::task::yield_now().await;
            }
            answer
        })
    };
    ask(&first).expect("the first runtime's answer");
    let second = runtime();
    let answer = ask(&second);
    assert!(answer.is_ok(), "beside an idle runtime: {answer:?}");
    drop(first);
    let answer = ask(&second);
    assert!(
        answer.is_ok(),
        "after the first runtime is gone: {answer:?}"
    );
    let third = runtime();
    let answer = ask(&third);
    assert!(answer.is_ok(), "from a new runtime: {answer:?}");
    let served = third.block_on(replay.requests()).len();
    assert_eq!(served, 4, "each call reached the provider once");
}

#[tokio::test]
async fn connection_failures_are_transport_errors_without_secrets() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!(
        "http://{}/v1?key=secret-in-url",
        listener.local_addr().expect("addr")
    );
    drop(listener);
    let mut cfg = support::config("gpt-4o", &url);
    cfg.retry = RetryPolicy::none();
    let error = model_from_config(&cfg)
        .expect("builds")
        .complete(ChatRequest::new(vec![Message::human("hi")]))
        .await
        .expect_err("refused");
    assert!(
        matches!(error, ProviderError::Transport { .. }),
        "{error:?}"
    );
    assert!(error.is_retryable());
    let shown = format!("{error} {error:?}");
    assert!(
        !shown.contains("secret-in-url") && !shown.contains("test-key-123"),
        "{shown}"
    );
}

#[test]
fn config_debug_redacts_secrets() {
    let cfg = ModelConfig {
        api_key: Some("sk-very-secret".into()),
        default_headers: [
            ("x-api-key".to_owned(), "hdr-secret".to_owned()),
            ("x-team".to_owned(), "skein".to_owned()),
        ]
        .into(),
        ..ModelConfig::new("gpt-4o")
    };
    let shown = format!("{cfg:?}");
    assert!(
        !shown.contains("sk-very-secret") && !shown.contains("hdr-secret"),
        "{shown}"
    );
    assert!(shown.contains("skein") && shown.contains("<redacted>"));
}

#[test]
fn provider_detection_order() {
    let cases = [
        (Some("openai"), "claude-3", Provider::OpenAi),
        (Some("GPT"), "x", Provider::OpenAi),
        (Some("anthropic"), "gpt-4o", Provider::Anthropic),
        (Some(" claude "), "x", Provider::Anthropic),
        (Some("google"), "x", Provider::Google),
        (Some("gemini"), "x", Provider::Google),
        (Some("mistral"), "claude-sonnet-4", Provider::Anthropic),
        (None, "gpt-4o", Provider::OpenAi),
        (None, "o1-mini", Provider::OpenAi),
        (None, "o3-mini", Provider::OpenAi),
        (None, "chatgpt-4o-latest", Provider::OpenAi),
        (None, "Claude-3-5-Sonnet", Provider::Anthropic),
        (None, "gemini-2.0-flash", Provider::Google),
        (None, "o1", Provider::OpenAi),
        (None, "deepseek-chat", Provider::OpenAi),
        (Some(""), "llama3", Provider::OpenAi),
    ];
    for (model_type, id, expected) in cases {
        assert_eq!(
            detect_provider(model_type, id),
            expected,
            "{model_type:?} {id}"
        );
    }
}

#[test]
fn model_from_config_dispatch() {
    let with_key = |id: &str| ModelConfig {
        api_key: Some("k".into()),
        ..ModelConfig::new(id)
    };
    let model = model_from_config(&with_key("gpt-4o-mini-2024-07-18")).expect("openai");
    assert_eq!(model.info().provider, Provider::OpenAi);
    assert_eq!(model.info().max_output_tokens, 16_384);
    assert!(matches!(
        model_from_config(&with_key(" ")),
        Err(ProviderError::Config { .. })
    ));
    // Anthropic has one API: asking it for OpenAI's Responses API is a configuration error.
    let bad_format = ModelConfig {
        api_format: Some(providers::ApiFormat::Responses),
        ..with_key("claude-sonnet-4-5")
    };
    assert!(matches!(
        model_from_config(&bad_format),
        Err(ProviderError::Config { .. })
    ));
    let bad_header = ModelConfig {
        default_headers: [("bad header".to_owned(), "v".to_owned())].into(),
        ..with_key("gpt-4o")
    };
    assert!(matches!(
        model_from_config(&bad_header),
        Err(ProviderError::Config { .. })
    ));

    for (id, provider) in [
        ("claude-sonnet-4", Provider::Anthropic),
        ("gemini-2.5-flash", Provider::Google),
    ] {
        match model_from_config(&with_key(id)) {
            Err(ProviderError::FeatureDisabled { feature, .. }) => {
                assert_eq!(feature, provider.feature());
                assert!(!cfg!(feature = "anthropic") || provider != Provider::Anthropic);
                assert!(!cfg!(feature = "gemini") || provider != Provider::Google);
            }
            Ok(model) => assert_eq!(model.info().provider, provider),
            // The placeholder adapters until the Anthropic and Gemini adapters land.
            Err(ProviderError::Unsupported { provider: p, .. }) => assert_eq!(p, provider),
            Err(other) => panic!("{id}: {other:?}"),
        }
    }
    match model_from_config(&ModelConfig::new("echo")) {
        Ok(model) => assert_eq!(model.info().id, "echo"),
        Err(ProviderError::FeatureDisabled { feature, .. }) => assert_eq!(feature, "testing"),
        Err(other) => panic!("{other:?}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Arbitrary bytes into both OpenAI stream parsers never panic.
    #[test]
    fn arbitrary_bytes_never_panic(body in proptest::collection::vec(any::<u8>(), 0..2048), cut in 0_usize..2048) {
        let runtime = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
        runtime.block_on(async {
            for name in ["chat", "responses_"] {
                let pieces = split_at(&body, &[cut]);
                let mut stream = decode(name, pieces);
                while stream.next().await.is_some() {}
            }
        });
    }

    /// Arbitrary JSON-ish `data:` payloads (the shapes the parsers look at, with wrong types
    /// and missing fields) never panic.
    #[test]
    fn arbitrary_event_payloads_never_panic(payloads in proptest::collection::vec(
        prop_oneof![
            Just(r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"function":{"arguments":"x"}}]}}]}"#.to_owned()),
            Just(r#"{"choices":[{"index":null,"delta":null,"finish_reason":7}]}"#.to_owned()),
            Just(r#"{"type":"response.output_item.done","output_index":3,"item":{"type":"function_call"}}"#.to_owned()),
            Just(r#"{"type":"response.function_call_arguments.done","output_index":9}"#.to_owned()),
            Just(r#"{"type":"error"}"#.to_owned()),
            Just(r#"{"type":"response.completed","response":{"status":"incomplete"}}"#.to_owned()),
            Just("[DONE]".to_owned()),
            "[ -~]{0,40}",
        ],
        0..12,
    )) {
        let runtime = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
        let body: String = payloads.iter().map(|p| format!("data: {p}\n\n")).collect();
        runtime.block_on(async {
            for name in ["chat", "responses_"] {
                let mut stream = decode(name, vec![body.clone().into_bytes()]);
                while stream.next().await.is_some() {}
            }
        });
    }
}

//! Gemini failures: every recorded error body, retries (429 with `RetryInfo`, 5xx, none on
//! 4xx or daily quotas), truncated and malformed streams, keys kept out of errors and URLs,
//! and fuzzing of the stream parser.
#![cfg(feature = "gemini")]

use crate::support;

use std::time::{Duration, Instant};

use futures::StreamExt;
use proptest::prelude::*;
use providers::gemini::decode_stream;
use providers::{
    ChatModel, ChatRequest, Message, ModelConfig, Provider, ProviderError, StreamEvent,
    model_from_config,
};
use support::{Canned, Replay, config, fixture, fixture_text, split_at};

const MODEL: &str = "gemini-2.5-flash";
const KEY: &str = "test-key-123";

fn path(method: &str) -> String {
    format!("/v1beta/models/{MODEL}:{method}")
}

fn model(replay: &Replay) -> Box<dyn ChatModel> {
    model_from_config(&config(MODEL, &format!("{}/v1beta", replay.url()))).expect("model builds")
}

fn request() -> ChatRequest {
    ChatRequest::new(vec![Message::human("Hi")])
}

/// `complete` against `responses` served in turn; the error (or answer) and how many
/// requests were made.
async fn complete_with(
    responses: Vec<Canned>,
) -> (Result<providers::ChatResponse, ProviderError>, usize) {
    let replay = Replay::sequence(&path("generateContent"), responses).await;
    let result = model(&replay).complete(request()).await;
    (result, replay.requests().await.len())
}

fn text_answer() -> Canned {
    Canned::fixture("gemini/generate_text_after_function_responses.json")
}

/// The recorded 429 body with another retry delay (and quota id).
fn rate_limited(retry_delay: &str, quota_id: &str) -> Canned {
    let body = fixture_text("gemini/error_429_resource_exhausted.json")
        .replace("\"58s\"", &format!("\"{retry_delay}\""))
        .replace(
            "GenerateRequestsPerMinutePerProjectPerModel-FreeTier",
            quota_id,
        );
    Canned::error(429, "gemini/error_429_resource_exhausted.json").body(body)
}

/// The key appears in no rendering of the error.
fn assert_keyless(error: &ProviderError) {
    let shown = format!("{error} {error:?}");
    assert!(!shown.contains(KEY), "{shown}");
}

#[tokio::test]
async fn rate_limit_429_with_retry_info() {
    // Recorded: 58 s. Longer than this policy's `max_retry_after` (2 s): reported at once
    // instead of waited out.
    let (result, requests) = complete_with(vec![
        Canned::error(429, "gemini/error_429_resource_exhausted.json"),
        text_answer(),
    ])
    .await;
    let error = result.expect_err("429");
    assert_eq!(requests, 1);
    match &error {
        ProviderError::Http {
            provider,
            status,
            error_type,
            code,
            message,
            retryable,
            retry_after,
            ..
        } => {
            assert_eq!((*provider, *status), (Provider::Google, 429));
            assert_eq!(error_type.as_deref(), Some("RESOURCE_EXHAUSTED"));
            assert_eq!(
                code.as_deref(),
                Some("GenerateRequestsPerMinutePerProjectPerModel-FreeTier")
            );
            assert!(
                message.starts_with("You exceeded your current quota"),
                "{message}"
            );
            assert!(*retryable, "a per-minute quota refills");
            assert_eq!(*retry_after, Some(Duration::from_secs(58)));
        }
        other => panic!("expected an HTTP error, got {other:?}"),
    }
    assert_keyless(&error);

    // A short `retryDelay` is honoured (instead of the 1 ms backoff), then the retry succeeds.
    let started = Instant::now();
    let (result, requests) =
        complete_with(vec![rate_limited("0.3s", "PerMinute"), text_answer()]).await;
    let answer = result.expect("the retry succeeds");
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(requests, 2);
    assert!(
        answer
            .message
            .text()
            .starts_with("The secrets have been retrieved.")
    );
}

#[tokio::test]
async fn daily_quota_is_not_retried() {
    let (result, requests) = complete_with(vec![
        rate_limited(
            "0.001s",
            "GenerateRequestsPerDayPerProjectPerModel-FreeTier",
        ),
        text_answer(),
    ])
    .await;
    let error = result.expect_err("quota");
    assert_eq!(requests, 1);
    assert!(!error.is_retryable());
    assert_eq!(error.status(), Some(429));
}

#[tokio::test]
async fn bad_key_400_and_unknown_model_404_are_not_retried() {
    let (result, requests) = complete_with(vec![
        Canned::error(400, "gemini/error_400_api_key_invalid.json"),
        text_answer(),
    ])
    .await;
    let error = result.expect_err("400");
    assert_eq!(requests, 1, "no retry on 400");
    match &error {
        ProviderError::Http {
            status: 400,
            error_type,
            code,
            message,
            retryable: false,
            retry_after: None,
            ..
        } => {
            assert_eq!(error_type.as_deref(), Some("INVALID_ARGUMENT"));
            assert_eq!(code.as_deref(), Some("API_KEY_INVALID"));
            assert_eq!(message, "API key not valid. Please pass a valid API key.");
        }
        other => panic!("{other:?}"),
    }
    assert_keyless(&error);

    let (result, requests) = complete_with(vec![
        Canned::error(404, "gemini/error_404_model_not_found.json"),
        text_answer(),
    ])
    .await;
    let error = result.expect_err("404");
    assert_eq!(requests, 1);
    assert_eq!(error.error_type(), Some("NOT_FOUND"));
    assert!(!error.is_retryable());
    assert!(
        error
            .to_string()
            .contains("models/this-model-does-not-exist-12345 is not found"),
        "{error}"
    );
}

#[tokio::test]
async fn overloaded_503_then_200_is_retried_for_streams_too() {
    let unavailable = r#"{"error": {"code": 503, "message": "The model is overloaded. Please try again later.", "status": "UNAVAILABLE"}}"#;
    let replay = Replay::sequence(
        &path("streamGenerateContent"),
        vec![
            Canned::error(503, "gemini/error_404_model_not_found.json").body(unavailable),
            Canned::error(500, "gemini/error_404_model_not_found.json")
                .body("<html>upstream error</html>"),
            Canned::fixture("gemini/stream_text.sse"),
        ],
    )
    .await;
    let (_, response) = support::streamed(model(&replay).as_ref(), request())
        .await
        .expect("third time lucky");
    assert!(response.message.text().ends_with("29\n30"));
    assert_eq!(replay.requests().await.len(), 3);
}

#[tokio::test]
async fn an_error_event_before_any_content_is_retried() {
    let event = |status: &str| {
        format!(
            "data: {{\"error\": {{\"code\": 503, \"message\": \"The model is overloaded.\", \"status\": \"{status}\"}}}}\r\n\r\n"
        )
    };
    let stream = || Canned::fixture("gemini/stream_text.sse");
    let replay = Replay::sequence(
        &path("streamGenerateContent"),
        vec![stream().body(event("UNAVAILABLE")), stream()],
    )
    .await;
    let (_, response) = support::streamed(model(&replay).as_ref(), request())
        .await
        .expect("the second attempt answers");
    assert!(response.message.text().starts_with("1\n2\n3"));
    assert_eq!(replay.requests().await.len(), 2);

    // Not when the error is not retryable.
    let replay = Replay::sequence(
        &path("streamGenerateContent"),
        vec![stream().body(event("INVALID_ARGUMENT")), stream()],
    )
    .await;
    let error = model(&replay).stream(request()).await.err().expect("fails");
    assert!(
        matches!(&error, ProviderError::Stream { retryable: false, error_type: Some(t), .. } if t == "INVALID_ARGUMENT"),
        "{error:?}"
    );
    assert_eq!(replay.requests().await.len(), 1);
}

#[tokio::test]
async fn non_json_error_body_keeps_its_start() {
    let (result, requests) = complete_with(vec![
        Canned::error(403, "gemini/error_404_model_not_found.json").body("<html>Forbidden</html>"),
    ])
    .await;
    let error = result.expect_err("403");
    assert_eq!(requests, 1);
    assert!(
        matches!(&error, ProviderError::Http { status: 403, message, error_type: None, .. } if message == "<html>Forbidden</html>"),
        "{error:?}"
    );
}

#[tokio::test]
async fn invalid_json_body_is_a_decode_error() {
    let (result, _) =
        complete_with(vec![text_answer().body(r#"{"candidates": [{"content": "#)]).await;
    assert!(
        matches!(
            result,
            Err(ProviderError::Decode {
                provider: Provider::Google,
                ..
            })
        ),
        "{result:?}"
    );
    let (result, _) =
        complete_with(vec![text_answer().body(
            r#"{"error": {"code": 500, "message": "Internal error", "status": "INTERNAL"}}"#,
        )])
        .await;
    assert!(
        matches!(&result, Err(ProviderError::Stream { error_type: Some(t), retryable: true, .. }) if t == "INTERNAL"),
        "{result:?}"
    );
}

/// Decodes a body without HTTP: the events before the first error, and that error.
async fn decode(body: Vec<Vec<u8>>) -> (Vec<StreamEvent>, Option<ProviderError>) {
    let mut stream = decode_stream(futures::stream::iter(body));
    let mut events = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(event) => events.push(event),
            Err(error) => return (events, Some(error)),
        }
    }
    (events, None)
}

fn texts(events: &[StreamEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::TextDelta(text) => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn truncated_streams_end_with_an_error() {
    let body = fixture("gemini/stream_text.sse");
    let last_event = body
        .windows(6)
        .rposition(|w| w == b"data: ")
        .expect("events");
    // Cut before the event with the finish reason, and in the middle of it.
    for cut in [last_event, last_event + 40] {
        let (events, error) = decode(vec![body[..cut].to_vec()]).await;
        assert!(
            texts(&events).starts_with("1\n2\n3"),
            "deltas before the cut are delivered"
        );
        assert!(!events.iter().any(|e| matches!(e, StreamEvent::Done { .. })));
        assert!(
            matches!(
                error,
                Some(ProviderError::StreamTruncated {
                    provider: Some(Provider::Google),
                    ..
                })
            ),
            "cut at {cut}: {error:?}"
        );
    }
    // Over HTTP, the same truncated body fails the stream (and `collect`).
    let replay = Replay::sequence(
        &path("streamGenerateContent"),
        vec![Canned::fixture("gemini/stream_text.sse").body(body[..last_event].to_vec())],
    )
    .await;
    let result = providers::collect(
        model(&replay)
            .stream(request())
            .await
            .expect("headers arrive"),
    )
    .await;
    assert!(
        matches!(result, Err(ProviderError::StreamTruncated { .. })),
        "{result:?}"
    );
}

/// What an error must look like.
type Expected = fn(&ProviderError) -> bool;

#[tokio::test]
async fn malformed_events_end_the_stream_with_typed_errors() {
    let first =
        "data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"Hel\"}]}}]}\r\n\r\n";
    let cases: [(&[u8], Expected); 4] = [
        (b"data: {\"candidates\": [\r\n\r\n", |e| matches!(e, ProviderError::Decode { .. })),
        (b"data: [1, 2]\r\n\r\n", |e| matches!(e, ProviderError::Decode { .. })),
        (b"data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"\xff\xfe\"}]}}]}\r\n\r\n", |e| matches!(e, ProviderError::Decode { .. })),
        (
            b"data: {\"error\": {\"code\": 503, \"message\": \"The model is overloaded.\", \"status\": \"UNAVAILABLE\"}}\r\n\r\n",
            |e| matches!(e, ProviderError::Stream { retryable: true, message, .. } if message == "The model is overloaded."),
        ),
    ];
    for (bad, expected) in cases {
        let (events, error) = decode(vec![first.as_bytes().to_vec(), bad.to_vec()]).await;
        assert_eq!(texts(&events), "Hel", "what came before is delivered");
        let error = error.expect("an error ends the stream");
        assert!(expected(&error), "{error:?}");
    }
}

#[tokio::test]
async fn keys_stay_out_of_urls_errors_and_debug() {
    let secret = "AIzaSy-very-secret";
    let replay = Replay::sequence(
        &path("streamGenerateContent"),
        vec![Canned::error(400, "gemini/error_400_api_key_invalid.json")],
    )
    .await;
    let config = ModelConfig {
        api_key: Some(secret.into()),
        ..config(MODEL, &format!("{}/v1beta", replay.url()))
    };
    assert!(!format!("{config:?}").contains(secret));
    let model = model_from_config(&config).expect("builds");
    let error = model.stream(request()).await.err().expect("400");
    let shown = format!("{error} {error:?}");
    assert!(!shown.contains(secret), "{shown}");
    let raw = &replay.raw_requests().await[0];
    assert!(!raw.url.as_str().contains(secret));
    assert_eq!(
        raw.headers
            .get("x-goog-api-key")
            .and_then(|v| v.to_str().ok()),
        Some(secret)
    );

    // Nothing listens here: the transport error names no URL and no key either.
    let closed = ModelConfig {
        base_url: Some("http://127.0.0.1:9/v1beta".into()),
        retry: providers::RetryPolicy::none(),
        ..config
    };
    let error = model_from_config(&closed)
        .expect("builds")
        .complete(request())
        .await
        .expect_err("refused");
    assert!(
        matches!(error, ProviderError::Transport { .. }),
        "{error:?}"
    );
    assert!(!format!("{error} {error:?}").contains(secret));
}

/// The recorded streams, for re-splitting.
const STREAMS: &[&str] = &[
    "gemini/stream_function_call_signature.sse",
    "gemini/stream_text_after_function_call.sse",
    "gemini/stream_thinking.sse",
    "gemini/stream_parallel_function_calls.sse",
    "gemini/stream_text.sse",
];

fn block_on<T>(future: impl Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime")
        .block_on(future)
}

#[tokio::test]
async fn splitting_between_cr_and_lf_changes_nothing() {
    for name in STREAMS {
        let body = fixture(name);
        let (whole, error) = decode(vec![body.clone()]).await;
        assert!(error.is_none(), "{name}: {error:?}");
        let crs: Vec<usize> = body
            .iter()
            .enumerate()
            .filter(|(_, b)| **b == b'\r')
            .map(|(i, _)| i + 1)
            .collect();
        let (split, error) = decode(split_at(&body, &crs)).await;
        assert!(error.is_none());
        assert_eq!(split, whole, "{name}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Any chunking of a recorded stream gives the same events (splits inside UTF-8
    /// characters and CRLFs included).
    #[test]
    fn any_chunking_gives_the_same_events(index in 0..STREAMS.len(), cuts in proptest::collection::vec(0usize..20_000, 0..40)) {
        let body = fixture(STREAMS[index]);
        let (whole, _) = block_on(decode(vec![body.clone()]));
        let (split, error) = block_on(decode(split_at(&body, &cuts)));
        prop_assert!(error.is_none());
        prop_assert_eq!(split, whole);
    }

    /// Arbitrary bytes never panic the parser; they end in events or a typed error.
    #[test]
    fn arbitrary_bytes_never_panic(chunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..200), 0..8)) {
        let (events, error) = block_on(decode(chunks));
        prop_assert!(ends_well(&events, error.as_ref()));
    }

    /// Arbitrary JSON in `data:` events never panics the parser.
    #[test]
    fn arbitrary_json_events_never_panic(values in proptest::collection::vec(json_value(), 1..6)) {
        let body: String = values.iter().map(|v| format!("data: {v}\r\n\r\n")).collect();
        let (events, error) = block_on(decode(vec![body.into_bytes()]));
        prop_assert!(ends_well(&events, error.as_ref()));
    }

    /// Arbitrary responses shaped like Gemini's (parts of every kind, odd field types) never
    /// panic the parser, streamed or not.
    #[test]
    fn arbitrary_gemini_shaped_events_never_panic(parts in proptest::collection::vec(gemini_part(), 0..6), finish in proptest::option::of("[A-Z_]{1,12}"), usage in proptest::option::of(any::<u32>())) {
        let mut candidate = serde_json::json!({"content": {"role": "model", "parts": parts}});
        if let Some(finish) = finish {
            candidate["finishReason"] = finish.into();
        }
        let event = serde_json::json!({"candidates": [candidate], "usageMetadata": {"promptTokenCount": usage}});
        let body = format!("data: {event}\r\n\r\n");
        let (events, error) = block_on(decode(vec![body.into_bytes()]));
        prop_assert!(ends_well(&events, error.as_ref()));
    }
}

/// A stream ends with exactly one `Done`, last, or with an error.
fn ends_well(events: &[StreamEvent], error: Option<&ProviderError>) -> bool {
    let dones = events
        .iter()
        .filter(|e| matches!(e, StreamEvent::Done { .. }))
        .count();
    match error {
        Some(_) => dones == 0,
        None => dones == 1 && matches!(events.last(), Some(StreamEvent::Done { .. })),
    }
}

fn json_value() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::Value;
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        "[a-zA-Z \\n]{0,12}".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        let keys = prop_oneof![
            Just("candidates".to_owned()),
            Just("content".to_owned()),
            Just("parts".to_owned()),
            Just("text".to_owned()),
            Just("functionCall".to_owned()),
            Just("usageMetadata".to_owned()),
            Just("error".to_owned()),
            "[a-z]{1,6}",
        ];
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map(keys, inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn gemini_part() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::json;
    prop_oneof![
        ("\\PC{0,20}", any::<bool>())
            .prop_map(|(text, thought)| json!({"text": text, "thought": thought})),
        ("\\PC{0,20}", "[A-Za-z0-9+/=]{0,16}")
            .prop_map(|(text, sig)| json!({"text": text, "thoughtSignature": sig})),
        ("[a-z_]{0,10}", json_value())
            .prop_map(|(name, args)| json!({"functionCall": {"name": name, "args": args}})),
        "[A-Za-z0-9+/=]{0,16}".prop_map(|sig| json!({"thought": true, "thoughtSignature": sig})),
        json_value(),
    ]
}

//! OpenAI Chat Completions adapter against the recorded fixtures in `tests/fixtures/openai`.

use crate::support;

use providers::ChatOptions;
use providers::{
    ChatRequest, ContentPart, FinishReason, Message, ProviderError, ToolCall, ToolSpec, Usage,
    model_from_config,
};
use serde_json::{Value, json};
use support::{Canned, Replay, calls, config, delta_text, fixture_json, streamed};

const PATH: &str = "/v1/chat/completions";

fn model(replay: &Replay, model_id: &str) -> Box<dyn providers::ChatModel> {
    model_from_config(&config(model_id, &format!("{}/v1", replay.url()))).expect("model builds")
}

fn multiply_tool() -> ToolSpec {
    ToolSpec {
        name: "multiply".into(),
        description: "Multiply two numbers.".into(),
        parameters: json!({"properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"], "type": "object"}),
    }
}

fn usage(input: u64, output: u64) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: output,
        ..Default::default()
    }
}

#[tokio::test]
async fn stream_single_tool_call() {
    let replay = Replay::fixture(PATH, "openai/chat_stream_tool_call.sse").await;
    let model = model(&replay, "gpt-4o-mini");
    let request = ChatRequest {
        tools: vec![multiply_tool()],
        ..ChatRequest::new(vec![Message::human("What is 1231 * 2331?")])
    };
    let (events, response) = streamed(model.as_ref(), request)
        .await
        .expect("stream parses");

    assert_eq!(delta_text(&events), "");
    assert_eq!(
        calls(&response),
        [(
            "call_1EYWDzueHEp8OsB8jJSEp7WB".into(),
            "multiply".into(),
            r#"{"a":1231,"b":2331}"#.into()
        )]
    );
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    assert_eq!(response.usage, usage(54, 20));
    assert_eq!(response.usage.total_tokens(), 74);
    assert_eq!(response.model.as_deref(), Some("gpt-4o-mini-2024-07-18"));
    assert_eq!(
        response.id.as_deref(),
        Some("chatcmpl-BWlJBDk2xe66hjff60joVYpXi1hh4")
    );

    // The request carries what the recorded one did.
    let sent = &replay.requests().await[0];
    let recorded = fixture_json("openai/chat_stream_tool_call.request.json");
    for field in ["model", "messages", "stream", "stream_options"] {
        assert_eq!(sent[field], recorded[field], "{field}");
    }
    assert_eq!(sent["tools"][0]["function"]["name"], "multiply");
    assert_eq!(
        sent["tools"][0]["function"]["parameters"],
        recorded["tools"][0]["function"]["parameters"]
    );

    // Headers: the key as a bearer token; recorded rate-limit headers are served back.
    let raw = &replay.raw_requests().await[0];
    assert_eq!(
        raw.headers
            .get("authorization")
            .map(|v| v.to_str().unwrap_or("")),
        Some("Bearer test-key-123")
    );

    // The follow-up carries the call and its result like the recorded follow-up (minus
    // simonw/llm's stray empty assistant message).
    let followup = ChatRequest {
        tools: vec![multiply_tool()],
        ..ChatRequest::new(vec![
            Message::human("What is 1231 * 2331?"),
            response.message.clone(),
            Message::tool_response("call_1EYWDzueHEp8OsB8jJSEp7WB", "multiply", "2869461"),
        ])
    };
    let replay2 = Replay::fixture(PATH, "openai/chat_stream_text_after_tool.sse").await;
    let (_, answer) = streamed(model_at(&replay2).as_ref(), followup)
        .await
        .expect("follow-up");
    let sent = &replay2.requests().await[0]["messages"];
    let recorded = &fixture_json("openai/chat_stream_tool_call.followup.request.json")["messages"];
    let recorded_tail: Vec<&Value> = recorded
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m.get("tool_calls").is_some() || m["role"] == "tool")
        .collect();
    // simonw/llm re-serialised the arguments (`{"a": 1231, …}`); Skein sends the model's
    // exact text back, which is the same JSON value.
    let (ours, theirs) = (
        &sent[1]["tool_calls"][0],
        &recorded_tail[0]["tool_calls"][0],
    );
    for field in ["/id", "/type", "/function/name"] {
        assert_eq!(ours.pointer(field), theirs.pointer(field), "{field}");
    }
    assert_eq!(ours["function"]["arguments"], r#"{"a":1231,"b":2331}"#);
    let parse = |v: &Value| serde_json::from_str::<Value>(v.as_str().unwrap_or("")).ok();
    assert_eq!(
        parse(&ours["function"]["arguments"]),
        parse(&theirs["function"]["arguments"])
    );
    assert_eq!(sent[2], *recorded_tail[1]);
    assert_eq!(
        answer.message.text(),
        r"The result of \( 1231 \times 2331 \) is \( 2,869,461 \)."
    );
    assert_eq!(answer.finish_reason, FinishReason::Stop);
    assert_eq!(answer.usage, usage(87, 26));
}

fn model_at(replay: &Replay) -> Box<dyn providers::ChatModel> {
    model(replay, "gpt-4o-mini")
}

#[tokio::test]
async fn stream_parallel_tools_and_followup_request() {
    let replay = Replay::fixture(PATH, "openai/chat_stream_parallel_tools.sse").await;
    let (events, response) = streamed(
        model(&replay, "gpt-4o").as_ref(),
        ChatRequest::new(vec![Message::human("weather?")]),
    )
    .await
    .expect("stream parses");
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
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    assert_eq!(response.usage, usage(417, 44));
    assert_eq!(response.model.as_deref(), Some("gpt-4o-2024-08-06"));
    assert!(
        events
            .iter()
            .any(|e| matches!(e, providers::StreamEvent::ToolCallDelta { index: 1, .. }))
    );

    // The next request: one assistant message with both calls, then one tool message each.
    let followup = ChatRequest::new(vec![
        Message::human("weather?"),
        response.message.clone(),
        Message::tool_response("call_NS4iQj14cDFwc0BnrKqDHavt", "get_weather", "sunny"),
        Message::tool_response(
            "call_SkGkkGDvHQEEk0CGbnAh2AQw",
            "get_product_name",
            "Pydantic AI",
        ),
    ]);
    let replay2 = Replay::fixture(PATH, "openai/chat_stream_text_after_tool.sse").await;
    streamed(model(&replay2, "gpt-4o").as_ref(), followup)
        .await
        .expect("follow-up");
    let sent = replay2.requests().await[0]["messages"].clone();
    let recorded =
        fixture_json("openai/chat_stream_parallel_tools.followup.request.json")["messages"].clone();
    let (sent, recorded) = (
        sent.as_array().cloned().unwrap_or_default(),
        recorded.as_array().cloned().unwrap_or_default(),
    );
    assert_eq!(sent[sent.len() - 3..], recorded[recorded.len() - 3..]);
}

#[tokio::test]
async fn stream_parallel_same_tool_and_followup_request() {
    let replay = Replay::fixture(PATH, "openai/chat_stream_parallel_same_tool.sse").await;
    let (_, response) = streamed(
        model(&replay, "gpt-4o").as_ref(),
        ChatRequest::new(vec![Message::human("secrets")]),
    )
    .await
    .expect("stream parses");
    assert_eq!(
        calls(&response),
        [
            (
                "call_M26z19sncd7b4LBgzKRRbaUE".into(),
                "secret_retrieval_tool".into(),
                r#"{"password": "mellon"}"#.into()
            ),
            (
                "call_KPXe5NX7IcKkaBUhc6dto2QV".into(),
                "secret_retrieval_tool".into(),
                r#"{"password": "radiance"}"#.into()
            ),
        ]
    );
    assert_eq!(response.usage, usage(75, 53));
    assert_eq!(response.message.text(), "");

    let recorded = fixture_json("openai/request_chat_stream_followup_parallel_tool_results.json");
    let history = vec![
        Message::system(
            recorded["messages"][0]["content"]
                .as_str()
                .unwrap_or_default(),
        ),
        Message::human(
            recorded["messages"][1]["content"]
                .as_str()
                .unwrap_or_default(),
        ),
        response.message.clone(),
        Message::tool_response(
            "call_M26z19sncd7b4LBgzKRRbaUE",
            "secret_retrieval_tool",
            "Welcome to Moria!",
        ),
        Message::tool_response(
            "call_KPXe5NX7IcKkaBUhc6dto2QV",
            "secret_retrieval_tool",
            "Life before Death",
        ),
    ];
    let replay2 = Replay::fixture(PATH, "openai/chat_stream_text_after_tool.sse").await;
    streamed(
        model(&replay2, "gpt-4o").as_ref(),
        ChatRequest::new(history),
    )
    .await
    .expect("follow-up");
    let sent = &replay2.requests().await[0];
    assert_eq!(sent["messages"], recorded["messages"]);
    assert_eq!(sent["stream_options"], recorded["stream_options"]);
}

#[tokio::test]
async fn stream_tool_call_with_obfuscation_padding() {
    let replay = Replay::fixture(PATH, "openai/chat_stream_tool_call_obfuscation.sse").await;
    let (_, response) = streamed(
        model(&replay, "gpt-4o-mini").as_ref(),
        ChatRequest::new(vec![Message::human("UK?")]),
    )
    .await
    .expect("stream parses");
    assert_eq!(
        calls(&response),
        [(
            "call_ZR5UUuTt3pf61kjwAJIYdVMj".into(),
            "get_capital".into(),
            r#"{"country":"UK"}"#.into()
        )]
    );
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    assert_eq!(response.usage, usage(53, 15));
}

#[tokio::test]
async fn complete_tool_call() {
    let replay = Replay::fixture(PATH, "openai/chat_tool_call.json").await;
    let response = model(&replay, "gpt-4o-mini")
        .complete(ChatRequest::new(vec![Message::human("Crumpet?")]))
        .await
        .expect("parses");
    assert_eq!(
        response.id.as_deref(),
        Some("chatcmpl-BWpGNGdPONTwxHkZVxbqctQSBDmTn")
    );
    assert_eq!(response.message.text(), "");
    assert_eq!(
        calls(&response),
        [(
            "call_TTY8UFNo7rNCaOBUNtlRSvMG".into(),
            "lookup_population".into(),
            r#"{"country":"Crumpet"}"#.into()
        )]
    );
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    assert_eq!(response.usage, usage(92, 17));
    assert_eq!(
        replay.requests().await[0]["stream"],
        Value::Null,
        "non-streamed requests send no `stream`"
    );
}

#[tokio::test]
async fn complete_parallel_tool_calls() {
    let replay = Replay::fixture(PATH, "openai/chat_parallel_tool_calls.json").await;
    let response = model(&replay, "gpt-4o")
        .complete(ChatRequest::new(vec![Message::human("go")]))
        .await
        .expect("parses");
    assert_eq!(
        calls(&response),
        [
            (
                "call_v6LacIrChvs6ITVpIZqy5tFc".into(),
                "secret_retrieval_tool".into(),
                r#"{"password": "mellon"}"#.into()
            ),
            (
                "call_onyWzk4mLTGKzW9cthmf4Llq".into(),
                "secret_retrieval_tool".into(),
                r#"{"password": "radiance"}"#.into()
            ),
        ]
    );
    assert_eq!(response.usage, usage(75, 53));
}

#[tokio::test]
async fn complete_text_after_two_tool_rounds_matches_recorded_request() {
    let replay = Replay::fixture(PATH, "openai/chat_text.json").await;
    let recorded = fixture_json("openai/request_chat_followup_tool_results.json");
    let history = vec![
        Message::human(
            recorded["messages"][0]["content"]
                .as_str()
                .unwrap_or_default(),
        ),
        Message::ai_tool_calls(
            None,
            vec![ToolCall::new(
                "call_TTY8UFNo7rNCaOBUNtlRSvMG",
                "lookup_population",
                r#"{"country": "Crumpet"}"#,
            )],
        ),
        Message::tool_response(
            "call_TTY8UFNo7rNCaOBUNtlRSvMG",
            "lookup_population",
            "123124",
        ),
        Message::ai_tool_calls(
            None,
            vec![ToolCall::new(
                "call_aq9UyiSFkzX6W8Ydc33DoI9Y",
                "can_have_dragons",
                r#"{"population": 123124}"#,
            )],
        ),
        Message::tool_response("call_aq9UyiSFkzX6W8Ydc33DoI9Y", "can_have_dragons", "true"),
    ];
    let response = model(&replay, "gpt-4o-mini")
        .complete(ChatRequest::new(history))
        .await
        .expect("parses");
    assert_eq!(response.message.text(), "YES");
    assert_eq!(response.finish_reason, FinishReason::Stop);
    assert_eq!(response.usage, usage(146, 3));
    let sent = &replay.requests().await[0]["messages"];
    let recorded = &recorded["messages"];
    for i in [0, 2, 4] {
        assert_eq!(sent[i], recorded[i], "message {i}");
    }
    for i in [1, 3] {
        assert_eq!(
            sent[i]["tool_calls"][0]["id"],
            recorded[i]["tool_calls"][0]["id"]
        );
        assert_eq!(
            sent[i]["tool_calls"][0]["function"]["name"],
            recorded[i]["tool_calls"][0]["function"]["name"]
        );
        assert_eq!(sent[i]["tool_calls"][0]["type"], "function");
    }
}

async fn error_for(status: u16, fixture: &str) -> (ProviderError, usize) {
    let replay = Replay::sequence(PATH, vec![Canned::error(status, fixture)]).await;
    let error = model(&replay, "gpt-4o")
        .complete(ChatRequest::new(vec![Message::human("x")]))
        .await
        .expect_err("fails");
    (error, replay.requests().await.len())
}

#[tokio::test]
async fn error_bodies_are_typed() {
    let cases = [
        (
            400,
            "openai/chat_error_400_unsupported_value.json",
            "invalid_request_error",
            "unsupported_value",
        ),
        (
            400,
            "openai/error_400_chat_unsupported_parameter.json",
            "invalid_request_error",
            "unsupported_parameter",
        ),
        (
            401,
            "openai/error_401_invalid_api_key.json",
            "invalid_request_error",
            "invalid_api_key",
        ),
        (
            404,
            "openai/error_404_chat_model_not_found.json",
            "invalid_request_error",
            "model_not_found",
        ),
        (
            429,
            "openai/error_429_insufficient_quota.json",
            "insufficient_quota",
            "insufficient_quota",
        ),
    ];
    for (status, fixture, error_type, code) in cases {
        let (error, attempts) = error_for(status, fixture).await;
        let recorded = fixture_json(fixture);
        match &error {
            ProviderError::Http {
                status: s,
                error_type: t,
                code: c,
                message,
                retryable,
                ..
            } => {
                assert_eq!(*s, status, "{fixture}");
                assert_eq!(t.as_deref(), Some(error_type), "{fixture}");
                assert_eq!(c.as_deref(), Some(code), "{fixture}");
                assert_eq!(
                    Some(message.as_str()),
                    recorded["error"]["message"].as_str(),
                    "{fixture}"
                );
                assert!(!retryable, "{fixture} is not retryable");
            }
            other => panic!("{fixture}: expected an HTTP error, got {other:?}"),
        }
        assert_eq!(attempts, 1, "{fixture} is not retried");
        assert!(
            !error.to_string().contains("test-key-123"),
            "the key never appears"
        );
        assert!(!format!("{error:?}").contains("test-key-123"));
    }
}

#[tokio::test]
async fn rate_limit_then_success_is_retried_honouring_retry_after() {
    let limited = Canned::error(429, "openai/error_429_insufficient_quota.json")
        .body(r#"{"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}}"#)
        .header("retry-after-ms", "20");
    let replay = Replay::sequence(
        PATH,
        vec![limited, Canned::fixture("openai/chat_tool_call.json")],
    )
    .await;
    let started = std::time::Instant::now();
    let response = model(&replay, "gpt-4o-mini")
        .complete(ChatRequest::new(vec![Message::human("x")]))
        .await
        .expect("retried");
    assert!(
        started.elapsed() >= std::time::Duration::from_millis(20),
        "waited as asked"
    );
    assert_eq!(replay.requests().await.len(), 2);
    assert_eq!(response.usage, usage(92, 17));

    // A 5xx then a stream: retried before the stream starts.
    let replay = Replay::sequence(
        PATH,
        vec![
            Canned::error(503, "openai/error_429_insufficient_quota.json")
                .body("upstream overloaded"),
            Canned::fixture("openai/chat_stream_tool_call.sse"),
        ],
    )
    .await;
    let (_, response) = streamed(
        model(&replay, "gpt-4o-mini").as_ref(),
        ChatRequest::new(vec![Message::human("x")]),
    )
    .await
    .expect("retried");
    assert_eq!(response.usage, usage(54, 20));
    assert_eq!(replay.requests().await.len(), 2);
}

#[tokio::test]
async fn retries_stop_when_spent_or_when_the_wait_is_too_long() {
    let always_busy = Canned::error(500, "openai/error_429_insufficient_quota.json").body("{}");
    let replay = Replay::sequence(PATH, vec![always_busy]).await;
    let error = model(&replay, "gpt-4o")
        .complete(ChatRequest::new(vec![Message::human("x")]))
        .await
        .expect_err("fails");
    assert_eq!(error.status(), Some(500));
    assert!(error.is_retryable());
    assert_eq!(
        replay.requests().await.len(),
        4,
        "first attempt + 3 retries"
    );

    let far = Canned::error(429, "openai/error_429_insufficient_quota.json")
        .body("{}")
        .header("retry-after", "3600");
    let replay = Replay::sequence(PATH, vec![far]).await;
    let error = model(&replay, "gpt-4o")
        .complete(ChatRequest::new(vec![Message::human("x")]))
        .await
        .expect_err("fails");
    assert_eq!(
        error.retry_after(),
        Some(std::time::Duration::from_secs(3600))
    );
    assert_eq!(
        replay.requests().await.len(),
        1,
        "an hour is past max_retry_after"
    );
}

#[tokio::test]
async fn tool_media_goes_in_a_user_message_after_the_tool_messages() {
    let replay = Replay::fixture(PATH, "openai/chat_text.json").await;
    let mut tool = Message::tool_response("call_1", "screenshot", "taken");
    tool.parts
        .push(ContentPart::binary("image/png", vec![1, 2, 3]));
    let history = vec![
        Message::human("look"),
        Message::ai_tool_calls(
            None,
            vec![
                ToolCall::new("call_1", "screenshot", "{}"),
                ToolCall::new("call_2", "clock", "{}"),
            ],
        ),
        tool,
        Message::tool_response("call_2", "clock", "noon"),
    ];
    model(&replay, "gpt-4o")
        .complete(ChatRequest::new(history))
        .await
        .expect("parses");
    let sent = &replay.requests().await[0]["messages"];
    assert_eq!(sent[2]["role"], "tool");
    assert_eq!(sent[3]["role"], "tool");
    assert_eq!(
        sent[4],
        json!({"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,AQID"}}]})
    );
}

#[tokio::test]
async fn headers_dummy_key_and_base_url() {
    let replay = Replay::fixture(PATH, "openai/chat_text.json").await;
    let mut cfg = config("local-llama", &format!("{}/v1/", replay.url()));
    cfg.api_key = None;
    cfg.default_headers.insert("x-team".into(), "skein".into());
    let model = model_from_config(&cfg).expect("a custom base URL needs no key");
    let request = ChatRequest {
        options: ChatOptions {
            extra_headers: [("x-trace".to_owned(), "abc".to_owned())].into(),
            ..ChatOptions::default()
        },
        ..ChatRequest::new(vec![Message::human("hi")])
    };
    model.complete(request).await.expect("parses");
    let raw = &replay.raw_requests().await[0];
    let header = |name: &str| {
        raw.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    assert_eq!(header("authorization").as_deref(), Some("Bearer dummy"));
    assert_eq!(header("x-team").as_deref(), Some("skein"));
    assert_eq!(header("x-trace").as_deref(), Some("abc"));
    assert_eq!(raw.url.path(), PATH);

    let mut cfg = providers::ModelConfig::new("gpt-4o");
    cfg.api_key = None;
    assert!(
        matches!(model_from_config(&cfg), Err(ProviderError::Config { .. })),
        "no key, no proxy"
    );
}

/// The request body of a multi-turn tool conversation with reasoning (DeepSeek-style
/// `reasoning_content` echoed on the tool-call turn), media in a tool result, every option.
#[tokio::test]
async fn request_body_snapshot() {
    let replay = Replay::fixture(PATH, "deepseek/chat_stream_reasoning_content.sse").await;
    let mut screenshot = Message::tool_response("call_1", "screenshot", "captured");
    screenshot
        .parts
        .push(ContentPart::binary("image/png", vec![137, 80, 78, 71]));
    let mut look = Message::human("What is on my screen, and what time is it?");
    look.parts.push(ContentPart::ImageUrl {
        url: "https://example.com/hint.png".into(),
        detail: Some("low".into()),
    });
    let messages = vec![
        Message::system("You are terse."),
        look,
        Message::new(
            providers::Role::Ai,
            vec![
                ContentPart::Reasoning(providers::Reasoning {
                    text: "Need a screenshot and the clock.".into(),
                    ..Default::default()
                }),
                ContentPart::text("Checking."),
                ContentPart::ToolCall(ToolCall::new("call_1", "screenshot", "{}")),
                ContentPart::ToolCall(ToolCall::new("call_2", "clock", r#"{"tz": "UTC"}"#)),
            ],
        ),
        screenshot,
        Message::tool_response("call_2", "clock", "12:00"),
        Message::ai("A terminal; it is noon."),
        Message::human("Thanks!"),
    ];
    let request = ChatRequest {
        options: ChatOptions {
            tool_choice: Some(providers::ToolChoice::Auto),
            temperature: Some(0.25),
            max_tokens: Some(256),
            stop: vec!["END".into()],
            reasoning_effort: Some(providers::ReasoningEffort::Low),
            cache: providers::PromptCache {
                key: Some("session-42".into()),
                ..Default::default()
            },
            ..ChatOptions::default()
        },
        tools: vec![multiply_tool()],
        ..ChatRequest::new(messages)
    };
    streamed(model(&replay, "deepseek-reasoner").as_ref(), request)
        .await
        .expect("parses");
    insta::assert_json_snapshot!(replay.requests().await[0]);
}

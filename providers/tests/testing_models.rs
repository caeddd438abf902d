//! `testing::ScriptedModel` and the `echo` model.

use crate::support;

use std::time::{Duration, Instant};

use futures::StreamExt;
use providers::ChatOptions;
use providers::testing::{EchoModel, ScriptedModel, ScriptedResponse};
use providers::{
    ChatModel, ChatRequest, ContentPart, FinishReason, Message, ProviderError, Reasoning,
    StreamEvent, ToolChoice, ToolSpec, Usage,
};
use serde_json::{Value, json};
use support::{calls, decoded, streamed};

fn weather_tool() -> ToolSpec {
    ToolSpec {
        name: "get_weather".into(),
        description: "Weather for a city.".into(),
        parameters: json!({"type": "object", "properties": {"city": {"type": "string", "minLength": 2}, "days": {"type": "integer", "minimum": 1}}, "required": ["city"], "additionalProperties": false}),
    }
}

fn clock_tool() -> ToolSpec {
    ToolSpec {
        name: "clock".into(),
        description: "Time.".into(),
        parameters: json!({"type": "object", "properties": {}}),
    }
}

#[tokio::test]
async fn scripted_responses_replay_in_order_and_requests_are_recorded() {
    let signed = Reasoning {
        text: "Need weather.".into(),
        signature: Some("sig-1".into()),
        ..Default::default()
    };
    let model = ScriptedModel::new([
        ScriptedResponse::new()
            .reasoning_block(signed.clone())
            .with_text("Let me check. ")
            .tool_call("call_1", "get_weather", r#"{"city":"Paris"}"#)
            .tool_call("call_2", "clock", "{}")
            .usage(Usage {
                input_tokens: 10,
                output_tokens: 5,
                reasoning_tokens: 2,
                ..Default::default()
            }),
        ScriptedResponse::text("Sunny, 18°C.").finish(FinishReason::Length),
    ]);
    let (events, first) = streamed(&model, ChatRequest::new(vec![Message::human("Weather?")]))
        .await
        .expect("scripted");
    assert_eq!(first.message.parts[0], ContentPart::Reasoning(signed));
    assert_eq!(first.message.parts[1].as_text(), Some("Let me check. "));
    assert_eq!(
        calls(&first),
        [
            (
                "call_1".into(),
                "get_weather".into(),
                r#"{"city":"Paris"}"#.into()
            ),
            ("call_2".into(), "clock".into(), "{}".into())
        ]
    );
    assert_eq!(first.finish_reason, FinishReason::ToolCalls);
    assert_eq!(first.usage.reasoning_tokens, 2);
    assert!(
        events
            .iter()
            .any(|e| matches!(e, StreamEvent::ReasoningDelta { text } if text == "Need "))
    );

    let second = model
        .complete(ChatRequest::new(vec![Message::human("And?")]))
        .await
        .expect("scripted");
    assert_eq!(second.message.text(), "Sunny, 18°C.");
    assert_eq!(second.finish_reason, FinishReason::Length);

    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1].messages[0].text(), "And?");
    let error = model
        .complete(ChatRequest::default())
        .await
        .expect_err("script spent");
    assert!(matches!(error, ProviderError::Config { .. }), "{error}");
    assert_eq!(model.remaining(), 0);
}

#[tokio::test]
async fn scripted_errors_before_and_during_the_stream() {
    let overloaded = ProviderError::Http {
        provider: providers::Provider::Anthropic,
        status: 529,
        error_type: Some("overloaded_error".into()),
        code: None,
        message: "Overloaded".into(),
        request_id: None,
        retryable: true,
        retry_after: None,
        body_cut_at: None,
    };
    let model = ScriptedModel::new([
        ScriptedResponse::error(overloaded.clone()),
        ScriptedResponse::text("partial answer").fail_mid_stream(ProviderError::StreamTruncated {
            provider: None,
            detail: "cut".into(),
        }),
    ]);
    assert_eq!(
        model.stream(ChatRequest::default()).await.err(),
        Some(overloaded)
    );
    let mut stream = model.stream(ChatRequest::default()).await.expect("starts");
    assert_eq!(
        stream.next().await,
        Some(Ok(StreamEvent::TextDelta("partial ".into())))
    );
    assert_eq!(
        stream.next().await,
        Some(Ok(StreamEvent::TextDelta("answer".into())))
    );
    assert!(matches!(
        stream.next().await,
        Some(Err(ProviderError::StreamTruncated { .. }))
    ));
    assert_eq!(stream.next().await, None);
}

#[tokio::test]
async fn slow_scripts_can_be_cancelled_by_dropping_the_stream() {
    let model = ScriptedModel::new([
        ScriptedResponse::text("one two three four five six").delay(Duration::from_millis(40))
    ]);
    let started = Instant::now();
    let mut stream = model.stream(ChatRequest::default()).await.expect("starts");
    assert_eq!(
        stream.next().await,
        Some(Ok(StreamEvent::TextDelta("one ".into())))
    );
    assert_eq!(
        stream.next().await,
        Some(Ok(StreamEvent::TextDelta("two ".into())))
    );
    assert!(
        started.elapsed() >= Duration::from_millis(40),
        "the delay is real"
    );
    drop(stream);
    // The remaining four words (160 ms of delays) are never waited for.
    assert!(
        started.elapsed() < Duration::from_millis(160),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(model.remaining(), 0);
}

#[tokio::test]
async fn echo_calls_each_tool_once_with_schema_valid_arguments_then_answers() {
    let model = EchoModel::new();
    let tools = vec![weather_tool(), clock_tool()];
    let mut history = vec![Message::system("Be brief."), Message::human("What's up?")];
    let first = model
        .complete(ChatRequest {
            tools: tools.clone(),
            ..ChatRequest::new(history.clone())
        })
        .await
        .expect("echo");
    assert_eq!(first.finish_reason, FinishReason::ToolCalls);
    let first_calls = calls(&first);
    assert_eq!(first_calls.len(), 2);
    assert_eq!(first_calls[0].0, "echo_call_1");
    assert_eq!(first_calls[0].1, "get_weather");
    let args: Value = serde_json::from_str(&first_calls[0].2).expect("JSON arguments");
    assert_eq!(args, json!({"city": "example", "days": 1}));
    assert_eq!(
        first_calls[1],
        ("echo_call_2".into(), "clock".into(), "{}".into())
    );

    history.push(first.message.clone());
    history.push(Message::tool_response(
        "echo_call_1",
        "get_weather",
        "sunny",
    ));
    history.push(Message::tool_response("echo_call_2", "clock", "noon"));
    let (events, answer) = streamed(
        &model,
        ChatRequest {
            options: ChatOptions {
                temperature: Some(0.5),
                ..ChatOptions::default()
            },
            tools,
            ..ChatRequest::new(history)
        },
    )
    .await
    .expect("echo");
    assert_eq!(answer.finish_reason, FinishReason::Stop);
    assert!(
        events
            .iter()
            .filter(|e| matches!(e, StreamEvent::TextDelta(_)))
            .count()
            > 5,
        "streams word by word"
    );
    let report: Value = serde_json::from_str(&answer.message.text()).expect("JSON report");
    assert_eq!(report["prompt"], "What's up?");
    assert_eq!(report["system"], "Be brief.");
    assert_eq!(
        report["tool_results"],
        json!([
            {"tool_call_id": "echo_call_1", "name": "get_weather", "output": "sunny"},
            {"tool_call_id": "echo_call_2", "name": "clock", "output": "noon"}
        ])
    );
    assert_eq!(report["options"]["temperature"], 0.5);
    assert!(answer.usage.input_tokens > 0 && answer.usage.output_tokens > 0);
}

#[tokio::test]
async fn echo_raw_explicit_calls_tool_choice_and_stream_equals_complete() {
    let model = EchoModel::new();
    let raw = model
        .complete(ChatRequest::new(vec![Message::human(
            r#"{"raw": "exactly this"}"#,
        )]))
        .await
        .expect("echo");
    assert_eq!(raw.message.text(), "exactly this");

    let explicit = ChatRequest::new(vec![Message::human(
        r#"{"tool_calls": [{"name": "clock", "arguments": {"tz": "UTC"}}]}"#,
    )]);
    let response = model.complete(explicit).await.expect("echo");
    assert_eq!(
        calls(&response),
        [(
            "echo_call_1".into(),
            "clock".into(),
            r#"{"tz":"UTC"}"#.into()
        )]
    );

    let none = ChatRequest {
        options: ChatOptions {
            tool_choice: Some(ToolChoice::None),
            ..ChatOptions::default()
        },
        tools: vec![clock_tool()],
        ..ChatRequest::new(vec![Message::human("hi")])
    };
    assert!(calls(&model.complete(none).await.expect("echo")).is_empty());
    let only = ChatRequest {
        options: ChatOptions {
            tool_choice: Some(ToolChoice::Tool("clock".into())),
            ..ChatOptions::default()
        },
        tools: vec![clock_tool(), weather_tool()],
        ..ChatRequest::new(vec![Message::human("hi")])
    };
    assert_eq!(calls(&model.complete(only).await.expect("echo")).len(), 1);

    let mut with_image = Message::human("see");
    with_image
        .parts
        .push(ContentPart::image_url("https://example.com/a.png"));
    let request = ChatRequest::new(vec![Message::human("first"), Message::ai("ok"), with_image]);
    let streamed_answer = decoded(model.stream(request.clone()).await.expect("echo"))
        .await
        .expect("echo")
        .1;
    let completed = model.complete(request).await.expect("echo");
    assert_eq!(streamed_answer, completed);
    let report: Value = serde_json::from_str(&completed.message.text()).expect("JSON");
    assert_eq!(report["previous"], json!([{"prompt": "first"}]));
    assert_eq!(
        report["attachments"],
        json!([{"type": "image_url", "url": "https://example.com/a.png"}])
    );
}

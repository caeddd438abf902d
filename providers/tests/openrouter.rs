//! The OpenRouter adapter (`model = "openrouter"`) against a loopback server replaying bytes in
//! the shapes OpenRouter documents (`tests/fixtures/openrouter/README.md` names the pages).
//! Expected values are read off the fixtures.

use crate::support;

use providers::{
    ChatOptions, ChatRequest, FinishReason, Message, ModelConfig, Provider, ProviderError,
    ReasoningEffort, Usage, model_from_config,
};
use support::{Canned, Replay, calls, delta_text, reasoning_parts, streamed};

const PATH: &str = "/api/v1/chat/completions";

fn model(replay: &Replay, model_id: &str) -> Box<dyn providers::ChatModel> {
    let config = ModelConfig {
        model: Some("openrouter".into()),
        ..support::config(model_id, &format!("{}/api/v1", replay.url()))
    };
    model_from_config(&config).expect("builds")
}

#[tokio::test]
async fn reasoning_then_a_tool_call_with_keep_alive_comments() {
    let replay = Replay::fixture(PATH, "openrouter/stream_tool_call.sse").await;
    let model = model(&replay, "anthropic/claude-sonnet-4.5");
    assert_eq!(model.info().provider, Provider::OpenRouter);
    let (events, response) = streamed(
        model.as_ref(),
        ChatRequest::new(vec![Message::human("Weather in Paris?")]),
    )
    .await
    .expect("decodes");
    assert_eq!(delta_text(&events), "Let me check.");
    assert_eq!(response.message.text(), "Let me check.");
    let reasoning: String = reasoning_parts(&response)
        .iter()
        .map(|r| r.text.as_str())
        .collect();
    assert_eq!(reasoning, "The user wants the weather.");
    // The signature the third chunk carried is kept for the next request.
    assert!(
        reasoning_parts(&response)
            .iter()
            .any(|r| r.signature.as_deref() == Some("EqkCCkYIBxgCKkBsig==")),
        "{:?}",
        reasoning_parts(&response)
    );
    assert_eq!(
        calls(&response),
        [(
            "toolu_01AbC".to_owned(),
            "get_weather".to_owned(),
            r#"{"city": "Paris"}"#.to_owned()
        )]
    );
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    assert_eq!(
        response.usage,
        Usage {
            input_tokens: 412,
            output_tokens: 58,
            cached_input_tokens: 128,
            cache_creation_tokens: 0,
            reasoning_tokens: 21,
        }
    );
}

#[tokio::test]
async fn the_request_uses_openrouters_reasoning_object() {
    let replay = Replay::fixture(PATH, "openrouter/stream_tool_call.sse").await;
    let model = model(&replay, "anthropic/claude-sonnet-4.5");
    let mut expected = Vec::new();
    for (options, reasoning) in [
        (
            ChatOptions {
                reasoning_effort: Some(ReasoningEffort::High),
                ..ChatOptions::default()
            },
            serde_json::json!({"effort": "high"}),
        ),
        (
            ChatOptions {
                thinking_budget: Some(2000),
                reasoning_effort: Some(ReasoningEffort::Low),
                ..ChatOptions::default()
            },
            serde_json::json!({"max_tokens": 2000}),
        ),
    ] {
        let request = ChatRequest::new(vec![Message::human("Hi")]).with_options(ChatOptions {
            max_tokens: Some(300),
            ..options
        });
        streamed(model.as_ref(), request).await.expect("decodes");
        expected.push(reasoning);
    }
    let sent = replay.requests().await;
    assert_eq!(sent.len(), 2);
    for (body, expected) in sent.iter().zip(expected) {
        assert_eq!(body["model"], "anthropic/claude-sonnet-4.5");
        assert_eq!(body["reasoning"], expected, "{body}");
        assert!(body.get("reasoning_effort").is_none(), "{body}");
        // OpenRouter takes the classic name of the output limit.
        assert_eq!(body["max_tokens"], 300);
        assert!(body.get("max_completion_tokens").is_none());
        assert_eq!(body["stream"], true);
    }
    let raw = &replay.raw_requests().await[0];
    assert_eq!(
        raw.headers.get("authorization").unwrap().to_str().unwrap(),
        "Bearer test-key-123"
    );
}

#[tokio::test]
async fn an_upstream_failure_mid_stream_is_a_retryable_openrouter_error() {
    let replay = Replay::fixture(PATH, "openrouter/stream_midstream_error.sse").await;
    let model = model(&replay, "google/gemini-2.5-flash");
    let err = streamed(
        model.as_ref(),
        ChatRequest::new(vec![Message::human("Tallest?")]),
    )
    .await
    .expect_err("the stream failed");
    match err {
        ProviderError::Stream {
            provider,
            message,
            retryable,
            ..
        } => {
            assert_eq!(provider, Provider::OpenRouter);
            assert_eq!(message, "Provider returned error");
            // Code 502: the model's provider is down, as an HTTP 502 would say.
            assert!(retryable);
        }
        other => panic!("expected a stream error, got {other:?}"),
    }
}

#[tokio::test]
async fn an_http_error_names_the_upstream_provider() {
    let replay = Replay::sequence(
        PATH,
        vec![Canned::error(502, "openrouter/error_502_upstream.json")],
    )
    .await;
    let mut config = ModelConfig {
        model: Some("openrouter".into()),
        ..support::config(
            "anthropic/claude-sonnet-4.5",
            &format!("{}/api/v1", replay.url()),
        )
    };
    config.retry = providers::RetryPolicy::none();
    let model = model_from_config(&config).expect("builds");
    let err = model
        .complete(ChatRequest::new(vec![Message::human("Hi")]))
        .await
        .expect_err("502");
    match &err {
        ProviderError::Http {
            provider,
            status,
            code,
            message,
            retryable,
            ..
        } => {
            assert_eq!(*provider, Provider::OpenRouter);
            assert_eq!(*status, 502);
            assert_eq!(code.as_deref(), Some("502"));
            assert_eq!(
                message,
                "Provider returned error (upstream provider: Anthropic)"
            );
            assert!(retryable);
        }
        other => panic!("expected an HTTP error, got {other:?}"),
    }
    assert!(!err.to_string().contains("test-key-123"));
}

#[test]
fn the_registry_knows_the_vendors_models() {
    let info = providers::ModelInfo::lookup(Provider::OpenRouter, "openai/gpt-4o-mini");
    assert_eq!(info.provider, Provider::OpenRouter);
    assert_eq!(
        (info.context_window, info.max_output_tokens),
        (128_000, 16_384)
    );
    assert!(info.known);
    let unknown = providers::ModelInfo::lookup(Provider::OpenRouter, "meta-llama/llama-3.3-70b");
    assert!(!unknown.known);
    assert_eq!(unknown.provider, Provider::OpenRouter);
}

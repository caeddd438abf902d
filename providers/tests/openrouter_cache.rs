//! `PromptCache` breakpoints at OpenRouter: Anthropic and Gemini models served there cache
//! only what a `cache_control` marks, on a content part (OpenRouter's prompt-caching docs), so
//! the hints a caller gives become markers on the text parts that end each cached prefix,
//! as the Anthropic adapter places them; without breakpoints the body is unchanged.

use crate::support;

use std::time::Duration;

use providers::{
    CacheBreakpoint, ChatOptions, ChatRequest, Message, ModelConfig, PromptCache, ProviderError,
    model_from_config,
};
use serde_json::{Value, json};
use support::Replay;

const PATH: &str = "/api/v1/chat/completions";

async fn sent(request: ChatRequest) -> Result<Value, ProviderError> {
    let replay = Replay::fixture(PATH, "openai/chat_text.json").await;
    let config = ModelConfig {
        model: Some("openrouter".into()),
        ..support::config(
            "anthropic/claude-sonnet-4.5",
            &format!("{}/api/v1", replay.url()),
        )
    };
    let model = model_from_config(&config).expect("builds");
    model.complete(request).await?;
    Ok(replay.requests().await.remove(0))
}

fn conversation() -> Vec<Message> {
    vec![
        Message::system("You are a librarian. [long instructions]"),
        Message::human("Here is the catalogue. [long document]"),
        Message::ai("Read it."),
        Message::human("Which shelf holds poetry?"),
    ]
}

fn cached(breakpoints: Vec<CacheBreakpoint>, ttl: Option<Duration>) -> ChatRequest {
    ChatRequest::new(conversation()).with_options(ChatOptions {
        cache: PromptCache {
            breakpoints,
            ttl,
            key: None,
        },
        ..ChatOptions::default()
    })
}

fn marked(text: &str, ttl: Option<&str>) -> Value {
    let mut control = json!({"type": "ephemeral"});
    if let Some(ttl) = ttl {
        control["ttl"] = json!(ttl);
    }
    json!([{"cache_control": control, "text": text, "type": "text"}])
}

#[tokio::test]
async fn breakpoints_mark_the_text_that_ends_each_prefix() {
    let body = sent(cached(
        vec![CacheBreakpoint::System, CacheBreakpoint::LastMessage],
        None,
    ))
    .await
    .expect("answers");
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(
        messages[0]["content"],
        marked("You are a librarian. [long instructions]", None),
        "{body}"
    );
    assert_eq!(
        messages[1]["content"],
        "Here is the catalogue. [long document]"
    );
    assert_eq!(messages[2]["content"], "Read it.");
    assert_eq!(
        messages[3]["content"],
        marked("Which shelf holds poetry?", None)
    );

    let body = sent(cached(
        vec![CacheBreakpoint::Message(1)],
        Some(Duration::from_secs(3600)),
    ))
    .await
    .expect("answers");
    assert_eq!(
        body["messages"][1]["content"],
        marked("Here is the catalogue. [long document]", Some("1h"))
    );
    assert_eq!(
        body["messages"][0]["content"],
        "You are a librarian. [long instructions]"
    );
}

/// A breakpoint after a message that cannot carry a marker (an assistant or tool message)
/// marks the last text before it: a shorter prefix, still cached.
#[tokio::test]
async fn a_breakpoint_on_an_assistant_message_marks_the_text_before_it() {
    let body = sent(cached(vec![CacheBreakpoint::Message(2)], None))
        .await
        .expect("answers");
    assert_eq!(
        body["messages"][1]["content"],
        marked("Here is the catalogue. [long document]", None),
        "{body}"
    );
    assert_eq!(body["messages"][2]["content"], "Read it.");
}

#[tokio::test]
async fn without_breakpoints_nothing_changes_and_a_bad_index_is_refused() {
    let body = sent(ChatRequest::new(conversation()))
        .await
        .expect("answers");
    let text = body.to_string();
    assert!(!text.contains("cache_control"), "{text}");

    let err = sent(cached(vec![CacheBreakpoint::Message(9)], None))
        .await
        .expect_err("refused");
    assert!(matches!(err, ProviderError::Config { .. }), "{err:?}");
}

//! Which role carries the system prompt in a Chat Completions request, as a loopback server
//! receives it.
//!
//! o1-mini and o1-preview (and their dated snapshots) answer 400 to a `system` message and to
//! a `developer` one, so their system prompt goes as a user message, on any endpoint (a proxy
//! forwards the 400). OpenAI's later reasoning models take `developer` messages, but only on
//! OpenAI's own endpoint, which a loopback server is not: that case is a unit test of
//! `openai::request` (`system_prompt_role_on_openais_endpoint`). Everything else keeps
//! `system`.

use crate::support;

use providers::{ChatRequest, Message, ModelConfig, model_from_config};
use serde_json::{Value, json};
use support::Replay;

async fn sent(model_id: &str, openrouter: bool) -> Value {
    let (path, base) = if openrouter {
        ("/api/v1/chat/completions", "/api/v1")
    } else {
        ("/v1/chat/completions", "/v1")
    };
    let replay = Replay::fixture(path, "openai/chat_text.json").await;
    let config = ModelConfig {
        model: openrouter.then(|| "openrouter".to_owned()),
        ..support::config(model_id, &format!("{}{base}", replay.url()))
    };
    let request = ChatRequest::new(vec![
        Message::system("Answer in French."),
        Message::human("Hello"),
    ]);
    model_from_config(&config)
        .expect("builds")
        .complete(request)
        .await
        .expect("answers");
    replay.requests().await.remove(0)
}

#[tokio::test]
async fn early_o1_models_get_the_system_prompt_as_user_text() {
    for model in [
        "o1-mini",
        "o1-mini-2024-09-12",
        "o1-preview",
        "o1-preview-2024-09-12",
    ] {
        let body = sent(model, false).await;
        assert_eq!(
            body["messages"],
            json!([
                {"role": "user", "content": "Answer in French."},
                {"role": "user", "content": "Hello"},
            ]),
            "{model}"
        );
    }
    let body = sent("openai/o1-mini", true).await;
    assert_eq!(body["messages"][0]["role"], "user", "through OpenRouter");
}

#[tokio::test]
async fn other_models_keep_the_system_role_off_openais_endpoint() {
    for model in [
        "gpt-4o",
        "o1",
        "o3",
        "o4-mini",
        "gpt-5",
        "deepseek-reasoner",
        "llama3",
    ] {
        let body = sent(model, false).await;
        assert_eq!(
            body["messages"][0],
            json!({"role": "system", "content": "Answer in French."}),
            "{model}"
        );
    }
    let body = sent("openai/o3", true).await;
    assert_eq!(body["messages"][0]["role"], "system", "through OpenRouter");
}

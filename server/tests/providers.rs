//! The server in front of each provider: a real HTTP client against the server on a loopback
//! port, the server against a wiremock provider replaying the recorded fixtures of
//! `providers/tests/fixtures` byte for byte. The exact SSE event sequences are snapshots
//! (ids and times replaced by placeholders).

use crate::support;

use providers::Provider;
use serde_json::{Value, json};
use server::ServerConfig;
use server::schema::Secret;
use service::ServiceConfig;
use service::config::ProviderBaseUrls;
use service::keys::ProviderKeys;
use support::{Sse, TestServer, events, received, replay};
use wiremock::MockServer;

/// The events with the values that change from run to run replaced.
fn normalized(events: &[Sse]) -> Value {
    let id = events
        .first()
        .and_then(|start| start.data["id"].as_str())
        .unwrap_or_default()
        .to_owned();
    Value::Array(
        events
            .iter()
            .map(|event| {
                let mut data = event.data.clone();
                if data["id"] == json!(id) {
                    data["id"] = json!("<response id>");
                }
                for (key, placeholder) in [
                    ("created", "<unix time>"),
                    ("conversation_id", "<conversation id>"),
                ] {
                    if data.get(key).is_some_and(|v| !v.is_null()) {
                        data[key] = json!(placeholder);
                    }
                }
                timings_hidden(&mut data);
                json!({"event": event.name, "data": data})
            })
            .collect(),
    )
}

/// Replaces every measured time (`duration_ms`, `ttft_ms`, in blocks and model calls too)
/// with `<ms>`; a time that was not measured stays null.
fn timings_hidden(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, value) in map.iter_mut() {
                if matches!(key.as_str(), "duration_ms" | "ttft_ms") && !value.is_null() {
                    *value = json!("<ms>");
                } else {
                    timings_hidden(value);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(timings_hidden),
        _ => {}
    }
}

/// A server whose OpenAI models use `mock` with the server's own (dummy) key.
async fn openai_server(mock: &MockServer) -> TestServer {
    let mut keys = ProviderKeys::default();
    keys.set(Provider::OpenAi, Secret::new("sk-server-test"));
    TestServer::start(ServerConfig {
        service: ServiceConfig {
            keys,
            base_urls: ProviderBaseUrls::from([(Provider::OpenAi, format!("{}/v1", mock.uri()))]),
            ..ServiceConfig::default()
        },
        ..ServerConfig::default()
    })
    .await
}

/// A server that lets requests bring their own endpoint and key.
async fn open_server() -> TestServer {
    TestServer::start(ServerConfig {
        service: ServiceConfig {
            allow_request_base_url: true,
            ..ServiceConfig::default()
        },
        ..ServerConfig::default()
    })
    .await
}

#[tokio::test]
async fn openai_chat_tool_round_then_answer() {
    let mock = MockServer::start().await;
    replay(
        &mock,
        "/v1/chat/completions",
        &[
            "openai/chat_stream_tool_call.sse",
            "openai/chat_stream_text_after_tool.sse",
        ],
    )
    .await;
    let server = openai_server(&mock).await;
    let events = events(
        server
            .post(&json!({
                "model_config": {"model_id": "gpt-4o-mini"},
                "input": {"text": "What is 1231 * 2331?"},
                "tools": {"builtin": {"calculator": {}}},
                "temperature": 0,
            }))
            .await,
    )
    .await;
    insta::assert_json_snapshot!("openai_chat_tool_round", normalized(&events));

    // The model called `multiply`, which this server does not have: the model was told so,
    // under the provider's call id, and answered in a second request.
    let sent = received(&mock).await;
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[0]["model"], "gpt-4o-mini");
    assert_eq!(sent[0]["temperature"], 0.0);
    assert_eq!(sent[0]["tools"][0]["function"]["name"], "calculator");
    let tool_message = sent[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("the follow-up carries the tool result");
    assert_eq!(
        tool_message["tool_call_id"],
        "call_1EYWDzueHEp8OsB8jJSEp7WB"
    );
    assert!(
        tool_message["content"]
            .as_str()
            .unwrap()
            .contains("unknown tool")
    );
    server.stop().await;
}

#[tokio::test]
async fn openai_responses_api_text() {
    let mock = MockServer::start().await;
    replay(
        &mock,
        "/v1/responses",
        &["openai/responses_stream_text.sse"],
    )
    .await;
    let server = openai_server(&mock).await;
    let events = events(
        server
            .post(&json!({
                "model_config": {"model_id": "gpt-4o-mini", "api_format": "responses"},
                "input": {"text": "Say hello."},
                "system": "Be brief.",
            }))
            .await,
    )
    .await;
    insta::assert_json_snapshot!("openai_responses_text", normalized(&events));
    let sent = received(&mock).await;
    assert_eq!(sent[0]["instructions"], "Be brief.");
    server.stop().await;
}

#[tokio::test]
async fn anthropic_text() {
    let mock = MockServer::start().await;
    replay(&mock, "/v1/messages", &["anthropic/stream_text.sse"]).await;
    let server = open_server().await;
    let events = events(
        server
            .post(&json!({
                "model_config": {"model_id": "claude-sonnet-4-5", "base_url": mock.uri(), "api_key": "sk-ant-test"},
                "input": {"text": "Name two pirates."},
                "max_tokens": 256,
            }))
            .await,
    )
    .await;
    insta::assert_json_snapshot!("anthropic_text", normalized(&events));
    let sent = received(&mock).await;
    assert_eq!(sent[0]["max_tokens"], 256);
    assert_eq!(sent[0]["stream"], true);
    let headers = &mock.received_requests().await.unwrap()[0].headers;
    assert_eq!(headers["x-api-key"], "sk-ant-test");
    server.stop().await;
}

#[tokio::test]
async fn anthropic_deep_thinking_streams_reasoning() {
    let mock = MockServer::start().await;
    replay(
        &mock,
        "/v1/messages",
        &["anthropic/stream_thinking_text.sse"],
    )
    .await;
    let server = open_server().await;
    let events = events(
        server
            .post(&json!({
                "model_config": {"model_id": "claude-sonnet-4-5", "base_url": mock.uri(), "api_key": "sk-ant-test"},
                "input": {"text": "Think, then answer."},
                "features": {"deep_thinking": true},
                "max_tokens": 4000,
            }))
            .await,
    )
    .await;
    insta::assert_json_snapshot!("anthropic_thinking", normalized(&events));
    let sent = received(&mock).await;
    assert_eq!(
        sent[0]["thinking"],
        json!({"type": "enabled", "budget_tokens": 2000})
    );
    server.stop().await;
}

#[tokio::test]
async fn gemini_text() {
    let mock = MockServer::start().await;
    replay(
        &mock,
        "/v1beta/models/gemini-2.5-flash:streamGenerateContent",
        &["gemini/stream_text.sse"],
    )
    .await;
    let server = open_server().await;
    let events = events(
        server
            .post(&json!({
                "model_config": {"model_id": "gemini-2.5-flash", "base_url": format!("{}/v1beta", mock.uri()), "api_key": "g-test"},
                "input": {"text": "Count to 40, one per line."},
            }))
            .await,
    )
    .await;
    insta::assert_json_snapshot!("gemini_text", normalized(&events));
    server.stop().await;
}

#[tokio::test]
async fn gemini_deep_thinking_streams_reasoning() {
    let mock = MockServer::start().await;
    replay(
        &mock,
        "/v1beta/models/gemini-2.5-pro:streamGenerateContent",
        &["gemini/stream_thinking.sse"],
    )
    .await;
    let server = open_server().await;
    let events = events(
        server
            .post(&json!({
                "model_config": {"model_id": "gemini-2.5-pro", "model": "gemini", "base_url": format!("{}/v1beta", mock.uri()), "api_key": "g-test"},
                "input": {"text": "How do I cross the street?"},
                "features": {"deep_thinking": true},
            }))
            .await,
    )
    .await;
    insta::assert_json_snapshot!("gemini_thinking", normalized(&events));
    let sent = received(&mock).await;
    assert!(
        sent[0]["generationConfig"]["thinkingConfig"].is_object(),
        "{}",
        sent[0]
    );
    server.stop().await;
}

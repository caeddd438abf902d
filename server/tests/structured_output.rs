//! Structured output through the server: Chat Completions `response_format`, Responses
//! `text.format` and the Chat Shell's `response_format`, answered by the echo model offline
//! and passed on to a replayed OpenAI.

use crate::support;

use providers::Provider;
use serde_json::{Value, json};
use server::ServerConfig;
use server::schema::Secret;
use service::ServiceConfig;
use service::config::ProviderBaseUrls;
use service::keys::ProviderKeys;
use support::{TestServer, client, events, received, replay};
use wiremock::MockServer;

fn person_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 18}},
        "required": ["name", "age"],
        "additionalProperties": false
    })
}

/// The `content` deltas of a streamed Chat Completions answer (`[DONE]` skipped).
async fn chat_stream_text(response: reqwest::Response) -> String {
    use futures::StreamExt as _;
    assert_eq!(response.status(), 200);
    let mut stream = eventsource_stream::EventStream::new(response.bytes_stream());
    let mut text = String::new();
    while let Some(event) = stream.next().await {
        let data: Value =
            serde_json::from_str(&event.expect("an SSE event").data).unwrap_or(Value::Null);
        if let Some(piece) = data
            .pointer("/choices/0/delta/content")
            .and_then(Value::as_str)
        {
            text.push_str(piece);
        }
    }
    text
}

async fn post(server: &TestServer, path: &str, body: &Value) -> reqwest::Response {
    client()
        .post(server.url(path))
        .json(body)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn chat_completions_answer_json_schema_in_content_streamed_and_not() {
    let server = TestServer::start(ServerConfig::default()).await;
    let format = json!({"type": "json_schema", "json_schema": {"name": "person", "schema": person_schema(), "strict": true}});
    let request = json!({"model": "echo", "messages": [{"role": "user", "content": "Ada"}], "response_format": format});
    let answer: Value = post(&server, "/v1/chat/completions", &request)
        .await
        .json()
        .await
        .unwrap();
    let content = answer["choices"][0]["message"]["content"].as_str().unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(content).unwrap(),
        json!({"name": "Ada", "age": 18})
    );
    assert_eq!(answer["choices"][0]["finish_reason"], "stop");

    let mut streamed = request.clone();
    streamed["stream"] = json!(true);
    let text = chat_stream_text(post(&server, "/v1/chat/completions", &streamed).await).await;
    assert_eq!(text, content);

    // `json_object` and `text` are accepted too.
    for format in [json!({"type": "json_object"}), json!({"type": "text"})] {
        let request = json!({"model": "echo", "messages": [{"role": "user", "content": "hi"}], "response_format": format});
        let answer: Value = post(&server, "/v1/chat/completions", &request)
            .await
            .json()
            .await
            .unwrap();
        let content = answer["choices"][0]["message"]["content"].as_str().unwrap();
        assert!(serde_json::from_str::<Value>(content).unwrap().is_object());
    }
    server.stop().await;
}

#[tokio::test]
async fn a_bad_response_format_is_a_400_naming_every_fault() {
    let server = TestServer::start(ServerConfig::default()).await;
    let request = json!({"model": "echo", "messages": [{"role": "user", "content": "hi"}],
        "response_format": {"type": "json_schema", "json_schema": {"schema": 1, "strict": "yes"}}});
    let response = post(&server, "/v1/chat/completions", &request).await;
    assert_eq!(response.status(), 400);
    let error: Value = response.json().await.unwrap();
    assert_eq!(error["error"]["param"], "response_format.json_schema");
    let message = error["error"]["message"].as_str().unwrap();
    for field in ["name", "schema", "strict"] {
        assert!(
            message.contains(&format!("response_format.json_schema.{field}")),
            "{message}"
        );
    }
    let request = json!({"model": "echo", "input": "hi", "text": {"format": {"type": "yaml"}}});
    let response = post(&server, "/v1/responses", &request).await;
    assert_eq!(response.status(), 400);
    let error: Value = response.json().await.unwrap();
    assert_eq!(error["error"]["param"], "text.format.type");
    server.stop().await;
}

#[tokio::test]
async fn responses_answer_text_format_as_an_output_text_message() {
    let server = TestServer::start(ServerConfig::default()).await;
    let request = json!({"model": "echo", "input": "Grace",
        "text": {"format": {"type": "json_schema", "name": "person", "schema": person_schema(), "strict": true}, "verbosity": "low"}});
    let answer: Value = post(&server, "/v1/responses", &request)
        .await
        .json()
        .await
        .unwrap();
    let message = &answer["output"][0];
    assert_eq!(message["type"], "message");
    assert_eq!(message["content"][0]["type"], "output_text");
    let text = message["content"][0]["text"].as_str().unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(text).unwrap(),
        json!({"name": "Grace", "age": 18})
    );

    let mut streamed = request.clone();
    streamed["stream"] = json!(true);
    let events = events(post(&server, "/v1/responses", &streamed).await).await;
    let done = events
        .iter()
        .find(|event| event.name == "response.output_text.done")
        .expect("output_text.done");
    assert_eq!(done.data["text"], text);
    server.stop().await;
}

#[tokio::test]
async fn chat_shell_takes_response_format() {
    let server = TestServer::start(ServerConfig::default()).await;
    let request = json!({
        "model_config": {"model_id": "echo"},
        "input": {"text": "Alan"},
        "response_format": {"type": "json_schema", "json_schema": {"name": "person", "schema": person_schema()}},
        "features": {"streaming": false}
    });
    let response = post(&server, "/v1/response", &request).await;
    assert_eq!(response.status(), 200);
    let answer: Value = response.json().await.unwrap();
    let content = answer["content"].as_str().expect("the answer's text");
    assert_eq!(
        serde_json::from_str::<Value>(content).unwrap(),
        json!({"name": "Alan", "age": 18})
    );

    let bad = json!({"model_config": {"model_id": "echo"}, "input": {"text": "hi"},
        "response_format": {"type": "json_schema", "json_schema": {"schema": {}}}});
    let response = post(&server, "/v1/response", &bad).await;
    // The Chat Shell answers a request it understands but cannot honour with 422.
    assert_eq!(response.status(), 422);
    let body = response.text().await.unwrap();
    assert!(body.contains("response_format.json_schema"), "{body}");
    server.stop().await;
}

/// The format reaches OpenAI as its own `response_format`, beside the client's tools.
#[tokio::test]
async fn chat_completions_pass_response_format_on_with_tools() {
    let mock = MockServer::start().await;
    replay(
        &mock,
        "/v1/chat/completions",
        &["wire_corpus/openai-python/test_parse_pydantic_model.7e5ea4d12e7c.sse"],
    )
    .await;
    let mut keys = ProviderKeys::default();
    keys.set(Provider::OpenAi, Secret::new("sk-server-test"));
    let server = TestServer::start(ServerConfig {
        service: ServiceConfig {
            keys,
            base_urls: ProviderBaseUrls::from([(Provider::OpenAi, format!("{}/v1", mock.uri()))]),
            ..ServiceConfig::default()
        },
        ..ServerConfig::default()
    })
    .await;
    let format = json!({"type": "json_schema", "json_schema": {"name": "Location", "schema": {"type": "object"}, "strict": true}});
    let request = json!({"model": "gpt-4o", "stream": true,
        "messages": [{"role": "user", "content": "What's the weather like in SF?"}],
        "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}],
        "response_format": format});
    let text = chat_stream_text(post(&server, "/v1/chat/completions", &request).await).await;
    assert_eq!(
        text,
        r#"{"city":"San Francisco","temperature":61,"units":"f"}"#
    );
    let sent = received(&mock).await;
    assert_eq!(sent[0]["response_format"], format);
    assert_eq!(sent[0]["tools"][0]["function"]["name"], "get_weather");
    server.stop().await;
}

//! The `response` object repeats what the request asked for, as OpenAI's does: the whole
//! answer, `response.created` and `response.completed` alike, and OpenAI's defaults for what
//! the request left out (the values OpenAI's own objects show, e.g. the recorded
//! `openai/responses_reasoning_encrypted.json`: `text.format` `{"type": "text"}`, `verbosity`
//! `medium`, `service_tier` `default`, `truncation` `disabled`, `top_logprobs` 0, `background`
//! false; `temperature` and `top_p` 1 as the API reference gives them).

use crate::support;

use serde::Deserialize;
use serde_json::{Value, json};
use server::ServerConfig;
use support::{TestServer, client, events};

/// The settings of a `response` object, typed as openai-python's `Response` types them.
#[derive(Debug, Deserialize)]
struct Settings {
    temperature: Option<f64>,
    top_p: Option<f64>,
    max_output_tokens: Option<u32>,
    parallel_tool_calls: bool,
    text: Option<TextConfig>,
    reasoning: Option<ReasoningConfig>,
    truncation: Option<String>,
    user: Option<String>,
    safety_identifier: Option<String>,
    prompt_cache_key: Option<String>,
    prompt_cache_retention: Option<String>,
    service_tier: Option<String>,
    store: bool,
    top_logprobs: Option<u32>,
    tool_choice: Value,
    tools: Vec<Value>,
    background: Option<bool>,
    max_tool_calls: Option<u32>,
}

#[derive(Debug, Deserialize)]
struct TextConfig {
    format: Option<Value>,
    verbosity: Option<String>,
}

#[derive(Debug, Deserialize)]
struct ReasoningConfig {
    effort: Option<String>,
    summary: Option<String>,
}

fn weather_tool() -> Value {
    json!({"type": "function", "name": "get_weather", "description": "Weather of a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
            "required": ["city"], "additionalProperties": false},
        "strict": true})
}

fn city_format() -> Value {
    json!({"type": "json_schema", "name": "city", "strict": true,
        "schema": {"type": "object", "properties": {"name": {"type": "string"}},
            "required": ["name"], "additionalProperties": false}})
}

/// A request that sets every setting the object repeats.
fn asking_everything(stream: bool) -> Value {
    json!({
        "model": "echo",
        "input": "Name a city.",
        "stream": stream,
        "temperature": 0.3,
        "top_p": 0.8,
        "max_output_tokens": 200,
        "parallel_tool_calls": false,
        "text": {"format": city_format(), "verbosity": "low"},
        "reasoning": {"effort": "low", "summary": "concise"},
        "truncation": "disabled",
        "user": "user-7",
        "safety_identifier": "hash-1",
        "prompt_cache_key": "tenant-1",
        "prompt_cache_retention": "24h",
        "service_tier": "flex",
        "store": true,
        "top_logprobs": 2,
        "tool_choice": {"type": "function", "name": "get_weather"},
        "tools": [weather_tool()],
        "background": false,
        "max_tool_calls": 3,
    })
}

/// Every setting is the one `asking_everything` sent.
fn assert_repeats_the_request(object: &Value) {
    let settings: Settings = serde_json::from_value(object.clone()).expect("a response object");
    assert_eq!(settings.temperature, Some(0.3));
    assert_eq!(settings.top_p, Some(0.8));
    assert_eq!(settings.max_output_tokens, Some(200));
    assert!(!settings.parallel_tool_calls);
    let text = settings.text.expect("text");
    assert_eq!(text.format, Some(city_format()));
    assert_eq!(text.verbosity.as_deref(), Some("low"));
    let reasoning = settings.reasoning.expect("reasoning");
    assert_eq!(reasoning.effort.as_deref(), Some("low"));
    assert_eq!(reasoning.summary.as_deref(), Some("concise"));
    assert_eq!(settings.truncation.as_deref(), Some("disabled"));
    assert_eq!(settings.user.as_deref(), Some("user-7"));
    assert_eq!(settings.safety_identifier.as_deref(), Some("hash-1"));
    assert_eq!(settings.prompt_cache_key.as_deref(), Some("tenant-1"));
    assert_eq!(settings.prompt_cache_retention.as_deref(), Some("24h"));
    assert_eq!(settings.service_tier.as_deref(), Some("flex"));
    assert!(settings.store);
    assert_eq!(settings.top_logprobs, Some(2));
    assert_eq!(
        settings.tool_choice,
        json!({"type": "function", "name": "get_weather"})
    );
    assert_eq!(settings.tools, [weather_tool()]);
    assert_eq!(settings.background, Some(false));
    assert_eq!(settings.max_tool_calls, Some(3));
}

#[tokio::test]
async fn the_response_object_repeats_every_setting_asked_for() {
    let server = TestServer::start(ServerConfig::default()).await;
    let response = client()
        .post(server.url("/v1/responses"))
        .json(&asking_everything(false))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let object: Value = response.json().await.unwrap();
    assert_repeats_the_request(&object);

    let response = client()
        .post(server.url("/v1/responses"))
        .json(&asking_everything(true))
        .send()
        .await
        .unwrap();
    let events = events(response).await;
    let created = events
        .iter()
        .find(|event| event.name == "response.created")
        .expect("response.created");
    assert_repeats_the_request(&created.data["response"]);
    let completed = events.last().expect("events");
    assert_eq!(completed.name, "response.completed");
    assert_repeats_the_request(&completed.data["response"]);
    server.stop().await;
}

#[tokio::test]
async fn settings_left_out_read_as_openais_defaults() {
    let server = TestServer::start(ServerConfig::default()).await;
    let response = client()
        .post(server.url("/v1/responses"))
        .json(&json!({"model": "echo", "input": "Hi"}))
        .send()
        .await
        .unwrap();
    let object: Value = response.json().await.unwrap();
    let id = object["id"].as_str().expect("an id").to_owned();
    let read: Value = client()
        .get(server.url(&format!("/v1/responses/{id}")))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    // The stored response reads back with the same defaults.
    for object in [object, read] {
        let settings: Settings = serde_json::from_value(object.clone()).expect("an object");
        assert_eq!(settings.temperature, Some(1.0));
        assert_eq!(settings.top_p, Some(1.0));
        assert_eq!(settings.max_output_tokens, None);
        assert!(settings.parallel_tool_calls);
        let text = settings.text.expect("text");
        assert_eq!(text.format, Some(json!({"type": "text"})));
        assert_eq!(text.verbosity.as_deref(), Some("medium"));
        let reasoning = settings.reasoning.expect("reasoning");
        assert_eq!((reasoning.effort, reasoning.summary), (None, None));
        assert_eq!(
            object["reasoning"],
            json!({"effort": null, "summary": null})
        );
        assert_eq!(settings.truncation.as_deref(), Some("disabled"));
        assert_eq!(settings.user, None);
        assert_eq!(settings.safety_identifier, None);
        assert_eq!(settings.prompt_cache_key, None);
        assert_eq!(settings.prompt_cache_retention, None);
        assert_eq!(settings.service_tier.as_deref(), Some("default"));
        assert!(settings.store);
        assert_eq!(settings.top_logprobs, Some(0));
        assert_eq!(settings.tool_choice, json!("auto"));
        assert!(settings.tools.is_empty());
        assert_eq!(settings.background, Some(false));
        assert_eq!(settings.max_tool_calls, None);
    }
    server.stop().await;
}

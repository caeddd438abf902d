//! `POST /v1/response` end to end through a real HTTP client, on the offline echo model:
//! event sequences, tools, one-body answers, refusals, conversations across requests and
//! across a restart, health and the OpenAPI document.

use crate::support;

use serde_json::{Value, json};
use server::ServerConfig;
use service::ServiceConfig;
use support::{TestServer, client, content, events, names, terminal};

fn echo(text: &str) -> Value {
    json!({"model_config": {"model_id": "echo"}, "input": {"text": text}})
}

#[tokio::test]
async fn streams_the_seed_events_in_order() {
    let server = TestServer::start(ServerConfig::default()).await;
    let response = client()
        .post(server.url("/v1/response"))
        .header("x-request-id", "req-e2e-1")
        .json(&echo(r#"{"raw": "Hello there, friend"}"#))
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers()["x-request-id"], "req-e2e-1");
    assert_eq!(response.headers()["cache-control"], "no-cache");
    let events = events(response).await;
    assert_eq!(
        names(&events),
        [
            "response.start",
            "content.delta",
            "content.delta",
            "content.delta",
            "response.done"
        ]
    );
    let start = &events[0].data;
    let id = start["id"].as_str().unwrap();
    // `resp-` and 32 hex digits: 122 random bits, unguessable.
    assert!(id.starts_with("resp-") && id.len() == 37, "{id}");
    assert_eq!(start["model"], "echo");
    assert!(start["created"].as_u64().unwrap() > 1_700_000_000);
    assert_eq!(events[1].data["type"], "text");
    assert_eq!(events[1].data["text"], "Hello ");
    assert_eq!(events[1].data["block_offset"], 0);
    assert_eq!(content(&events), "Hello there, friend");

    let done = terminal(&events, "response.done");
    assert_eq!(done["id"], id);
    assert_eq!(done["stop_reason"], "end_turn");
    assert_eq!(done["silent_exit"], false);
    assert_eq!(done["rounds"], 1);
    // The echo model counts words: 4 in the prompt, 3 in the answer.
    assert_eq!(done["usage"]["input_tokens"], 4);
    assert_eq!(done["usage"]["output_tokens"], 3);
    assert_eq!(done["usage"]["total_tokens"], 7);
    // Every response is logged: the conversation and its node come back.
    assert!(done["conversation_id"].as_str().is_some());
    assert_eq!(done["node_ids"], json!([1]));
    server.stop().await;
}

#[tokio::test]
async fn tool_rounds_stream_tool_events() {
    let server = TestServer::start(ServerConfig::default()).await;
    let mut body =
        echo(r#"{"tool_calls": [{"name": "calculator", "arguments": {"expression": "6 * 7"}}]}"#);
    body["tools"] = json!({"builtin": {"calculator": {"enabled": true}}});
    let events = events(server.post(&body).await).await;
    let names = names(&events);
    assert_eq!(&names[..3], ["response.start", "tool.start", "tool.done"]);
    assert_eq!(names.last(), Some(&"response.done"));
    assert!(
        names[3..names.len() - 1]
            .iter()
            .all(|n| *n == "content.delta")
    );

    let start = &events[1].data;
    assert_eq!(start["id"], "echo_call_1");
    assert_eq!(start["name"], "calculator");
    assert_eq!(start["input"], json!({"expression": "6 * 7"}));
    let done = &events[2].data;
    assert_eq!(done["id"], "echo_call_1");
    assert_eq!(done["error"], Value::Null);
    assert!(done["output"].as_str().unwrap().contains("42"), "{done}");
    // The model's second round saw the tool result.
    let report: Value = serde_json::from_str(&content(&events)).unwrap();
    assert_eq!(report["tool_results"][0]["name"], "calculator");
    assert_eq!(terminal(&events, "response.done")["rounds"], 2);
    server.stop().await;
}

#[tokio::test]
async fn one_json_body_without_streaming() {
    let server = TestServer::start(ServerConfig::default()).await;
    let mut body =
        echo(r#"{"tool_calls": [{"name": "calculator", "arguments": {"expression": "2 ^ 10"}}]}"#);
    body["tools"] = json!({"builtin": {"calculator": {}}});
    body["features"] = json!({"streaming": false});
    let response = server.post(&body).await;
    assert_eq!(response.status(), 200);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/json")
    );
    let answer: Value = response.json().await.unwrap();
    assert_eq!(answer["model"], "echo");
    assert_eq!(answer["stop_reason"], "end_turn");
    assert_eq!(answer["rounds"], 2);
    assert_eq!(answer["tool_calls"][0]["name"], "calculator");
    assert!(
        answer["tool_calls"][0]["output"]
            .as_str()
            .unwrap()
            .contains("1024")
    );
    let report: Value = serde_json::from_str(answer["content"].as_str().unwrap()).unwrap();
    assert!(report["prompt"].as_str().unwrap().contains("tool_calls"));
    server.stop().await;
}

#[tokio::test]
async fn refusals_are_clear_client_errors() {
    let server = TestServer::start(ServerConfig::default()).await;
    let malformed = client()
        .post(server.url("/v1/response"))
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(malformed.status(), 400);
    assert_eq!(
        malformed.json::<Value>().await.unwrap()["code"],
        "invalid_request"
    );

    let mut typo = echo("hi");
    typo["temprature"] = json!(0.1);
    let answer = server.post(&typo).await;
    assert_eq!(answer.status(), 422);
    let body: Value = answer.json().await.unwrap();
    assert_eq!(body["code"], "invalid_field");
    assert!(
        body["message"].as_str().unwrap().contains("temprature"),
        "{body}"
    );

    let mut mcp = echo("hi");
    mcp["tools"] = json!({"mcp_servers": [{"name": "x", "url": "http://127.0.0.1:1"}]});
    let answer = server.post(&mcp).await;
    assert_eq!(answer.status(), 422);
    let body: Value = answer.json().await.unwrap();
    assert_eq!(body["code"], "unsupported_field");
    assert_eq!(
        body["details"]["fields"][0]["field"],
        "tools.mcp_servers[0].url"
    );

    let mut files = echo("hi");
    files["tools"] = json!({"builtin": {"read_file": {}}});
    let answer = server.post(&files).await;
    assert_eq!(answer.status(), 422);
    let body: Value = answer.json().await.unwrap();
    assert_eq!(body["code"], "unavailable_tool");

    // A model without a key says which variable to set.
    let answer = server
        .post(&json!({"model_config": {"model_id": "gpt-4o"}, "input": {"text": "hi"}}))
        .await;
    assert_eq!(answer.status(), 422);
    let body: Value = answer.json().await.unwrap();
    assert_eq!(body["code"], "invalid_model");
    assert!(
        body["message"].as_str().unwrap().contains("OPENAI_API_KEY"),
        "{body}"
    );
    server.stop().await;
}

#[tokio::test]
async fn a_conversation_continues_across_requests() {
    let server = TestServer::start(ServerConfig::default()).await;
    let mut first = echo("My name is Ada.");
    first["metadata"] = json!({"conversation_id": "conv-e2e"});
    let events1 = events(server.post(&first).await).await;
    assert_eq!(
        terminal(&events1, "response.done")["conversation_id"],
        "conv-e2e"
    );

    let mut second = echo("What is my name?");
    second["session_id"] = json!("conv-e2e");
    let events2 = events(server.post(&second).await).await;
    let report: Value = serde_json::from_str(&content(&events2)).unwrap();
    assert_eq!(report["prompt"], "What is my name?");
    assert_eq!(report["previous"], json!([{"prompt": "My name is Ada."}]));
    assert_eq!(terminal(&events2, "response.done")["node_ids"], json!([2]));

    // Without history the same conversation starts a new branch.
    let mut fresh = echo("Who am I?");
    fresh["session_id"] = json!("conv-e2e");
    fresh["include_history"] = json!(false);
    let events3 = events(server.post(&fresh).await).await;
    let report: Value = serde_json::from_str(&content(&events3)).unwrap();
    assert_eq!(report["previous"], json!([]));
    server.stop().await;
}

#[tokio::test]
async fn a_conversation_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let config = || ServerConfig {
        service: ServiceConfig {
            store: dir.path().join("logs.db").to_str().unwrap().to_owned(),
            ..ServiceConfig::default()
        },
        ..ServerConfig::default()
    };
    let first_server = TestServer::start(config()).await;
    let mut first = echo("Remember the number 17.");
    first["metadata"] = json!({"task_id": 99});
    let done = terminal(
        &events(first_server.post(&first).await).await,
        "response.done",
    )
    .clone();
    assert_eq!(done["conversation_id"], "task-99");
    first_server.stop().await;

    let second_server = TestServer::start(config()).await;
    let mut second = echo("Which number?");
    second["metadata"] = json!({"task_id": 99});
    let events = events(second_server.post(&second).await).await;
    let report: Value = serde_json::from_str(&content(&events)).unwrap();
    assert_eq!(
        report["previous"],
        json!([{"prompt": "Remember the number 17."}])
    );
    let health: Value = client()
        .get(second_server.url("/health"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(health["storage"], json!({"type": "sqlite", "status": "ok"}));
    second_server.stop().await;
}

#[tokio::test]
async fn health_and_openapi() {
    let server = TestServer::start(ServerConfig::default()).await;
    let health = client().get(server.url("/health")).send().await.unwrap();
    assert_eq!(health.status(), 200);
    let health: Value = health.json().await.unwrap();
    assert_eq!(health["status"], "healthy");
    assert_eq!(health["active_streams"], 0);
    assert_eq!(health["storage"]["type"], "memory");

    let doc: Value = client()
        .get(server.url("/openapi.json"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
    for path in [
        "/v1/response",
        "/v1/response/{id}/cancel",
        "/v1/response/{id}/events",
        "/v1/response/{id}/approval",
        "/health",
        "/openapi.json",
    ] {
        assert!(doc["paths"].get(path).is_some(), "{path} is documented");
    }
    let request = &doc["components"]["schemas"]["ResponseRequest"];
    let mut fields: Vec<&str> = request["properties"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    fields.sort_unstable();
    assert_eq!(
        fields,
        [
            "attachments",
            "background",
            "features",
            "include_history",
            "input",
            "knowledge_context",
            "max_tokens",
            "metadata",
            "model_config",
            "require_approval",
            "response_format",
            "session_id",
            "system",
            "temperature",
            "tool_choice",
            "tool_results",
            "tools",
        ]
    );
    assert_eq!(request["required"], json!(["model_config", "input"]));
    let streaming = &doc["paths"]["/v1/response"]["post"]["responses"]["200"]["content"];
    assert!(streaming.get("text/event-stream").is_some());
    assert!(streaming.get("application/json").is_some());
    assert!(doc["components"]["securitySchemes"].get("bearer").is_some());
    server.stop().await;
}

//! The routes OpenAI clients reach besides chat: `GET /v1/models/{id}`, and OpenAI's error
//! shape for a path or a method no route takes. Expected bodies follow the OpenAI API
//! reference: a model object is `{"id", "object": "model", "created", "owned_by"}`, an error
//! `{"error": {"message", "type", "param", "code"}}`.

use serde_json::{Value, json};
use server::ServerConfig;
use server::service::ServiceConfig;

use crate::support::{TestServer, client};

async fn get(server: &TestServer, path: &str) -> (u16, reqwest::header::HeaderMap, Value) {
    let response = client().get(server.url(path)).send().await.unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let body = response.json().await.unwrap_or(Value::Null);
    (status, headers, body)
}

/// An OpenAI error object has these four keys, no more.
fn assert_openai_error(body: &Value, kind: &str, code: &str) -> String {
    let error = body["error"].as_object().expect("an `error` object");
    let mut keys: Vec<&str> = error.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["code", "message", "param", "type"], "{body}");
    assert_eq!(error["type"], kind, "{body}");
    assert_eq!(error["code"], code, "{body}");
    error["message"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_model_is_retrieved_by_id_even_with_slashes() {
    let agent = server::service::config::AgentAlias {
        model: "echo".into(),
        ..Default::default()
    };
    let server = TestServer::start(ServerConfig {
        service: ServiceConfig {
            agents: [("team/helper".to_owned(), agent)].into_iter().collect(),
            ..ServiceConfig::default()
        },
        ..ServerConfig::default()
    })
    .await;

    let (status, _, echo) = get(&server, "/v1/models/echo").await;
    assert_eq!(status, 200);
    assert_eq!(echo["id"], "echo");
    assert_eq!(echo["object"], "model");
    assert_eq!(echo["created"], 0);
    assert_eq!(echo["owned_by"], "skein");

    let (status, _, agent) = get(&server, "/v1/models/team/helper").await;
    assert_eq!(status, 200, "{agent}");
    assert_eq!(agent["id"], "team/helper");

    let (status, _, listed) = get(&server, "/v1/models/gpt-4o").await;
    assert_eq!(status, 200);
    assert_eq!(listed["owned_by"], "openai");
    // A dated snapshot of a listed family is a model too.
    let (status, _, snapshot) = get(&server, "/v1/models/gpt-4o-2024-08-06").await;
    assert_eq!(status, 200);
    assert_eq!(snapshot["id"], "gpt-4o-2024-08-06");

    let (status, _, missing) = get(&server, "/v1/models/openrouter/acme/nothing-9").await;
    assert_eq!(status, 404);
    let message = assert_openai_error(&missing, "not_found_error", "model_not_found");
    assert!(message.contains("`openrouter/acme/nothing-9`"), "{message}");
    assert_eq!(missing["error"]["param"], "model");
    server.stop().await;
}

#[tokio::test]
async fn unknown_paths_and_methods_answer_in_openai_shape() {
    let server = TestServer::start(ServerConfig::default()).await;

    let (status, _, body) = get(&server, "/v1/nope/deeper").await;
    assert_eq!(status, 404);
    let message = assert_openai_error(&body, "not_found_error", "unknown_url");
    assert!(message.contains("`GET /v1/nope/deeper`"), "{message}");
    assert!(message.contains("POST /v1/embeddings"), "{message}");

    let (status, headers, body) = get(&server, "/v1/chat/completions").await;
    assert_eq!(status, 405);
    assert_eq!(headers["allow"], "POST");
    let message = assert_openai_error(&body, "invalid_request_error", "method_not_allowed");
    assert!(message.contains("`GET /v1/chat/completions`"), "{message}");
    assert!(message.contains("takes POST"), "{message}");

    let response = client()
        .delete(server.url("/v1/models"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 405);
    assert_eq!(response.headers()["allow"], "GET,HEAD");
    let body: Value = response.json().await.unwrap();
    assert_openai_error(&body, "invalid_request_error", "method_not_allowed");

    // A route's own 404 keeps its answer.
    let (status, _, body) = get(&server, "/v1/responses/resp_unknown").await;
    assert_eq!(status, 404);
    assert_ne!(body["error"]["code"], "unknown_url", "{body}");

    // Outside `/v1/` nothing changes.
    let (status, _, health) = get(&server, "/health").await;
    assert_eq!(status, 200, "{health}");
    let response = client().get(server.url("/nope")).send().await.unwrap();
    assert_eq!(response.status(), 404);
    assert!(response.headers().get("content-type").is_none());

    // A bad body still gets the route's own error, not a routing one.
    let response = client()
        .post(server.url("/v1/chat/completions"))
        .json(&json!({"model": "echo"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    server.stop().await;
}

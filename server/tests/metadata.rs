//! `metadata` kept with the exchange: echoed by `POST /v1/responses` (as one object and in
//! the stream's `response.created` / `response.completed`), read back from the conversation
//! tree by `GET /v1/responses/{id}` (after a restart too) and by
//! `GET /v1/chat/completions/{id}`. As OpenAI documents it, metadata belongs to one response:
//! a `previous_response_id` continuation does not inherit it.

use crate::support;

use serde_json::{Value, json};
use server::ServerConfig;
use server::schema::Secret;
use service::ServiceConfig;
use support::{TestServer, client, events};

/// `method path` with `body`, as the caller of `token` (none: loopback without tokens).
async fn send(
    server: &TestServer,
    token: Option<&str>,
    path: &str,
    body: Option<&Value>,
) -> reqwest::Response {
    let request = match body {
        Some(body) => client().post(server.url(path)).json(body),
        None => client().get(server.url(path)),
    };
    let request = match token {
        Some(token) => request.bearer_auth(token),
        None => request,
    };
    request.send().await.unwrap()
}

/// The JSON body of a `200` answer.
async fn ok_json(response: reqwest::Response) -> Value {
    assert_eq!(response.status(), 200);
    response.json().await.unwrap()
}

/// A server logging into `db`.
fn on_sqlite(db: &std::path::Path, tokens: &[&str]) -> ServerConfig {
    ServerConfig {
        tokens: tokens.iter().map(|token| Secret::new(*token)).collect(),
        service: ServiceConfig {
            store: db.display().to_string(),
            ..ServiceConfig::default()
        },
        ..ServerConfig::default()
    }
}

#[tokio::test]
async fn responses_echo_metadata_and_read_it_back_from_the_tree() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("logs.db");
    let server = TestServer::start(on_sqlite(&db, &[])).await;
    let tags = json!({"ticket": "T-42", "team": "search"});
    let first = ok_json(
        send(
            &server,
            None,
            "/v1/responses",
            Some(&json!({"model": "echo", "input": "Hello", "metadata": tags})),
        )
        .await,
    )
    .await;
    assert_eq!(first["metadata"], tags);
    let first_id = first["id"].as_str().unwrap().to_owned();

    // Streamed: the response the first and the last event carry has them.
    let streamed = events(
        send(
            &server,
            None,
            "/v1/responses",
            Some(&json!({"model": "echo", "input": "Hi", "stream": true,
                         "metadata": {"run": "streamed"}})),
        )
        .await,
    )
    .await;
    let created = &streamed.first().unwrap().data["response"];
    let completed = &streamed.last().unwrap().data["response"];
    assert_eq!(streamed.last().unwrap().name, "response.completed");
    assert_eq!(created["metadata"], json!({"run": "streamed"}));
    assert_eq!(completed["metadata"], json!({"run": "streamed"}));
    let streamed_id = completed["id"].as_str().unwrap().to_owned();

    // A continuation without metadata has none, whatever the response it continues had.
    let untagged = ok_json(
        send(
            &server,
            None,
            "/v1/responses",
            Some(&json!({"model": "echo", "input": "Again", "previous_response_id": first_id})),
        )
        .await,
    )
    .await;
    assert_eq!(untagged["metadata"], json!({}));
    let retagged = ok_json(
        send(
            &server,
            None,
            "/v1/responses",
            Some(&json!({"model": "echo", "input": "Once more",
                         "previous_response_id": untagged["id"], "metadata": {"step": "3"}})),
        )
        .await,
    )
    .await;
    assert_eq!(retagged["metadata"], json!({"step": "3"}));
    server.stop().await;

    // A new process reads each response's own metadata from the tree.
    let server = TestServer::start(on_sqlite(&db, &[])).await;
    for (id, expected) in [
        (first_id.as_str(), tags.clone()),
        (streamed_id.as_str(), json!({"run": "streamed"})),
        (untagged["id"].as_str().unwrap(), json!({})),
        (retagged["id"].as_str().unwrap(), json!({"step": "3"})),
    ] {
        let read = ok_json(send(&server, None, &format!("/v1/responses/{id}"), None).await).await;
        assert_eq!(read["metadata"], expected, "{id}");
    }
    server.stop().await;
}

#[tokio::test]
async fn a_stored_chat_completion_reads_back_with_its_metadata_for_its_caller_only() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("logs.db");
    let tokens = ["completions-token-a", "completions-token-b"];
    let server = TestServer::start(on_sqlite(&db, &tokens)).await;
    let ask = |extra: Value| {
        let mut body = json!({"model": "echo",
                              "messages": [{"role": "user", "content": "{\"raw\": \"Stored.\"}"}]});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        body
    };
    let tags = json!({"ticket": "T-7"});
    let created = ok_json(
        send(
            &server,
            Some(tokens[0]),
            "/v1/chat/completions",
            Some(&ask(json!({"metadata": tags}))),
        )
        .await,
    )
    .await;
    let id = created["id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("chatcmpl-"), "{id}");
    let path = format!("/v1/chat/completions/{id}");
    let read = ok_json(send(&server, Some(tokens[0]), &path, None).await).await;
    assert_eq!(read["id"], json!(id));
    assert_eq!(read["object"], "chat.completion");
    assert_eq!(read["metadata"], tags);
    assert_eq!(read["choices"][0]["message"]["role"], "assistant");
    assert_eq!(read["choices"][0]["message"]["content"], "Stored.");
    assert_eq!(read["choices"][0]["finish_reason"], "stop");
    assert_eq!(read["usage"], created["usage"]);

    // A streamed completion is found by the id of its chunks; untagged, its metadata is `{}`.
    let chunks = crate::chat_completions::read_chunks(
        send(
            &server,
            Some(tokens[0]),
            "/v1/chat/completions",
            Some(&ask(json!({"stream": true}))),
        )
        .await,
    )
    .await;
    let streamed_id = chunks[0]["id"].as_str().unwrap().to_owned();
    let streamed = ok_json(
        send(
            &server,
            Some(tokens[0]),
            &format!("/v1/chat/completions/{streamed_id}"),
            None,
        )
        .await,
    )
    .await;
    assert_eq!(streamed["metadata"], json!({}));
    assert_eq!(streamed["choices"][0]["message"]["content"], "Stored.");

    // Another caller's, an unkept (`store: false`), an unknown id and a Responses id are all
    // unknown here, in OpenAI's error shape.
    let unkept = ok_json(
        send(
            &server,
            Some(tokens[0]),
            "/v1/chat/completions",
            Some(&ask(json!({"store": false, "metadata": tags}))),
        )
        .await,
    )
    .await;
    let response = ok_json(
        send(
            &server,
            Some(tokens[0]),
            "/v1/responses",
            Some(&json!({"model": "echo", "input": "x"})),
        )
        .await,
    )
    .await;
    for (token, path) in [
        (tokens[1], path.clone()),
        (
            tokens[0],
            format!("/v1/chat/completions/{}", unkept["id"].as_str().unwrap()),
        ),
        (
            tokens[0],
            "/v1/chat/completions/chatcmpl-nothing".to_owned(),
        ),
        (
            tokens[0],
            format!("/v1/chat/completions/{}", response["id"].as_str().unwrap()),
        ),
    ] {
        let answer = send(&server, Some(token), &path, None).await;
        assert_eq!(answer.status(), 404, "{path}");
        let body: Value = answer.json().await.unwrap();
        assert_eq!(body["error"]["type"], "not_found_error", "{path}");
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("chat completion"),
            "{body}"
        );
    }
    // Nor is a completion a response to read or continue.
    let as_response = send(
        &server,
        Some(tokens[0]),
        &format!("/v1/responses/{id}"),
        None,
    )
    .await;
    assert_eq!(as_response.status(), 404);
    let continued = send(
        &server,
        Some(tokens[0]),
        "/v1/responses",
        Some(&json!({"model": "echo", "input": "x", "previous_response_id": id})),
    )
    .await;
    assert_eq!(continued.status(), 404);
    server.stop().await;
}

/// With reuse on, a deterministic repeat is answered from the tree only when it is tagged as
/// the stored answer is: each response id reads back with its own request's metadata.
#[tokio::test]
async fn a_stored_answer_is_reused_only_for_the_same_metadata() {
    let server = TestServer::start(ServerConfig {
        service: ServiceConfig {
            reuse_deterministic_answers: true,
            ..ServiceConfig::default()
        },
        ..ServerConfig::default()
    })
    .await;
    let ask = |tags: Value| {
        json!({"model": "echo", "temperature": 0, "input": "{\"raw\": \"Same.\"}",
               "metadata": tags})
    };
    let mut cache = Vec::new();
    for tags in [json!({"a": "1"}), json!({"a": "1"}), json!({"a": "2"})] {
        let answer = send(&server, None, "/v1/responses", Some(&ask(tags.clone()))).await;
        cache.push(answer.headers()["skein-cache"].to_str().unwrap().to_owned());
        let answer = ok_json(answer).await;
        let id = answer["id"].as_str().unwrap();
        let read = ok_json(send(&server, None, &format!("/v1/responses/{id}"), None).await).await;
        assert_eq!(read["metadata"], tags);
    }
    assert_eq!(cache, ["miss", "hit", "miss"]);
    server.stop().await;
}

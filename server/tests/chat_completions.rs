//! `POST /v1/chat/completions` and `GET /v1/models` over loopback HTTP: the echo model, and
//! recorded OpenAI and Anthropic streams replayed behind the server. Expected values are read
//! off the recordings in `providers/tests/fixtures`.

use crate::support;

use providers::Provider;
use serde_json::{Value, json};
use server::ServerConfig;
use server::schema::Secret;
use service::ServiceConfig;
use service::config::ProviderBaseUrls;
use service::keys::ProviderKeys;
use support::{CLAUDE_SIGNATURE, TestServer, client, received, replay};
use wiremock::MockServer;

/// The `data:` payloads of a Chat Completions stream, `[DONE]` included as a string.
pub(crate) async fn read_chunks(response: reqwest::Response) -> Vec<Value> {
    use futures::StreamExt as _;
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"].to_str().unwrap(),
        "text/event-stream"
    );
    let mut stream = eventsource_stream::EventStream::new(response.bytes_stream());
    let mut chunks = Vec::new();
    while let Some(event) = stream.next().await {
        let event = event.expect("a well-formed SSE event");
        assert_eq!(
            event.event, "message",
            "Chat Completions events are unnamed"
        );
        chunks.push(serde_json::from_str(&event.data).unwrap_or(Value::String(event.data)));
    }
    chunks
}

async fn post(server: &TestServer, body: &Value) -> reqwest::Response {
    client()
        .post(server.url("/v1/chat/completions"))
        .json(body)
        .send()
        .await
        .unwrap()
}

fn text_of(chunks: &[Value], field: &str) -> String {
    chunks
        .iter()
        .filter_map(|chunk| chunk.pointer(&format!("/choices/0/delta/{field}")))
        .filter_map(Value::as_str)
        .collect()
}

#[tokio::test]
async fn echo_answers_in_one_body_and_in_chunks() {
    let server = TestServer::start(ServerConfig::default()).await;
    let request = json!({"model": "echo", "messages": [{"role": "user", "content": "{\"raw\": \"Hello!\"}"}]});
    let answer: Value = post(&server, &request).await.json().await.unwrap();
    assert_eq!(answer["object"], "chat.completion");
    assert!(answer["id"].as_str().unwrap().starts_with("chatcmpl-"));
    assert_eq!(answer["model"], "echo");
    assert_eq!(answer["choices"][0]["message"]["role"], "assistant");
    assert_eq!(answer["choices"][0]["message"]["content"], "Hello!");
    assert_eq!(answer["choices"][0]["finish_reason"], "stop");
    assert_eq!(
        answer["usage"]["total_tokens"],
        answer["usage"]["prompt_tokens"].as_u64().unwrap()
            + answer["usage"]["completion_tokens"].as_u64().unwrap()
    );

    let mut streamed = request.clone();
    streamed["stream"] = json!(true);
    streamed["stream_options"] = json!({"include_usage": true});
    let chunks = read_chunks(post(&server, &streamed).await).await;
    assert_eq!(chunks.last().unwrap(), "[DONE]");
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    assert_eq!(text_of(&chunks, "content"), "Hello!");
    let ids: Vec<&Value> = chunks[..chunks.len() - 1]
        .iter()
        .map(|c| &c["id"])
        .collect();
    assert!(
        ids.windows(2).all(|pair| pair[0] == pair[1]),
        "one id: {ids:?}"
    );
    // The usage chunk comes last, with no choice; the others carry `usage: null`.
    let usage = &chunks[chunks.len() - 2];
    assert_eq!(usage["choices"], json!([]));
    assert_eq!(usage["usage"], answer["usage"]);
    let finish = &chunks[chunks.len() - 3];
    assert_eq!(finish["choices"][0]["finish_reason"], "stop");
    assert!(finish["usage"].is_null());

    // Without `include_usage`, no usage key at all.
    streamed["stream_options"] = json!({"include_usage": false});
    let plain = read_chunks(post(&server, &streamed).await).await;
    assert!(
        plain[..plain.len() - 1]
            .iter()
            .all(|c| c.get("usage").is_none())
    );
    server.stop().await;
}

async fn openai_server(mock: &MockServer) -> TestServer {
    let mut keys = ProviderKeys::default();
    keys.set(Provider::OpenAi, Secret::new("sk-server-test"));
    keys.set(Provider::Anthropic, Secret::new("sk-ant-server-test"));
    TestServer::start(ServerConfig {
        service: ServiceConfig {
            keys,
            base_urls: ProviderBaseUrls::from([
                (Provider::OpenAi, format!("{}/v1", mock.uri())),
                (Provider::Anthropic, mock.uri()),
            ]),
            ..ServiceConfig::default()
        },
        ..ServerConfig::default()
    })
    .await
}

#[tokio::test]
async fn client_tools_come_back_as_tool_calls_and_are_not_run() {
    let mock = MockServer::start().await;
    replay(
        &mock,
        "/v1/chat/completions",
        &["openai/chat_stream_tool_call.sse"],
    )
    .await;
    let server = openai_server(&mock).await;
    let tools = json!([{"type": "function", "function": {
        "name": "multiply", "description": "a * b",
        "parameters": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}},
    }}]);
    let chunks = read_chunks(
        post(
            &server,
            &json!({
                "model": "gpt-4o-mini", "stream": true, "tools": tools, "tool_choice": "auto",
                "stream_options": {"include_usage": true},
                "messages": [{"role": "user", "content": "What is 1231 * 2331?"}],
            }),
        )
        .await,
    )
    .await;
    let pieces: Vec<&Value> = chunks
        .iter()
        .filter_map(|chunk| chunk.pointer("/choices/0/delta/tool_calls/0"))
        .collect();
    assert_eq!(pieces[0]["id"], "call_1EYWDzueHEp8OsB8jJSEp7WB");
    assert_eq!(pieces[0]["type"], "function");
    assert_eq!(pieces[0]["function"]["name"], "multiply");
    assert!(pieces.iter().all(|piece| piece["index"] == 0));
    let arguments: String = pieces
        .iter()
        .filter_map(|piece| piece["function"]["arguments"].as_str())
        .collect();
    assert_eq!(
        serde_json::from_str::<Value>(&arguments).unwrap(),
        json!({"a": 1231, "b": 2331})
    );
    let finish = chunks
        .iter()
        .find_map(|chunk| chunk["choices"][0]["finish_reason"].as_str());
    assert_eq!(finish, Some("tool_calls"));
    let usage = &chunks[chunks.len() - 2]["usage"];
    assert_eq!(
        (
            &usage["prompt_tokens"],
            &usage["completion_tokens"],
            &usage["total_tokens"]
        ),
        (&json!(54), &json!(20), &json!(74))
    );

    // One request reached the provider, with the client's tool declared, and nothing ran.
    let sent = received(&mock).await;
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["tools"][0]["function"]["name"], "multiply");
    assert_eq!(sent[0]["tool_choice"], "auto");
    server.stop().await;
}

#[tokio::test]
async fn anthropic_thinking_is_reasoning_content_and_comes_back() {
    let mock = MockServer::start().await;
    replay(
        &mock,
        "/v1/messages",
        &["anthropic/stream_thinking_tool_use.sse"],
    )
    .await;
    let server = openai_server(&mock).await;
    let chunks = read_chunks(
        post(
            &server,
            &json!({
                "model": "claude-sonnet-4-5", "stream": true,
                "tools": [{"type": "function", "function": {"name": "fixed_version", "parameters": {"type": "object"}}}],
                "messages": [{"role": "user", "content": "Which version? Then a joke."}],
            }),
        )
        .await,
    )
    .await;
    let reasoning = text_of(&chunks, "reasoning_content");
    assert!(reasoning.starts_with("The user wants me to:\n1. Use the fixed_version tool"));
    assert!(reasoning.ends_with("to see what version it returns."));
    // The signature Anthropic needs back rides in `reasoning_details`.
    let details: Vec<Value> = chunks
        .iter()
        .filter_map(|chunk| chunk.pointer("/choices/0/delta/reasoning_details"))
        .flat_map(|details| details.as_array().unwrap().clone())
        .collect();
    assert_eq!(details.len(), 1, "{details:?}");
    assert_eq!(details[0]["type"], "reasoning.text");
    assert_eq!(details[0]["text"], json!(reasoning));
    assert_eq!(details[0]["signature"], json!(CLAUDE_SIGNATURE));
    let call = chunks
        .iter()
        .find_map(|chunk| chunk.pointer("/choices/0/delta/tool_calls/0"))
        .unwrap();
    assert_eq!(call["id"], "toolu_01825dXWLSoJwCst1qTsiWdb");
    assert_eq!(call["function"]["name"], "fixed_version");

    // The client sends the reasoning back with the call and its result: Anthropic receives it
    // as a thinking block before the tool call.
    let mock2 = MockServer::start().await;
    replay(
        &mock2,
        "/v1/messages",
        &["anthropic/stream_text_after_tool.sse"],
    )
    .await;
    let server2 = openai_server(&mock2).await;
    let answer = post(
        &server2,
        &json!({
            "model": "claude-sonnet-4-5", "stream": true,
            "messages": [
                {"role": "user", "content": "Which version? Then a joke."},
                {"role": "assistant", "content": null, "reasoning_content": reasoning,
                 "reasoning_details": details,
                 "tool_calls": [{"id": "toolu_01825dXWLSoJwCst1qTsiWdb", "type": "function",
                                 "function": {"name": "fixed_version", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "toolu_01825dXWLSoJwCst1qTsiWdb", "content": "1.2.3"},
            ],
        }),
    )
    .await;
    let answered = read_chunks(answer).await;
    assert!(!text_of(&answered, "content").is_empty());
    let sent = received(&mock2).await;
    let turn = &sent[0]["messages"][1];
    assert_eq!(turn["role"], "assistant");
    assert_eq!(turn["content"][0]["type"], "thinking");
    assert_eq!(turn["content"][0]["thinking"], json!(reasoning));
    assert_eq!(turn["content"][0]["signature"], json!(CLAUDE_SIGNATURE));
    assert_eq!(turn["content"][1]["type"], "tool_use");
    assert_eq!(
        sent[0]["messages"][2]["content"][0]["tool_use_id"],
        "toolu_01825dXWLSoJwCst1qTsiWdb"
    );
    server.stop().await;
    server2.stop().await;
}

#[tokio::test]
async fn errors_are_openai_shaped_with_the_right_statuses() {
    let token = "chat-completions-test-token";
    let server = TestServer::start(ServerConfig {
        tokens: vec![Secret::new(token)],
        ..ServerConfig::default()
    })
    .await;
    let send = |body: Value, auth: Option<&'static str>| {
        let mut request = client()
            .post(server.url("/v1/chat/completions"))
            .json(&body);
        if let Some(auth) = auth {
            request = request.bearer_auth(auth);
        }
        request.send()
    };
    let user = json!([{"role": "user", "content": "hi"}]);
    let cases = [
        (
            json!({"model": "echo", "messages": user}),
            None,
            401,
            "authentication_error",
            Value::Null,
        ),
        (
            json!({"model": "echo", "messages": user, "n": 2}),
            Some(token),
            400,
            "invalid_request_error",
            json!("n"),
        ),
        (
            json!({"model": "echo", "messages": user, "bogus": 1}),
            Some(token),
            400,
            "invalid_request_error",
            json!("bogus"),
        ),
        (
            json!({"model": "echo", "messages": []}),
            Some(token),
            400,
            "invalid_request_error",
            json!("messages"),
        ),
        (
            json!({"model": "claude-sonnet-4-5", "messages": user}),
            Some(token),
            404,
            "not_found_error",
            json!("model"),
        ),
        (
            json!({"model": "echo", "messages": [{"role": "tool", "tool_call_id": "x", "content": "1"}]}),
            Some(token),
            400,
            "invalid_request_error",
            json!("messages[0].tool_call_id"),
        ),
    ];
    for (body, auth, status, kind, param) in cases {
        let response = send(body.clone(), auth).await.unwrap();
        assert_eq!(response.status(), status, "{body}");
        let error: Value = response.json().await.unwrap();
        assert_eq!(error["error"]["type"], kind, "{error}");
        assert_eq!(error["error"]["param"], param, "{error}");
        assert!(
            error["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty())
        );
    }
    // The Chat Shell endpoint keeps its own error shape.
    let shell = client()
        .post(server.url("/v1/response"))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(shell.status(), 401);
    let body: Value = shell.json().await.unwrap();
    assert_eq!(body["code"], "unauthorized");
    server.stop().await;
}

#[tokio::test]
async fn models_lists_the_registry_with_availability() {
    let mut keys = ProviderKeys::default();
    keys.set(Provider::Anthropic, Secret::new("sk-ant-test"));
    let server = TestServer::start(ServerConfig {
        service: ServiceConfig {
            keys,
            ..ServiceConfig::default()
        },
        ..ServerConfig::default()
    })
    .await;
    let list: Value = client()
        .get(server.url("/v1/models"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(list["object"], "list");
    let models = list["data"].as_array().unwrap();
    assert_eq!(models[0]["id"], "echo");
    let find = |id: &str| models.iter().find(|model| model["id"] == id).unwrap();
    assert_eq!(find("claude-sonnet-4-5")["owned_by"], "anthropic");
    assert_eq!(find("claude-sonnet-4-5")["available"], true);
    assert_eq!(find("gpt-4o")["available"], false);
    assert!(models.iter().all(|model| model["object"] == "model"));
    server.stop().await;
}

#[tokio::test]
async fn exchanges_are_logged_and_a_resent_history_finds_its_path() {
    use conversation_tree::{NodeId, SqliteStore, Store};

    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("logs.db");
    let server = TestServer::start(ServerConfig {
        service: ServiceConfig {
            store: db.display().to_string(),
            reuse_deterministic_answers: true,
            ..ServiceConfig::default()
        },
        ..ServerConfig::default()
    })
    .await;
    let first_turn = json!({"role": "user", "content": "{\"raw\": \"First answer.\"}"});
    let ask = |messages: Value| {
        let body = json!({"model": "echo", "temperature": 0, "messages": messages});
        let request = client()
            .post(server.url("/v1/chat/completions"))
            .json(&body);
        async move {
            let response = request.send().await.unwrap();
            assert_eq!(response.status(), 200);
            let header = |name: &str| response.headers()[name].to_str().unwrap().to_owned();
            let (node, cache) = (header("skein-node-id"), header("skein-cache"));
            let body: Value = response.json().await.unwrap();
            let text = body["choices"][0]["message"]["content"]
                .as_str()
                .unwrap()
                .to_owned();
            (node.parse::<NodeId>().unwrap(), cache, text)
        }
    };
    let (first, cache, text) = ask(json!([first_turn])).await;
    assert_eq!((cache.as_str(), text.as_str()), ("miss", "First answer."));

    // The same deterministic request again: answered from the tree, and the header says so.
    let (again, cache, text) = ask(json!([first_turn])).await;
    assert_eq!(
        (again, cache.as_str(), text.as_str()),
        (first, "hit", "First answer.")
    );

    // The whole history resent with a new question: the stored turn is found, not rewritten,
    // and the new answer hangs below it.
    let (second, cache, text) = ask(json!([
        first_turn,
        {"role": "assistant", "content": "First answer."},
        {"role": "user", "content": "{\"raw\": \"Second answer.\"}"},
    ]))
    .await;
    assert_eq!((cache.as_str(), text.as_str()), ("miss", "Second answer."));

    // `store: false` leaves no trace and is never answered from the tree.
    let unlogged = client()
        .post(server.url("/v1/chat/completions"))
        .json(&json!({"model": "echo", "temperature": 0, "store": false,
                      "messages": [{"role": "user", "content": "{\"raw\": \"Off the record.\"}"}]}))
        .send()
        .await
        .unwrap();
    assert!(unlogged.headers().get("skein-node-id").is_none());
    assert!(unlogged.headers().get("skein-cache").is_none());
    server.stop().await;

    let store = SqliteStore::open(&db).await.unwrap();
    let path: Vec<NodeId> = store
        .path_to_root(second)
        .await
        .unwrap()
        .iter()
        .map(|node| node.id())
        .collect();
    assert!(path.contains(&first) && path.contains(&second), "{path:?}");
    assert_eq!(path.len(), 2, "one node per answer: {path:?}");
    assert_eq!(store.conversations(10).await.unwrap().len(), 1);
}

#[tokio::test]
async fn provider_failures_keep_their_meaning_and_say_whether_to_retry() {
    use wiremock::{Mock, ResponseTemplate, matchers};

    let mock = MockServer::start().await;
    for (model, status, fixture) in [
        ("gpt-4o-mini", 401, "openai/error_401_invalid_api_key.json"),
        (
            "no-such-model",
            404,
            "openai/error_404_chat_model_not_found.json",
        ),
    ] {
        Mock::given(matchers::method("POST"))
            .and(matchers::body_partial_json(json!({"model": model})))
            .respond_with(
                ResponseTemplate::new(status)
                    .set_body_raw(support::fixture(fixture), "application/json"),
            )
            .mount(&mock)
            .await;
    }
    let server = openai_server(&mock).await;
    let user = json!([{"role": "user", "content": "hi"}]);

    // The server's own key was refused: not the client's fault, and no retry will mend it.
    let response = post(&server, &json!({"model": "gpt-4o-mini", "messages": user})).await;
    assert_eq!(response.status(), 502);
    assert_eq!(response.headers()["x-should-retry"], "false");
    let error: Value = response.json().await.unwrap();
    assert_eq!(error["error"]["type"], "api_error");

    // The provider does not have the model: a 404, as the provider said.
    let response = post(
        &server,
        &json!({"model": "no-such-model", "messages": user}),
    )
    .await;
    assert_eq!(response.status(), 404);
    let error: Value = response.json().await.unwrap();
    assert_eq!(error["error"]["code"], "model_not_found");
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("The model `this-model-does-not-exist-12345` does not exist")
    );
    server.stop().await;
}

#[tokio::test]
async fn an_agent_alias_runs_server_tools_and_only_when_configured() {
    let agent = service::config::AgentAlias {
        model: "echo".into(),
        tools: vec!["calculator".into()],
        ..Default::default()
    };
    let server = TestServer::start(ServerConfig {
        service: ServiceConfig {
            agents: [("skein/agent".to_owned(), agent)].into_iter().collect(),
            ..ServiceConfig::default()
        },
        ..ServerConfig::default()
    })
    .await;
    let call = json!({"tool_calls": [{"name": "calculator", "arguments": {"expression": "6*7"}}]});
    let messages = json!([{"role": "user", "content": call.to_string()}]);

    // The agent called the calculator on the server and answered from its result: the echo
    // model's final answer reports the tool results it was given.
    let answer: Value = post(
        &server,
        &json!({"model": "skein/agent", "messages": messages}),
    )
    .await
    .json()
    .await
    .unwrap();
    let report: Value =
        serde_json::from_str(answer["choices"][0]["message"]["content"].as_str().unwrap()).unwrap();
    assert_eq!(report["tool_results"][0]["name"], "calculator", "{report}");
    let output: Value =
        serde_json::from_str(report["tool_results"][0]["output"].as_str().unwrap()).unwrap();
    assert_eq!(output["result"], 42.0, "{report}");
    assert!(answer["choices"][0]["message"].get("tool_calls").is_none());

    // Streamed: the same answer as content deltas, no tool activity shown.
    let chunks = read_chunks(
        post(
            &server,
            &json!({"model": "skein/agent", "stream": true, "messages": messages}),
        )
        .await,
    )
    .await;
    let streamed: Value = serde_json::from_str(&text_of(&chunks, "content")).unwrap();
    assert_eq!(streamed["tool_results"], report["tool_results"]);
    assert!(
        chunks
            .iter()
            .all(|chunk| chunk.pointer("/choices/0/delta/tool_calls").is_none())
    );

    // It is listed with the models.
    let list: Value = client()
        .get(server.url("/v1/models"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(
        list["data"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["id"] == "skein/agent")
    );

    // An agent runs its own tools: the client's are refused by name.
    let response = post(
        &server,
        &json!({"model": "skein/agent", "messages": messages,
                "tools": [{"type": "function", "function": {"name": "f"}}]}),
    )
    .await;
    assert_eq!(response.status(), 400);
    let error: Value = response.json().await.unwrap();
    assert_eq!(error["error"]["param"], "tools");
    server.stop().await;

    // An agent naming a tool the server does not enable is refused at start, not per request.
    let broken = service::config::AgentAlias {
        model: "echo".into(),
        tools: vec!["no_such_tool".into()],
        ..Default::default()
    };
    let refused = server::Server::new(ServerConfig {
        service: ServiceConfig {
            agents: [("skein/broken".to_owned(), broken)].into_iter().collect(),
            ..ServiceConfig::default()
        },
        ..ServerConfig::default()
    })
    .await;
    assert!(refused.unwrap_err().to_string().contains("skein/broken"));

    // Without configuration, the same request is one model call: the call goes back to the
    // client, and nothing runs on the server.
    let plain = TestServer::start(ServerConfig::default()).await;
    let answer: Value = post(&plain, &json!({"model": "echo", "messages": messages}))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(answer["choices"][0]["finish_reason"], "tool_calls");
    let call = &answer["choices"][0]["message"]["tool_calls"][0];
    assert_eq!(call["function"]["name"], "calculator");
    assert_eq!(
        serde_json::from_str::<Value>(call["function"]["arguments"].as_str().unwrap()).unwrap(),
        json!({"expression": "6*7"})
    );
    plain.stop().await;
}

#[tokio::test]
async fn a_stream_the_client_leaves_is_logged_as_cancelled() {
    use conversation_tree::{ResponseStatus, SqliteStore, Store};
    use futures::StreamExt as _;

    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("logs.db");
    let server = TestServer::start(ServerConfig {
        service: ServiceConfig {
            store: db.display().to_string(),
            ..ServiceConfig::default()
        },
        ..ServerConfig::default()
    })
    .await;
    let slow = json!({"raw": "one two three four five six", "delay_ms": 300});
    let response = post(
        &server,
        &json!({"model": "echo", "stream": true,
                "messages": [{"role": "user", "content": slow.to_string()}]}),
    )
    .await;
    let mut body = response.bytes_stream();
    let first = body.next().await.unwrap().unwrap();
    assert!(String::from_utf8_lossy(&first).contains("one"));
    drop(body);
    // The server notices at its next write; the log is written off the client's path.
    tokio::time::sleep(std::time::Duration::from_millis(1_500)).await;
    server.stop().await;

    let store = SqliteStore::open(&db).await.unwrap();
    let conversations = store.conversations(10).await.unwrap();
    assert_eq!(conversations.len(), 1);
    let nodes = store
        .conversation_nodes(&conversations[0].id)
        .await
        .unwrap();
    assert_eq!(nodes.len(), 1);
    assert_eq!(nodes[0].status(), ResponseStatus::Cancelled);
    let turn = store.turn(nodes[0].id()).await.unwrap();
    let text = turn.response.text();
    assert!(text.starts_with("one") && !text.contains("six"), "{text}");
}

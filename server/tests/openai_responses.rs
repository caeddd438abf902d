//! `POST /v1/responses`, `GET /v1/responses/{id}` and its cancel route over loopback HTTP:
//! the echo model, and recorded OpenAI, Anthropic and Gemini streams replayed behind the
//! server. Expected values are read off the recordings in `providers/tests/fixtures`.

use crate::support;

use serde_json::{Value, json};
use server::ServerConfig;
use server::schema::Secret;
use service::ServiceConfig;
use support::{
    CLAUDE_SIGNATURE, Sse, TestServer, client, events, keyed, names, received, replay,
    replay_claude_tool_round,
};
use wiremock::MockServer;

async fn create(server: &TestServer, body: &Value) -> reqwest::Response {
    client()
        .post(server.url("/v1/responses"))
        .json(body)
        .send()
        .await
        .unwrap()
}

async fn get(server: &TestServer, path: &str) -> reqwest::Response {
    client().get(server.url(path)).send().await.unwrap()
}

/// `POST /v1/responses` as the caller of `token`.
async fn create_as(server: &TestServer, token: &str, body: &Value) -> reqwest::Response {
    client()
        .post(server.url("/v1/responses"))
        .bearer_auth(token)
        .json(body)
        .send()
        .await
        .unwrap()
}

/// `GET path` as the caller of `token`.
async fn get_as(server: &TestServer, token: &str, path: &str) -> reqwest::Response {
    client()
        .get(server.url(path))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
}

/// `POST /v1/responses/{id}/cancel`.
async fn cancel(server: &TestServer, id: &str) -> reqwest::Response {
    client()
        .post(server.url(&format!("/v1/responses/{id}/cancel")))
        .send()
        .await
        .unwrap()
}

/// The events of a streamed `POST /v1/responses`.
async fn events_of(server: &TestServer, body: Value) -> Vec<Sse> {
    events(create(server, &body).await).await
}

/// The text of a `response` object's message items.
fn output_text(response: &Value) -> String {
    response["output"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|item| item["type"] == "message")
        .flat_map(|item| item["content"].as_array().unwrap().clone())
        .filter_map(|part| part["text"].as_str().map(str::to_owned))
        .collect()
}

/// The last event's response, checking that the stream is well numbered and named.
fn finished(events: &[Sse]) -> &Value {
    for (index, event) in events.iter().enumerate() {
        assert_eq!(
            event.data["sequence_number"],
            json!(index),
            "{:?}",
            names(events)
        );
        assert_eq!(event.data["type"], json!(event.name));
    }
    assert_eq!(events[0].name, "response.created");
    assert_eq!(events[1].name, "response.in_progress");
    let last = events.last().unwrap();
    assert_eq!(
        last.data["response"]["id"], events[0].data["response"]["id"],
        "one id from first to last"
    );
    &last.data["response"]
}

fn echo_prompt(response: &Value) -> Value {
    serde_json::from_str(&output_text(response)).expect("echo answers with JSON")
}

#[tokio::test]
async fn echo_answers_as_one_object_and_as_events() {
    let server = TestServer::start(ServerConfig::default()).await;
    let request = json!({"model": "echo", "input": "{\"raw\": \"Hello there!\"}"});
    let response = create(&server, &request).await;
    assert_eq!(response.status(), 200);
    let answer: Value = response.json().await.unwrap();
    assert_eq!(answer["object"], "response");
    assert!(answer["id"].as_str().unwrap().starts_with("resp_"));
    assert_eq!(answer["status"], "completed");
    assert_eq!(answer["model"], "echo");
    assert_eq!(answer["store"], true);
    assert_eq!(answer["output"][0]["type"], "message");
    assert_eq!(answer["output"][0]["role"], "assistant");
    assert_eq!(answer["output"][0]["status"], "completed");
    assert_eq!(output_text(&answer), "Hello there!");
    let usage = &answer["usage"];
    assert_eq!(
        usage["total_tokens"].as_u64().unwrap(),
        usage["input_tokens"].as_u64().unwrap() + usage["output_tokens"].as_u64().unwrap()
    );

    let mut streamed = request.clone();
    streamed["stream"] = json!(true);
    let events = events_of(&server, streamed.clone()).await;
    assert_eq!(
        names(&events),
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
    let done = finished(&events);
    assert_eq!(done["status"], "completed");
    assert_eq!(output_text(done), "Hello there!");
    let deltas: String = events
        .iter()
        .filter(|event| event.name == "response.output_text.delta")
        .map(|event| event.data["delta"].as_str().unwrap())
        .collect();
    assert_eq!(deltas, "Hello there!");

    // Read back as soon as the stream ends, it is there (in flight, or in the tree).
    for _ in 0..20 {
        let again = events_of(&server, streamed.clone()).await;
        let id = finished(&again)["id"].as_str().unwrap().to_owned();
        let read = get(&server, &format!("/v1/responses/{id}")).await;
        assert_eq!(read.status(), 200);
    }
    server.stop().await;
}

#[tokio::test]
async fn previous_response_id_continues_across_a_restart_and_get_reads_it_back() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("logs.db");
    let config = || ServerConfig {
        service: ServiceConfig {
            store: db.display().to_string(),
            ..ServiceConfig::default()
        },
        ..ServerConfig::default()
    };
    let server = TestServer::start(config()).await;
    let first: Value = create(
        &server,
        &json!({"model": "echo", "instructions": "Be brief.", "input": "My name is Ada."}),
    )
    .await
    .json()
    .await
    .unwrap();
    let first_id = first["id"].as_str().unwrap().to_owned();
    assert_eq!(echo_prompt(&first)["system"], "Be brief.");
    server.stop().await;

    // A new process on the same database reads the response back and continues it.
    let server = TestServer::start(config()).await;
    let read: Value = get(&server, &format!("/v1/responses/{first_id}"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(read["id"], json!(first_id));
    assert_eq!(read["status"], "completed");
    assert_eq!(read["model"], "echo");
    assert_eq!(output_text(&read), output_text(&first));
    assert_eq!(read["usage"], first["usage"]);

    let events = events_of(
        &server,
        json!({"model": "echo", "stream": true, "previous_response_id": first_id,
                    "instructions": "Be brief.", "input": "What is my name?"}),
    )
    .await;
    let second = finished(&events);
    assert_eq!(second["previous_response_id"], json!(first_id));
    let prompt = echo_prompt(second);
    assert_eq!(prompt["prompt"], "What is my name?");
    assert_eq!(prompt["previous"], json!([{"prompt": "My name is Ada."}]));
    assert_eq!(prompt["system"], "Be brief.");
    let second_id = second["id"].as_str().unwrap().to_owned();
    server.stop().await;

    // Both answers are one path of one conversation: the second below the first.
    use conversation_tree::{SqliteStore, Store};
    let store = SqliteStore::open_read_only(&db).await.unwrap();
    let first_node = store.node_by_label(&first_id).await.unwrap().unwrap();
    let second_node = store.node_by_label(&second_id).await.unwrap().unwrap();
    assert_eq!(second_node.parent(), Some(first_node.id()));
    assert_eq!(store.conversations(10).await.unwrap().len(), 1);
}

#[tokio::test]
async fn instructions_are_not_inherited_by_a_continued_response() {
    let server = TestServer::start(ServerConfig::default()).await;
    let first: Value = create(
        &server,
        &json!({"model": "echo", "instructions": "Answer in French.", "input": "Hi"}),
    )
    .await
    .json()
    .await
    .unwrap();
    let second: Value = create(
        &server,
        &json!({"model": "echo", "previous_response_id": first["id"], "input": "Again"}),
    )
    .await
    .json()
    .await
    .unwrap();
    let prompt = echo_prompt(&second);
    assert_eq!(prompt["system"], "", "no system message at all");
    assert_eq!(prompt["previous"], json!([{"prompt": "Hi"}]));
    server.stop().await;
}

/// The function call items of a response.
fn calls(response: &Value) -> Vec<Value> {
    response["output"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|item| item["type"] == "function_call")
        .cloned()
        .collect()
}

#[tokio::test]
async fn an_openai_tool_round_trip_continues_with_the_function_output() {
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
    let server = TestServer::start(keyed(&mock)).await;
    let tools = json!([{"type": "function", "name": "multiply", "description": "a * b",
        "parameters": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}}]);
    let events = events_of(
        &server,
        json!({"model": "gpt-4o-mini", "stream": true, "tools": tools,
                    "input": [{"role": "user", "content": "What is 1231 * 2331?"}]}),
    )
    .await;
    let first = finished(&events);
    let call = &calls(first)[0];
    assert_eq!(call["call_id"], "call_1EYWDzueHEp8OsB8jJSEp7WB");
    assert_eq!(call["name"], "multiply");
    assert_eq!(
        serde_json::from_str::<Value>(call["arguments"].as_str().unwrap()).unwrap(),
        json!({"a": 1231, "b": 2331})
    );
    assert_eq!(first["usage"]["input_tokens"], 54);
    assert_eq!(first["usage"]["output_tokens"], 20);
    let streamed: String = events
        .iter()
        .filter(|event| event.name == "response.function_call_arguments.delta")
        .map(|event| event.data["delta"].as_str().unwrap())
        .collect();
    assert_eq!(streamed, call["arguments"].as_str().unwrap());

    let second_events = events_of(
        &server,
        json!({"model": "gpt-4o-mini", "tools": tools, "previous_response_id": first["id"],
                "stream": true,
                "input": [{"type": "function_call_output", "call_id": call["call_id"],
                           "output": "2869461"}]}),
    )
    .await;
    let second = finished(&second_events);
    assert_eq!(second["status"], "completed", "{second}");
    assert!(!output_text(second).is_empty());
    // The provider got the whole conversation: the question, the call, its output.
    let sent = received(&mock).await;
    assert_eq!(sent.len(), 2);
    let messages = sent[1]["messages"].as_array().unwrap();
    assert_eq!(messages[0]["content"], "What is 1231 * 2331?");
    assert_eq!(
        messages[1]["tool_calls"][0]["id"],
        "call_1EYWDzueHEp8OsB8jJSEp7WB"
    );
    assert_eq!(messages[2]["role"], "tool");
    assert_eq!(messages[2]["tool_call_id"], "call_1EYWDzueHEp8OsB8jJSEp7WB");
    assert_eq!(messages[2]["content"], "2869461");
    server.stop().await;
}

#[tokio::test]
async fn anthropic_thinking_is_a_reasoning_item_and_a_continuation_sends_it_back() {
    let mock = MockServer::start().await;
    replay_claude_tool_round(&mock).await;
    let server = TestServer::start(keyed(&mock)).await;
    let tools =
        json!([{"type": "function", "name": "fixed_version", "parameters": {"type": "object"}}]);
    let events = events_of(
        &server,
        json!({"model": "claude-sonnet-4-5", "stream": true, "tools": tools,
                    "input": "Which version? Then a joke."}),
    )
    .await;
    let first = finished(&events);
    let reasoning = &first["output"][0];
    assert_eq!(reasoning["type"], "reasoning");
    let summary = reasoning["summary"][0]["text"].as_str().unwrap();
    assert!(summary.starts_with("The user wants me to:\n1. Use the fixed_version tool"));
    assert!(reasoning["encrypted_content"].is_string());
    let call = &calls(first)[0];
    assert_eq!(call["call_id"], "toolu_01825dXWLSoJwCst1qTsiWdb");
    assert_eq!(call["name"], "fixed_version");

    let second_events = events_of(
        &server,
        json!({"model": "claude-sonnet-4-5", "tools": tools, "previous_response_id": first["id"],
                "stream": true,
                "input": [{"type": "function_call_output", "call_id": call["call_id"], "output": "1.2.3"}]}),
    )
    .await;
    let second = finished(&second_events);
    assert_eq!(second["status"], "completed");
    let sent = received(&mock).await;
    let turn = &sent[1]["messages"][1];
    assert_eq!(turn["role"], "assistant");
    assert_eq!(turn["content"][0]["type"], "thinking");
    assert_eq!(turn["content"][0]["thinking"], json!(summary));
    assert_eq!(turn["content"][0]["signature"], CLAUDE_SIGNATURE);
    assert_eq!(turn["content"][1]["type"], "tool_use");
    let result = &sent[1]["messages"][2]["content"][0];
    assert_eq!(result["tool_use_id"], "toolu_01825dXWLSoJwCst1qTsiWdb");

    // A client that keeps its own history (`store: false`) sends the items back instead:
    // the signature travels in `encrypted_content`.
    let mut items = first["output"].as_array().unwrap().clone();
    items.insert(
        0,
        json!({"role": "user", "content": "Which version? Then a joke."}),
    );
    items.push(
        json!({"type": "function_call_output", "call_id": call["call_id"], "output": "1.2.3"}),
    );
    let stateless = events_of(
        &server,
        json!({"model": "claude-sonnet-4-5", "tools": tools, "store": false, "stream": true,
               "input": items}),
    )
    .await;
    assert_eq!(finished(&stateless)["status"], "completed");
    let sent = received(&mock).await;
    assert_eq!(sent[2]["messages"], sent[1]["messages"]);
    server.stop().await;
}

#[tokio::test]
async fn a_gemini_continuation_keeps_the_thought_signature_of_its_call() {
    let mock = MockServer::start().await;
    replay(
        &mock,
        "/v1beta/models/gemini-2.5-flash:streamGenerateContent",
        &[
            "gemini/stream_function_call_signature.sse",
            "gemini/stream_text_after_function_call.sse",
        ],
    )
    .await;
    let server = TestServer::start(keyed(&mock)).await;
    let recorded: Value = serde_json::from_slice(&support::fixture(
        "gemini/stream_function_call_signature.request.json",
    ))
    .unwrap();
    let declaration = &recorded["tools"][0]["functionDeclarations"][0];
    let tools = json!([{"type": "function", "name": declaration["name"],
                        "description": declaration["description"],
                        "parameters": declaration["parameters"]}]);
    let question = recorded["contents"][0]["parts"][0]["text"].clone();
    let events = events_of(
        &server,
        json!({"model": "gemini-2.5-flash", "stream": true, "tools": tools, "input": question}),
    )
    .await;
    let first = finished(&events);
    let call = calls(first).remove(0);
    assert_eq!(call["name"], declaration["name"]);

    let second = events_of(
        &server,
        json!({"model": "gemini-2.5-flash", "stream": true, "tools": tools,
               "previous_response_id": first["id"],
               "input": [{"type": "function_call_output", "call_id": call["call_id"],
                          "output": "{\"temperature\": 21}"}]}),
    )
    .await;
    assert_eq!(finished(&second)["status"], "completed");
    let sent = received(&mock).await;
    let model_turn = &sent[1]["contents"][1];
    assert_eq!(model_turn["role"], "model");
    let part = model_turn["parts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|part| part.get("functionCall").is_some())
        .expect("the call is sent back");
    let recorded_followup: Value = serde_json::from_slice(&support::fixture(
        "gemini/stream_function_call_signature.followup.request.json",
    ))
    .unwrap();
    let recorded_part = recorded_followup["contents"][1]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|part| part.get("functionCall").is_some())
        .unwrap();
    // The same bytes: the recording's client wrote them in URL-safe base64.
    let bytes = |signature: &Value| {
        use base64::Engine as _;
        let text = signature
            .as_str()
            .unwrap()
            .replace('-', "+")
            .replace('_', "/");
        base64::engine::general_purpose::STANDARD
            .decode(text)
            .unwrap()
    };
    assert_eq!(
        bytes(&part["thoughtSignature"]),
        bytes(&recorded_part["thoughtSignature"])
    );
    assert_eq!(part["functionCall"]["name"], declaration["name"]);
    server.stop().await;
}

#[tokio::test]
async fn unknown_and_other_callers_responses_are_not_found() {
    let tokens = ["responses-token-a", "responses-token-b"];
    let server = TestServer::start(ServerConfig {
        tokens: tokens.iter().map(|token| Secret::new(*token)).collect(),
        ..ServerConfig::default()
    })
    .await;
    let own: Value = create_as(
        &server,
        tokens[0],
        &json!({"model": "echo", "input": "mine"}),
    )
    .await
    .json()
    .await
    .unwrap();
    let id = own["id"].as_str().unwrap();
    for (token, path) in [
        (tokens[1], format!("/v1/responses/{id}")),
        (tokens[0], "/v1/responses/resp_nothing".to_owned()),
    ] {
        let answer = get_as(&server, token, &path).await;
        assert_eq!(answer.status(), 404, "{path}");
        let body: Value = answer.json().await.unwrap();
        assert_eq!(body["error"]["type"], "not_found_error");
    }
    let taken = create_as(
        &server,
        tokens[1],
        &json!({"model": "echo", "input": "theirs", "previous_response_id": id}),
    )
    .await;
    assert_eq!(taken.status(), 404);
    let body: Value = taken.json().await.unwrap();
    assert_eq!(body["error"]["param"], "previous_response_id");
    // Ids that could never name a response (control characters, too long) name none.
    for id in ["\u{1}\u{2}".to_owned(), "x".repeat(5000)] {
        let odd = create_as(
            &server,
            tokens[0],
            &json!({"model": "echo", "input": "x", "previous_response_id": id}),
        )
        .await;
        assert_eq!(odd.status(), 404);
    }
    let read = get_as(&server, tokens[0], &format!("/v1/responses/{id}")).await;
    assert_eq!(read.status(), 200);

    // `store: false` keeps nothing to read or continue.
    let unkept: Value = create_as(
        &server,
        tokens[0],
        &json!({"model": "echo", "input": "x", "store": false}),
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(unkept["store"], false);
    let gone = get_as(
        &server,
        tokens[0],
        &format!("/v1/responses/{}", unkept["id"].as_str().unwrap()),
    )
    .await;
    assert_eq!(gone.status(), 404);
    server.stop().await;
}

#[tokio::test]
async fn fields_that_cannot_be_honoured_are_refused_by_name() {
    let server = TestServer::start(ServerConfig::default()).await;
    let cases = [
        (json!({"model": "echo", "input": "x", "top_k": 3}), "top_k"),
        (
            // A reference resolves only to an item of the caller's stored responses; `x` names none,
            // so the id is what is wrong.
            json!({"model": "echo", "input": [{"type": "item_reference", "id": "x"}]}),
            "input[0].id",
        ),
        (
            json!({"model": "echo", "input": [{"role": "robot", "content": "x"}]}),
            "input[0].role",
        ),
        (
            json!({"model": "echo", "input": "x", "tools": [{"type": "web_search", "name": "w"}]}),
            "tools[0].type",
        ),
        (
            json!({"model": "echo", "input": [{"type": "function_call_output", "call_id": "nope", "output": "x"}]}),
            "input",
        ),
        // `parallel_tool_calls: false` is honoured or left to the operator's policy now
        // (`request_fields.rs`); a value the API does not define is still refused.
        (
            json!({"model": "echo", "input": "x", "truncation": "sometimes"}),
            "truncation",
        ),
        (json!({"model": "echo", "input": 7}), "input"),
        (json!({"model": "echo"}), "input"),
        (
            json!({"model": "echo", "input": "x", "reasoning": {"effort": "huge"}}),
            "reasoning.effort",
        ),
    ];
    for (body, param) in cases {
        let answer = create(&server, &body).await;
        assert_eq!(answer.status(), 400, "{body}");
        let error: Value = answer.json().await.unwrap();
        assert_eq!(error["error"]["type"], "invalid_request_error", "{body}");
        assert_eq!(error["error"]["param"], param, "{body}: {error}");
    }
    server.stop().await;
}

#[tokio::test]
async fn a_response_in_progress_is_read_and_cancelled_and_keeps_what_it_said() {
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
    let slow = json!({"model": "echo", "stream": true,
        "input": "{\"raw\": \"one two three four five six seven eight\", \"delay_ms\": 300}"});
    let response = create(&server, &slow).await;
    let mut stream = eventsource_stream::EventStream::new(response.bytes_stream());
    let created: Value = serde_json::from_str(&stream.next().await.unwrap().unwrap().data).unwrap();
    let id = created["response"]["id"].as_str().unwrap().to_owned();
    // Wait for the first words.
    loop {
        let event = stream.next().await.unwrap().unwrap();
        if event.event == "response.output_text.delta" {
            break;
        }
    }
    let running: Value = get(&server, &format!("/v1/responses/{id}"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(running["status"], "in_progress");

    let cancelled = cancel(&server, &id).await;
    assert_eq!(cancelled.status(), 200);
    let cancelled: Value = cancelled.json().await.unwrap();
    assert_eq!(cancelled["status"], "cancelled");
    let mut rest = Vec::new();
    while let Some(event) = stream.next().await {
        rest.push(event.unwrap());
    }
    let last: Value = serde_json::from_str(&rest.last().unwrap().data).unwrap();
    assert_eq!(last["type"], "response.failed");
    assert_eq!(last["response"]["status"], "cancelled");
    assert_eq!(last["response"]["error"]["code"], "cancelled");

    // What was said before the cancel is kept, and the response can be continued.
    let mut stored = None;
    for _ in 0..50 {
        let read = get(&server, &format!("/v1/responses/{id}")).await;
        if read.status() == 200 {
            let read: Value = read.json().await.unwrap();
            if read["status"] == "cancelled" {
                stored = Some(read);
                break;
            }
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let stored = stored.expect("the cancelled response is kept");
    assert!(output_text(&stored).starts_with("one"));
    let again = cancel(&server, &id).await;
    assert_eq!(again.status(), 400);
    let next = create(
        &server,
        &json!({"model": "echo", "previous_response_id": id, "input": "go on"}),
    )
    .await;
    assert_eq!(next.status(), 200);
    server.stop().await;
}

#[tokio::test]
async fn server_tools_run_for_a_configured_token_or_alias_and_never_by_default() {
    let tokens = ["tools-token", "plain-token"];
    let server = TestServer::start(ServerConfig {
        tokens: tokens.iter().map(|token| Secret::new(*token)).collect(),
        service: ServiceConfig {
            token_tools: vec![service::config::TokenTools {
                token: Secret::new(tokens[0]),
                tools: vec!["calculator".into()],
                system: None,
                max_rounds: None,
            }],
            agents: [(
                "skein/agent".to_owned(),
                service::config::AgentAlias {
                    model: "echo".into(),
                    tools: vec!["calculator".into()],
                    ..Default::default()
                },
            )]
            .into_iter()
            .collect(),
            ..ServiceConfig::default()
        },
        ..ServerConfig::default()
    })
    .await;
    let ask = async |token: &str, body: Value| -> Value {
        create_as(&server, token, &body).await.json().await.unwrap()
    };
    let call = json!({"tool_calls": [{"name": "calculator", "arguments": {"expression": "6*7"}}]});
    let result = |answer: &Value| {
        let report = echo_prompt(answer);
        report["tool_results"].get(0).map(|result| {
            serde_json::from_str::<Value>(result["output"].as_str().unwrap()).unwrap()
        })
    };

    // The tools token's request on a plain model ran the calculator on the server.
    let ran = ask(
        tokens[0],
        json!({"model": "echo", "input": call.to_string()}),
    )
    .await;
    assert_eq!(result(&ran).unwrap()["result"], 42.0, "{ran}");
    assert!(
        calls(&ran).is_empty(),
        "the server's tool activity is not the client's"
    );
    // The other token's same request is one model call: the echo model asked for the tool and
    // the call came back to the client.
    let plain = ask(
        tokens[1],
        json!({"model": "echo", "input": call.to_string()}),
    )
    .await;
    assert_eq!(calls(&plain)[0]["name"], "calculator", "{plain}");

    // The alias, continued with `previous_response_id`: its second run sees the first.
    let first = ask(
        tokens[1],
        json!({"model": "skein/agent", "input": call.to_string()}),
    )
    .await;
    assert_eq!(result(&first).unwrap()["result"], 42.0, "{first}");
    let second = ask(
        tokens[1],
        json!({"model": "skein/agent", "previous_response_id": first["id"], "input": "{\"raw\": \"done\"}"}),
    )
    .await;
    assert_eq!(second["status"], "completed", "{second}");
    assert_eq!(output_text(&second), "done");

    // Client tools are refused for a caller whose requests run server tools.
    let refused = create_as(
        &server,
        tokens[0],
        &json!({"model": "echo", "input": "x", "tools": [{"type": "function", "name": "f"}]}),
    )
    .await;
    assert_eq!(refused.status(), 400);
    server.stop().await;
}

#[tokio::test]
async fn a_resent_history_is_its_callers_alone() {
    let tokens = ["history-token-a", "history-token-b"];
    let server = TestServer::start(ServerConfig {
        tokens: tokens.iter().map(|token| Secret::new(*token)).collect(),
        ..ServerConfig::default()
    })
    .await;
    let answer: Value = create_as(
        &server,
        tokens[0],
        &json!({"model": "echo", "input": [
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": "Hello."},
            {"role": "user", "content": "{\"raw\": \"Again.\"}"},
        ]}),
    )
    .await
    .json()
    .await
    .unwrap();
    let path = format!("/v1/responses/{}", answer["id"].as_str().unwrap());
    for (token, status) in [(tokens[0], 200), (tokens[1], 404)] {
        let read = get_as(&server, token, &path).await;
        assert_eq!(read.status(), status, "{token}");
    }
    server.stop().await;
}

#[tokio::test]
async fn a_deterministic_repeat_is_answered_from_the_tree_and_its_id_resolves() {
    let server = TestServer::start(ServerConfig {
        service: ServiceConfig {
            reuse_deterministic_answers: true,
            ..ServiceConfig::default()
        },
        ..ServerConfig::default()
    })
    .await;
    let ask = json!({"model": "echo", "temperature": 0, "input": "{\"raw\": \"Stored.\"}"});
    let first = create(&server, &ask).await;
    assert_eq!(first.headers()["skein-cache"], "miss");
    let first: Value = first.json().await.unwrap();
    let again = create(&server, &ask).await;
    assert_eq!(again.headers()["skein-cache"], "hit");
    assert!(again.headers().get("skein-node-id").is_some());
    let again: Value = again.json().await.unwrap();
    assert_ne!(again["id"], first["id"]);
    assert_eq!(output_text(&again), "Stored.");
    // The repeat's own id names the stored answer: it reads back and continues.
    let read = get(
        &server,
        &format!("/v1/responses/{}", again["id"].as_str().unwrap()),
    )
    .await;
    assert_eq!(read.status(), 200);
    let next = create(
        &server,
        &json!({"model": "echo", "previous_response_id": again["id"], "input": "and then?"}),
    )
    .await;
    assert_eq!(next.status(), 200);
    server.stop().await;
}

/// A streamed `POST /v1/responses` as it arrives: its id, and its events one at a time.
struct Streaming {
    id: String,
    events: std::pin::Pin<Box<dyn futures::Stream<Item = Sse> + Send>>,
}

impl Streaming {
    async fn open(server: &TestServer, body: &Value) -> Streaming {
        use futures::StreamExt as _;

        let response = create(server, body).await;
        assert_eq!(response.status(), 200);
        let mut events = Box::pin(
            eventsource_stream::EventStream::new(response.bytes_stream()).map(|event| {
                let event = event.expect("a well-formed SSE event");
                Sse {
                    name: event.event,
                    data: serde_json::from_str(&event.data).expect("JSON data"),
                }
            }),
        );
        let created = events.next().await.expect("response.created");
        let id = created.data["response"]["id"].as_str().unwrap().to_owned();
        Streaming { id, events }
    }

    /// The next event, or `None` at the end (within 15 s).
    async fn next(&mut self) -> Option<Sse> {
        use futures::StreamExt as _;

        tokio::time::timeout(std::time::Duration::from_secs(15), self.events.next())
            .await
            .expect("the next event in time")
    }

    /// Reads until an event named `name`.
    async fn until(&mut self, name: &str) -> Vec<Sse> {
        let mut seen = Vec::new();
        while let Some(event) = self.next().await {
            let found = event.name == name;
            seen.push(event);
            if found {
                return seen;
            }
        }
        panic!("no {name}: {:?}", names(&seen));
    }

    /// Every event left.
    async fn rest(&mut self) -> Vec<Sse> {
        let mut seen = Vec::new();
        while let Some(event) = self.next().await {
            seen.push(event);
        }
        seen
    }
}

/// A server logging into `dir/logs.db`, and that path.
async fn on_sqlite(dir: &tempfile::TempDir) -> (TestServer, std::path::PathBuf) {
    let db = dir.path().join("logs.db");
    let server = TestServer::start(ServerConfig {
        service: ServiceConfig {
            store: db.display().to_string(),
            ..ServiceConfig::default()
        },
        ..ServerConfig::default()
    })
    .await;
    (server, db)
}

/// Checks that a cancel's reply, the stream's last event and `GET` (the stored response)
/// tell one story, and returns it: `cancelled`, or `completed` for a response that ended
/// before the cancel could stop it.
async fn assert_cancel_agrees(
    server: &TestServer,
    id: &str,
    reply: &(u16, Value),
    events: &[Sse],
) -> String {
    let (status, reply) = reply;
    let last = events.last().expect("a last event");
    let told = match (status, last.name.as_str()) {
        (200, "response.failed") => {
            assert_eq!(reply["status"], "cancelled", "{reply}");
            assert_eq!(last.data["response"]["status"], "cancelled");
            "cancelled"
        }
        (400, "response.completed") => {
            assert_eq!(
                reply["error"]["code"], "response_not_cancellable",
                "{reply}"
            );
            assert!(
                reply["error"]["message"]
                    .as_str()
                    .unwrap()
                    .contains("completed"),
                "{reply}"
            );
            "completed"
        }
        _ => panic!(
            "the cancel answered {status} {reply} but the stream ended with {}",
            last.name
        ),
    };
    let read = get(server, &format!("/v1/responses/{id}")).await;
    assert_eq!(read.status(), 200);
    let read: Value = read.json().await.unwrap();
    assert_eq!(
        read["status"], told,
        "GET disagrees with the cancel: {read}"
    );
    told.to_owned()
}

async fn cancel_reply(server: &TestServer, id: &str) -> (u16, Value) {
    let answer = cancel(server, id).await;
    (answer.status().as_u16(), answer.json().await.unwrap())
}

#[tokio::test]
async fn a_cancel_that_reaches_a_whole_answer_being_logged_says_it_completed() {
    let dir = tempfile::tempdir().unwrap();
    let (server, db) = on_sqlite(&dir).await;
    let body = json!({"model": "echo", "stream": true,
        "input": "{\"raw\": \"one two three\", \"delay_ms\": 20}"});
    let mut stream = Streaming::open(&server, &body).await;
    let mut seen = stream.until("response.output_text.delta").await;
    // From here the store cannot commit: the answer becomes whole (20 ms per event) and its
    // log waits. The cancel comes well after that, while the answer is being logged.
    let lock = support::WriteLock::take(&db);
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let cancelling = tokio::spawn({
        let url = server.url(&format!("/v1/responses/{}/cancel", stream.id));
        async move {
            let answer = client().post(url).send().await.unwrap();
            (
                answer.status().as_u16(),
                answer.json::<Value>().await.unwrap(),
            )
        }
    });
    // Long enough for a cancel that does not wait for the response's end to have answered.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    drop(lock);
    let reply = cancelling.await.unwrap();
    seen.extend(stream.rest().await);

    let told = assert_cancel_agrees(&server, &stream.id, &reply, &seen).await;
    assert_eq!(told, "completed");
    server.stop().await;
}

#[tokio::test]
async fn cancels_racing_the_end_of_a_response_are_answered_as_the_store_has_it() {
    const RACES: usize = 40;
    let dir = tempfile::tempdir().unwrap();
    let (server, _db) = on_sqlite(&dir).await;
    let body = json!({"model": "echo", "stream": true,
        "input": "{\"raw\": \"one two three four\", \"delay_ms\": 2}"});
    let mut outcomes = std::collections::BTreeMap::new();
    for race in 0..RACES {
        let mut stream = Streaming::open(&server, &body).await;
        // Cancel after 0 to 14 of the answer's (about 14) other events: early, mid-answer,
        // at its last word, after its end.
        let mut seen = Vec::new();
        for _ in 0..race % 15 {
            match stream.next().await {
                Some(event) => seen.push(event),
                None => break,
            }
        }
        let reply = cancel_reply(&server, &stream.id).await;
        seen.extend(stream.rest().await);
        let told = assert_cancel_agrees(&server, &stream.id, &reply, &seen).await;
        *outcomes.entry(told).or_insert(0) += 1;
    }
    eprintln!("{RACES} Responses cancel races: {outcomes:?}");
    server.stop().await;
}

#[tokio::test]
async fn a_response_continues_the_instant_its_stream_has_ended() {
    const TRIES: usize = 100;
    let dir = tempfile::tempdir().unwrap();
    let (server, db) = on_sqlite(&dir).await;
    let body = json!({"model": "echo", "stream": true,
        "input": "{\"raw\": \"one two three\", \"delay_ms\": 20}"});
    let continue_now =
        |id: String| json!({"model": "echo", "previous_response_id": id, "input": "go on"});

    // The store commits slowly: its write lock is held from the first word until 300 ms after
    // the answer's last (at most 60 ms later). The end must wait for the log.
    let mut stream = Streaming::open(&server, &body).await;
    stream.until("response.output_text.delta").await;
    let lock = support::WriteLock::take(&db);
    let release = tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(360)).await;
        drop(lock);
    });
    let last = stream.rest().await;
    assert_eq!(last.last().unwrap().name, "response.completed");
    let next = create(&server, &continue_now(stream.id.clone())).await;
    assert_eq!(next.status(), 200, "{}", next.text().await.unwrap());
    release.await.unwrap();

    // And at full speed, again and again.
    let quick = json!({"model": "echo", "stream": true, "input": "{\"raw\": \"one two\"}"});
    for _ in 0..TRIES {
        let mut stream = Streaming::open(&server, &quick).await;
        let events = stream.rest().await;
        assert_eq!(events.last().unwrap().name, "response.completed");
        let next = create(&server, &continue_now(stream.id.clone())).await;
        assert_eq!(next.status(), 200, "{}", next.text().await.unwrap());
    }
    server.stop().await;
}

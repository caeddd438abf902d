//! MCP servers configured by the operator, used by requests by name (`tools.mcp_servers`),
//! against the reference server `@modelcontextprotocol/server-everything` (stdio), installed by
//! `cargo xtask mcp-servers`.

use crate::support;

use serde_json::{Value, json};
use server::ServerConfig;
use service::ServiceConfig;
use support::{TestServer, content, events, terminal};

fn everything() -> mcp::McpServerConfig {
    mcp::testing::everything_config("everything")
}

/// A server whose configuration has only the MCP server `config`.
async fn serving(config: mcp::McpServerConfig) -> TestServer {
    TestServer::start(ServerConfig {
        service: ServiceConfig {
            mcp_servers: vec![config],
            ..ServiceConfig::default()
        },
        ..ServerConfig::default()
    })
    .await
}

#[tokio::test]
async fn a_request_uses_a_configured_servers_tools_by_name() {
    let server = serving(everything()).await;
    let calls = json!({"tool_calls": [
        {"name": "everything__get-sum", "arguments": {"a": 2, "b": 40}},
        {"name": "everything__echo", "arguments": {}},
    ]});
    let events = events_of(
        &server,
        json!({
            "model_config": {"model_id": "echo"},
            "input": {"text": calls.to_string()},
            "tools": {"mcp_servers": [{"name": "everything"}]},
        }),
    )
    .await;
    // Calls run at once: find each by name.
    let done = |name: &str| {
        events
            .iter()
            .find(|event| event.name == "tool.done" && event.data["name"] == name)
            .map(|event| event.data.clone())
            .unwrap_or_else(|| panic!("no tool.done for {name}"))
    };
    let sum = done("everything__get-sum");
    assert_eq!(sum["output"], "The sum of 2 and 40 is 42.");
    assert!(sum["error"].is_null());
    // The server rejected the call without its required `message`: a tool error the model
    // reads, and the run goes on.
    let echo = done("everything__echo");
    assert!(echo["error"].is_string(), "{echo}");
    let report: Value = serde_json::from_str(&content(&events)).unwrap();
    let results = report["tool_results"].as_array().unwrap();
    assert!(
        results
            .iter()
            .any(|result| result["output"] == "The sum of 2 and 40 is 42."),
        "{report}"
    );
    terminal(&events, "response.done");

    // Without naming the server, its tools are not offered.
    let plain = events_of(
        &server,
        json!({"model_config": {"model_id": "echo"}, "input": {"text": "{\"raw\": \"hi\"}"}}),
    )
    .await;
    assert_eq!(content(&plain), "hi");
    server.stop().await;
}

async fn events_of(server: &TestServer, body: Value) -> Vec<support::Sse> {
    events(server.post(&body).await).await
}

#[tokio::test]
async fn a_client_cannot_name_an_unknown_server_or_say_how_to_reach_one() {
    let server = serving(everything()).await;
    for (servers, expected) in [
        (json!([{"name": "shell"}]), "everything"),
        (
            json!([{"name": "mine", "url": "http://attacker.example/mcp"}]),
            "tools.mcp_servers[0].url",
        ),
        (
            json!([{"name": "x", "type": "stdio"}]),
            "tools.mcp_servers[0].type",
        ),
    ] {
        let answer = server
            .post(
                &json!({"model_config": {"model_id": "echo"}, "input": {"text": "hi"},
                          "tools": {"mcp_servers": servers}}),
            )
            .await;
        assert_eq!(answer.status(), 422, "{servers}");
        let body: Value = answer.json().await.unwrap();
        assert!(body.to_string().contains(expected), "{body}");
    }
    server.stop().await;
}

/// The `tool.done` of the only call of a request offering the server `py` that calls
/// `py__add`.
async fn add_through(server: &TestServer) -> Value {
    let calls = json!({"tool_calls": [{"name": "py__add", "arguments": {"a": 2, "b": 3}}]});
    let events = events_of(
        server,
        json!({"model_config": {"model_id": "echo"}, "input": {"text": calls.to_string()},
               "tools": {"mcp_servers": [{"name": "py"}]}}),
    )
    .await;
    terminal(&events, "response.done");
    events
        .iter()
        .find(|event| event.name == "tool.done")
        .map(|event| event.data.clone())
        .expect("the call ran")
}

#[tokio::test]
async fn a_stopped_server_is_tried_again_by_a_later_run_not_by_every_one() {
    let mut python = mcp::testing::FastMcp::start(None);
    let server = serving(python.config("py")).await;
    assert_eq!(add_through(&server).await["output"], "5");

    // Gone: the call finds out, and says the server stopped.
    python.kill();
    let down = add_through(&server).await;
    let error = down["error"].as_str().unwrap_or_else(|| panic!("{down}"));
    assert!(
        error.contains("\"py\"") && error.contains("stopped"),
        "{error}"
    );
    // The next run tries to connect again, which fails while it is down.
    let still = add_through(&server).await;
    assert!(
        still["error"]
            .as_str()
            .is_some_and(|e| e.contains("stopped")),
        "{still}"
    );
    // Back, but that attempt was just now: runs go on failing at once rather than try to
    // connect on every request.
    python.restart(None);
    let waiting = add_through(&server).await;
    assert!(
        waiting["error"]
            .as_str()
            .is_some_and(|e| e.contains("stopped")),
        "{waiting}"
    );
    server.stop().await;
}

/// `POST /v1/responses` with `body`: the status and the JSON answer.
async fn responses(server: &TestServer, body: Value) -> (reqwest::StatusCode, Value) {
    answered(support::client().post(server.url("/v1/responses")), body).await
}

/// `request` sent with `body`: the status and the JSON answer.
async fn answered(request: reqwest::RequestBuilder, body: Value) -> (reqwest::StatusCode, Value) {
    let answer = request.json(&body).send().await.unwrap();
    (answer.status(), answer.json().await.unwrap())
}

#[tokio::test]
async fn a_responses_mcp_tool_names_a_configured_server_and_never_carries_credentials() {
    let server = serving(everything()).await;
    let (status, answer) = responses(
        &server,
        json!({"model": "echo", "input": "hi", "tools": [
            {"type": "function", "name": "lookup"},
            {"type": "mcp", "server_label": "mail", "require_approval": "never"},
            {"type": "mcp", "server_label": "everything", "server_url": "https://elsewhere.example/mcp",
             "headers": {"Authorization": "Bearer client-secret"}},
        ]}),
    )
    .await;
    assert_eq!(status, 400);
    // OpenAI's error object: `type`, `param` (the first offending field) and `message`.
    assert_eq!(answer["error"]["type"], "invalid_request_error");
    assert_eq!(answer["error"]["param"], "tools[1].server_label");
    let message = answer["error"]["message"].as_str().unwrap();
    for field in [
        "`tools[1].server_label`: no MCP server is named `mail` (the configured ones: everything)",
        "`tools[2].server_url`",
        "`tools[2].headers`",
    ] {
        assert!(message.contains(field), "{field:?} not in {message:?}");
    }
    assert!(!message.contains("client-secret"), "{message}");

    // A misspelt field of an `mcp` entry is named with its entry.
    let (status, answer) = responses(
        &server,
        json!({"model": "echo", "input": "hi",
               "tools": [{"type": "mcp", "server_lable": "everything"}]}),
    )
    .await;
    assert_eq!(status, 400);
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("`tools[0]`: unknown field `server_lable`"),
        "{message}"
    );
    server.stop().await;
}

#[tokio::test]
async fn an_mcp_approval_response_for_no_pending_request_is_refused_naming_every_id() {
    let server = serving(everything()).await;
    let approvals = json!([
        {"type": "mcp_approval_response", "approval_request_id": "mcpr_1", "approve": true},
        {"type": "mcp_approval_response", "approval_request_id": "mcpr_2", "approve": false,
         "reason": "not now"},
    ]);
    // Without the response it continues.
    let (status, answer) = responses(&server, json!({"model": "echo", "input": approvals})).await;
    assert_eq!(status, 400);
    assert_eq!(answer["error"]["param"], "input[0].approval_request_id");
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(message.contains("`previous_response_id`"), "{message}");
    // Continuing a response that asked for no approval.
    let (status, first) = responses(&server, json!({"model": "echo", "input": "hi"})).await;
    assert_eq!(status, 200, "{first}");
    let (status, answer) = responses(
        &server,
        json!({"model": "echo", "previous_response_id": first["id"], "input": approvals}),
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(answer["error"]["param"], "input[0].approval_request_id");
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("no MCP approval request is pending with the id(s) `mcpr_1`, `mcpr_2`"),
        "{message}"
    );
    server.stop().await;
}

/// The echo model's input that calls `everything`'s `echo` tool with `message`.
fn echo_call(message: &str) -> String {
    json!({"tool_calls": [{"name": "everything__echo", "arguments": {"message": message}}]})
        .to_string()
}

fn items_of<'a>(response: &'a Value, kind: &str) -> Vec<&'a Value> {
    response["output"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|item| item["type"] == kind)
        .collect()
}

/// OpenAI's remote MCP tool, run here: the tools are listed (`mcp_list_tools`), a call waits
/// for approval (`mcp_approval_request`, the response `completed`), and a request with
/// `previous_response_id` and an `mcp_approval_response` runs it (`mcp_call` with the
/// server's real output) or declines it (the model reads the reason); a pause is answered once.
#[tokio::test]
async fn a_responses_mcp_call_waits_for_approval_and_runs_or_is_declined() {
    let server = serving(everything()).await;
    let tools = json!([{"type": "mcp", "server_label": "everything",
                        "allowed_tools": ["echo", "get-sum"]}]);
    let (status, paused) = responses(
        &server,
        json!({"model": "echo", "input": echo_call("hi"), "tools": tools}),
    )
    .await;
    assert_eq!(status, 200, "{paused}");
    assert_eq!(paused["status"], "completed");
    let listed = items_of(&paused, "mcp_list_tools");
    assert_eq!(listed.len(), 1, "{paused}");
    assert_eq!(listed[0]["server_label"], "everything");
    let names: Vec<&str> = listed[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 2, "only the allowed tools: {names:?}");
    assert!(
        names.contains(&"echo") && names.contains(&"get-sum"),
        "{names:?}"
    );
    let echo = listed[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["name"] == "echo")
        .unwrap();
    assert_eq!(
        echo["input_schema"]["properties"]["message"]["type"],
        "string"
    );
    let requests = items_of(&paused, "mcp_approval_request");
    assert_eq!(requests.len(), 1, "{paused}");
    assert_eq!(requests[0]["server_label"], "everything");
    assert_eq!(requests[0]["name"], "echo");
    let arguments: Value =
        serde_json::from_str(requests[0]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(arguments, json!({"message": "hi"}));
    assert!(
        items_of(&paused, "mcp_call").is_empty(),
        "nothing ran: {paused}"
    );
    let request_id = requests[0]["id"].as_str().unwrap().to_owned();

    // GET shows it as it ended.
    let got: Value = support::client()
        .get(server.url(&format!("/v1/responses/{}", paused["id"].as_str().unwrap())))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(got["output"], paused["output"]);

    // A wrong id is named, and the response stays paused for a right one.
    let (status, answer) = responses(
        &server,
        json!({"model": "echo", "previous_response_id": paused["id"], "tools": tools, "input": [
            {"type": "mcp_approval_response", "approval_request_id": "mcpr_nope", "approve": true},
        ]}),
    )
    .await;
    assert_eq!(status, 400, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(message.contains("`mcpr_nope`"), "{message}");
    assert!(
        message.contains(&format!(
            "approval request `{request_id}` (everything__echo) has no `mcp_approval_response`"
        )),
        "{message}"
    );

    let approve = json!({"model": "echo", "previous_response_id": paused["id"], "tools": tools,
        "input": [{"type": "mcp_approval_response", "approval_request_id": request_id, "approve": true}]});
    let (status, ran) = responses(&server, approve.clone()).await;
    assert_eq!(status, 200, "{ran}");
    assert_eq!(ran["status"], "completed");
    assert_eq!(ran["previous_response_id"], paused["id"]);
    let calls = items_of(&ran, "mcp_call");
    assert_eq!(calls.len(), 1, "{ran}");
    assert_eq!(calls[0]["server_label"], "everything");
    assert_eq!(calls[0]["name"], "echo");
    assert_eq!(calls[0]["output"], "Echo: hi");
    assert_eq!(calls[0]["approval_request_id"], request_id.as_str());
    assert_eq!(calls[0]["status"], "completed");
    let message = items_of(&ran, "message");
    let text = message[0]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("Echo: hi"),
        "the model read the output: {text}"
    );
    // Answered once.
    let (status, again) = responses(&server, approve).await;
    assert_eq!(status, 409, "{again}");
    assert_eq!(again["error"]["code"], "approval_already_answered");

    // Declined: nothing runs, and the model reads why.
    let (_, paused) = responses(
        &server,
        json!({"model": "echo", "input": echo_call("secret"), "tools": tools}),
    )
    .await;
    let request_id = items_of(&paused, "mcp_approval_request")[0]["id"].clone();
    let (status, declined) = responses(
        &server,
        json!({"model": "echo", "previous_response_id": paused["id"], "tools": tools, "input": [
            {"type": "mcp_approval_response", "approval_request_id": request_id, "approve": false,
             "reason": "not that message"},
        ]}),
    )
    .await;
    assert_eq!(status, 200, "{declined}");
    let calls = items_of(&declined, "mcp_call");
    assert_eq!(calls[0]["status"], "failed", "{declined}");
    // The item shows what came of the answer the client sent: it names the request.
    assert_eq!(calls[0]["approval_request_id"], request_id, "{declined}");
    assert!(calls[0]["output"].is_null());
    let error = calls[0]["error"]["content"][0]["text"].as_str().unwrap();
    assert!(
        error.contains("declined") && error.contains("not that message"),
        "{error}"
    );
    let text = items_of(&declined, "message")[0]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(text.contains("not that message"), "{text}");
    assert!(!text.contains("Echo: secret"), "{text}");
    server.stop().await;
}

/// The stream of a response that waits: the documented MCP events, numbered, ending with
/// `response.completed`.
#[tokio::test]
async fn a_streamed_responses_mcp_call_sends_the_documented_events() {
    let server = serving(everything()).await;
    let tools = json!([{"type": "mcp", "server_label": "everything", "require_approval": "never"}]);
    let answer = support::client()
        .post(server.url("/v1/responses"))
        .json(&json!({"model": "echo", "input": echo_call("streamed"), "tools": tools, "stream": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    let events = events(answer).await;
    let names: Vec<&str> = events.iter().map(|event| event.name.as_str()).collect();
    let at = |name: &str| {
        names
            .iter()
            .position(|one| *one == name)
            .unwrap_or_else(|| panic!("no {name} in {names:?}"))
    };
    assert!(at("response.created") < at("response.mcp_list_tools.in_progress"));
    assert!(at("response.mcp_list_tools.completed") < at("response.mcp_call.in_progress"));
    assert!(at("response.mcp_call_arguments.delta") < at("response.mcp_call_arguments.done"));
    assert!(at("response.mcp_call_arguments.done") < at("response.mcp_call.completed"));
    assert!(at("response.mcp_call.completed") < at("response.output_text.delta"));
    assert_eq!(names.last(), Some(&"response.completed"));
    for (seq, event) in events.iter().enumerate() {
        assert_eq!(
            event.data["sequence_number"], seq as u64,
            "{:?}",
            event.name
        );
    }
    let done = events
        .iter()
        .find(|event| event.name == "response.mcp_call_arguments.done")
        .unwrap();
    let arguments: Value = serde_json::from_str(done.data["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(arguments, json!({"message": "streamed"}));
    let last = &events.last().unwrap().data["response"];
    let call = items_of(last, "mcp_call");
    assert_eq!(call[0]["output"], "Echo: streamed");
    server.stop().await;
}

/// `POST /v1/responses` with `body` as `token`: the status and the JSON answer.
async fn responses_as(
    server: &TestServer,
    token: &str,
    body: Value,
) -> (reqwest::StatusCode, Value) {
    answered(
        support::client()
            .post(server.url("/v1/responses"))
            .bearer_auth(token),
        body,
    )
    .await
}

/// What a client may get wrong when answering a paused response: each is refused with the
/// field named, and the response stays paused for the right answer.
#[tokio::test]
async fn a_paused_response_is_answered_only_by_its_token_once_per_request_and_kept() {
    let (owner, other) = ("sk-owner-0123456789", "sk-other-0123456789");
    let server = TestServer::start(ServerConfig {
        service: ServiceConfig {
            mcp_servers: vec![everything()],
            ..ServiceConfig::default()
        },
        tokens: [owner, other]
            .iter()
            .map(|token| server::schema::Secret::new(*token))
            .collect(),
        ..ServerConfig::default()
    })
    .await;
    let tools = json!([{"type": "mcp", "server_label": "everything"}]);
    let (status, paused) = responses_as(
        &server,
        owner,
        json!({"model": "echo", "input": echo_call("hi"), "tools": tools}),
    )
    .await;
    assert_eq!(status, 200, "{paused}");
    let request_id = items_of(&paused, "mcp_approval_request")[0]["id"].clone();
    let answer = |approvals: Value| json!({"model": "echo", "previous_response_id": paused["id"], "input": approvals});
    let approve = json!({"type": "mcp_approval_response", "approval_request_id": request_id,
                         "approve": true});

    // Another token's response is not found, as for any continuation.
    let (status, refused) = responses_as(&server, other, answer(json!([approve]))).await;
    assert_eq!(status, 404, "{refused}");
    assert_eq!(refused["error"]["param"], "previous_response_id");

    // Two answers to one request: which one counts would be a guess.
    let decline = json!({"type": "mcp_approval_response", "approval_request_id": request_id,
                         "approve": false, "reason": "no"});
    let (status, refused) = responses_as(&server, owner, answer(json!([approve, decline]))).await;
    assert_eq!(status, 400, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(&format!(
            "`input[1].approval_request_id` answers `{}` again (`input[0]` answered it already)",
            request_id.as_str().unwrap()
        )),
        "{message}"
    );

    // `store: false` cannot pause (the pause is kept), nor answer one (it may pause again).
    let (status, refused) = responses_as(
        &server,
        owner,
        json!({"model": "echo", "input": echo_call("hi"), "tools": tools, "store": false}),
    )
    .await;
    assert_eq!(status, 400, "{refused}");
    assert_eq!(refused["error"]["param"], "store");
    let mut unstored = answer(json!([approve]));
    unstored["store"] = json!(false);
    let (status, refused) = responses_as(&server, owner, unstored).await;
    assert_eq!(status, 400, "{refused}");
    assert_eq!(refused["error"]["param"], "store");
    // Without asking, `store: false` runs as usual.
    let (status, ran) = responses_as(
        &server,
        owner,
        json!({"model": "echo", "input": echo_call("hi"), "store": false,
               "tools": [{"type": "mcp", "server_label": "everything", "require_approval": "never"}]}),
    )
    .await;
    assert_eq!(status, 200, "{ran}");
    assert_eq!(items_of(&ran, "mcp_call")[0]["output"], "Echo: hi");

    // Through all of that the response stayed paused: of two answers sent at once, one runs
    // the call and the other is told it came second.
    let (first, second) = tokio::join!(
        responses_as(&server, owner, answer(json!([approve]))),
        responses_as(&server, owner, answer(json!([approve]))),
    );
    let mut statuses = [first.0.as_u16(), second.0.as_u16()];
    statuses.sort_unstable();
    assert_eq!(statuses, [200, 409], "{first:?} {second:?}");
    let ran = if first.0 == 200 { first.1 } else { second.1 };
    assert_eq!(items_of(&ran, "mcp_call")[0]["output"], "Echo: hi");
    server.stop().await;
}

/// `mcp` tools beside the client's own function tools are refused, never half served.
#[tokio::test]
async fn mcp_tools_beside_function_tools_are_refused_naming_the_mcp_entry() {
    let server = serving(everything()).await;
    let (status, answer) = responses(
        &server,
        json!({"model": "echo", "input": "hi", "tools": [
            {"type": "function", "name": "lookup"},
            {"type": "mcp", "server_label": "everything"},
        ]}),
    )
    .await;
    assert_eq!(status, 400, "{answer}");
    assert_eq!(answer["error"]["param"], "tools[1]");
    server.stop().await;
}

/// Approval request ids are unique across responses, as OpenAI's are, though the model gives
/// the same call id in each: one response's request cannot be answered in another.
#[tokio::test]
async fn approval_request_ids_are_unique_across_responses() {
    let server = serving(everything()).await;
    let tools = json!([{"type": "mcp", "server_label": "everything"}]);
    let mut paused = Vec::new();
    for _ in 0..2 {
        let (status, response) = responses(
            &server,
            json!({"model": "echo", "input": echo_call("hi"), "tools": tools}),
        )
        .await;
        assert_eq!(status, 200, "{response}");
        let request = items_of(&response, "mcp_approval_request")[0]["id"].clone();
        paused.push((response["id"].clone(), request));
    }
    assert_ne!(paused[0].1, paused[1].1);
    let (status, answer) = responses(
        &server,
        json!({"model": "echo", "previous_response_id": paused[0].0, "tools": tools, "input": [
            {"type": "mcp_approval_response", "approval_request_id": paused[1].1, "approve": true},
        ]}),
    )
    .await;
    assert_eq!(status, 400, "{answer}");
    server.stop().await;
}

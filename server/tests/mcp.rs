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
    let answer = support::client()
        .post(server.url("/v1/responses"))
        .json(&body)
        .send()
        .await
        .unwrap();
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
    let (status, answer) = responses(
        &server,
        json!({"model": "echo", "input": [
            {"type": "mcp_approval_response", "approval_request_id": "mcpr_1", "approve": true},
            {"type": "mcp_approval_response", "approval_request_id": "mcpr_2", "approve": false,
             "reason": "not now"},
        ]}),
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(answer["error"]["param"], "input[0].approval_request_id");
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(
            "`mcpr_1` (`input[0].approval_request_id`), `mcpr_2` (`input[1].approval_request_id`)"
        ),
        "{message}"
    );
    server.stop().await;
}

//! A Responses call of an MCP tool that waits for approval, decided later: after a restart on
//! the same SQLite file, on another replica of one PostgreSQL database, by one of two racing
//! requests, only by the token that started it, and not after its time to decide passed.
//! Against the reference server `@modelcontextprotocol/server-everything` (stdio) and the
//! offline `echo` model.

use std::time::Duration;

use serde_json::{Value, json};
use server::ServerConfig;
use service::ServiceConfig;
use tempfile::TempDir;

use crate::support::{self, TestServer};

/// What the reference server's `echo` tool answers for `hi`.
const ECHOED: &str = "Echo: hi";

fn config(store: String) -> ServerConfig {
    ServerConfig {
        service: ServiceConfig {
            store,
            mcp_servers: vec![mcp::testing::everything_config("everything")],
            ..ServiceConfig::default()
        },
        ..ServerConfig::default()
    }
}

fn sqlite(dir: &TempDir) -> ServerConfig {
    config(dir.path().join("runs.db").to_str().unwrap().to_owned())
}

fn tools() -> Value {
    json!([{"type": "mcp", "server_label": "everything"}])
}

async fn respond(server: &TestServer, body: &Value, token: Option<&str>) -> (u16, Value) {
    let mut request = support::client()
        .post(server.url("/v1/responses"))
        .json(body);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let answer = request.send().await.unwrap();
    (answer.status().as_u16(), answer.json().await.unwrap())
}

/// A response whose call of `everything`'s `echo` waits: its id and its approval request's.
async fn paused(server: &TestServer, token: Option<&str>) -> (String, String) {
    let input =
        json!({"tool_calls": [{"name": "everything__echo", "arguments": {"message": "hi"}}]});
    let (status, response) = respond(
        server,
        &json!({"model": "echo", "input": input.to_string(), "tools": tools()}),
        token,
    )
    .await;
    assert_eq!(status, 200, "{response}");
    let request = response["output"]
        .as_array()
        .unwrap()
        .iter()
        .find(|item| item["type"] == "mcp_approval_request")
        .unwrap_or_else(|| panic!("an approval request: {response}"));
    (
        response["id"].as_str().unwrap().to_owned(),
        request["id"].as_str().unwrap().to_owned(),
    )
}

fn approval(previous: &str, request: &str) -> Value {
    json!({"model": "echo", "previous_response_id": previous, "tools": tools(), "input": [
        {"type": "mcp_approval_response", "approval_request_id": request, "approve": true},
    ]})
}

/// The `mcp_call` of a continuation: its output.
fn ran(response: &Value) -> &Value {
    &response["output"]
        .as_array()
        .unwrap()
        .iter()
        .find(|item| item["type"] == "mcp_call")
        .unwrap_or_else(|| panic!("an mcp_call: {response}"))["output"]
}

#[tokio::test]
async fn a_paused_response_is_approved_after_a_restart_on_the_same_file() {
    let dir = TempDir::new().unwrap();
    let first = TestServer::start(sqlite(&dir)).await;
    let (id, request) = paused(&first, None).await;
    first.stop().await;
    let second = TestServer::start(sqlite(&dir)).await;
    let (status, response) = respond(&second, &approval(&id, &request), None).await;
    assert_eq!(status, 200, "{response}");
    assert_eq!(ran(&response), ECHOED);
    // The continuation is a response of its own, which the next one continues.
    let (status, next) = respond(
        &second,
        &json!({"model": "echo", "previous_response_id": response["id"], "input": "{\"raw\": \"and then\"}"}),
        None,
    )
    .await;
    assert_eq!(status, 200, "{next}");
    second.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn of_two_racing_continuations_one_runs_the_call() {
    let dir = TempDir::new().unwrap();
    let server = TestServer::start(sqlite(&dir)).await;
    let (id, request) = paused(&server, None).await;
    let body = approval(&id, &request);
    let (one, two) = tokio::join!(respond(&server, &body, None), respond(&server, &body, None));
    let mut statuses = [one.0, two.0];
    statuses.sort_unstable();
    assert_eq!(statuses, [200, 409], "{one:?} {two:?}");
    let (winner, loser) = if one.0 == 200 {
        (one.1, two.1)
    } else {
        (two.1, one.1)
    };
    assert_eq!(ran(&winner), ECHOED);
    assert_eq!(loser["error"]["code"], "approval_already_answered");
    assert_eq!(loser["error"]["param"], "previous_response_id");
    server.stop().await;
}

#[tokio::test]
async fn only_the_token_that_started_a_response_answers_its_approvals() {
    let dir = TempDir::new().unwrap();
    let (alice, bob) = ("responses-approval-alice", "responses-approval-bob");
    let server = TestServer::start(ServerConfig {
        tokens: vec![
            server::schema::Secret::new(alice),
            server::schema::Secret::new(bob),
        ],
        ..sqlite(&dir)
    })
    .await;
    let (id, request) = paused(&server, Some(alice)).await;
    let (status, theirs) = respond(&server, &approval(&id, &request), Some(bob)).await;
    assert_eq!(status, 404, "{theirs}");
    assert_eq!(theirs["error"]["param"], "previous_response_id");
    let (status, mine) = respond(&server, &approval(&id, &request), Some(alice)).await;
    assert_eq!(status, 200, "{mine}");
    assert_eq!(ran(&mine), ECHOED);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn approvals_that_come_too_late_are_refused_and_their_call_never_runs() {
    let dir = TempDir::new().unwrap();
    let mut config = sqlite(&dir);
    config.service.approval.timeout = Duration::from_secs(1);
    config.service.runs.lease_ttl = Duration::from_secs(1);
    let server = TestServer::start(config).await;
    let (id, request) = paused(&server, None).await;
    // The sweep runs every half lease: past the timeout, the response's approvals expire.
    // Until then an approval of no pending request is refused and leaves it paused.
    let wrong = approval(&id, "mcpr_none");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let (status, answer) = respond(&server, &wrong, None).await;
        if status == 409 {
            break;
        }
        assert_eq!(status, 400, "{answer}");
        assert!(tokio::time::Instant::now() < deadline, "never expired");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let answer = respond(&server, &approval(&id, &request), None).await;
    assert_eq!(answer.0, 409, "{}", answer.1);
    let message = answer.1["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("expired") && message.contains("did not run"),
        "{message}"
    );
    server.stop().await;
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_response_paused_on_one_replica_is_approved_on_another() {
    let url = conversation_tree::testing::fresh_postgres_database().await;
    let a = TestServer::start(config(url.clone())).await;
    let b = TestServer::start(config(url)).await;
    let (id, request) = paused(&a, None).await;
    let (status, response) = respond(&b, &approval(&id, &request), None).await;
    assert_eq!(status, 200, "{response}");
    assert_eq!(ran(&response), ECHOED);
    let (status, again) = respond(&a, &approval(&id, &request), None).await;
    assert_eq!(status, 409, "{again}");
    a.stop().await;
    b.stop().await;
}

/// An agent alias's own tools, under the operator's approval policy, follow the same items:
/// the call waits as an `mcp_approval_request` under the alias's name, and runs once approved.
#[tokio::test]
async fn an_agent_alias_call_waits_for_approval_under_the_alias_name() {
    let dir = TempDir::new().unwrap();
    let server = calculator_alias(&dir).await;
    let input = calculator_call();
    let (status, paused) = respond(
        &server,
        &json!({"model": "skein/calc", "input": input.to_string()}),
        None,
    )
    .await;
    assert_eq!(status, 200, "{paused}");
    let output = paused["output"].as_array().unwrap();
    assert_eq!(output.len(), 1, "{paused}");
    assert_eq!(output[0]["type"], "mcp_approval_request");
    assert_eq!(output[0]["server_label"], "skein/calc");
    assert_eq!(output[0]["name"], "calculator");
    let request = output[0]["id"].as_str().unwrap();
    let (status, ran) = respond(
        &server,
        &json!({"model": "skein/calc", "previous_response_id": paused["id"], "input": [
            {"type": "mcp_approval_response", "approval_request_id": request, "approve": true},
        ]}),
        None,
    )
    .await;
    assert_eq!(status, 200, "{ran}");
    let result: Value = serde_json::from_str(ran_output(&ran)).unwrap();
    assert_eq!(result["result"], 42.0);
    server.stop().await;
}

/// A server with the alias `skein/calc` (the echo model with `calculator`), whose calls the
/// operator's policy asks about.
async fn calculator_alias(dir: &TempDir) -> TestServer {
    let mut config = sqlite(dir);
    config.service.agents = [(
        "skein/calc".to_owned(),
        service::config::AgentAlias {
            model: "echo".into(),
            tools: vec!["calculator".into()],
            ..Default::default()
        },
    )]
    .into_iter()
    .collect();
    config.service.approval = serde_saphyr::from_str("tools:\n  calculator: always\n").unwrap();
    TestServer::start(config).await
}

/// The echo model's input that calls the calculator on `6*7`.
fn calculator_call() -> Value {
    json!({"tool_calls": [{"name": "calculator", "arguments": {"expression": "6*7"}}]})
}

fn ran_output(response: &Value) -> &str {
    ran(response).as_str().unwrap()
}

/// Chat Completions cannot ask the client about a call: an agent alias's call the operator's
/// policy asks about is declined, never run, and the model reads where it could be asked.
#[tokio::test]
async fn chat_completions_decline_a_call_that_needs_approval() {
    let dir = TempDir::new().unwrap();
    let server = calculator_alias(&dir).await;
    let input = calculator_call();
    let answer: Value = support::client()
        .post(server.url("/v1/chat/completions"))
        .json(&json!({"model": "skein/calc", "messages": [{"role": "user", "content": input.to_string()}]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let text = answer["choices"][0]["message"]["content"]
        .as_str()
        .unwrap_or_else(|| panic!("{answer}"));
    let report: Value = serde_json::from_str(text).unwrap();
    let output = report["tool_results"][0]["output"].as_str().unwrap();
    assert!(
        output.starts_with("The user declined this tool call."),
        "{output}"
    );
    assert!(
        output.contains("which this API cannot ask for; it was not run"),
        "{output}"
    );
    assert!(!output.contains("42"), "{output}");
    assert_eq!(answer["choices"][0]["finish_reason"], "stop");
    server.stop().await;
}

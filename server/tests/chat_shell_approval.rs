//! Tool approval in Chat Shell, over loopback HTTP: a run whose call needs approval ends its
//! stream with `tool.approval` and `response.done` (`stop_reason: "approval_required"`) and
//! waits; `POST /v1/response/{id}/approval` continues the same response with the decisions
//! (approved calls run, rejected ones are answered to the model with the reason), on the
//! same server, after a restart on the same SQLite file, or (feature `postgres`) on another
//! replica; a pause nobody decides about within `approval.timeout` goes on with its calls
//! rejected. Only the token that started a run decides for it; of two racing deciders, one
//! wins.
//!
//! The model is `echo` (its answer reports the tool results it read) or, for the provider's
//! wire, a recorded OpenAI tool round.

use crate::support;

#[path = "chat_shell_approval/openai_wire.rs"]
mod openai_wire;

use std::time::Duration;

use conversation_tree::runs::RunStatus;
use serde_json::{Value, json};
use server::ServerConfig;
use service::{Principal, ServiceConfig};
use support::{TestServer, client};
use tempfile::TempDir;

/// The longest any single wait of these tests may take.
const WAIT: Duration = Duration::from_secs(30);

/// What the model reads of a call the person rejected, before the reason (the agent loop's
/// documented notice).
const DECLINED: &str = "The user declined this tool call.";

/// What the calculator answers for `6 * 7`.
const SIX_TIMES_SEVEN: &str = r#"{"expression":"6 * 7","result":42.0}"#;

/// What a call nobody decided about in time is rejected with.
const TIMED_OUT: &str = "nobody decided about this call within the time allowed for approvals";

/// A server logging into the SQLite file `runs.db` in `dir`.
fn sqlite_config(dir: &TempDir) -> ServerConfig {
    ServerConfig {
        service: ServiceConfig {
            store: dir.path().join("runs.db").to_str().unwrap().to_owned(),
            ..ServiceConfig::default()
        },
        ..ServerConfig::default()
    }
}

/// A run in which the echo model calls the calculator on `6 * 7`, a call that needs
/// approval, then answers with a report of the tool results it read.
fn calculator_run() -> Value {
    let prompt =
        json!({"tool_calls": [{"name": "calculator", "arguments": {"expression": "6 * 7"}}]});
    json!({
        "model_config": {"model_id": "echo"},
        "input": {"text": prompt.to_string()},
        "tools": {"builtin": {"calculator": {"enabled": true}}},
        "require_approval": ["calculator"],
    })
}

/// The frames of an SSE body, each with its closing blank line, as sent.
fn frames(body: &str) -> Vec<String> {
    body.split_inclusive("\n\n").map(str::to_owned).collect()
}

fn id_of(frame: &str) -> u64 {
    frame
        .lines()
        .find_map(|line| line.strip_prefix("id: "))
        .unwrap_or_else(|| panic!("a frame without an id: {frame:?}"))
        .parse()
        .expect("a numeric id")
}

fn name_of(frame: &str) -> &str {
    frame
        .lines()
        .find_map(|line| line.strip_prefix("event: "))
        .unwrap_or_else(|| panic!("a frame without a name: {frame:?}"))
}

fn data_of(frame: &str) -> Value {
    let data = frame
        .lines()
        .find_map(|line| line.strip_prefix("data: "))
        .unwrap_or_else(|| panic!("a frame without data: {frame:?}"));
    serde_json::from_str(data).expect("JSON data")
}

fn names(frames: &[String]) -> Vec<&str> {
    frames.iter().map(|frame| name_of(frame)).collect()
}

/// The data of the only frame named `name`.
fn only(frames: &[String], name: &str) -> Value {
    let found: Vec<&String> = frames
        .iter()
        .filter(|frame| name_of(frame) == name)
        .collect();
    assert_eq!(found.len(), 1, "{name} in {:?}", names(frames));
    data_of(found[0])
}

/// The whole text of a streamed answer, read within [`WAIT`].
async fn text(response: reqwest::Response) -> String {
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    tokio::time::timeout(WAIT, response.text())
        .await
        .expect("timed out reading the stream")
        .unwrap()
}

/// Posts `body` to `/v1/response` as `token`.
async fn post(server: &TestServer, body: &Value, token: Option<&str>) -> reqwest::Response {
    let mut request = client().post(server.url("/v1/response")).json(body);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    request.send().await.unwrap()
}

/// Posts `decisions` for response `id` as `token`.
async fn decide(
    server: &TestServer,
    id: &str,
    decisions: &Value,
    token: Option<&str>,
) -> reqwest::Response {
    let mut request = client()
        .post(server.url(&format!("/v1/response/{id}/approval")))
        .json(decisions);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    request.send().await.unwrap()
}

/// Every stored event of response `id`, from the first.
/// Approves the paused run `id`'s one call (`echo_call_1`): the resumed stream.
async fn approve(server: &TestServer, id: &str) -> String {
    let decisions = json!({"decisions": {"echo_call_1": {"decision": "approve"}}});
    text(decide(server, id, &decisions, None).await).await
}

async fn replay(server: &TestServer, id: &str, last: Option<u64>) -> String {
    let mut request = client().get(server.url(&format!("/v1/response/{id}/events")));
    if let Some(last) = last {
        request = request.header("Last-Event-ID", last.to_string());
    }
    text(request.send().await.unwrap()).await
}

/// The run's record, as its owner sees it.
async fn record(server: &TestServer, id: &str, owner: Principal) -> conversation_tree::runs::Run {
    server
        .server
        .service()
        .run_records()
        .expect("the server stores runs")
        .get(id, owner)
        .await
        .unwrap()
        .expect("the run is stored")
}

/// Starts [`calculator_run`] as `token` and reads its stream to the pause: the frames, the
/// response id and the conversation id. Asserts every field of `tool.approval` and of the
/// `response.done` that ends the stream.
async fn paused(server: &TestServer, token: Option<&str>) -> (Vec<String>, String, String) {
    let body = text(post(server, &calculator_run(), token).await).await;
    let frames = frames(&body);
    assert_eq!(
        names(&frames),
        ["response.start", "tool.approval", "response.done"]
    );
    let ids: Vec<u64> = frames.iter().map(|frame| id_of(frame)).collect();
    assert_eq!(ids, [0, 1, 2]);
    let id = data_of(&frames[0])["id"].as_str().unwrap().to_owned();
    let approval = data_of(&frames[1]);
    let conversation = approval["conversation_id"].as_str().unwrap().to_owned();
    assert_eq!(
        approval,
        json!({
            "id": id,
            "conversation_id": conversation,
            "calls": [{
                "id": "echo_call_1",
                "name": "calculator",
                "arguments": r#"{"expression":"6 * 7"}"#,
            }],
        })
    );
    let done = data_of(&frames[2]);
    assert_eq!(done["id"], id.as_str());
    assert_eq!(done["stop_reason"], "approval_required");
    assert_eq!(done["conversation_id"], conversation.as_str());
    assert_eq!(done["rounds"], 1);
    assert_eq!(done["silent_exit"], false);
    assert_eq!(done["silent_exit_reason"], Value::Null);
    assert_eq!(done["node_ids"].as_array().unwrap().len(), 1, "{done}");
    assert_eq!(done["model_calls"].as_array().unwrap().len(), 1, "{done}");
    assert!(
        done["usage"]["input_tokens"].as_u64().unwrap() > 0,
        "{done}"
    );
    // No tool ran.
    assert_eq!(done["blocks"], json!([]), "{done}");
    (frames, id, conversation)
}

/// The tool results the echo model reports it read, from the answer's text.
fn tool_results_read(frames: &[String]) -> Value {
    let answer: String = frames
        .iter()
        .filter(|frame| name_of(frame) == "content.delta")
        .map(|frame| data_of(frame)["text"].as_str().unwrap().to_owned())
        .collect();
    let report: Value = serde_json::from_str(&answer).expect("the echo model's report");
    report["tool_results"].clone()
}

/// Waits until response `id` has `status`.
async fn until_status(server: &TestServer, id: &str, status: RunStatus) {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let run = record(server, id, Principal::SHARED).await;
        if run.status == status {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "still {:?}",
            run.status
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn an_approved_call_runs_and_the_model_answers_in_the_same_response() {
    let dir = TempDir::new().unwrap();
    let server = TestServer::start(sqlite_config(&dir)).await;
    let (first, id, conversation) = paused(&server, None).await;
    let run = record(&server, &id, Principal::SHARED).await;
    assert_eq!(run.status, RunStatus::Paused);
    assert!(run.decide_by.is_some(), "{run:?}");

    let resumed = approve(&server, &id).await;
    let second = frames(&resumed);
    // Numbered after the stored events, with no second `response.start`.
    let ids: Vec<u64> = second.iter().map(|frame| id_of(frame)).collect();
    let expected: Vec<u64> = (3..3 + second.len() as u64).collect();
    assert_eq!(ids, expected);
    assert_eq!(name_of(&second[0]), "tool.start");
    let start = only(&second, "tool.start");
    assert_eq!(start["id"], "echo_call_1");
    assert_eq!(start["name"], "calculator");
    assert_eq!(start["input"], json!({"expression": "6 * 7"}));
    let done = only(&second, "tool.done");
    assert_eq!(done["id"], "echo_call_1");
    assert_eq!(done["output"], SIX_TIMES_SEVEN);
    assert_eq!(done["error"], Value::Null);
    assert_eq!(
        tool_results_read(&second),
        json!([{"tool_call_id": "echo_call_1", "name": "calculator", "output": SIX_TIMES_SEVEN}])
    );
    let end = data_of(second.last().unwrap());
    assert_eq!(name_of(second.last().unwrap()), "response.done");
    assert_eq!(end["id"], id.as_str());
    assert_eq!(end["stop_reason"], "end_turn");
    assert_eq!(end["conversation_id"], conversation.as_str());

    // One response, replayed whole: the paused part, then the resumed one, byte for byte.
    assert_eq!(replay(&server, &id, None).await, first.concat() + &resumed);
    assert_eq!(replay(&server, &id, Some(2)).await, resumed);
    let run = record(&server, &id, Principal::SHARED).await;
    assert_eq!(run.status, RunStatus::Completed);
    assert_eq!(run.last_seq, Some(2 + second.len() as u64));
    assert_eq!(
        run.last_node.map(|node| node.get()),
        end["node_ids"].as_array().unwrap().last().unwrap().as_i64()
    );

    // Decided once: a second decision finds it finished.
    let again = decide(
        &server,
        &id,
        &json!({"decisions": {"echo_call_1": {"decision": "approve"}}}),
        None,
    )
    .await;
    assert_eq!(again.status(), 409);
    let error: Value = again.json().await.unwrap();
    assert_eq!(error["code"], "not_paused");
    assert_eq!(error["details"]["status"], "completed");
    server.stop().await;
}

#[tokio::test]
async fn a_rejected_call_does_not_run_and_the_model_reads_the_reason() {
    let dir = TempDir::new().unwrap();
    let server = TestServer::start(sqlite_config(&dir)).await;
    let (_, id, _) = paused(&server, None).await;
    let answer = decide(
        &server,
        &id,
        &json!({
            "decisions": {"echo_call_1": {"decision": "reject", "reason": "not on a Sunday"}},
            "stream": false,
        }),
        None,
    )
    .await;
    assert_eq!(answer.status(), 200);
    let body: Value = answer.json().await.unwrap();
    let notice = format!("{DECLINED} Reason: not on a Sunday");
    let report: Value = serde_json::from_str(body["content"].as_str().unwrap()).unwrap();
    assert_eq!(
        report["tool_results"],
        json!([{"tool_call_id": "echo_call_1", "name": "calculator", "output": notice}])
    );
    assert_eq!(body["id"], id.as_str());
    assert_eq!(body["stop_reason"], "end_turn");
    assert!(body.get("pending_approvals").is_none(), "{body}");
    // The calculator never answered 42.
    let calls = body["tool_calls"].as_array().unwrap();
    assert!(
        calls.iter().all(|call| call["output"] != SIX_TIMES_SEVEN),
        "{calls:?}"
    );
    server.stop().await;
}

#[tokio::test]
async fn a_non_streaming_pause_lists_its_pending_calls() {
    let dir = TempDir::new().unwrap();
    let server = TestServer::start(sqlite_config(&dir)).await;
    let mut body = calculator_run();
    body["features"] = json!({"streaming": false});
    let answer = post(&server, &body, None).await;
    assert_eq!(answer.status(), 200);
    let body: Value = answer.json().await.unwrap();
    assert_eq!(body["stop_reason"], "approval_required");
    assert_eq!(
        body["pending_approvals"],
        json!([{"id": "echo_call_1", "name": "calculator", "arguments": r#"{"expression":"6 * 7"}"#}])
    );
    assert_eq!(body["content"], "");
    assert_eq!(body["tool_calls"], json!([]));
    let id = body["id"].as_str().unwrap();
    assert_eq!(
        record(&server, id, Principal::SHARED).await.status,
        RunStatus::Paused
    );
    server.stop().await;
}

#[tokio::test]
async fn bad_decisions_are_all_named_and_leave_the_run_paused() {
    let dir = TempDir::new().unwrap();
    let server = TestServer::start(sqlite_config(&dir)).await;
    let (_, id, _) = paused(&server, None).await;
    let answer = decide(
        &server,
        &id,
        &json!({"decisions": {
            "call_x": {"decision": "approve"},
            "call_y": {"decision": "reject", "reason": "no"},
        }}),
        None,
    )
    .await;
    assert_eq!(answer.status(), 400);
    let error: Value = answer.json().await.unwrap();
    let problems: Vec<&str> = error["details"]["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|problem| problem.as_str().unwrap())
        .collect();
    assert_eq!(problems.len(), 3, "{problems:?}");
    for named in ["`echo_call_1`", "`call_x`", "`call_y`"] {
        assert!(
            problems.iter().any(|problem| problem.contains(named)),
            "{named} in {problems:?}"
        );
        assert!(
            error["message"].as_str().unwrap().contains(named),
            "{error}"
        );
    }
    assert_eq!(
        error["details"]["pending"],
        json!([{"id": "echo_call_1", "name": "calculator"}])
    );
    // A reason nobody would read is refused too.
    let stray = decide(
        &server,
        &id,
        &json!({"decisions": {"echo_call_1": {"decision": "approve", "reason": "fine"}}}),
        None,
    )
    .await;
    assert_eq!(stray.status(), 400);
    // A decision that is not one is the body's field error.
    let unknown = decide(
        &server,
        &id,
        &json!({"decisions": {"echo_call_1": {"decision": "maybe"}}}),
        None,
    )
    .await;
    assert_eq!(unknown.status(), 422);
    assert_eq!(
        record(&server, &id, Principal::SHARED).await.status,
        RunStatus::Paused
    );
    // Still paused: a good decision goes through.
    let good = text(
        decide(
            &server,
            &id,
            &json!({"decisions": {"echo_call_1": {"decision": "approve_always"}}}),
            None,
        )
        .await,
    )
    .await;
    assert_eq!(name_of(frames(&good).last().unwrap()), "response.done");
    server.stop().await;
}

#[tokio::test]
async fn only_the_token_that_started_a_run_decides_for_it() {
    let dir = TempDir::new().unwrap();
    let (alice, bob) = ("approval-test-token-alice", "approval-test-token-bob");
    let server = TestServer::start(ServerConfig {
        tokens: vec![
            server::schema::Secret::new(alice),
            server::schema::Secret::new(bob),
        ],
        ..sqlite_config(&dir)
    })
    .await;
    let (_, id, _) = paused(&server, Some(alice)).await;
    let decisions = json!({"decisions": {"echo_call_1": {"decision": "approve"}}});
    let theirs = decide(&server, &id, &decisions, Some(bob)).await;
    assert_eq!(theirs.status(), 404);
    let unknown = decide(
        &server,
        "resp-00000000000000000000000000000000",
        &decisions,
        Some(alice),
    )
    .await;
    assert_eq!(unknown.status(), 404);
    // Bob's attempt changed nothing: Alice decides.
    let mine = text(decide(&server, &id, &decisions, Some(alice)).await).await;
    assert_eq!(only(&frames(&mine), "tool.done")["output"], SIX_TIMES_SEVEN);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn of_two_racing_deciders_exactly_one_resumes_the_run() {
    let dir = TempDir::new().unwrap();
    let server = TestServer::start(sqlite_config(&dir)).await;
    let (_, id, _) = paused(&server, None).await;
    let decisions = json!({"decisions": {"echo_call_1": {"decision": "approve"}}, "stream": false});
    let (one, two) = tokio::join!(
        decide(&server, &id, &decisions, None),
        decide(&server, &id, &decisions, None)
    );
    let mut statuses = [one.status().as_u16(), two.status().as_u16()];
    statuses.sort_unstable();
    assert_eq!(statuses, [200, 409]);
    let (winner, loser) = if one.status() == 200 {
        (one, two)
    } else {
        (two, one)
    };
    let loser: Value = loser.json().await.unwrap();
    assert_eq!(loser["code"], "not_paused");
    let winner: Value = winner.json().await.unwrap();
    assert_eq!(winner["stop_reason"], "end_turn");
    // The tool ran once.
    let whole = frames(&replay(&server, &id, None).await);
    assert_eq!(only(&whole, "tool.done")["output"], SIX_TIMES_SEVEN);
    server.stop().await;
}

#[tokio::test]
async fn a_paused_run_is_approved_after_a_restart_on_the_same_file() {
    let dir = TempDir::new().unwrap();
    let first = TestServer::start(sqlite_config(&dir)).await;
    let (before, id, _) = paused(&first, None).await;
    first.stop().await;

    let second = TestServer::start(sqlite_config(&dir)).await;
    let resumed = approve(&second, &id).await;
    let after = frames(&resumed);
    assert_eq!(id_of(&after[0]), 3);
    assert_eq!(only(&after, "tool.done")["output"], SIX_TIMES_SEVEN);
    assert_eq!(name_of(after.last().unwrap()), "response.done");
    assert_eq!(replay(&second, &id, None).await, before.concat() + &resumed);
    assert_eq!(
        record(&second, &id, Principal::SHARED).await.status,
        RunStatus::Completed
    );
    second.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_pause_nobody_decides_about_goes_on_with_its_calls_rejected() {
    let dir = TempDir::new().unwrap();
    let mut config = sqlite_config(&dir);
    config.service.approval.timeout = Duration::from_secs(1);
    config.service.runs.lease_ttl = Duration::from_secs(1);
    let server = TestServer::start(config).await;
    let (first, id, _) = paused(&server, None).await;
    until_status(&server, &id, RunStatus::Completed).await;

    let whole = frames(&replay(&server, &id, None).await);
    assert_eq!(whole[..3].concat(), first.concat());
    let ids: Vec<u64> = whole.iter().map(|frame| id_of(frame)).collect();
    assert_eq!(ids, (0..whole.len() as u64).collect::<Vec<_>>());
    let notice = format!("{DECLINED} Reason: {TIMED_OUT}");
    assert_eq!(
        tool_results_read(&whole[3..]),
        json!([{"tool_call_id": "echo_call_1", "name": "calculator", "output": notice}])
    );
    assert_eq!(data_of(whole.last().unwrap())["stop_reason"], "end_turn");
    // Too late to decide now.
    let late = decide(
        &server,
        &id,
        &json!({"decisions": {"echo_call_1": {"decision": "approve"}}}),
        None,
    )
    .await;
    assert_eq!(late.status(), 409);
    server.stop().await;
}

#[tokio::test]
async fn a_run_that_could_pause_but_never_resume_is_refused_up_front() {
    let dir = TempDir::new().unwrap();
    let server = TestServer::start(sqlite_config(&dir)).await;
    let mut body = calculator_run();
    body["features"] = json!({"tool_mode": "json"});
    body["model_config"]["api_key"] = json!("sk-client-key");
    body["require_approval"] = json!(["calculator", "mcp:", "weird:thing"]);
    let answer = post(&server, &body, None).await;
    assert_eq!(answer.status(), 422);
    let error: Value = answer.json().await.unwrap();
    let fields: Vec<&str> = error["details"]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|field| field["field"].as_str().unwrap())
        .collect();
    // Bad selectors first, each named.
    assert_eq!(
        fields,
        ["require_approval[1]", "require_approval[2]"],
        "{error}"
    );
    body["require_approval"] = json!(["calculator"]);
    let answer = post(&server, &body, None).await;
    assert_eq!(answer.status(), 422);
    let error: Value = answer.json().await.unwrap();
    assert_eq!(error["code"], "approval_unavailable");
    let fields: Vec<&str> = error["details"]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|field| field["field"].as_str().unwrap())
        .collect();
    assert_eq!(fields, ["features.tool_mode", "model_config.api_key"]);
    server.stop().await;
}

#[cfg(feature = "postgres")]
mod postgres {
    use super::*;

    async fn replica(url: &str) -> TestServer {
        TestServer::start(ServerConfig {
            service: ServiceConfig {
                store: url.to_owned(),
                ..ServiceConfig::default()
            },
            ..ServerConfig::default()
        })
        .await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn a_run_paused_on_one_replica_is_approved_on_another() {
        let url = conversation_tree::testing::fresh_postgres_database().await;
        let a = replica(&url).await;
        let b = replica(&url).await;
        let (before, id, conversation) = paused(&a, None).await;
        let resumed = approve(&b, &id).await;
        let after = frames(&resumed);
        assert_eq!(id_of(&after[0]), 3);
        assert_eq!(only(&after, "tool.done")["output"], SIX_TIMES_SEVEN);
        let end = data_of(after.last().unwrap());
        assert_eq!(end["stop_reason"], "end_turn");
        assert_eq!(end["conversation_id"], conversation.as_str());
        // Either replica replays the one response.
        assert_eq!(replay(&a, &id, None).await, before.concat() + &resumed);
        assert_eq!(
            record(&a, &id, Principal::SHARED).await.status,
            RunStatus::Completed
        );
        a.stop().await;
        b.stop().await;
    }
}

/// The operator's policy (`approval` in the configuration) pauses a run whose request asks for
/// nothing.
#[tokio::test]
async fn the_operators_policy_pauses_a_run_that_asks_for_nothing() {
    let dir = TempDir::new().unwrap();
    let mut config = sqlite_config(&dir);
    config
        .service
        .approval
        .tools
        .insert("calculator".to_owned(), json!("always"));
    let server = TestServer::start(config).await;
    let mut body = calculator_run();
    body.as_object_mut().unwrap().remove("require_approval");
    let frames = frames(&text(post(&server, &body, None).await).await);
    assert_eq!(
        names(&frames),
        ["response.start", "tool.approval", "response.done"]
    );
    assert_eq!(data_of(&frames[2])["stop_reason"], "approval_required");
    server.stop().await;
}

/// A paused run is followed to its pause, and a cancel ends it at once: nobody can decide
/// for it afterwards.
#[tokio::test]
async fn a_paused_run_is_replayed_to_its_pause_and_cancelled_at_once() {
    let dir = TempDir::new().unwrap();
    let server = TestServer::start(sqlite_config(&dir)).await;
    let (first, id, _) = paused(&server, None).await;
    // The follower's stream ends with the pause: nothing more comes until someone decides.
    assert_eq!(replay(&server, &id, None).await, first.concat());
    let cancel = client()
        .post(server.url(&format!("/v1/response/{id}/cancel")))
        .send()
        .await
        .unwrap();
    assert_eq!(cancel.status(), 200);
    assert_eq!(
        cancel.json::<Value>().await.unwrap(),
        json!({"success": true, "message": "Request cancelled"})
    );
    assert_eq!(
        record(&server, &id, Principal::SHARED).await.status,
        RunStatus::Cancelled
    );
    let late = decide(
        &server,
        &id,
        &json!({"decisions": {"echo_call_1": {"decision": "approve"}}}),
        None,
    )
    .await;
    assert_eq!(late.status(), 409);
    let error: Value = late.json().await.unwrap();
    assert_eq!(error["details"]["status"], "cancelled");
    server.stop().await;
}

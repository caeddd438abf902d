//! Approval on the provider's wire: recorded OpenAI tool rounds (`multiply`, a tool the model
//! calls by itself) paused, rejected and approved through Chat Shell, with what the provider
//! is sent afterwards checked against OpenAI's Chat Completions reference.

use super::*;

/// On the provider's wire (a recorded OpenAI tool round): the paused call is the one the model
/// sent, and after a rejection the model is sent the call and a tool message with the reason
/// (`{"role": "tool", "tool_call_id", "content"}`, as OpenAI's Chat Completions reference
/// defines it), then its answer ends the same response.
#[tokio::test]
async fn a_rejection_reaches_the_provider_as_the_calls_tool_message() {
    let mock = wiremock::MockServer::start().await;
    support::replay(
        &mock,
        "/v1/chat/completions",
        &[
            "openai/chat_stream_tool_call.sse",
            "openai/chat_stream_text_after_tool.sse",
        ],
    )
    .await;
    let dir = TempDir::new().unwrap();
    let mut config = support::keyed(&mock);
    config.service.store = dir.path().join("runs.db").to_str().unwrap().to_owned();
    let server = TestServer::start(config).await;
    let body = json!({
        "model_config": {"model_id": "gpt-4o-mini"},
        "input": {"text": "What is 1231 * 2331?"},
        "tools": {"builtin": {"calculator": {"enabled": true}}},
        "require_approval": ["*"],
    });
    let first = frames(&text(post(&server, &body, None).await).await);
    assert_eq!(
        names(&first),
        ["response.start", "tool.approval", "response.done"]
    );
    let id = data_of(&first[0])["id"].as_str().unwrap().to_owned();
    // The call as the recorded stream sent it, its arguments reassembled from the deltas.
    assert_eq!(
        data_of(&first[1])["calls"],
        json!([{
            "id": "call_1EYWDzueHEp8OsB8jJSEp7WB",
            "name": "multiply",
            "arguments": r#"{"a":1231,"b":2331}"#,
        }])
    );
    let resumed = frames(
        &text(
            decide(
                &server,
                &id,
                &json!({"decisions": {"call_1EYWDzueHEp8OsB8jJSEp7WB":
                    {"decision": "reject", "reason": "do it by hand"}}}),
                None,
            )
            .await,
        )
        .await,
    );
    assert_eq!(name_of(resumed.last().unwrap()), "response.done");
    let answer: String = resumed
        .iter()
        .filter(|frame| name_of(frame) == "content.delta")
        .map(|frame| data_of(frame)["text"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        answer,
        r"The result of \( 1231 \times 2331 \) is \( 2,869,461 \)."
    );
    let sent = support::received(&mock).await;
    assert_eq!(sent.len(), 2, "{sent:#?}");
    let messages = sent[1]["messages"].as_array().unwrap();
    let call = messages
        .iter()
        .find(|message| message["role"] == "assistant" && message.get("tool_calls").is_some())
        .expect("the model's call is sent back");
    assert_eq!(call["tool_calls"][0]["id"], "call_1EYWDzueHEp8OsB8jJSEp7WB");
    assert_eq!(call["tool_calls"][0]["function"]["name"], "multiply");
    let tool = messages.last().unwrap();
    assert_eq!(
        tool,
        &json!({
            "role": "tool",
            "tool_call_id": "call_1EYWDzueHEp8OsB8jJSEp7WB",
            "content": format!("{DECLINED} Reason: do it by hand"),
        })
    );
    server.stop().await;
}

/// The recorded OpenAI tool round, its model calling `multiply` once (call id `first`), again
/// (call id `second`), then answering: a run with two tool rounds.
async fn two_rounds(mock: &wiremock::MockServer) {
    let call = String::from_utf8(support::fixture("openai/chat_stream_tool_call.sse")).unwrap();
    let bodies = [
        call.replace("call_1EYWDzueHEp8OsB8jJSEp7WB", "first"),
        call.replace("call_1EYWDzueHEp8OsB8jJSEp7WB", "second"),
        String::from_utf8(support::fixture("openai/chat_stream_text_after_tool.sse")).unwrap(),
    ];
    let counter = std::sync::atomic::AtomicUsize::new(0);
    wiremock::Mock::given(wiremock::matchers::method("POST"))
        .and(wiremock::matchers::path("/v1/chat/completions"))
        .respond_with(move |_: &wiremock::Request| {
            let i = counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            wiremock::ResponseTemplate::new(200)
                .set_body_raw(bodies[i.min(bodies.len() - 1)].clone(), "text/event-stream")
        })
        .mount(mock)
        .await;
}

/// A server on `mock` logging into `dir`, and the two-round run's first stream, paused on
/// `first`: the response id.
async fn paused_on_first(mock: &wiremock::MockServer, dir: &TempDir) -> (TestServer, String) {
    two_rounds(mock).await;
    let mut config = support::keyed(mock);
    config.service.store = dir.path().join("runs.db").to_str().unwrap().to_owned();
    let server = TestServer::start(config).await;
    let body = json!({
        "model_config": {"model_id": "gpt-4o-mini"},
        "input": {"text": "What is 1231 * 2331?"},
        "tools": {"builtin": {"calculator": {"enabled": true}}},
        "require_approval": ["multiply"],
    });
    let first = frames(&text(post(&server, &body, None).await).await);
    assert_eq!(only(&first, "tool.approval")["calls"][0]["id"], "first");
    let id = data_of(&first[0])["id"].as_str().unwrap().to_owned();
    (server, id)
}

#[tokio::test]
async fn approved_always_a_tool_runs_in_later_rounds_without_asking() {
    let mock = wiremock::MockServer::start().await;
    let dir = TempDir::new().unwrap();
    let (server, id) = paused_on_first(&mock, &dir).await;
    let resumed = frames(
        &text(
            decide(
                &server,
                &id,
                &json!({"decisions": {"first": {"decision": "approve_always"}}}),
                None,
            )
            .await,
        )
        .await,
    );
    // Both rounds' calls were answered, the second without a pause.
    let done: Vec<Value> = resumed
        .iter()
        .filter(|frame| name_of(frame) == "tool.done")
        .map(|frame| data_of(frame)["id"].clone())
        .collect();
    assert_eq!(done, [json!("first"), json!("second")]);
    assert!(!names(&resumed).contains(&"tool.approval"), "{resumed:#?}");
    let end = data_of(resumed.last().unwrap());
    assert_eq!(end["stop_reason"], "end_turn");
    assert_eq!(support::received(&mock).await.len(), 3);
    server.stop().await;
}

#[tokio::test]
async fn approved_once_a_tool_pauses_the_run_again_in_a_later_round() {
    let mock = wiremock::MockServer::start().await;
    let dir = TempDir::new().unwrap();
    let (server, id) = paused_on_first(&mock, &dir).await;
    let again = frames(
        &text(
            decide(
                &server,
                &id,
                &json!({"decisions": {"first": {"decision": "approve"}}}),
                None,
            )
            .await,
        )
        .await,
    );
    assert_eq!(only(&again, "tool.done")["id"], "first");
    assert_eq!(only(&again, "tool.approval")["calls"][0]["id"], "second");
    let pause = data_of(again.last().unwrap());
    assert_eq!(name_of(again.last().unwrap()), "response.done");
    assert_eq!(pause["stop_reason"], "approval_required");
    assert_eq!(
        record(&server, &id, Principal::SHARED).await.status,
        RunStatus::Paused
    );
    // The first decision does not fit the second pause.
    let stale = decide(
        &server,
        &id,
        &json!({"decisions": {"first": {"decision": "approve"}}}),
        None,
    )
    .await;
    assert_eq!(stale.status(), 400);
    let last = frames(
        &text(
            decide(
                &server,
                &id,
                &json!({"decisions": {"second": {"decision": "approve"}}}),
                None,
            )
            .await,
        )
        .await,
    );
    assert_eq!(only(&last, "tool.done")["id"], "second");
    assert_eq!(data_of(last.last().unwrap())["stop_reason"], "end_turn");
    // One stream, numbered throughout.
    let whole = frames(&replay(&server, &id, None).await);
    let ids: Vec<u64> = whole.iter().map(|frame| id_of(frame)).collect();
    assert_eq!(ids, (0..whole.len() as u64).collect::<Vec<_>>());
    server.stop().await;
}

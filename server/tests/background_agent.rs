//! Background responses of an agent alias with a server-side tool, taken over by another
//! replica (or the next start): the run goes on below the last round logged in the tree, a
//! model call in flight made again and a tool call in flight answered by the integrity rules,
//! never run twice. Its events go on after the stored ones (`sequence_number` and
//! `output_index` numbered on, as the OpenAI API reference numbers a stream's events and a
//! response's output), and its `response.completed` holds the whole output.

use std::sync::Arc;
use std::time::Duration;

use conversation_tree::runs::{NewRun, RunEvent, RunMode, RunProtocol};
use conversation_tree::{
    CallOptions, ConversationId, Message, NewResponse, NodeId, SqliteStore, Store, ToolCall,
};
use messages::Role;
use serde_json::{Value, json};
use server::{Server, ServerConfig};
use service::config::AgentAlias;
use service::store::StoreKind;

use crate::background::{config, get, numbered_replay, poll_until_ended, post};
use crate::support::TestServer;

const AGENT: &str = "skein/agent";

/// The owner a server with no tokens stores its callers' runs and conversations under.
const OWNER: &str = "loopback";

/// The background test config with an agent alias of `echo` offering the calculator.
fn agent_config(store: &str) -> ServerConfig {
    let mut config = config(store);
    let agent = AgentAlias {
        model: "echo".into(),
        tools: vec!["calculator".into()],
        ..Default::default()
    };
    config.service.agents = [(AGENT.to_owned(), agent)].into_iter().collect();
    config
}

/// The echo model's prompt: call the calculator once, then answer, `delay_ms` between events.
fn tool_round(delay_ms: u64) -> Value {
    json!({
        "tool_calls": [{"name": "calculator", "arguments": {"expression": "6 * 7"}}],
        "delay_ms": delay_ms,
    })
}

/// One stored SSE frame, as a worker stores it.
fn frame(event: &Value) -> Vec<u8> {
    format!(
        "event: {}\ndata: {}\n\n",
        event["type"].as_str().unwrap(),
        event
    )
    .into_bytes()
}

/// The messages of the path to `node`, and how many answer the call `call_id`.
async fn answers_to(store: &dyn Store, node: NodeId, call_id: &str) -> (Vec<Message>, usize) {
    let path = store.messages_for_path(node).await.unwrap();
    let answers = path
        .iter()
        .filter(|message| message.role == Role::Tool)
        .flat_map(Message::tool_responses)
        .filter(|response| response.tool_call_id == call_id)
        .count();
    (path, answers)
}

/// A replica killed while the calculator ran left the model's tool call logged (labelled with
/// the response), no result, and the first events of the response: the next server continues
/// below the call, which the integrity rules answer; the tool is not run again, the events go
/// on after the stored ones, and the response continues with `previous_response_id`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_call_in_flight_when_the_replica_died_is_answered_not_run_again() {
    let id = "resp_0123456789abcdef0123456789abcdef";
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open_in_memory().await.unwrap());
    let prompt = tool_round(0).to_string();
    let conversation = ConversationId::new("conv-killed-mid-tool").unwrap();
    let call = store
        .log_response(
            NewResponse::new(
                conversation.clone(),
                None,
                vec![Message::human(prompt.clone())],
                Message::ai_tool_calls(
                    None,
                    vec![ToolCall::new(
                        "echo_call_1",
                        "calculator",
                        r#"{"expression":"6 * 7"}"#,
                    )],
                ),
                &CallOptions::new("echo"),
            )
            .label(id)
            .owner(OWNER),
        )
        .await
        .unwrap();
    // The dead worker's record and events: the response begun, a message item it had opened
    // (some text of an earlier round), and no end.
    let request = json!({"model": AGENT, "input": prompt, "background": true});
    let begun = json!({"id": id, "object": "response", "created_at": 1_700_000_000u64,
        "status": "in_progress", "model": AGENT, "output": []});
    store
        .create_run(NewRun::new(
            id,
            OWNER,
            RunProtocol::Responses,
            RunMode::Background,
            json!({"request": request, "response": begun}),
        ))
        .await
        .unwrap();
    let item = json!({"type": "message", "id": format!("msg_{}_0", &id[5..]),
        "status": "in_progress", "role": "assistant", "content": []});
    let part = json!({"type": "output_text", "text": "", "annotations": [], "logprobs": []});
    let stored = [
        json!({"type": "response.created", "response": begun, "sequence_number": 0}),
        json!({"type": "response.in_progress", "response": begun, "sequence_number": 1}),
        json!({"type": "response.output_item.added", "output_index": 0, "item": item,
            "sequence_number": 2}),
        json!({"type": "response.content_part.added", "item_id": item["id"], "output_index": 0,
            "content_index": 0, "part": part, "sequence_number": 3}),
        json!({"type": "response.output_text.delta", "item_id": item["id"], "output_index": 0,
            "content_index": 0, "delta": "Let me compute. ", "logprobs": [],
            "sequence_number": 4}),
    ];
    let events: Vec<RunEvent> = stored
        .iter()
        .enumerate()
        .map(|(seq, event)| RunEvent::new(seq as u64, frame(event)))
        .collect();
    store.append_events(id, &events).await.unwrap();

    let server = TestServer::serve(
        Server::with_store(
            agent_config(":memory:"),
            Arc::clone(&store),
            StoreKind::Memory,
        )
        .unwrap(),
    )
    .await;
    let done = poll_until_ended(&server, id).await;
    assert_eq!(done["status"], "completed", "{done}");

    // The stream: the stored events, then the continuation numbered on from them.
    let events = numbered_replay(&server, id).await;
    for ((data, bytes), stored) in events.iter().zip(&stored) {
        assert_eq!(data, stored);
        assert_eq!(
            *bytes,
            frame(stored),
            "the stored frames are kept as they were"
        );
    }
    let resumed: Vec<&Value> = events[stored.len()..]
        .iter()
        .map(|(data, _)| data)
        .collect();
    assert_eq!(resumed[0]["type"], "response.in_progress");
    assert_eq!(resumed[0]["response"]["output"][0]["status"], "incomplete");
    assert_eq!(resumed[1]["type"], "response.output_item.done");
    assert_eq!(resumed[1]["output_index"], 0);
    assert_eq!(resumed[1]["item"]["status"], "incomplete");
    assert_eq!(
        resumed[1]["item"]["content"][0]["text"], "Let me compute. ",
        "the first worker's text stays"
    );
    assert!(
        !resumed
            .iter()
            .any(|data| data["type"] == "response.output_item.added"
                && data["output_index"].as_u64() == Some(0)),
        "the new items follow the stored ones: {resumed:#?}"
    );
    let terminal = events.last().unwrap().0.clone();
    assert_eq!(terminal["type"], "response.completed");
    assert_eq!(
        terminal["response"], done,
        "GET shows the terminal response"
    );

    // The whole output: the first worker's item, then the continuation's answer, which read
    // that the call was not handled (the calculator did not run again).
    let output = done["output"].as_array().unwrap();
    assert_eq!(output.len(), 2, "{done}");
    assert_eq!(output[0]["id"], item["id"]);
    assert_eq!(output[0]["status"], "incomplete");
    assert_eq!(output[1]["type"], "message");
    assert_eq!(output[1]["status"], "completed");
    assert_ne!(output[1]["id"], output[0]["id"]);
    let answer = output[1]["content"][0]["text"].as_str().unwrap();
    assert!(
        answer.contains(chain_ast::FALLBACK_RESPONSE_CONTENT),
        "the model read that the call was not handled: {answer}"
    );

    // The tree goes on below the call: the call has exactly one answer, and the run's record
    // names the last node.
    let nodes = store.conversation_nodes(&conversation).await.unwrap();
    assert_eq!(nodes.len(), 2, "{nodes:#?}");
    assert_eq!(nodes[1].parent(), Some(call.id()));
    let (_, answers) = answers_to(store.as_ref(), nodes[1].id(), "echo_call_1").await;
    assert_eq!(answers, 1);
    let run = store.run(id).await.unwrap().expect("kept");
    assert_eq!(run.last_node, Some(nodes[1].id()));

    // The response continues from its last round.
    let next: Value = post(
        &server,
        &json!({"model": "echo", "input": "{\"raw\": \"and then?\"}", "previous_response_id": id}),
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(next["status"], "completed", "{next}");
    assert_eq!(next["previous_response_id"], id);
    let after = store
        .node_by_label(next["id"].as_str().unwrap())
        .await
        .unwrap()
        .expect("logged");
    assert_eq!(after.parent(), Some(nodes[1].id()));
    server.stop().await;
}

/// Replica A is killed while its agent run is in its second model call (the calculator ran):
/// replica B takes the run over and completes it; the calculator's call has exactly one
/// answer in the tree, and the final answer holds its result.
async fn a_dead_replicas_agent_run_is_continued(a: TestServer, b: TestServer, store: &dyn Store) {
    let body = json!({"model": AGENT, "input": tool_round(150).to_string(), "background": true});
    let queued: Value = post(&a, &body).await.json().await.unwrap();
    let id = queued["id"].as_str().unwrap().to_owned();
    // Wait for the answer after the tool round to be streaming.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let object: Value = get(&a, &format!("/v1/responses/{id}"))
            .await
            .json()
            .await
            .unwrap();
        if object["output"]
            .as_array()
            .is_some_and(|output| !output.is_empty())
        {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "never answered");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    a.server.service().run_records().unwrap().halt();
    let done = poll_until_ended(&b, &id).await;
    assert_eq!(done["status"], "completed", "{done}");
    let events = numbered_replay(&b, &id).await;
    assert_eq!(events.last().unwrap().0["response"], done);
    let output = done["output"].as_array().unwrap();
    let last = output.last().unwrap();
    assert_eq!(last["status"], "completed", "{done}");
    assert!(
        output[..output.len() - 1]
            .iter()
            .all(|item| item["status"] != "in_progress")
    );
    let report: Value =
        serde_json::from_str(last["content"][0]["text"].as_str().unwrap()).expect("a report");
    assert_eq!(report["tool_results"][0]["name"], "calculator", "{report}");

    let node = store.node_by_label(&id).await.unwrap().expect("labelled");
    let (path, answers) = answers_to(store, node.id(), "echo_call_1").await;
    assert_eq!(answers, 1, "{path:#?}");
    let calls = path.iter().flat_map(Message::tool_calls).count();
    assert_eq!(calls, 1, "the model called the calculator once: {path:#?}");
    let run = store.run(&id).await.unwrap().expect("kept");
    assert_eq!(run.last_node, Some(node.id()));
    a.stop().await;
    b.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_a_dead_replicas_agent_run_is_continued() {
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open_in_memory().await.unwrap());
    let replica = || {
        Server::with_store(
            agent_config(":memory:"),
            Arc::clone(&store),
            StoreKind::Memory,
        )
        .unwrap()
    };
    let (a, b) = (
        TestServer::serve(replica()).await,
        TestServer::serve(replica()).await,
    );
    a_dead_replicas_agent_run_is_continued(a, b, store.as_ref()).await;
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_dead_replicas_agent_run_is_continued() {
    let url = conversation_tree::testing::fresh_postgres_database().await;
    let a = TestServer::serve(Server::new(agent_config(&url)).await.unwrap()).await;
    let b = TestServer::serve(Server::new(agent_config(&url)).await.unwrap()).await;
    let store = Arc::clone(a.server.chat().store());
    a_dead_replicas_agent_run_is_continued(a, b, store.as_ref()).await;
}

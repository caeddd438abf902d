//! Conversations that survive real use, end to end over loopback HTTP: a response cancelled
//! through the cancel route while the model streams, reasons or waits on a tool; a client that
//! disconnects from a stream or gives up on a one-body answer; a provider that fails
//! mid-stream; a cancelled deterministic answer that must not be reused; options that change
//! between turns; and (feature `postgres`) two server replicas continuing one conversation
//! concurrently.
//!
//! Every test reads what the store holds afterwards (node statuses, the partial answers,
//! parents) and continues the conversation over HTTP, checking that the stored path loads
//! into a strictly valid chain. The model is the offline `echo` model; slowness comes from
//! its `delay_ms` knob or from a local socket that never answers.

use crate::support;

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use agent_loop::history::continuation;
use chain_ast::ChainAst;
use conversation_tree::{CallKind, ConversationId, Node, ResponseStatus, Role, Store};
use futures::{Stream, StreamExt as _};
use serde_json::{Value, json};
use server::ServerConfig;
use service::ServiceConfig;
use support::{Sse, TestServer, client, content, names, terminal};
use tempfile::TempDir;
use tools::{HttpGetPolicy, ToolsConfig};

/// The longest any single wait of these tests may take.
const WAIT: Duration = Duration::from_secs(15);

/// A server logging into a SQLite file in `dir`.
fn sqlite_config(dir: &TempDir) -> ServerConfig {
    ServerConfig {
        service: ServiceConfig {
            store: dir.path().join("logs.db").to_str().unwrap().to_owned(),
            ..ServiceConfig::default()
        },
        ..ServerConfig::default()
    }
}

/// A request to the echo model continuing `conversation`, whose prompt is `prompt` as JSON
/// (the echo model's knobs).
fn echo(prompt: &Value, conversation: &str) -> Value {
    json!({
        "model_config": {"model_id": "echo"},
        "input": {"text": prompt.to_string()},
        "session_id": conversation,
    })
}

fn conversation_id(id: &str) -> ConversationId {
    ConversationId::new(id).unwrap()
}

fn store_of(server: &TestServer) -> Arc<dyn Store> {
    Arc::clone(server.server.chat().store())
}

/// An open SSE answer, read one event at a time.
type Events = Pin<Box<dyn Stream<Item = Sse> + Send>>;

fn open(response: reqwest::Response) -> Events {
    assert_eq!(response.status(), 200, "a streaming answer");
    Box::pin(
        eventsource_stream::EventStream::new(response.bytes_stream()).map(|event| {
            let event = event.expect("a well-formed SSE event");
            Sse {
                name: event.event,
                data: serde_json::from_str(&event.data).expect("JSON data"),
            }
        }),
    )
}

/// The next event, within [`WAIT`].
async fn next(events: &mut Events) -> Sse {
    tokio::time::timeout(WAIT, events.next())
        .await
        .expect("timed out waiting for an event")
        .expect("the stream ended early")
}

/// Every event left, within [`WAIT`].
async fn rest(events: &mut Events) -> Vec<Sse> {
    tokio::time::timeout(WAIT, events.collect::<Vec<_>>())
        .await
        .expect("timed out waiting for the end of the stream")
}

/// Posts `body` and reads its whole stream.
async fn exchange(server: &TestServer, body: &Value) -> Vec<Sse> {
    let response = tokio::time::timeout(WAIT, server.post(body))
        .await
        .expect("timed out waiting for the answer");
    rest(&mut open(response)).await
}

/// Cancels response `id` through the cancel route.
async fn cancel(server: &TestServer, id: &str) {
    let answer = client()
        .post(server.url(&format!("/v1/response/{id}/cancel")))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    assert_eq!(
        answer.json::<Value>().await.unwrap(),
        json!({"success": true, "message": "Request cancelled"})
    );
}

/// The nodes of `conversation`, parents first.
async fn nodes(store: &Arc<dyn Store>, conversation: &str) -> Vec<Node> {
    store
        .conversation_nodes(&conversation_id(conversation))
        .await
        .unwrap()
}

/// Polls the store until `conversation` holds `count` nodes, for at most [`WAIT`].
async fn nodes_eventually(store: &Arc<dyn Store>, conversation: &str, count: usize) -> Vec<Node> {
    let deadline = Instant::now() + WAIT;
    loop {
        let found = nodes(store, conversation).await;
        if found.len() >= count {
            return found;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {count} nodes; the store holds {}",
            found.len()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The path from the root to `node` as the next run would load it, checked to be a strictly
/// valid chain.
async fn continued(store: &Arc<dyn Store>, node: &Node) -> Vec<conversation_tree::Message> {
    let resumed = continuation(store.as_ref(), node.id()).await.unwrap();
    if let Err(err) = ChainAst::new(&resumed.messages, false) {
        panic!(
            "the path to node {} does not load into a valid chain: {err}\n{:#?}",
            node.id(),
            resumed.messages
        );
    }
    resumed.messages
}

/// Continues `conversation` with a plain answer and checks the result: `response.done`, one
/// new node whose parent is `parent`, and a stored path that loads into a valid chain
/// ending with the new question and answer.
async fn continue_after(server: &TestServer, conversation: &str, parent: &Node) -> Node {
    let store = store_of(server);
    let before = nodes(&store, conversation).await.len();
    let events = exchange(
        server,
        &echo(
            &json!({"raw": "Picking up where we left off."}),
            conversation,
        ),
    )
    .await;
    let done = terminal(&events, "response.done");
    assert_eq!(done["conversation_id"], conversation);
    assert_eq!(content(&events), "Picking up where we left off.");

    let after = nodes(&store, conversation).await;
    assert!(
        after.len() == before + 1,
        "{} new nodes, expected one:\n{}",
        after.len() - before,
        describe(&store, &after).await
    );
    let node = after.last().unwrap().clone();
    assert_eq!(done["node_ids"], json!([node.id().get()]));
    assert_eq!(node.status(), ResponseStatus::Completed);
    assert_eq!(
        node.parent(),
        Some(parent.id()),
        "the new turn hangs under {parent:?}"
    );
    let latest = store
        .latest_node(&conversation_id(conversation))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(latest.id(), node.id());
    let messages = continued(&store, &latest).await;
    let texts: Vec<String> = messages.iter().map(|m| m.text()).collect();
    assert_eq!(
        texts[texts.len() - 2..],
        [
            json!({"raw": "Picking up where we left off."}).to_string(),
            "Picking up where we left off.".to_owned()
        ]
    );
    node
}

#[tokio::test]
async fn cancelling_mid_answer_keeps_the_partial_text_and_the_conversation_continues() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start(sqlite_config(&dir)).await;
    let store = store_of(&server);
    let conversation = "conv-cancel-mid-answer";
    let full = "one two three four five six";
    let prompt = json!({"raw": full, "delay_ms": 200});

    let mut events = open(server.post(&echo(&prompt, conversation)).await);
    let start = next(&mut events).await;
    assert_eq!(start.name, "response.start");
    let id = start.data["id"].as_str().unwrap().to_owned();
    let first = next(&mut events).await;
    assert_eq!(first.name, "content.delta");
    assert_eq!(first.data["text"], "one ");

    let cancelled_at = Instant::now();
    cancel(&server, &id).await;
    let tail = rest(&mut events).await;
    assert!(
        cancelled_at.elapsed() < Duration::from_secs(2),
        "the stream ended {:?} after the cancel",
        cancelled_at.elapsed()
    );
    let end = terminal(&tail, "response.cancelled");
    assert_eq!(end["id"], id);
    let received = format!("one {}", content(&tail));
    assert_eq!(end["partial_content"], received);
    assert!(
        received.len() < full.len() && full.starts_with(&received),
        "cancelled mid-answer: {received:?}"
    );

    // The store holds the partial answer the client saw, marked cancelled.
    let stored = nodes(&store, conversation).await;
    assert_eq!(stored.len(), 1, "{stored:?}");
    let cancelled = stored[0].clone();
    assert_eq!(cancelled.status(), ResponseStatus::Cancelled);
    assert_eq!(cancelled.parent(), None);
    let turn = store.turn(cancelled.id()).await.unwrap();
    assert_eq!(turn.response.text(), received);
    assert_eq!(turn.input.len(), 1);
    assert_eq!(turn.input[0].text(), prompt.to_string());

    // The next request continues after the partial answer.
    let node = continue_after(&server, conversation, &cancelled).await;
    let messages = continued(&store, &node).await;
    let texts: Vec<String> = messages.iter().map(|m| m.text()).collect();
    assert_eq!(texts[..2], [prompt.to_string(), received]);
    server.stop().await;
}

#[tokio::test]
async fn a_cancelled_deterministic_answer_is_never_replayed_as_a_cache_hit() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start(sqlite_config(&dir)).await;
    let store = store_of(&server);
    let conversation = "conv-cancelled-cache";
    let full = "red orange yellow green blue violet";
    // Temperature 0: a completed answer at the same place may be reused instead of a call.
    let mut body = echo(&json!({"raw": full, "delay_ms": 100}), conversation);
    body["temperature"] = json!(0);
    body["include_history"] = json!(false);

    let mut events = open(server.post(&body).await);
    let start = next(&mut events).await;
    let id = start.data["id"].as_str().unwrap().to_owned();
    assert_eq!(next(&mut events).await.name, "content.delta");
    cancel(&server, &id).await;
    let partial = terminal(&rest(&mut events).await, "response.cancelled")["partial_content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(partial.len() < full.len(), "{partial:?}");

    // The same request at the same place: the cancelled answer is not an answer to reuse.
    let again = exchange(&server, &body).await;
    let done = terminal(&again, "response.done");
    assert_eq!(content(&again), full);
    let stored = nodes(&store, conversation).await;
    assert_eq!(stored.len(), 2, "{stored:?}");
    assert_eq!(done["node_ids"], json!([stored[1].id().get()]));
    assert_eq!(stored[0].status(), ResponseStatus::Cancelled);
    assert_eq!(stored[1].status(), ResponseStatus::Completed);
    assert_eq!(
        stored[1].parent(),
        None,
        "a sibling root of the cancelled answer"
    );
    assert_eq!(stored[0].prompt_hash(), stored[1].prompt_hash());

    // The completed one is: a third request is answered from the store.
    let third = exchange(&server, &body).await;
    assert_eq!(content(&third), full);
    assert_eq!(
        terminal(&third, "response.done")["node_ids"],
        json!([stored[1].id().get()])
    );
    assert_eq!(nodes(&store, conversation).await.len(), 2);
    let calls = store.calls(&conversation_id(conversation)).await.unwrap();
    let kinds: Vec<_> = calls.iter().map(|call| (call.node, call.kind)).collect();
    assert_eq!(
        kinds,
        [
            (stored[0].id(), CallKind::Generated),
            (stored[1].id(), CallKind::Generated),
            (stored[1].id(), CallKind::CacheHit),
        ]
    );
    server.stop().await;
}

#[tokio::test]
async fn cancelling_while_the_model_reasons_keeps_the_reasoning_and_the_question_is_asked_again() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start(sqlite_config(&dir)).await;
    let store = store_of(&server);
    let conversation = "conv-cancel-reasoning";
    let prompt = json!({
        "raw": "the answer",
        "reasoning": "first I think then I think some more and then I answer",
        "delay_ms": 200,
    });

    let mut events = open(server.post(&echo(&prompt, conversation)).await);
    let id = next(&mut events).await.data["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let first = next(&mut events).await;
    assert_eq!(first.name, "reasoning.delta");
    cancel(&server, &id).await;
    let tail = rest(&mut events).await;
    let end = terminal(&tail, "response.cancelled");
    assert_eq!(end["partial_content"], "");
    assert!(!names(&tail).contains(&"content.delta"));
    let thought: String = std::iter::once(&first)
        .chain(&tail)
        .filter(|event| event.name == "reasoning.delta")
        .map(|event| event.data["text"].as_str().unwrap())
        .collect();

    // The node keeps the reasoning that arrived, and no text.
    let stored = nodes(&store, conversation).await;
    assert_eq!(stored.len(), 1, "{stored:?}");
    let cancelled = stored[0].clone();
    assert_eq!(cancelled.status(), ResponseStatus::Cancelled);
    let answer = store.turn(cancelled.id()).await.unwrap().response;
    assert_eq!(answer.text(), "");
    let reasoning: Vec<_> = answer
        .parts
        .iter()
        .filter_map(|part| match part {
            conversation_tree::ContentPart::Reasoning(reasoning) => Some(reasoning.text.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(reasoning, [thought]);

    // Reasoning alone answers nothing: the next run leaves the question and the reasoning
    // out, so its turn is a new root.
    let resumed = continuation(store.as_ref(), cancelled.id()).await.unwrap();
    assert!(resumed.messages.is_empty(), "{:?}", resumed.messages);
    assert_eq!(resumed.unanswered, 1);
    let events = exchange(&server, &echo(&json!({"raw": "again"}), conversation)).await;
    terminal(&events, "response.done");
    let stored = nodes(&store, conversation).await;
    assert_eq!(stored.len(), 2);
    assert_eq!(stored[1].parent(), None);
    assert_eq!(stored[1].status(), ResponseStatus::Completed);
    continued(&store, &stored[1]).await;
    server.stop().await;
}

/// Sibling answers with equal hashes cannot be told apart by a walk from the roots (which
/// takes the oldest): a continuation of the newer one must still hang below it, not below the
/// older one with the rest of its path copied as supplied nodes. The loaded history carries
/// the node it ends at (`Continuation::anchor`) for that.
#[tokio::test]
async fn a_continuation_hangs_under_the_node_it_continues_from_despite_identical_siblings() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start(sqlite_config(&dir)).await;
    let store = store_of(&server);
    let conversation = "conv-identical-siblings";
    // The same question asked twice from the start, sampled: two root answers, equal hashes.
    let mut ask = echo(&json!({"raw": "the same answer"}), conversation);
    ask["include_history"] = json!(false);
    terminal(&exchange(&server, &ask).await, "response.done");
    terminal(&exchange(&server, &ask).await, "response.done");
    let roots = nodes(&store, conversation).await;
    assert_eq!(roots.len(), 2);
    assert_eq!(roots[0].parent(), None);
    assert_eq!(roots[1].parent(), None);
    assert_eq!(roots[0].prompt_hash(), roots[1].prompt_hash());
    assert_eq!(roots[0].response_hash(), roots[1].response_hash());

    // A turn below the newer sibling only, as a run that continued from it concurrently
    // leaves it.
    let below = store
        .log_response(conversation_tree::NewResponse::new(
            conversation_id(conversation),
            Some(roots[1].id()),
            vec![conversation_tree::Message::human("and then?")],
            conversation_tree::Message::ai("then this"),
            &conversation_tree::CallOptions::new("echo"),
        ))
        .await
        .unwrap();
    let latest = store
        .latest_node(&conversation_id(conversation))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(latest.id(), below.id());

    // Continuing the conversation continues from `below`: one new node, right under it.
    continue_after(&server, conversation, &below).await;
    server.stop().await;
}

/// A loopback HTTP "server" that accepts connections and never answers.
struct Silent {
    port: u16,
    accepted: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Silent {
    async fn start() -> Silent {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let accepted = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&accepted);
        let task = tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((socket, _)) = listener.accept().await {
                counter.fetch_add(1, Ordering::SeqCst);
                held.push(socket);
            }
        });
        Silent {
            port,
            accepted,
            task,
        }
    }
}

impl Drop for Silent {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[tokio::test]
async fn cancelling_while_a_tool_runs_keeps_the_tool_messages_and_the_conversation_continues() {
    let silent = Silent::start().await;
    let dir = tempfile::tempdir().unwrap();
    let config = ServerConfig {
        service: ServiceConfig {
            tools: ToolsConfig {
                http_get: Some(HttpGetPolicy {
                    timeout_secs: 60,
                    ..HttpGetPolicy::allow(["127.0.0.1"])
                }),
                ..ToolsConfig::default()
            },
            ..sqlite_config(&dir).service
        },
        ..sqlite_config(&dir)
    };
    let server = TestServer::start(config).await;
    let store = store_of(&server);
    let conversation = "conv-cancel-mid-tool";
    let url = format!("http://127.0.0.1:{}/never", silent.port);
    let prompt = json!({"tool_calls": [{"name": "http_get", "arguments": {"url": url}}]});
    let mut body = echo(&prompt, conversation);
    body["tools"] = json!({"builtin": {"http_get": {"enabled": true}}});

    let mut events = open(server.post(&body).await);
    let start = next(&mut events).await;
    assert_eq!(start.name, "response.start");
    let id = start.data["id"].as_str().unwrap().to_owned();
    let tool = next(&mut events).await;
    assert_eq!(tool.name, "tool.start");
    assert_eq!(tool.data["name"], "http_get");
    let call_id = tool.data["id"].as_str().unwrap().to_owned();
    // The tool is really waiting on the silent server.
    let deadline = Instant::now() + WAIT;
    while silent.accepted.load(Ordering::SeqCst) == 0 {
        assert!(Instant::now() < deadline, "http_get never connected");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    let cancelled_at = Instant::now();
    cancel(&server, &id).await;
    let tail = rest(&mut events).await;
    assert!(
        cancelled_at.elapsed() < Duration::from_secs(2),
        "the stream ended {:?} after the cancel",
        cancelled_at.elapsed()
    );
    let end = terminal(&tail, "response.cancelled");
    assert_eq!(end["id"], id);
    assert!(
        !names(&tail).contains(&"content.delta"),
        "{:?}",
        names(&tail)
    );

    // The call node, then a cancelled node holding the tool's answer to the call.
    let stored = nodes(&store, conversation).await;
    assert_eq!(stored.len(), 2, "{stored:?}");
    let (call, stopped) = (stored[0].clone(), stored[1].clone());
    assert_eq!(call.status(), ResponseStatus::Completed);
    let call_turn = store.turn(call.id()).await.unwrap();
    let calls: Vec<_> = call_turn.response.tool_calls().collect();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].id, call_id);
    assert_eq!(calls[0].name, "http_get");

    assert_eq!(stopped.status(), ResponseStatus::Cancelled);
    assert_eq!(stopped.parent(), Some(call.id()));
    let stopped_turn = store.turn(stopped.id()).await.unwrap();
    assert_eq!(stopped_turn.input.len(), 1, "{:?}", stopped_turn.input);
    assert_eq!(stopped_turn.input[0].role, Role::Tool);
    let responses: Vec<_> = stopped_turn.input[0].tool_responses().collect();
    assert_eq!(responses.len(), 1);
    assert_eq!(responses[0].tool_call_id, call_id);
    assert!(
        responses[0].content.contains("cancelled"),
        "{:?}",
        responses[0].content
    );
    assert_eq!(stopped_turn.response.role, Role::Ai);
    assert!(
        stopped_turn.response.text().is_empty() && stopped_turn.response.tool_calls().count() == 0,
        "{:?}",
        stopped_turn.response
    );
    // The stored path, as the next run loads it, answers the call with the tool's message.
    let resumed = continued(&store, &stopped).await;
    assert_eq!(resumed.len(), 3, "{resumed:?}");
    assert_eq!(resumed[2].role, Role::Tool);

    // The next turn's input starts with the tool's answer, so it hangs under the call node
    // (next to the empty cancelled answer).
    let node = continue_after(&server, conversation, &call).await;
    let turn = store.turn(node.id()).await.unwrap();
    assert_eq!(turn.input.len(), 2, "{:?}", turn.input);
    assert_eq!(turn.input[0].role, Role::Tool);
    assert_eq!(turn.input[1].role, Role::Human);
    server.stop().await;
}

/// What `POST /v1/response/{id}/cancel` answered: its status and body.
async fn cancel_reply(server: &TestServer, id: &str) -> (u16, Value) {
    let answer = client()
        .post(server.url(&format!("/v1/response/{id}/cancel")))
        .send()
        .await
        .unwrap();
    (answer.status().as_u16(), answer.json().await.unwrap())
}

/// Checks that a cancel's reply, the stream's last event and the stored node tell one story:
/// `success` for a cancelled run, a 409 `already_ended` for one that completed first.
async fn assert_cancel_agrees(
    store: &Arc<dyn Store>,
    conversation: &str,
    (status, reply): &(u16, Value),
    events: &[Sse],
) -> ResponseStatus {
    let last = events.last().expect("a last event");
    let stored = nodes(store, conversation).await;
    let node = stored.last().expect("the answer is stored");
    let told = match (status, last.name.as_str()) {
        (200, "response.cancelled") => {
            assert_eq!(reply["success"], true);
            ResponseStatus::Cancelled
        }
        (409, "response.done") => {
            assert_eq!(reply["code"], "already_ended", "{reply}");
            ResponseStatus::Completed
        }
        _ => panic!(
            "the cancel answered {status} {reply} but the stream ended with {}",
            last.name
        ),
    };
    assert_eq!(node.status(), told, "the store disagrees with the cancel");
    told
}

#[tokio::test]
async fn a_cancel_that_reaches_a_whole_answer_being_logged_says_it_completed() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start(sqlite_config(&dir)).await;
    let store = store_of(&server);
    let conversation = "conv-cancel-too-late";
    let prompt = json!({"raw": "one two three", "delay_ms": 20});

    let mut events = open(server.post(&echo(&prompt, conversation)).await);
    let id = next(&mut events).await.data["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut seen = vec![next(&mut events).await];
    assert_eq!(seen[0].name, "content.delta");
    // From here the store cannot commit: the answer becomes whole (20 ms per event) and its
    // log waits. The cancel comes well after that, while the answer is being logged.
    let lock = support::WriteLock::take(&dir.path().join("logs.db"));
    tokio::time::sleep(Duration::from_millis(300)).await;
    let cancelling = tokio::spawn({
        let url = server.url(&format!("/v1/response/{id}/cancel"));
        async move {
            let answer = client().post(url).send().await.unwrap();
            (
                answer.status().as_u16(),
                answer.json::<Value>().await.unwrap(),
            )
        }
    });
    // Long enough for a cancel that does not wait for the run's end to have answered.
    tokio::time::sleep(Duration::from_millis(300)).await;
    drop(lock);
    let reply = tokio::time::timeout(WAIT, cancelling)
        .await
        .unwrap()
        .unwrap();
    seen.extend(rest(&mut events).await);

    let told = assert_cancel_agrees(&store, conversation, &reply, &seen).await;
    assert_eq!(told, ResponseStatus::Completed, "{reply:?}");
    assert_eq!(content(&seen), "one two three");
    server.stop().await;
}

#[tokio::test]
async fn cancels_racing_the_end_of_an_answer_are_answered_as_the_store_has_it() {
    const RACES: usize = 40;
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start(sqlite_config(&dir)).await;
    let store = store_of(&server);
    let prompt = json!({"raw": "one two three four", "delay_ms": 2});
    let mut outcomes = std::collections::BTreeMap::new();
    for race in 0..RACES {
        let conversation = format!("conv-cancel-race-{race}");
        let mut events = open(server.post(&echo(&prompt, &conversation)).await);
        let start = next(&mut events).await;
        let id = start.data["id"].as_str().unwrap().to_owned();
        // Cancel after 0 to 5 of the answer's (at most 5) other events: early, mid-answer,
        // at its last word, after its end.
        let mut seen = vec![start];
        for _ in 0..race % 6 {
            match tokio::time::timeout(WAIT, events.next()).await.unwrap() {
                Some(event) => seen.push(event),
                None => break,
            }
        }
        let reply = cancel_reply(&server, &id).await;
        seen.extend(rest(&mut events).await);
        if reply.0 == 404 {
            // The run had ended and left before the cancel: nothing to agree on but the end.
            terminal(&seen, "response.done");
            continue;
        }
        let told = assert_cancel_agrees(&store, &conversation, &reply, &seen).await;
        *outcomes.entry(told.to_string()).or_insert(0) += 1;
    }
    eprintln!("{RACES} Chat Shell cancel races: {outcomes:?}");
    server.stop().await;
}

#[tokio::test]
async fn a_client_that_disconnects_leaves_a_cancelled_node_and_the_conversation_continues() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start(sqlite_config(&dir)).await;
    let store = store_of(&server);
    let conversation = "conv-disconnect";
    let full = (1..=20)
        .map(|i| format!("w{i}"))
        .collect::<Vec<_>>()
        .join(" ");
    let prompt = json!({"raw": full, "delay_ms": 150});

    let mut events = open(server.post(&echo(&prompt, conversation)).await);
    assert_eq!(next(&mut events).await.name, "response.start");
    let first = next(&mut events).await;
    assert_eq!(first.name, "content.delta");
    let received = first.data["text"].as_str().unwrap().to_owned();
    assert_eq!(received, "w1 ");
    drop(events); // the client goes away mid-answer

    let stored = nodes_eventually(&store, conversation, 1).await;
    assert_eq!(stored.len(), 1, "{stored:?}");
    let cancelled = stored[0].clone();
    assert_eq!(cancelled.status(), ResponseStatus::Cancelled);
    let text = store.turn(cancelled.id()).await.unwrap().response.text();
    // What the client saw, and maybe a word or two more that were sent before the server
    // noticed the closed connection; never the whole answer.
    assert!(text.starts_with(&received), "{text:?}");
    assert!(
        full.starts_with(&text) && text.len() < full.len(),
        "{text:?}"
    );

    continue_after(&server, conversation, &cancelled).await;
    server.stop().await;
}

#[tokio::test]
async fn a_client_that_gives_up_on_a_one_body_answer_leaves_a_cancelled_node() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start(sqlite_config(&dir)).await;
    let store = store_of(&server);
    let conversation = "conv-one-body-disconnect";
    let full = (1..=20)
        .map(|i| format!("w{i}"))
        .collect::<Vec<_>>()
        .join(" ");
    let mut body = echo(&json!({"raw": full, "delay_ms": 150}), conversation);
    body["features"] = json!({"streaming": false});

    // The client stops waiting (and closes its connection) long before the answer is done.
    let sent = Instant::now();
    let gave_up = client()
        .post(server.url("/v1/response"))
        .timeout(Duration::from_millis(400))
        .json(&body)
        .send()
        .await;
    assert!(gave_up.is_err_and(|err| err.is_timeout()));

    let stored = nodes_eventually(&store, conversation, 1).await;
    let node = stored[0].clone();
    assert_eq!(
        node.status(),
        ResponseStatus::Cancelled,
        "after {:?}",
        sent.elapsed()
    );
    let text = store.turn(node.id()).await.unwrap().response.text();
    assert!(
        full.starts_with(&text) && text.len() < full.len(),
        "{text:?}"
    );
    continue_after(&server, conversation, &node).await;
    server.stop().await;
}

#[tokio::test]
async fn a_client_that_stops_reading_is_cut_after_the_idle_timeout_and_its_run_cancelled() {
    use tokio::io::AsyncWriteExt as _;

    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start(ServerConfig {
        idle_timeout_secs: 1,
        ..sqlite_config(&dir)
    })
    .await;
    let store = store_of(&server);
    let conversation = "conv-stalled-reader";
    // About 650 KB of events: far more than a client that reads nothing may leave queued,
    // yet few enough for the send buffer loopback grows on its own to swallow them whole.
    let full = (0..5000)
        .map(|i| format!("w{i:05}-abcdefghijklm"))
        .collect::<Vec<_>>()
        .join(" ");
    // A pause before each event, as a provider streams: the run waits on the client between
    // events, instead of making the whole answer in one go.
    let body = echo(&json!({"raw": full, "delay_ms": 1}), conversation).to_string();
    let mut stalled = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let sent = Instant::now();
    stalled
        .write_all(
            format!(
                "POST /v1/response HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
                 Content-Length: {}\r\n\r\n{body}",
                body.len()
            )
            .as_bytes(),
        )
        .await
        .unwrap();

    // It reads nothing and keeps the connection open: the answer must not be taken as
    // delivered, and the stall is noticed within the timeout, not once megabytes are queued.
    let stored = nodes_eventually(&store, conversation, 1).await;
    let node = stored[0].clone();
    assert_eq!(
        node.status(),
        ResponseStatus::Cancelled,
        "after {:?}",
        sent.elapsed()
    );
    assert!(
        sent.elapsed() < Duration::from_secs(8),
        "{:?}",
        sent.elapsed()
    );
    let text = store.turn(node.id()).await.unwrap().response.text();
    assert!(
        full.starts_with(text.trim_end()) && text.len() < full.len() / 2,
        "{} of {} bytes stored",
        text.len(),
        full.len()
    );
    drop(stalled);
    continue_after(&server, conversation, &node).await;
    server.stop().await;
}

#[tokio::test]
async fn a_provider_error_mid_stream_leaves_a_failed_node_and_the_conversation_continues() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start(sqlite_config(&dir)).await;
    let store = store_of(&server);
    let conversation = "conv-provider-error";
    let prompt = json!({
        "raw": "alpha beta gamma delta",
        "delay_ms": 20,
        "error": "the upstream fell over",
    });

    let events = exchange(&server, &echo(&prompt, conversation)).await;
    let error = terminal(&events, "response.error");
    assert_eq!(error["code"], "provider_error");
    assert_eq!(error["details"]["type"], "provider.stream");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("the upstream fell over"),
        "{error}"
    );
    let received = content(&events);
    assert_eq!(received, "alpha beta gamma delta");

    let stored = nodes(&store, conversation).await;
    assert_eq!(stored.len(), 1, "{stored:?}");
    let failed = stored[0].clone();
    assert_eq!(failed.status(), ResponseStatus::Failed);
    let turn = store.turn(failed.id()).await.unwrap();
    assert_eq!(turn.response.text(), received);
    assert_eq!(turn.input[0].text(), prompt.to_string());

    continue_after(&server, conversation, &failed).await;
    server.stop().await;
}

#[tokio::test]
async fn options_that_change_between_turns_continue_one_path() {
    let dir = tempfile::tempdir().unwrap();
    let files = tempfile::tempdir().unwrap();
    let config = ServerConfig {
        service: ServiceConfig {
            tools: ToolsConfig {
                files_root: Some(files.path().to_path_buf()),
                ..ToolsConfig::default()
            },
            ..sqlite_config(&dir).service
        },
        ..sqlite_config(&dir)
    };
    let server = TestServer::start(config).await;
    let store = store_of(&server);
    let conversation = "conv-changing-options";

    // Turn 1: sampled, a small output limit, no tools.
    let mut first = echo(&json!({"raw": "first answer"}), conversation);
    first["temperature"] = json!(0.3);
    first["max_tokens"] = json!(100);
    let events = exchange(&server, &first).await;
    assert_eq!(terminal(&events, "response.done")["node_ids"], json!([1]));

    // Turn 2: another temperature and limit, the calculator offered and called.
    let mut second = echo(
        &json!({"tool_calls": [{"name": "calculator", "arguments": {"expression": "6 * 7"}}]}),
        conversation,
    );
    second["temperature"] = json!(1.1);
    second["max_tokens"] = json!(2000);
    second["tools"] = json!({"builtin": {"calculator": {"enabled": true}}});
    let events = exchange(&server, &second).await;
    let done = terminal(&events, "response.done");
    assert_eq!(done["rounds"], 2);
    assert_eq!(done["node_ids"], json!([2, 3]));

    // Turn 3: deterministic, a third limit, another tool set.
    let mut third = echo(&json!({"raw": "third answer"}), conversation);
    third["temperature"] = json!(0);
    third["max_tokens"] = json!(50);
    third["tools"] = json!({"builtin": {"calculator": {}, "list_files": {}}});
    let events = exchange(&server, &third).await;
    assert_eq!(terminal(&events, "response.done")["node_ids"], json!([4]));
    assert_eq!(content(&events), "third answer");

    let stored = nodes(&store, conversation).await;
    assert_eq!(stored.len(), 4, "{stored:?}");
    assert_eq!(stored[0].parent(), None, "one root");
    for pair in stored.windows(2) {
        assert_eq!(pair[1].parent(), Some(pair[0].id()), "{stored:#?}");
    }
    let roots = store.roots(&conversation_id(conversation)).await.unwrap();
    assert_eq!(roots.len(), 1);
    // The options really differed, turn by turn.
    let options: Vec<(Option<f64>, Option<u32>)> = stored
        .iter()
        .map(|node| (node.options().temperature, node.options().max_tokens))
        .collect();
    assert_eq!(
        options,
        [
            (Some(0.3), Some(100)),
            (Some(1.1), Some(2000)),
            (Some(1.1), Some(2000)),
            (Some(0.0), Some(50)),
        ]
    );
    assert!(
        stored
            .iter()
            .all(|n| n.status() == ResponseStatus::Completed)
    );
    let messages = continued(&store, &stored[3]).await;
    let roles: Vec<Role> = messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [
            Role::Human,
            Role::Ai,
            Role::Human,
            Role::Ai,
            Role::Tool,
            Role::Ai,
            Role::Human,
            Role::Ai
        ]
    );
    server.stop().await;
}

/// Two replicas (two routers, each with its own `PostgresStore` on one database) take 80
/// concurrent continuations of one conversation, alternately; each is a two-round tool run
/// (the echo model calls the calculator, then answers). Every run asks something of its own,
/// so no two answers are alike and the tree must hold exactly two nodes per run.
#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_replicas_continue_one_conversation_concurrently_on_postgres() {
    two_replicas(false).await;
}

/// The same with 80 identical questions, so that concurrent runs give sibling answers with
/// equal hashes: each run still continues below the very node it loaded (see
/// `a_continuation_hangs_under_the_node_it_continues_from_despite_identical_siblings`).
#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_replicas_continue_one_conversation_with_identical_questions_on_postgres() {
    two_replicas(true).await;
}

#[cfg(feature = "postgres")]
async fn two_replicas(identical: bool) {
    const RUNS: usize = 80;
    let url = conversation_tree::testing::fresh_postgres_database().await;
    let config = || ServerConfig {
        concurrency_per_caller: RUNS,
        service: ServiceConfig {
            store: url.clone(),
            ..ServiceConfig::default()
        },
        ..ServerConfig::default()
    };
    let replicas = [
        TestServer::start(config()).await,
        TestServer::start(config()).await,
    ];
    let store = store_of(&replicas[0]);
    let conversation = "conv-two-replicas";
    let body = |run: usize| {
        let mut prompt =
            json!({"tool_calls": [{"name": "calculator", "arguments": {"expression": "1+2"}}]});
        if !identical {
            // The echo model ignores other keys; the question, and so its answer, differ.
            prompt["run"] = json!(run);
        }
        let mut body = echo(&prompt, conversation);
        body["tools"] = json!({"builtin": {"calculator": {"enabled": true}}});
        body
    };

    // One run alone, to count the nodes a run makes.
    let events = exchange(&replicas[1], &body(RUNS)).await;
    let done = terminal(&events, "response.done");
    assert_eq!(done["rounds"], 2);
    let per_run = nodes(&store, conversation).await.len();
    assert_eq!(per_run, 2, "a call node and an answer node");

    let started = Instant::now();
    let runs = (0..RUNS).map(|i| {
        let replica = &replicas[i % 2];
        let body = body(i);
        async move {
            let response = replica.post(&body).await;
            assert_eq!(response.status(), 200, "run {i}");
            rest(&mut open(response)).await
        }
    });
    let results = tokio::time::timeout(Duration::from_secs(60), futures::future::join_all(runs))
        .await
        .expect("the concurrent runs finished within a minute");
    let elapsed = started.elapsed();
    let failed: Vec<(usize, Vec<&str>)> = results
        .iter()
        .enumerate()
        .filter(|(_, events)| {
            events
                .last()
                .is_none_or(|last| last.name != "response.done")
        })
        .map(|(i, events)| (i, names(events)))
        .collect();
    assert!(failed.is_empty(), "failed runs: {failed:?}");
    for events in &results {
        assert_eq!(terminal(events, "response.done")["rounds"], 2);
    }

    let stored = nodes(&store, conversation).await;
    let generated: Vec<&Node> = stored.iter().filter(|node| !node.is_supplied()).collect();
    let supplied: Vec<&Node> = stored.iter().filter(|node| node.is_supplied()).collect();
    let expected = per_run * (RUNS + 1);
    if generated.len() != expected || !supplied.is_empty() {
        panic!(
            "{} generated and {} supplied nodes after {RUNS} runs, expected {expected} \
             generated and none supplied:\n{}",
            generated.len(),
            supplied.len(),
            describe(&store, &stored).await
        );
    }
    // Both replicas see the same tree.
    assert_eq!(nodes(&store_of(&replicas[1]), conversation).await, stored);
    // No answer supplied twice at one place, and (the known bug) a supplied node is only ever
    // a copy of an answer a run generated elsewhere in the tree.
    let mut places = std::collections::HashSet::new();
    for node in &supplied {
        let key = (
            node.parent(),
            node.prompt_hash().to_owned(),
            node.response_hash().to_owned(),
        );
        assert!(places.insert(key), "duplicate supplied node {node:?}");
        assert!(
            generated
                .iter()
                .any(|other| other.prompt_hash() == node.prompt_hash()
                    && other.response_hash() == node.response_hash()),
            "a supplied node that no run generated: {node:?}\n{}",
            describe(&store, &stored).await
        );
    }
    let ids: std::collections::HashSet<_> = stored.iter().map(Node::id).collect();
    for node in &stored {
        assert_eq!(node.status(), ResponseStatus::Completed, "{node:?}");
        if let Some(parent) = node.parent() {
            assert!(ids.contains(&parent) && parent < node.id(), "{node:?}");
        }
        continued(&store, node).await;
    }
    let report = store.verify().await.unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    assert!(report.checked >= stored.len() as u64);

    // The runs did overlap: several continued from the same node, so the tree branched.
    let mut children = std::collections::HashMap::new();
    for node in &stored {
        *children.entry(node.parent()).or_insert(0_usize) += 1;
    }
    let branching = children.values().filter(|&&count| count > 1).count();
    assert!(branching > 0, "the {RUNS} runs never overlapped");
    // Runs that started while another was between its rounds continued after its tool calls,
    // answered with the fallback result.
    let mut after_open_calls = 0;
    for node in &stored {
        let turn = store.turn(node.id()).await.unwrap();
        let fallback = turn
            .input
            .iter()
            .flat_map(|message| message.tool_responses())
            .any(|response| response.content == chain_ast::FALLBACK_RESPONSE_CONTENT);
        after_open_calls += usize::from(fallback);
    }
    eprintln!(
        "{RUNS} concurrent runs on two replicas (identical questions: {identical}): {elapsed:?}, \
         {} nodes, {} supplied, {branching} nodes with several children, {after_open_calls} \
         runs continued after open tool calls",
        stored.len(),
        supplied.len()
    );
    for replica in replicas {
        replica.stop().await;
    }
}

/// One line per node: id, parent, how it was made, status, hashes and its messages in short.
async fn describe(store: &Arc<dyn Store>, nodes: &[Node]) -> String {
    let short = |message: &conversation_tree::Message| {
        let calls: Vec<String> = message
            .tool_calls()
            .map(|call| format!("call {}", call.id))
            .chain(
                message
                    .tool_responses()
                    .map(|r| format!("result {}: {:.20}", r.tool_call_id, r.content)),
            )
            .collect();
        format!(
            "{:?}[{:.30}|{}]",
            message.role,
            message.text(),
            calls.join(",")
        )
    };
    let mut lines = Vec::new();
    for node in nodes {
        let turn = store.turn(node.id()).await.unwrap();
        lines.push(format!(
            "#{} parent {:?} {} {} p={:.8} r={:.8} in: {} out: {}",
            node.id(),
            node.parent().map(|id| id.get()),
            node.model().unwrap_or("SUPPLIED"),
            node.status(),
            node.prompt_hash(),
            node.response_hash(),
            turn.input.iter().map(short).collect::<Vec<_>>().join(" "),
            short(&turn.response),
        ));
    }
    lines.join("\n")
}

//! Every way a run stops leaves a logged conversation that continues: cancelled and failed
//! answers are nodes with their status and partial content, tool results that finished are
//! kept, and history loading repairs whatever a killed run left open.
#![cfg(feature = "store")]

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use agent_loop::history::continuation;
use agent_loop::{Agent, AgentEvent, AgentInput, ConversationId, Store};
use chain_ast::{ChainAst, FALLBACK_RESPONSE_CONTENT};
use common::*;
use conversation_tree::{ContentPart, NewResponse, ResponseStatus};
use futures::StreamExt;
use messages::{Message, Role};
use providers::ProviderError;
use providers::testing::ScriptedResponse;
use tokio_util::sync::CancellationToken;
use toolchain::ToolSet;

/// Runs until `stop` says so, then cancels and drains the stream.
async fn cancel_when(
    agent: &Agent,
    input: AgentInput,
    stop: impl Fn(&AgentEvent) -> bool,
) -> Vec<AgentEvent> {
    let cancel = CancellationToken::new();
    let mut stream = agent.stream(input, cancel.clone());
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        let now = stop(&event);
        events.push(event);
        if now {
            cancel.cancel();
        }
    }
    events
}

/// Continues `conversation` from its latest node with `question`, as the server and CLI do,
/// and returns the answer's text.
async fn continue_with(
    agent: &Agent,
    store: &Arc<dyn Store>,
    conversation: &ConversationId,
    question: &str,
) -> String {
    let latest = store.latest_node(conversation).await.unwrap().unwrap();
    let history = continuation(store.as_ref(), latest.id()).await.unwrap();
    ChainAst::new(&history.messages, false).expect("the loaded history is a valid chain");
    let input = AgentInput::text(question)
        .with_history(history.messages)
        .in_conversation(conversation.clone());
    agent.run(input).await.expect("the continuation runs").text
}

/// Every stored path passes strict validation once loaded, and every hash recomputes.
async fn assert_every_path_continues(store: &Arc<dyn Store>, conversation: &ConversationId) {
    for node in store.conversation_nodes(conversation).await.unwrap() {
        let loaded = continuation(store.as_ref(), node.id()).await.unwrap();
        ChainAst::new(&loaded.messages, false).expect("every stored path loads as a valid chain");
    }
    assert!(store.verify().await.unwrap().is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_answer_is_logged_with_its_partial_text_and_reasoning() {
    let store = memory_store().await;
    let slow = ScriptedResponse::new()
        .reasoning("Counting slowly")
        .with_text("one two three four five six")
        .delay(Duration::from_millis(200));
    let model = scripted([slow, ScriptedResponse::text("Continued.")]);
    let agent = Agent::builder()
        .model(model.clone())
        .store(Arc::clone(&store))
        .build()
        .unwrap();
    let conversation = ConversationId::random();
    let input = AgentInput::text("Count").in_conversation(conversation.clone());
    let events = cancel_when(
        &agent,
        input,
        |event| matches!(event, AgentEvent::ContentDelta { text, .. } if text.contains("two")),
    )
    .await;
    let Some(AgentEvent::ResponseCancelled {
        partial_content, ..
    }) = events.last()
    else {
        panic!("expected response.cancelled, got {:?}", events.last());
    };
    assert_eq!(partial_content, "one two ");

    let node = store.latest_node(&conversation).await.unwrap().unwrap();
    assert_eq!(node.status(), ResponseStatus::Cancelled);
    let turn = store.turn(node.id()).await.unwrap();
    assert_eq!(turn.input, vec![Message::human("Count")]);
    assert_eq!(turn.response.text(), "one two ");
    let reasoning: Vec<&str> = turn
        .response
        .parts
        .iter()
        .filter_map(|part| match part {
            ContentPart::Reasoning(reasoning) => Some(reasoning.text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(reasoning, ["Counting slowly"]);

    assert_eq!(
        continue_with(&agent, &store, &conversation, "Go on").await,
        "Continued."
    );
    // The continuation read the partial answer and hangs below it.
    let request = model.requests().pop().unwrap();
    let texts: Vec<String> = request.messages.iter().map(Message::text).collect();
    assert_eq!(texts, ["Count", "one two ", "Go on"]);
    let latest = store.latest_node(&conversation).await.unwrap().unwrap();
    assert_eq!(latest.parent(), Some(node.id()));
    assert_eq!(latest.status(), ResponseStatus::Completed);
    assert_every_path_continues(&store, &conversation).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_during_a_tool_keeps_the_results_that_finished() {
    let store = memory_store().await;
    let tools = ToolSet::new()
        .with(GetCourseOutline)
        .and_then(|set| set.with(Slow(Duration::from_secs(30))))
        .unwrap();
    let model = scripted([
        ScriptedResponse::new()
            .tool_call("c1", "get_course_outline", r#"{"course":"X"}"#)
            .tool_call("c2", "slow", r#"{"query":"q"}"#),
        ScriptedResponse::text("Lesson 4 is about RAG."),
    ]);
    let agent = Agent::builder()
        .model(model.clone())
        .tools(tools)
        .store(Arc::clone(&store))
        .build()
        .unwrap();
    let conversation = ConversationId::random();
    let input = AgentInput::text("Outline of X?").in_conversation(conversation.clone());
    let events = cancel_when(
        &agent,
        input,
        |event| matches!(event, AgentEvent::ToolDone { name, .. } if name == "get_course_outline"),
    )
    .await;
    assert!(matches!(
        events.last(),
        Some(AgentEvent::ResponseCancelled { .. })
    ));

    // The call node, then an empty cancelled answer holding both tool messages.
    let nodes = store.conversation_nodes(&conversation).await.unwrap();
    assert_eq!(nodes.len(), 2);
    let tail = &nodes[1];
    assert_eq!(tail.status(), ResponseStatus::Cancelled);
    assert_eq!(tail.parent(), Some(nodes[0].id()));
    let turn = store.turn(tail.id()).await.unwrap();
    assert!(turn.response.parts.is_empty());
    let results: Vec<(String, String)> = turn
        .input
        .iter()
        .flat_map(Message::tool_responses)
        .map(|response| (response.tool_call_id.clone(), response.content.clone()))
        .collect();
    assert_eq!(results.len(), 2);
    assert_eq!(results[0].0, "c1");
    assert!(
        results[0].1.contains("lesson 4"),
        "the finished result is kept: {}",
        results[0].1
    );
    assert_eq!(results[1].0, "c2");

    assert_eq!(
        continue_with(&agent, &store, &conversation, "And then?").await,
        "Lesson 4 is about RAG."
    );
    let request = model.requests().pop().unwrap();
    let roles: Vec<Role> = request.messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [Role::Human, Role::Ai, Role::Tool, Role::Tool, Role::Human]
    );
    assert_every_path_continues(&store, &conversation).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_error_mid_stream_is_logged_as_failed() {
    let store = memory_store().await;
    let failing = ScriptedResponse::text("Half an ans").fail_mid_stream(ProviderError::Stream {
        provider: providers::Provider::OpenAi,
        error_type: Some("server_error".into()),
        message: "upstream went away".into(),
        retryable: true,
    });
    let model = scripted([failing, ScriptedResponse::text("Whole answer.")]);
    let agent = Agent::builder()
        .model(model)
        .store(Arc::clone(&store))
        .build()
        .unwrap();
    let conversation = ConversationId::random();
    let input = AgentInput::text("Answer me").in_conversation(conversation.clone());
    assert!(agent.run(input).await.is_err());

    let node = store.latest_node(&conversation).await.unwrap().unwrap();
    assert_eq!(node.status(), ResponseStatus::Failed);
    assert_eq!(
        store.turn(node.id()).await.unwrap().response.text(),
        "Half an ans"
    );
    assert_eq!(
        continue_with(&agent, &store, &conversation, "Try again").await,
        "Whole answer."
    );
    assert_every_path_continues(&store, &conversation).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_cancelled_before_any_answer_is_logged_but_not_carried_on() {
    let store = memory_store().await;
    // It thinks aloud first, then would answer after 30 s.
    let slow = ScriptedResponse::new()
        .reasoning("Hmm")
        .with_text("late")
        .delay(Duration::from_secs(30));
    let model = scripted([
        ScriptedResponse::text("First."),
        slow,
        ScriptedResponse::text("Third."),
    ]);
    let agent = Agent::builder()
        .model(model.clone())
        .store(Arc::clone(&store))
        .build()
        .unwrap();
    let conversation = ConversationId::random();
    agent
        .run(AgentInput::text("one").in_conversation(conversation.clone()))
        .await
        .unwrap();
    let first = store.latest_node(&conversation).await.unwrap().unwrap();
    let history = continuation(store.as_ref(), first.id())
        .await
        .unwrap()
        .messages;
    let input = AgentInput::text("two")
        .with_history(history)
        .in_conversation(conversation.clone());
    // Cancelled while it thinks: the model has said nothing yet.
    cancel_when(&agent, input, |event| {
        matches!(event, AgentEvent::ReasoningDelta { .. })
    })
    .await;
    let stopped = store.latest_node(&conversation).await.unwrap().unwrap();
    assert_eq!(stopped.status(), ResponseStatus::Cancelled);
    assert_eq!(stopped.parent(), Some(first.id()));
    assert_eq!(
        store.turn(stopped.id()).await.unwrap().input,
        vec![Message::human("two")]
    );

    assert_eq!(
        continue_with(&agent, &store, &conversation, "three").await,
        "Third."
    );
    // "two" was never answered: the model is not shown it, and "three" is its sibling.
    let request = model.requests().pop().unwrap();
    let texts: Vec<String> = request.messages.iter().map(Message::text).collect();
    assert_eq!(texts, ["one", "First.", "three"]);
    let latest = store.latest_node(&conversation).await.unwrap().unwrap();
    assert_eq!(latest.parent(), Some(first.id()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_stream_logs_what_was_said() {
    let store = memory_store().await;
    let slow = ScriptedResponse::text("alpha beta gamma delta").delay(Duration::from_millis(200));
    let agent = Agent::builder()
        .model(scripted([slow]))
        .store(Arc::clone(&store))
        .build()
        .unwrap();
    let conversation = ConversationId::random();
    let input = AgentInput::text("Greek").in_conversation(conversation.clone());
    let mut stream = agent.stream(input, CancellationToken::new());
    while let Some(event) = stream.next().await {
        if matches!(&event, AgentEvent::ContentDelta { text, .. } if text.contains("beta")) {
            break;
        }
    }
    // A client that goes away: the stream is dropped mid-answer.
    drop(stream);
    let mut logged = None;
    for _ in 0..100 {
        logged = store.latest_node(&conversation).await.unwrap();
        if logged.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let node = logged.expect("the dropped run logged its answer");
    assert_eq!(node.status(), ResponseStatus::Cancelled);
    assert_eq!(
        store.turn(node.id()).await.unwrap().response.text(),
        "alpha beta "
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_exit_keeps_its_tool_results() {
    let store = memory_store().await;
    let tools = ToolSet::new().with(Quiet).unwrap();
    let model = scripted([
        ScriptedResponse::new().tool_call("c1", "silent_exit", r#"{"query":"bye"}"#),
        ScriptedResponse::text("Back again."),
    ]);
    let agent = Agent::builder()
        .model(model.clone())
        .tools(tools)
        .store(Arc::clone(&store))
        .build()
        .unwrap();
    let conversation = ConversationId::random();
    let outcome = agent
        .run(AgentInput::text("Leave quietly").in_conversation(conversation.clone()))
        .await
        .unwrap();
    assert!(outcome.silent_exit.is_some());
    let tail = store.latest_node(&conversation).await.unwrap().unwrap();
    let turn = store.turn(tail.id()).await.unwrap();
    assert_eq!(turn.input.len(), 1);
    assert_eq!(turn.input[0].role, Role::Tool);
    assert_eq!(
        continue_with(&agent, &store, &conversation, "Hello?").await,
        "Back again."
    );
    let request = model.requests().pop().unwrap();
    let roles: Vec<Role> = request.messages.iter().map(|m| m.role).collect();
    assert_eq!(roles, [Role::Human, Role::Ai, Role::Tool, Role::Human]);
}

#[tokio::test]
async fn a_killed_run_s_open_calls_get_the_fallback_answer() {
    // What a `kill -9` between the model's tool calls and their results leaves behind.
    let store = memory_store().await;
    let conversation = ConversationId::random();
    let node = store
        .log_response(NewResponse::new(
            conversation.clone(),
            None,
            vec![Message::human("Outline of X?")],
            Message::ai_tool_calls(
                None,
                vec![messages::ToolCall::new(
                    "c1",
                    "get_course_outline",
                    r#"{"course":"X"}"#,
                )],
            ),
            &conversation_tree::CallOptions::new("scripted"),
        ))
        .await
        .unwrap();
    let loaded = continuation(store.as_ref(), node.id()).await.unwrap();
    assert_eq!(loaded.repaired.len(), 1);
    let answer = loaded
        .messages
        .last()
        .and_then(|m| m.tool_responses().next());
    assert_eq!(
        answer.map(|response| response.content.as_str()),
        Some(FALLBACK_RESPONSE_CONTENT)
    );
    let model = scripted([ScriptedResponse::text("Sorry, again?")]);
    let agent = Agent::builder()
        .model(model)
        .tools(course_tools())
        .store(Arc::clone(&store))
        .build()
        .unwrap();
    assert_eq!(
        continue_with(&agent, &store, &conversation, "Still there?").await,
        "Sorry, again?"
    );
    assert_every_path_continues(&store, &conversation).await;
}

//! Logging every response into a conversation-tree store, continuing from it, and reusing a
//! stored answer for a deterministic request.
#![cfg(feature = "store")]

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use agent_loop::{
    Agent, AgentError, AgentEvent, AgentInput, CallTiming, ChatOptions, ConversationContext,
    ConversationId, Lookup, NodeId, Reuse, Store, StoreLog, Usage,
};
use common::*;
use conversation_tree::ResponseStatus;
use messages::Message;
use providers::testing::{ScriptedModel, ScriptedResponse};

/// A model that looks up the course outline, answers, then answers the next question.
fn outline_then_two_answers() -> std::sync::Arc<ScriptedModel> {
    scripted([
        ScriptedResponse::new().tool_call("c1", "get_course_outline", r#"{"course":"X"}"#),
        ScriptedResponse::text("Lesson 4 is about RAG."),
        ScriptedResponse::text("Lesson 1 is the intro."),
    ])
}

#[tokio::test]
async fn every_response_is_logged_and_the_conversation_continues_from_the_store() {
    let store = memory_store().await;
    let model = outline_then_two_answers();
    let agent = Agent::builder()
        .model(model.clone())
        .tools(course_tools())
        .system("You help with courses.")
        .store(Arc::clone(&store))
        .build()
        .unwrap();
    let conversation = ConversationId::new("ticket-42").unwrap();
    let input = AgentInput::text("What is lesson 4 of X about?")
        .in_conversation(conversation.clone())
        .with_response_id("resp-store");
    let events: Vec<AgentEvent> =
        futures::StreamExt::collect(agent.stream(input, Default::default())).await;
    let outcome = match events.last() {
        Some(AgentEvent::ResponseDone {
            outcome,
            conversation_id,
            node_ids,
            ..
        }) => {
            assert_eq!(conversation_id.as_deref(), Some("ticket-42"));
            assert_eq!(node_ids.len(), 2);
            Arc::clone(outcome)
        }
        other => panic!("{other:?}"),
    };
    assert_eq!(outcome.conversation_id.as_ref(), Some(&conversation));
    assert_eq!(outcome.node_ids.len(), 2);
    assert_eq!(outcome.records[1].node_id, Some(outcome.node_ids[1]));
    // The store holds the whole conversation, reasoning and tool ids included.
    let latest = store.latest_node(&conversation).await.unwrap().unwrap();
    assert_eq!(latest.id(), outcome.node_ids[1]);
    assert_eq!(latest.parent(), Some(outcome.node_ids[0]));
    let stored = store.messages_for_path(latest.id()).await.unwrap();
    assert_eq!(stored, outcome.messages);

    // Continue from the store with a new question.
    let input = AgentInput::text("And lesson 1?")
        .with_history(stored)
        .in_conversation(conversation.clone());
    let next = agent.run(input).await.unwrap();
    assert_eq!(next.text, "Lesson 1 is the intro.");
    let node = store.node(next.node_ids[0]).await.unwrap().unwrap();
    assert_eq!(node.parent(), Some(outcome.node_ids[1]));
    assert_eq!(store.verify().await.unwrap().problems.len(), 0);
}

#[tokio::test]
async fn a_system_prompt_added_after_a_tool_round_logs_each_answer_once() {
    let store = memory_store().await;
    let model = outline_then_two_answers();
    // No system prompt of its own: the modifier's addition is the run's first system message,
    // as when a server without a system prompt loads a skill.
    let agent = Agent::builder()
        .model(model.clone())
        .tools(course_tools())
        .prompt_modifier(|context: &ConversationContext| {
            (context.tool_rounds() > 0).then(|| "Cite the outline.".to_owned())
        })
        .store(Arc::clone(&store))
        .build()
        .unwrap();
    let conversation = ConversationId::random();
    let input =
        AgentInput::text("What is lesson 4 of X about?").in_conversation(conversation.clone());
    let outcome = agent.run(input).await.unwrap();

    // One node per model call, the second right below the first: no supplied copy of the
    // call between the call and its result.
    let nodes = store.conversation_nodes(&conversation).await.unwrap();
    assert_eq!(
        nodes.iter().map(|node| node.id()).collect::<Vec<_>>(),
        outcome.node_ids
    );
    assert!(nodes.iter().all(|node| !node.is_supplied()));
    assert_eq!(nodes[1].parent(), Some(nodes[0].id()));
    let calls_of = |messages: &[Message]| {
        messages
            .iter()
            .flat_map(Message::tool_calls)
            .filter(|call| call.id == "c1")
            .count()
    };
    let stored = store.messages_for_path(nodes[1].id()).await.unwrap();
    assert_eq!(calls_of(&stored), 1, "{stored:?}");

    // A continuation sends the call once.
    let input = AgentInput::text("And lesson 1?")
        .with_history(stored)
        .in_conversation(conversation.clone());
    agent.run(input).await.unwrap();
    let last = model.requests().last().cloned().unwrap();
    assert_eq!(calls_of(&last.messages), 1, "{:?}", last.messages);
}

/// An agent asking `model` at temperature 0 and logging into `store`: a question asked again
/// in the same conversation is answered from the store.
fn deterministic_agent(model: &Arc<ScriptedModel>, store: &Arc<dyn Store>) -> Agent {
    Agent::builder()
        .model(model.clone())
        .temperature(0.0)
        .store(Arc::clone(store))
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_deterministic_request_is_answered_from_the_store() {
    let store = memory_store().await;
    let model = scripted([ScriptedResponse::text("Paris.")]);
    let agent = deterministic_agent(&model, &store);
    let conversation = ConversationId::random();
    let ask = || AgentInput::text("Capital of France?").in_conversation(conversation.clone());
    let first = agent.run(ask()).await.unwrap();
    assert!(!first.records[0].cached);
    // The script is empty now: a second model call would fail.
    let events = events(&agent, ask()).await;
    assert_well_formed(&events);
    let second = match events.last() {
        Some(AgentEvent::ResponseDone { outcome, .. }) => Arc::clone(outcome),
        other => panic!("{other:?}"),
    };
    assert_eq!(second.text, "Paris.");
    assert!(second.records[0].cached);
    assert_eq!(second.node_ids, first.node_ids);
    // The generated answer's time to first token is stored with it; a stored answer has none
    // of its own (no model was asked).
    let ttft = first.records[0]
        .timing
        .ttft
        .expect("the model's answer was timed");
    let node = store.node(first.node_ids[0]).await.unwrap().unwrap();
    assert_eq!(
        node.ttft(),
        Some(Duration::from_millis(
            u64::try_from(ttft.as_millis()).unwrap()
        ))
    );
    assert_eq!(second.records[0].timing.ttft, None);
    assert_eq!(second.ttft(), None);
    assert!(
        events
            .iter()
            .any(|e| matches!(e, AgentEvent::ContentDelta { text, .. } if text == "Paris."))
    );
    assert_eq!(model.requests().len(), 1);
}

#[tokio::test]
async fn a_conversation_needs_a_store() {
    let agent = Agent::builder().model(scripted([])).build().unwrap();
    let input =
        AgentInput::from(vec![Message::human("Hi")]).in_conversation(ConversationId::random());
    assert!(matches!(
        agent.run(input).await,
        Err(AgentError::NoStore { .. })
    ));
}

/// A log into `conversation` of `store` whose answers take `label`.
fn labelled_log(
    store: &Arc<dyn Store>,
    conversation: &ConversationId,
    reuse: Reuse,
    label: &str,
) -> StoreLog {
    StoreLog::new(Arc::clone(store), conversation.clone(), reuse, None).label(label)
}

/// `log`'s lookup of `transcript` for the echo model with default options, without tools.
async fn look_up(log: &mut StoreLog, transcript: &[Message]) -> Lookup {
    log.lookup(transcript, "echo", &[], &ChatOptions::default())
        .await
        .unwrap()
}

/// Logs `answer` to `transcript` as a completed response taking `duration`.
async fn log_answer(
    log: &mut StoreLog,
    lookup: &Lookup,
    transcript: &[Message],
    answer: &Message,
    duration: Duration,
) -> Result<NodeId, AgentError> {
    log.log(
        lookup,
        transcript,
        answer,
        Usage::default(),
        CallTiming::new(None, duration),
        ResponseStatus::Completed,
    )
    .await
}

/// A log with a label and an owner: each round's answer takes the label, so after two rounds
/// it names the second answer; the owner is the conversation's, recorded by the first write.
#[tokio::test]
async fn a_labelled_owned_log_leaves_the_label_on_the_last_answer() {
    use conversation_tree::{Claim, StoreError};

    let store = memory_store().await;
    let conversation = ConversationId::random();
    let mut log =
        labelled_log(&store, &conversation, Reuse::Never, "resp_two_rounds").owner("alice");
    let mut transcript = vec![Message::human("Weather in Paris?")];
    let mut nodes = Vec::new();
    for answer in [Message::ai("Let me look."), Message::ai("Sunny.")] {
        let lookup = look_up(&mut log, &transcript).await;
        let node = log_answer(
            &mut log,
            &lookup,
            &transcript,
            &answer,
            Duration::from_millis(5),
        )
        .await
        .unwrap();
        nodes.push(node);
        transcript.push(answer);
        transcript.push(Message::human("And then?"));
    }
    let labelled = store
        .node_by_label("resp_two_rounds")
        .await
        .unwrap()
        .expect("the label names a node");
    assert_eq!(labelled.id(), nodes[1]);
    assert_eq!(labelled.parent(), Some(nodes[0]));
    assert_eq!(
        store
            .claim_conversation(&conversation, "alice")
            .await
            .unwrap(),
        Claim::Owned
    );
    assert_eq!(
        store
            .claim_conversation(&conversation, "bob")
            .await
            .unwrap(),
        Claim::OtherOwner
    );

    // An unusable label fails the write, which stores nothing.
    let mut bad = labelled_log(&store, &ConversationId::random(), Reuse::Never, "");
    let fresh = [Message::human("Hi")];
    let lookup = look_up(&mut bad, &fresh).await;
    let err = log_answer(
        &mut bad,
        &lookup,
        &fresh,
        &Message::ai("never stored"),
        Duration::ZERO,
    )
    .await
    .unwrap_err();
    assert!(
        matches!(err, AgentError::Store(StoreError::InvalidLabel { .. })),
        "{err}"
    );
    assert!(
        store
            .conversation(bad.conversation())
            .await
            .unwrap()
            .is_none()
    );
}

/// A stored answer reused for a labelled log's call takes the label, as a generated answer
/// would: the id a front end gave its client for the cached answer resolves to that node.
#[tokio::test]
async fn a_cached_answer_takes_the_label_of_the_log_that_reuses_it() {
    use conversation_tree::{CallKind, StoreError};

    let store = memory_store().await;
    let conversation = ConversationId::random();
    let transcript = [Message::human("Capital of France?")];
    let mut first = labelled_log(&store, &conversation, Reuse::Always, "resp_generated");
    let lookup = look_up(&mut first, &transcript).await;
    assert!(first.cached(&lookup).await.unwrap().is_none());
    let generated = log_answer(
        &mut first,
        &lookup,
        &transcript,
        &Message::ai("Paris."),
        Duration::from_millis(5),
    )
    .await
    .unwrap();

    // A second request (sampling options, reuse always allowed) is answered from the store.
    let mut second = labelled_log(&store, &conversation, Reuse::Always, "resp_cached");
    let lookup = look_up(&mut second, &transcript).await;
    let (message, node) = second
        .cached(&lookup)
        .await
        .unwrap()
        .expect("the stored answer is reused");
    assert_eq!(message.text(), "Paris.");
    assert_eq!(node, generated);
    for label in ["resp_cached", "resp_generated"] {
        let labelled = store.node_by_label(label).await.unwrap();
        assert_eq!(labelled.map(|node| node.id()), Some(generated), "{label}");
    }
    let kinds: Vec<CallKind> = store
        .calls(&conversation)
        .await
        .unwrap()
        .iter()
        .map(|call| call.kind)
        .collect();
    assert_eq!(kinds, [CallKind::Generated, CallKind::CacheHit]);

    // An unusable label fails the reuse, labelling nothing.
    let mut bad = labelled_log(&store, &conversation, Reuse::Always, "resp_\n");
    let lookup = look_up(&mut bad, &transcript).await;
    let err = bad.cached(&lookup).await.unwrap_err();
    assert!(
        matches!(err, AgentError::Store(StoreError::InvalidLabel { .. })),
        "{err}"
    );
}

/// A deterministic request answered from the store by an agent run leaves the run's label on
/// the reused node.
#[tokio::test]
async fn a_labelled_run_answered_from_the_store_labels_the_cached_node() {
    let store = memory_store().await;
    let model = scripted([ScriptedResponse::text("Paris.")]);
    let agent = deterministic_agent(&model, &store);
    let conversation = ConversationId::random();
    let ask = |label: &str| {
        AgentInput::text("Capital of France?")
            .in_conversation(conversation.clone())
            .labelled(label)
    };
    let first = agent.run(ask("resp_first")).await.unwrap();
    assert!(!first.records[0].cached);
    let second = agent.run(ask("resp_second")).await.unwrap();
    assert!(second.records[0].cached);
    assert_eq!(second.node_ids, first.node_ids);
    for label in ["resp_first", "resp_second"] {
        let labelled = store.node_by_label(label).await.unwrap();
        assert_eq!(
            labelled.map(|node| node.id()),
            Some(first.node_ids[0]),
            "{label}"
        );
    }
    assert_eq!(model.requests().len(), 1);
}

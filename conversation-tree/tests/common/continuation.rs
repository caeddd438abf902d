//! Continuing a conversation: earlier turns are matched by what was said, whatever options
//! they were asked with, and stopped answers keep their status and never stand in for a call.

use conversation_tree::{
    CallKind, CallOptions, ConversationId, HashOptions, Message, NewResponse, ResponseStatus,
};

use super::{Harness, assert_consistent, deterministic, sampling, step};

fn with(temperature: Option<f64>, max_tokens: Option<u32>, stop: &[&str]) -> CallOptions {
    CallOptions::new("echo").with_hash(HashOptions {
        temperature,
        max_tokens,
        stop: stop.iter().map(|s| (*s).to_owned()).collect(),
    })
}

pub(crate) async fn other_options_continue_the_same_path(harness: &impl Harness) {
    let store = harness.open().await;
    let conversation = ConversationId::random();
    // Three turns, each asked with other options; every one must hang below the one before.
    let turns = [
        (sampling(), "Capital of France?", "Paris"),
        (deterministic(), "Germany?", "Berlin"),
        (with(Some(0.0), Some(64), &["\n\n"]), "Italy?", "Rome"),
        (with(None, None, &[]), "Spain?", "Madrid"),
        (
            CallOptions::new("another-model").with_hash(HashOptions::default()),
            "Portugal?",
            "Lisbon",
        ),
    ];
    let mut messages = vec![Message::system("You are helpful")];
    let mut parent = None;
    for (depth, (options, question, answer)) in turns.into_iter().enumerate() {
        messages.push(Message::human(question));
        let (path, node) = step(
            &*store,
            &conversation,
            &messages,
            Message::ai(answer),
            &options,
        )
        .await;
        assert!(path.fully_matched(), "turn {depth} copied earlier turns");
        assert_eq!(
            path.turns.len(),
            depth,
            "turn {depth} matched the wrong depth"
        );
        assert_eq!(
            path.parent(),
            parent,
            "turn {depth} hangs from the wrong node"
        );
        assert_eq!(node.options(), &options.hash);
        parent = Some(node.id());
        messages.push(Message::ai(answer));
    }
    // One linear path: five nodes, one root, no supplied copies.
    let nodes = store.conversation_nodes(&conversation).await.unwrap();
    assert_eq!(nodes.len(), 5);
    assert_eq!(store.roots(&conversation).await.unwrap().len(), 1);
    let calls = store.calls(&conversation).await.unwrap();
    assert!(calls.iter().all(|call| call.kind == CallKind::Generated));

    // The whole array walked with yet other options matches all five turns.
    let path = store
        .find_or_create_path(&conversation, &messages, &with(Some(0.0), Some(7), &["x"]))
        .await
        .unwrap();
    assert_eq!(path.turns.len(), 5);
    assert!(path.fully_matched());
    assert_consistent(&*store).await;
}

pub(crate) async fn a_different_answer_still_branches_whatever_the_options(harness: &impl Harness) {
    let store = harness.open().await;
    let conversation = ConversationId::random();
    let first = vec![Message::human("Capital of France?")];
    let (_, root) = step(
        &*store,
        &conversation,
        &first,
        Message::ai("Paris"),
        &sampling(),
    )
    .await;

    // Another answer to the same question, sent with other options: a supplied sibling.
    let other = vec![
        Message::human("Capital of France?"),
        Message::ai("Lyon"),
        Message::human("Sure?"),
    ];
    let path = store
        .find_or_create_path(&conversation, &other, &deterministic())
        .await
        .unwrap();
    assert_eq!(path.turns.len(), 1);
    assert!(path.turns[0].created);
    assert_ne!(path.parent(), Some(root.id()));
    // Another question with the same answer text is not the stored turn either.
    let changed = vec![
        Message::human("Capital of Texas?"),
        Message::ai("Paris"),
        Message::human("Sure?"),
    ];
    let path = store
        .find_or_create_path(&conversation, &changed, &sampling())
        .await
        .unwrap();
    assert!(path.turns[0].created);
    assert_eq!(store.roots(&conversation).await.unwrap().len(), 3);
}

pub(crate) async fn stopped_answers_keep_their_status_and_are_never_reused(harness: &impl Harness) {
    let store = harness.open().await;
    let conversation = ConversationId::random();
    let options = deterministic();
    let question = vec![Message::human("Tell me a long story")];
    for (status, answer) in [
        (ResponseStatus::Cancelled, Message::ai("Once upon a")),
        (ResponseStatus::Failed, Message::ai("Once")),
        (
            ResponseStatus::Completed,
            Message::new(conversation_tree::Role::Ai, Vec::new()),
        ),
    ] {
        let node = store
            .log_response(
                NewResponse::new(
                    conversation.clone(),
                    None,
                    question.clone(),
                    answer,
                    &options,
                )
                .status(status),
            )
            .await
            .unwrap();
        assert_eq!(node.status(), status);
        assert_eq!(
            store.node(node.id()).await.unwrap().unwrap().status(),
            status
        );
    }
    // A deterministic repeat finds only partial or empty answers: the model must answer.
    let path = store
        .find_or_create_path(&conversation, &question, &options)
        .await
        .unwrap();
    assert!(path.cache_hit.is_none());
    assert_eq!(path.alternatives.len(), 3);
    // A complete answer is reused as before.
    let (_, done) = step(
        &*store,
        &conversation,
        &question,
        Message::ai("The end."),
        &options,
    )
    .await;
    assert_eq!(done.status(), ResponseStatus::Completed);
    let path = store
        .find_or_create_path(&conversation, &question, &options)
        .await
        .unwrap();
    assert_eq!(path.cache_hit.map(|hit| hit.id()), Some(done.id()));
    assert_consistent(&*store).await;
}

pub(crate) async fn walking_after_a_node_continues_below_that_node(harness: &impl Harness) {
    let store = harness.open().await;
    let conversation = ConversationId::random();
    let question = vec![Message::human("Same question")];
    // Two runs asked the same thing at once and got the same answer: equal siblings.
    let (_, first) = step(
        &*store,
        &conversation,
        &question,
        Message::ai("Same"),
        &sampling(),
    )
    .await;
    let (_, second) = step(
        &*store,
        &conversation,
        &question,
        Message::ai("Same"),
        &sampling(),
    )
    .await;
    assert_ne!(first.id(), second.id());
    // Each run continues below its own node.
    for node in [&first, &second] {
        let next = [Message::human("Next")];
        let path = store
            .find_or_create_path_after(&conversation, Some(node.id()), &next, &sampling())
            .await
            .unwrap();
        assert_eq!(path.after, Some(node.id()));
        assert_eq!(path.parent(), Some(node.id()));
        assert!(path.turns.is_empty());
        assert_eq!(path.first_unmatched, 0);
    }
    // A node of another conversation is refused.
    let other = ConversationId::random();
    let refused = store
        .find_or_create_path_after(&other, Some(first.id()), &question, &sampling())
        .await;
    assert!(matches!(
        refused,
        Err(conversation_tree::StoreError::ParentInOtherConversation { .. })
    ));
}

//! Labels naming nodes and owners recorded by the write that creates a conversation (schema
//! version 5).

use std::sync::Arc;

use conversation_tree::{
    CallOptions, Claim, ConversationId, Message, NewResponse, Node, NodeId, Store, StoreError,
};

use super::{Harness, assert_consistent, deterministic, sampling, step};

/// A model's answer to `question` after `parent`.
fn answer(
    conversation: &ConversationId,
    parent: Option<NodeId>,
    question: &str,
    options: &CallOptions,
) -> NewResponse {
    NewResponse::new(
        conversation.clone(),
        parent,
        vec![Message::human(question)],
        Message::ai(format!("Answer to {question}")),
        options,
    )
}

/// The node `label` names.
async fn labelled(store: &dyn Store, label: &str) -> Option<Node> {
    store.node_by_label(label).await.unwrap()
}

/// Labels that no node can have: empty, too long, with control characters.
fn invalid_labels() -> [String; 4] {
    [
        String::new(),
        "x".repeat(129),
        "resp_a\nb".to_owned(),
        "resp_\u{7f}del".to_owned(),
    ]
}

pub(crate) async fn a_label_finds_its_node_and_moves_to_the_latest(harness: &impl Harness) {
    let store = harness.open().await;
    let conversation = ConversationId::random();
    let options = sampling();
    assert_eq!(labelled(&*store, "resp_run").await, None);

    let first = store
        .log_response(answer(&conversation, None, "one", &options).label("resp_run"))
        .await
        .unwrap();
    assert_eq!(labelled(&*store, "resp_run").await, Some(first.clone()));
    // 128 characters, any script: the longest label there is.
    let long = "é".repeat(128);
    let other = store
        .log_response(answer(&conversation, None, "other", &options).label(long.as_str()))
        .await
        .unwrap();

    // The next round of the run moves the label; the other label stays where it was.
    let second = store
        .log_response(answer(&conversation, Some(first.id()), "two", &options).label("resp_run"))
        .await
        .unwrap();
    assert_eq!(labelled(&*store, "resp_run").await, Some(second.clone()));
    assert_eq!(labelled(&*store, &long).await, Some(other.clone()));
    // A label is exact: no prefix, case or whitespace matching.
    for near in ["resp_", "RESP_RUN", "resp_run ", "resp_ru"] {
        assert_eq!(labelled(&*store, near).await, None, "{near:?}");
    }
    // A label may move to another conversation's node.
    let elsewhere = ConversationId::random();
    let moved = store
        .log_response(answer(&elsewhere, None, "three", &options).label(long.as_str()))
        .await
        .unwrap();
    assert_eq!(labelled(&*store, &long).await, Some(moved.clone()));
    // Unlabelled writes leave labels alone.
    step(
        &*store,
        &conversation,
        &[Message::human("unlabelled")],
        Message::ai("fine"),
        &options,
    )
    .await;
    assert_eq!(labelled(&*store, "resp_run").await, Some(second.clone()));

    // Labels survive reopening the store.
    drop(store);
    let store = harness.open().await;
    assert_eq!(labelled(&*store, "resp_run").await, Some(second));
    assert_eq!(labelled(&*store, &long).await, Some(moved));
    assert_eq!(labelled(&*store, "resp_unknown").await, None);
    assert_consistent(&*store).await;
}

pub(crate) async fn invalid_labels_and_owners_are_refused_and_nothing_is_written(
    harness: &impl Harness,
) {
    let store = harness.open().await;
    let conversation = ConversationId::random();
    let options = deterministic();
    let root = store
        .log_response(answer(&conversation, None, "one", &options).label("resp_kept"))
        .await
        .unwrap();
    let fresh = ConversationId::random();
    for bad in invalid_labels() {
        let len = bad.chars().count();
        for entry in [
            answer(&conversation, Some(root.id()), "two", &options),
            answer(&fresh, None, "new", &options),
        ] {
            let err = store
                .log_response(entry.label(bad.as_str()))
                .await
                .unwrap_err();
            assert!(
                matches!(err, StoreError::InvalidLabel { label_len, .. } if label_len == len),
                "{err}"
            );
            let message = err.to_string();
            assert!(message.contains("label"), "{message}");
            assert!(message.contains("1 to 128"), "says what to use: {message}");
            if !bad.is_empty() {
                assert!(!message.contains(bad.as_str()), "{message}");
            }
        }
        let err = store.node_by_label(&bad).await.unwrap_err();
        assert!(matches!(err, StoreError::InvalidLabel { .. }), "{err}");
    }
    for bad in ["", "a\nb", &"x".repeat(129)] {
        let err = store
            .log_response(answer(&fresh, None, "new", &options).owner(bad))
            .await
            .unwrap_err();
        assert!(matches!(err, StoreError::InvalidOwner { .. }), "{err}");
        if !bad.is_empty() {
            assert!(!err.to_string().contains(bad), "{err}");
        }
    }
    // A valid label with an invalid owner writes neither.
    let err = store
        .log_response(
            answer(&fresh, None, "new", &options)
                .label("resp_never")
                .owner(""),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::InvalidOwner { .. }), "{err}");

    assert_eq!(
        store.conversation_nodes(&conversation).await.unwrap(),
        vec![root.clone()]
    );
    assert_eq!(store.calls(&conversation).await.unwrap().len(), 1);
    assert!(store.conversation(&fresh).await.unwrap().is_none());
    assert_eq!(labelled(&*store, "resp_kept").await, Some(root));
    assert_eq!(labelled(&*store, "resp_never").await, None);
}

pub(crate) async fn a_new_conversation_is_owned_by_its_first_write_and_writes_keep_owners(
    harness: &impl Harness,
) {
    let store = harness.open().await;
    let options = deterministic();

    // Created by an answer logged with an owner.
    let created = ConversationId::random();
    let root = store
        .log_response(answer(&created, None, "one", &options).owner("alice"))
        .await
        .unwrap();
    assert_eq!(
        store.claim_conversation(&created, "alice").await.unwrap(),
        Claim::Owned
    );
    assert_eq!(
        store.claim_conversation(&created, "bob").await.unwrap(),
        Claim::OtherOwner
    );
    // Later writes naming another owner do not take it.
    store
        .log_response(answer(&created, Some(root.id()), "two", &options).owner("bob"))
        .await
        .unwrap();
    assert_eq!(
        store.claim_conversation(&created, "bob").await.unwrap(),
        Claim::OtherOwner
    );

    // Owned by someone else through a claim: a write naming another owner keeps it.
    let claimed = ConversationId::random();
    assert_eq!(
        store.claim_conversation(&claimed, "carol").await.unwrap(),
        Claim::Created
    );
    store
        .log_response(answer(&claimed, None, "one", &options).owner("dave"))
        .await
        .unwrap();
    assert_eq!(
        store.claim_conversation(&claimed, "carol").await.unwrap(),
        Claim::Owned
    );
    assert_eq!(
        store.claim_conversation(&claimed, "dave").await.unwrap(),
        Claim::OtherOwner
    );

    // Unowned (written without one): a write naming an owner does not give it one.
    let unowned = ConversationId::random();
    let root = store
        .log_response(answer(&unowned, None, "one", &options))
        .await
        .unwrap();
    store
        .log_response(answer(&unowned, Some(root.id()), "two", &options).owner("erin"))
        .await
        .unwrap();
    assert_eq!(
        store.claim_conversation(&unowned, "erin").await.unwrap(),
        Claim::Unowned
    );

    // The owner's conversation is written as any other: named, counted, and it survives a
    // reopen.
    let summary = store.conversation(&created).await.unwrap().unwrap();
    assert_eq!(summary.responses, 2);
    assert_eq!(summary.name.as_deref(), Some("one"));
    drop(store);
    let store = harness.open().await;
    assert_eq!(
        store.claim_conversation(&created, "alice").await.unwrap(),
        Claim::Owned
    );
    assert_consistent(&*store).await;
}

pub(crate) async fn concurrent_writes_with_one_label_leave_it_on_one_of_them(
    harness: &impl Harness,
) {
    let store = harness.open().await;
    let options = sampling();
    // Writes to one conversation, and writes to as many conversations (which PostgreSQL runs
    // side by side).
    let shared = ConversationId::random();
    let cases: [Vec<ConversationId>; 2] = [
        vec![shared.clone(), shared],
        (0..8).map(|_| ConversationId::random()).collect(),
    ];
    for (case, conversations) in cases.into_iter().enumerate() {
        let label = format!("resp_concurrent_{case}");
        let writes = conversations
            .into_iter()
            .enumerate()
            .map(|(i, conversation)| {
                let store = Arc::clone(&store);
                let entry = answer(&conversation, None, &format!("q{i}"), &options)
                    .label(label.as_str())
                    .owner(format!("owner-{i}"));
                tokio::spawn(async move { store.log_response(entry).await })
            });
        let nodes: Vec<_> = futures::future::join_all(writes)
            .await
            .into_iter()
            .map(|joined| joined.unwrap().unwrap())
            .collect();
        let named = labelled(&*store, &label)
            .await
            .expect("the label names a node");
        assert!(nodes.contains(&named), "{named:?} in {nodes:?}");
    }
    assert_consistent(&*store).await;
}

/// A node id no store of these tests holds.
fn unknown_node() -> NodeId {
    "987654321".parse().unwrap()
}

pub(crate) async fn label_node_labels_a_stored_node_and_moves_labels(harness: &impl Harness) {
    let store = harness.open().await;
    let conversation = ConversationId::random();
    let options = deterministic();
    let first = store
        .log_response(answer(&conversation, None, "one", &options))
        .await
        .unwrap();
    let second = store
        .log_response(answer(&conversation, Some(first.id()), "two", &options).label("resp_two"))
        .await
        .unwrap();
    let calls = store.calls(&conversation).await.unwrap();

    // An unlabelled node takes a label, and a second one: both name it.
    store.label_node("resp_a", first.id()).await.unwrap();
    store.label_node("resp_b", first.id()).await.unwrap();
    for label in ["resp_a", "resp_b"] {
        assert_eq!(
            labelled(&*store, label).await,
            Some(first.clone()),
            "{label}"
        );
    }
    // Labelling again with the same node changes nothing.
    store.label_node("resp_a", first.id()).await.unwrap();
    assert_eq!(labelled(&*store, "resp_a").await, Some(first.clone()));

    // A label that named another node moves; the node keeps its other labels.
    store.label_node("resp_two", first.id()).await.unwrap();
    store.label_node("resp_b", second.id()).await.unwrap();
    assert_eq!(labelled(&*store, "resp_two").await, Some(first.clone()));
    assert_eq!(labelled(&*store, "resp_b").await, Some(second.clone()));
    assert_eq!(labelled(&*store, "resp_a").await, Some(first.clone()));
    // ... to another conversation's node too.
    let elsewhere = store
        .log_response(answer(&ConversationId::random(), None, "three", &options))
        .await
        .unwrap();
    store.label_node("resp_a", elsewhere.id()).await.unwrap();
    assert_eq!(labelled(&*store, "resp_a").await, Some(elsewhere.clone()));
    // Labels are not calls: the conversation's calls and nodes are as they were.
    assert_eq!(store.calls(&conversation).await.unwrap(), calls);
    assert_eq!(
        store.conversation_nodes(&conversation).await.unwrap(),
        vec![first.clone(), second.clone()]
    );

    // A cache hit (the reuse a front end labels) takes the label of the request it answers;
    // a later generated answer with that label takes it over.
    let again = [
        Message::human("one"),
        Message::ai("Answer to one"),
        Message::human("two"),
    ];
    let hit = store
        .find_or_create_path(&conversation, &again, &options)
        .await
        .unwrap()
        .cache_hit
        .expect("a deterministic repeat is a cache hit");
    assert_eq!(hit, second);
    store.label_node("resp_cached", hit.id()).await.unwrap();
    assert_eq!(labelled(&*store, "resp_cached").await, Some(second.clone()));
    let later = store
        .log_response(
            answer(&conversation, Some(second.id()), "four", &options).label("resp_cached"),
        )
        .await
        .unwrap();
    assert_eq!(labelled(&*store, "resp_cached").await, Some(later));

    // Labels survive reopening the store.
    drop(store);
    let store = harness.open().await;
    assert_eq!(labelled(&*store, "resp_two").await, Some(first));
    assert_eq!(labelled(&*store, "resp_b").await, Some(second));
    assert_eq!(labelled(&*store, "resp_a").await, Some(elsewhere));
    assert_consistent(&*store).await;
}

pub(crate) async fn label_node_refuses_unknown_nodes_and_invalid_labels_writing_nothing(
    harness: &impl Harness,
) {
    let store = harness.open().await;
    let conversation = ConversationId::random();
    let options = deterministic();
    let root = store
        .log_response(answer(&conversation, None, "one", &options).label("resp_kept"))
        .await
        .unwrap();

    // A node the store does not hold: the label is neither created nor moved.
    for label in ["resp_kept", "resp_new"] {
        let err = store.label_node(label, unknown_node()).await.unwrap_err();
        assert!(
            matches!(err, StoreError::UnknownNode { id } if id == unknown_node()),
            "{err}"
        );
    }
    // An unusable label is refused first, whether the node exists or not.
    for bad in invalid_labels() {
        let len = bad.chars().count();
        for node in [root.id(), unknown_node()] {
            let err = store.label_node(&bad, node).await.unwrap_err();
            assert!(
                matches!(err, StoreError::InvalidLabel { label_len, .. } if label_len == len),
                "{err}"
            );
            if !bad.is_empty() {
                assert!(!err.to_string().contains(bad.as_str()), "{err}");
            }
        }
    }

    assert_eq!(labelled(&*store, "resp_kept").await, Some(root.clone()));
    assert_eq!(labelled(&*store, "resp_new").await, None);
    assert_eq!(
        store.conversation_nodes(&conversation).await.unwrap(),
        vec![root]
    );
    assert_eq!(store.calls(&conversation).await.unwrap().len(), 1);
    assert_consistent(&*store).await;
}

pub(crate) async fn concurrent_label_moves_leave_the_label_on_one_node(harness: &impl Harness) {
    let store = harness.open().await;
    let options = sampling();
    let conversation = ConversationId::random();
    let mut nodes = Vec::new();
    for i in 0..8 {
        let node = store
            .log_response(answer(&conversation, None, &format!("q{i}"), &options))
            .await
            .unwrap();
        nodes.push(node);
    }
    let moves = nodes.iter().map(|node| {
        let store = Arc::clone(&store);
        let id = node.id();
        tokio::spawn(async move { store.label_node("resp_raced", id).await })
    });
    for moved in futures::future::join_all(moves).await {
        moved.unwrap().unwrap();
    }
    let named = labelled(&*store, "resp_raced")
        .await
        .expect("the label names a node");
    assert!(nodes.contains(&named), "{named:?} in {nodes:?}");
    assert_consistent(&*store).await;
}

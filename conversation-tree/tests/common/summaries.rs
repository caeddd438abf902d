//! Summaries stored with the answers to compressed requests (schema version 6).

use conversation_tree::{
    ConversationId, Message, NewResponse, NodeId, PathSummary, Store, StoreError,
};

use super::{Harness, sampling};

/// The answer to `question` after `parent`, with `summary` if given.
async fn log(
    store: &dyn Store,
    conversation: &ConversationId,
    parent: Option<NodeId>,
    question: &str,
    summary: Option<&PathSummary>,
) -> NodeId {
    let entry = NewResponse::new(
        conversation.clone(),
        parent,
        vec![Message::human(question)],
        Message::ai(format!("Answer to {question}")),
        &sampling(),
    );
    let entry = match summary {
        Some(summary) => entry.summary(summary.clone()),
        None => entry,
    };
    store.log_response(entry).await.unwrap().id()
}

fn summary_of(turns: &[&str]) -> PathSummary {
    let replaced: Vec<Message> = turns
        .iter()
        .flat_map(|turn| {
            [
                Message::human(*turn),
                Message::ai(format!("Answer to {turn}")),
            ]
        })
        .collect();
    PathSummary::new(
        &replaced,
        vec![Message::human(format!("Summary of {}", turns.join(", ")))],
    )
}

pub(crate) async fn the_deepest_summary_on_a_path_is_found_for_every_node_below_it(
    harness: &impl Harness,
) {
    let store = harness.open().await;
    let conversation = ConversationId::random();
    let first = summary_of(&["one"]);
    let second = summary_of(&["one", "two", "three"]);
    let one = log(&*store, &conversation, None, "one", None).await;
    let two = log(&*store, &conversation, Some(one), "two", Some(&first)).await;
    let three = log(&*store, &conversation, Some(two), "three", None).await;
    let four = log(&*store, &conversation, Some(three), "four", Some(&second)).await;
    let five = log(&*store, &conversation, Some(four), "five", None).await;
    // A branch beside the summarised answer has no summary of its own.
    let other = log(&*store, &conversation, Some(one), "other", None).await;

    let found = async |node| store.path_summary(node).await.unwrap();
    assert_eq!(found(one).await, None);
    assert_eq!(found(two).await, Some(first.clone()));
    assert_eq!(found(three).await, Some(first.clone()));
    assert_eq!(found(four).await, Some(second.clone()));
    assert_eq!(found(five).await, Some(second.clone()));
    assert_eq!(found(other).await, None);

    // Reopened, the summaries are still there.
    drop(store);
    let store = harness.open().await;
    assert_eq!(store.path_summary(five).await.unwrap(), Some(second));
    let unknown: NodeId = "999999".parse().unwrap();
    assert!(matches!(
        store.path_summary(unknown).await,
        Err(StoreError::UnknownNode { .. })
    ));
}

pub(crate) async fn a_summary_that_cannot_be_written_leaves_no_node<H: Harness>(harness: &H) {
    let store = harness.open().await;
    let conversation = ConversationId::random();
    let one = log(&*store, &conversation, None, "one", None).await;
    harness
        .execute(&H::failing_insert_trigger("summaries"))
        .await;

    let entry = NewResponse::new(
        conversation.clone(),
        Some(one),
        vec![Message::human("two")],
        Message::ai("Answer to two"),
        &sampling(),
    )
    .label("resp_summarised")
    .summary(summary_of(&["one"]));
    assert!(
        store.log_response(entry).await.is_err(),
        "the injected failure surfaces"
    );
    // The node, its call and its label went with the summary: the conversation is as it was.
    let nodes = store.conversation_nodes(&conversation).await.unwrap();
    assert_eq!(
        nodes.iter().map(|node| node.id()).collect::<Vec<_>>(),
        [one]
    );
    assert_eq!(store.calls(&conversation).await.unwrap().len(), 1);
    assert_eq!(store.node_by_label("resp_summarised").await.unwrap(), None);
    assert_eq!(store.path_summary(one).await.unwrap(), None);
}

//! The metadata a request was tagged with, kept with its answer (schema version 8).

use std::collections::BTreeMap;

use conversation_tree::{ConversationId, Message, NewResponse, StoreError};

use super::{Harness, sampling};

fn tags(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
        .collect()
}

/// Tagged answers read back with their pairs (by id, by label, in listings, after a reopen),
/// hash exactly as untagged ones, and pass `verify`; an answer continued below a tagged one
/// and an answer a caller supplied have none.
pub(crate) async fn metadata_is_kept_with_its_node_outside_every_hash(harness: &impl Harness) {
    let store = harness.open().await;
    let conversation = ConversationId::random();
    let options = sampling();
    let question = vec![Message::human("Capital of France?")];
    let entry = NewResponse::new(
        conversation.clone(),
        None,
        question.clone(),
        Message::ai("Paris"),
        &options,
    );
    let pairs = tags(&[("ticket", "T-42"), ("émoji", "🦀 \"quoted\"")]);
    let tagged = store
        .log_response(entry.clone().metadata(pairs.clone()).label("resp_tagged"))
        .await
        .unwrap();
    assert_eq!(tagged.metadata(), &pairs);
    let plain = store.log_response(entry).await.unwrap();
    assert!(plain.metadata().is_empty());
    for hash in [
        (tagged.prompt_hash(), plain.prompt_hash()),
        (tagged.response_hash(), plain.response_hash()),
        (tagged.path_hash(), plain.path_hash()),
    ] {
        assert_eq!(hash.0, hash.1, "metadata entered a hash");
    }

    // A continuation below the tagged answer does not inherit its pairs.
    let next = store
        .log_response(NewResponse::new(
            conversation.clone(),
            Some(tagged.id()),
            vec![Message::human("And Germany?")],
            Message::ai("Berlin"),
            &options,
        ))
        .await
        .unwrap();
    assert!(next.metadata().is_empty());
    // A branch the caller supplied is stored without any.
    let branch = [
        question[0].clone(),
        Message::ai("Lyon"),
        Message::human("Sure?"),
    ];
    let path = store
        .find_or_create_path(&conversation, &branch, &options)
        .await
        .unwrap();
    let supplied = store.node(path.node_ids()[0]).await.unwrap().unwrap();
    assert!(supplied.is_supplied());
    assert!(supplied.metadata().is_empty());

    drop(store);
    let store = harness.open().await;
    assert_eq!(store.node(tagged.id()).await.unwrap(), Some(tagged.clone()));
    assert_eq!(
        store.node_by_label("resp_tagged").await.unwrap(),
        Some(tagged.clone())
    );
    let listed = store.conversation_nodes(&conversation).await.unwrap();
    assert_eq!(listed[0], tagged);
    assert_eq!(listed[1], plain);
    assert!(store.verify().await.unwrap().is_ok());
}

/// A metadata column that is not an object of strings (written by hand) makes the node
/// unreadable with a typed error that names the node, never a panic.
pub(crate) async fn unreadable_metadata_is_a_corrupt_node(harness: &impl Harness) {
    let store = harness.open().await;
    let node = store
        .log_response(NewResponse::new(
            ConversationId::random(),
            None,
            vec![Message::human("Hi")],
            Message::ai("Hello"),
            &sampling(),
        ))
        .await
        .unwrap();
    harness
        .execute(&format!(
            "UPDATE responses SET metadata_json = '{{\"n\": 1}}' WHERE id = {}",
            node.id().get()
        ))
        .await;
    let err = store.node(node.id()).await.unwrap_err();
    assert!(
        matches!(&err, StoreError::Corrupt { what, reason }
            if what.contains(&node.id().to_string()) && reason.contains("metadata")),
        "{err}"
    );
}

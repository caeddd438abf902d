//! The use cases: roots, reuse, extension, branching, siblings; persistence and errors.

use conversation_tree::{
    CallKind, CallOptions, ConversationId, HashOptions, Message, NewResponse, Reuse, StoreError,
    path_hash, prompt_hash, response_hash,
};

use super::{Harness, assert_consistent, deterministic, sampling, step};

fn france() -> Vec<Message> {
    vec![
        Message::system("You are helpful"),
        Message::human("Capital of France?"),
    ]
}

pub(crate) async fn first_call_creates_a_root(harness: &impl Harness) {
    let store = harness.open().await;
    let conversation = ConversationId::random();
    let options = deterministic();
    let (path, root) = step(
        &*store,
        &conversation,
        &france(),
        Message::ai("Paris"),
        &options,
    )
    .await;

    assert!(path.turns.is_empty());
    assert_eq!(path.first_unmatched, 0);
    assert!(path.cache_hit.is_none() && path.alternatives.is_empty());
    assert_eq!(root.parent(), None);
    assert_eq!(root.conversation_id(), &conversation);
    assert_eq!(root.prompt_hash(), prompt_hash(&france(), &options.hash));
    assert_eq!(root.path_hash(), root.prompt_hash());
    assert_eq!(root.response_hash(), response_hash(&Message::ai("Paris")));
    assert_eq!(root.model(), Some("echo"));
    assert_eq!(
        store.roots(&conversation).await.unwrap(),
        vec![root.clone()]
    );
    assert_eq!(store.node(root.id()).await.unwrap(), Some(root.clone()));
    let calls = store.calls(&conversation).await.unwrap();
    assert_eq!(calls.len(), 1);
    assert_eq!(
        (calls[0].node, calls[0].kind),
        (root.id(), CallKind::Generated)
    );
    let summary = store.conversation(&conversation).await.unwrap().unwrap();
    assert_eq!(summary.name.as_deref(), Some("Capital of France?"));
    assert_eq!(summary.responses, 1);
}

pub(crate) async fn same_deterministic_messages_reuse_the_root(harness: &impl Harness) {
    let store = harness.open().await;
    let conversation = ConversationId::random();
    let options = deterministic();
    let (_, root) = step(
        &*store,
        &conversation,
        &france(),
        Message::ai("Paris"),
        &options,
    )
    .await;

    let again = store
        .find_or_create_path(&conversation, &france(), &options)
        .await
        .unwrap();
    assert_eq!(
        again.cache_hit.as_ref().map(|hit| hit.id()),
        Some(root.id())
    );
    assert!(again.alternatives.is_empty());
    assert_eq!(again.first_unmatched, 0);
    // The hit is a call of its own, with its own timestamp; no node was added.
    let calls = store.calls(&conversation).await.unwrap();
    let kinds: Vec<CallKind> = calls.iter().map(|call| call.kind).collect();
    assert_eq!(kinds, [CallKind::Generated, CallKind::CacheHit]);
    assert!(calls[1].datetime_utc >= calls[0].datetime_utc);
    assert_eq!(
        store.conversation_nodes(&conversation).await.unwrap().len(),
        1
    );
    assert_eq!(
        store.turn(root.id()).await.unwrap().response,
        Message::ai("Paris")
    );
}

pub(crate) async fn reuse_needs_the_same_model_key_and_policy(harness: &impl Harness) {
    let store = harness.open().await;
    let conversation = ConversationId::random();
    let keyed = deterministic().with_cache_key("tools-v1");
    let (_, root) = step(
        &*store,
        &conversation,
        &france(),
        Message::ai("Paris"),
        &keyed,
    )
    .await;
    let lookup = |options: CallOptions| {
        let store = store.clone();
        let conversation = conversation.clone();
        async move {
            store
                .find_or_create_path(&conversation, &france(), &options)
                .await
                .unwrap()
        }
    };

    let hit = lookup(keyed.clone()).await;
    assert_eq!(hit.cache_hit.map(|node| node.id()), Some(root.id()));
    // Another model: same tree position, listed as an alternative, never substituted.
    let other_model = lookup(CallOptions {
        model: "gpt-4o".into(),
        ..keyed.clone()
    })
    .await;
    assert!(other_model.cache_hit.is_none());
    assert_eq!(other_model.alternatives, vec![root.clone()]);
    // Another cache key (other tools on offer): no hit.
    let other_key = lookup(deterministic().with_cache_key("tools-v2")).await;
    assert!(other_key.cache_hit.is_none());
    // Never: no hit even for the same request.
    let never = lookup(keyed.clone().with_reuse(Reuse::Never)).await;
    assert!(never.cache_hit.is_none());
    assert_eq!(never.alternatives.len(), 1);

    // Sampling requests sit at the same position (temperature > 0 is not in the hash) but are
    // not reused unless the caller opts in.
    let sampled = CallOptions::new("echo").with_hash(HashOptions {
        temperature: Some(0.8),
        ..Default::default()
    });
    let (_, sample) = step(
        &*store,
        &conversation,
        &france(),
        Message::ai("Paris!"),
        &sampled,
    )
    .await;
    assert_eq!(sample.parent(), None);
    assert_ne!(
        sample.prompt_hash(),
        root.prompt_hash(),
        "temperature 0 is part of the hash"
    );
    let sampled_again = lookup(sampled.clone()).await;
    assert!(sampled_again.cache_hit.is_none());
    assert_eq!(sampled_again.alternatives, vec![sample.clone()]);
    let opted_in = lookup(sampled.with_reuse(Reuse::Always)).await;
    assert_eq!(opted_in.cache_hit.map(|node| node.id()), Some(sample.id()));

    let kinds: Vec<CallKind> = store
        .calls(&conversation)
        .await
        .unwrap()
        .iter()
        .map(|call| call.kind)
        .collect();
    use CallKind::{CacheHit, Generated};
    assert_eq!(kinds, [Generated, CacheHit, Generated, CacheHit]);
}

pub(crate) async fn extension_finds_the_root_and_creates_the_child(harness: &impl Harness) {
    let store = harness.open().await;
    let conversation = ConversationId::random();
    let options = deterministic();
    let (_, root) = step(
        &*store,
        &conversation,
        &france(),
        Message::ai("Paris"),
        &options,
    )
    .await;

    let mut messages = france();
    messages.push(Message::ai("Paris"));
    messages.push(Message::human("Germany?"));
    let (path, child) = step(
        &*store,
        &conversation,
        &messages,
        Message::ai("Berlin"),
        &options,
    )
    .await;
    assert_eq!(path.node_ids(), vec![root.id()]);
    assert!(path.fully_matched());
    assert_eq!(path.turns[0].start, 0);
    assert_eq!(path.first_unmatched, 3);
    assert_eq!(child.parent(), Some(root.id()));
    assert_eq!(
        child.path_hash(),
        path_hash(Some(root.path_hash()), child.prompt_hash())
    );
    assert_eq!(
        store.children(root.id()).await.unwrap(),
        vec![child.clone()]
    );
    assert_eq!(
        store.path_to_root(child.id()).await.unwrap(),
        vec![child.clone(), root.clone()]
    );
    assert_eq!(
        store.lookup_path_hash(child.path_hash()).await.unwrap(),
        vec![child.clone()]
    );
    messages.push(Message::ai("Berlin"));
    assert_eq!(store.messages_for_path(child.id()).await.unwrap(), messages);
    // The whole array again, ending in an answer: everything matches, nothing is pending.
    let replay = store
        .find_or_create_path(&conversation, &messages, &options)
        .await
        .unwrap();
    assert_eq!(replay.node_ids(), vec![root.id(), child.id()]);
    assert_eq!(replay.first_unmatched, messages.len());
    assert!(replay.cache_hit.is_none());
}

pub(crate) async fn a_different_answer_branches_and_never_overwrites(harness: &impl Harness) {
    let store = harness.open().await;
    let conversation = ConversationId::random();
    let options = deterministic();
    let (_, paris) = step(
        &*store,
        &conversation,
        &france(),
        Message::ai("Paris"),
        &options,
    )
    .await;

    let mut messages = france();
    messages.push(Message::ai("Lyon"));
    messages.push(Message::human("Germany?"));
    let path = store
        .find_or_create_path(&conversation, &messages, &options)
        .await
        .unwrap();
    assert_eq!(path.turns.len(), 1);
    assert!(path.turns[0].created);
    assert_eq!(path.first_unmatched, 3);
    let lyon = store.node(path.turns[0].node).await.unwrap().unwrap();
    assert!(lyon.is_supplied());
    assert_eq!(lyon.parent(), None);
    assert_eq!(lyon.prompt_hash(), paris.prompt_hash());
    assert_eq!(lyon.path_hash(), paris.path_hash());
    assert_ne!(lyon.response_hash(), paris.response_hash());
    // The stored answer is untouched; both are roots now, oldest first.
    assert_eq!(
        store.turn(paris.id()).await.unwrap().response,
        Message::ai("Paris")
    );
    assert_eq!(
        store.turn(lyon.id()).await.unwrap().response,
        Message::ai("Lyon")
    );
    assert_eq!(
        store.roots(&conversation).await.unwrap(),
        vec![paris.clone(), lyon.clone()]
    );
    // Sending the same history again finds the branch instead of adding another.
    let again = store
        .find_or_create_path(&conversation, &messages, &options)
        .await
        .unwrap();
    assert_eq!(again.node_ids(), vec![lyon.id()]);
    assert!(again.fully_matched());
    let supplied = store
        .calls(&conversation)
        .await
        .unwrap()
        .into_iter()
        .filter(|call| call.kind == CallKind::Supplied)
        .count();
    assert_eq!(supplied, 1);
    assert_consistent(&*store).await;
}

pub(crate) async fn non_deterministic_duplicates_are_kept_and_listed(harness: &impl Harness) {
    let store = harness.open().await;
    let conversation = ConversationId::random();
    let joke = vec![Message::human("Tell me a joke")];
    let options = sampling();
    let (_, a) = step(
        &*store,
        &conversation,
        &joke,
        Message::ai("Why did the chicken…"),
        &options,
    )
    .await;
    let (_, b) = step(
        &*store,
        &conversation,
        &joke,
        Message::ai("What do you call…"),
        &options,
    )
    .await;
    // The same answer twice is two calls, kept as two nodes.
    let (_, c) = step(
        &*store,
        &conversation,
        &joke,
        Message::ai("What do you call…"),
        &options,
    )
    .await;

    assert_eq!(a.parent(), b.parent());
    assert_eq!(a.prompt_hash(), b.prompt_hash());
    assert_ne!(a.response_hash(), b.response_hash());
    assert_eq!(b.response_hash(), c.response_hash());
    let listed = store
        .find_or_create_path(&conversation, &joke, &options)
        .await
        .unwrap();
    assert!(listed.cache_hit.is_none());
    assert_eq!(listed.alternatives, vec![a.clone(), b.clone(), c.clone()]);
    assert_eq!(
        store.lookup_path_hash(a.path_hash()).await.unwrap(),
        vec![a.clone(), b, c]
    );
    // A caller that sends one of them back continues from the first equal answer.
    let mut history = joke.clone();
    history.push(Message::ai("Why did the chicken…"));
    history.push(Message::human("Another"));
    let path = store
        .find_or_create_path(&conversation, &history, &options)
        .await
        .unwrap();
    assert_eq!(path.node_ids(), vec![a.id()]);
}

pub(crate) async fn store_persists_across_reopen(harness: &impl Harness) {
    let conversation = ConversationId::random();
    let options = deterministic();
    let mut messages = france();
    let (root, child) = {
        let store = harness.open().await;
        let (_, root) = step(
            &*store,
            &conversation,
            &messages,
            Message::ai("Paris"),
            &options,
        )
        .await;
        messages.push(Message::ai("Paris"));
        messages.push(Message::human("Germany?"));
        let (_, child) = step(
            &*store,
            &conversation,
            &messages,
            Message::ai("Berlin"),
            &options,
        )
        .await;
        store
            .find_or_create_path(&conversation, &messages, &options)
            .await
            .unwrap();
        (root, child)
    };
    let store = harness.open().await;
    assert_eq!(store.node(root.id()).await.unwrap(), Some(root.clone()));
    assert_eq!(store.node(child.id()).await.unwrap(), Some(child.clone()));
    messages.push(Message::ai("Berlin"));
    assert_eq!(store.messages_for_path(child.id()).await.unwrap(), messages);
    assert_eq!(store.latest_node(&conversation).await.unwrap(), Some(child));
    let kinds: Vec<CallKind> = store
        .calls(&conversation)
        .await
        .unwrap()
        .iter()
        .map(|call| call.kind)
        .collect();
    assert_eq!(
        kinds,
        [CallKind::Generated, CallKind::Generated, CallKind::CacheHit]
    );
    let listed = store.conversations(10).await.unwrap();
    assert!(
        listed
            .iter()
            .any(|summary| summary.id == conversation && summary.responses == 2)
    );
    assert_consistent(&*store).await;
}

pub(crate) async fn edge_arrays_empty_and_fully_answered(harness: &impl Harness) {
    let store = harness.open().await;
    let conversation = ConversationId::random();
    let options = deterministic();
    let empty = store
        .find_or_create_path(&conversation, &[], &options)
        .await
        .unwrap();
    assert_eq!((empty.turns.len(), empty.first_unmatched), (0, 0));
    assert!(store.conversation(&conversation).await.unwrap().is_none());
    // A history that ends with an answer is stored as supplied nodes; nothing is pending.
    let history = vec![
        Message::human("Hi"),
        Message::ai("Hello"),
        Message::ai("(a second AI message answers an empty turn)"),
    ];
    let path = store
        .find_or_create_path(&conversation, &history, &options)
        .await
        .unwrap();
    assert_eq!(path.turns.len(), 2);
    assert!(path.turns.iter().all(|turn| turn.created));
    assert_eq!(path.first_unmatched, history.len());
    assert!(path.pending_input(&history).is_empty());
    let leaf = path.turns[1].node;
    assert_eq!(store.turn(leaf).await.unwrap().input, Vec::<Message>::new());
    assert_eq!(store.messages_for_path(leaf).await.unwrap(), history);
    assert_eq!(
        store
            .latest_node(&conversation)
            .await
            .unwrap()
            .map(|n| n.id()),
        Some(leaf)
    );
}

pub(crate) async fn latest_node_follows_the_last_call(harness: &impl Harness) {
    let store = harness.open().await;
    let options = deterministic();
    let (first, second) = (ConversationId::random(), ConversationId::random());
    let (_, root) = step(&*store, &first, &france(), Message::ai("Paris"), &options).await;
    let mut messages = france();
    messages.extend([Message::ai("Paris"), Message::human("Germany?")]);
    let (_, child) = step(&*store, &first, &messages, Message::ai("Berlin"), &options).await;
    step(
        &*store,
        &second,
        &[Message::human("Hi")],
        Message::ai("Hello"),
        &options,
    )
    .await;

    let listed = store.conversations(10).await.unwrap();
    let order: Vec<&ConversationId> = listed.iter().map(|summary| &summary.id).collect();
    assert_eq!(order, [&second, &first]);
    assert_eq!(
        store.latest_node(&first).await.unwrap(),
        Some(child.clone())
    );
    // A cache hit on the root makes it the latest: that is where the user is now.
    store
        .find_or_create_path(&first, &france(), &options)
        .await
        .unwrap();
    assert_eq!(store.latest_node(&first).await.unwrap(), Some(root));
    assert_eq!(store.conversations(1).await.unwrap()[0].id, first);
    assert_eq!(
        store.latest_node(&ConversationId::random()).await.unwrap(),
        None
    );
}

pub(crate) async fn bad_requests_are_typed_errors(harness: &impl Harness) {
    let store = harness.open().await;
    let options = deterministic();
    let (first, second) = (ConversationId::random(), ConversationId::random());
    let (_, root) = step(&*store, &first, &france(), Message::ai("Paris"), &options).await;
    let log = |conversation: &ConversationId, parent, input: Vec<Message>, response| {
        store.log_response(NewResponse::new(
            conversation.clone(),
            parent,
            input,
            response,
            &options,
        ))
    };

    let missing = "999999999".parse().unwrap();
    assert!(matches!(
        log(&first, Some(missing), vec![Message::human("x")], Message::ai("y")).await,
        Err(StoreError::UnknownNode { id }) if id == missing
    ));
    assert!(matches!(
        log(&second, Some(root.id()), vec![Message::human("x")], Message::ai("y")).await,
        Err(StoreError::ParentInOtherConversation { parent, .. }) if parent == root.id()
    ));
    assert!(matches!(
        log(
            &first,
            None,
            vec![Message::human("x"), Message::ai("y")],
            Message::ai("z")
        )
        .await,
        Err(StoreError::InvalidTurn { .. })
    ));
    assert!(matches!(
        log(&first, None, vec![Message::human("x")], Message::human("y")).await,
        Err(StoreError::InvalidTurn { .. })
    ));
    assert!(matches!(
        store.turn(missing).await,
        Err(StoreError::UnknownNode { .. })
    ));
    assert!(matches!(
        store.children(missing).await,
        Err(StoreError::UnknownNode { .. })
    ));
    assert!(matches!(
        store.path_to_root(missing).await,
        Err(StoreError::UnknownNode { .. })
    ));
    assert!(matches!(
        store.messages_for_path(missing).await,
        Err(StoreError::UnknownNode { .. })
    ));
    assert_eq!(store.node(missing).await.unwrap(), None);
    // Nothing was written by the failures.
    assert_eq!(store.conversation_nodes(&first).await.unwrap(), vec![root]);
    assert!(store.conversation(&second).await.unwrap().is_none());
}

/// A node keeps how long its call took to send its first output and to end, to the
/// millisecond, across a reopen; a call whose output never arrived has no time to first token.
pub(crate) async fn timings_are_stored_to_the_millisecond(harness: &impl Harness) {
    use std::time::Duration;

    let conversation = ConversationId::random();
    let options = sampling();
    let messages = france();
    let store = harness.open().await;
    let path = store
        .find_or_create_path(&conversation, &messages, &options)
        .await
        .unwrap();
    let entry = |answer: &str| {
        NewResponse::new(
            conversation.clone(),
            path.parent(),
            path.pending_input(&messages).to_vec(),
            Message::ai(answer),
            &options,
        )
    };
    let timed = store
        .log_response(
            entry("Paris")
                .duration(Duration::from_micros(420_700))
                .ttft(Duration::from_micros(180_400)),
        )
        .await
        .unwrap();
    assert_eq!(timed.ttft(), Some(Duration::from_millis(180)));
    assert_eq!(timed.duration(), Some(Duration::from_millis(420)));
    let silent = store
        .log_response(entry("").duration(Duration::from_millis(5)))
        .await
        .unwrap();
    assert_eq!(silent.ttft(), None);
    drop(store);
    let store = harness.open().await;
    assert_eq!(store.node(timed.id()).await.unwrap(), Some(timed));
    assert_eq!(store.node(silent.id()).await.unwrap(), Some(silent));
}

//! The edge cases: media, tool arguments, reasoning, unicode, a 1 MB prompt.

use conversation_tree::{
    ContentPart, ConversationId, Message, Reasoning, Role, ToolCall, ToolResponse, prompt_hash,
    response_hash,
};

use super::{Harness, deterministic, step};

pub(crate) async fn equal_image_bytes_at_different_paths_hash_equal(harness: &impl Harness) {
    let dir = tempfile::tempdir().unwrap();
    let bytes: Vec<u8> = (0..4096u32).map(|i| (i * 7 % 251) as u8).collect();
    let (first, second) = (dir.path().join("a/cat.png"), dir.path().join("b/copy.png"));
    for path in [&first, &second] {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, &bytes).unwrap();
    }
    let ask = |path: &std::path::Path| {
        vec![Message::new(
            Role::Human,
            vec![
                ContentPart::text("What is in this picture?"),
                ContentPart::binary("image/png", std::fs::read(path).unwrap()),
            ],
        )]
    };
    let options = deterministic();
    assert_eq!(
        prompt_hash(&ask(&first), &options.hash),
        prompt_hash(&ask(&second), &options.hash)
    );

    let store = harness.open().await;
    let conversation = ConversationId::random();
    let (_, node) = step(
        &*store,
        &conversation,
        &ask(&first),
        Message::ai("A cat"),
        &options,
    )
    .await;
    let hit = store
        .find_or_create_path(&conversation, &ask(&second), &options)
        .await
        .unwrap();
    assert_eq!(hit.cache_hit.map(|hit| hit.id()), Some(node.id()));
    // Other bytes are another prompt.
    let mut other = ask(&first);
    other[0].parts[1] = ContentPart::binary("image/png", vec![1, 2, 3]);
    let miss = store
        .find_or_create_path(&conversation, &other, &options)
        .await
        .unwrap();
    assert!(miss.cache_hit.is_none() && miss.alternatives.is_empty());
    assert_eq!(store.turn(node.id()).await.unwrap().input, ask(&first));
}

pub(crate) async fn url_only_attachments_match_by_url(harness: &impl Harness) {
    let store = harness.open().await;
    let conversation = ConversationId::random();
    let options = deterministic();
    let ask = |url: &str| {
        vec![Message::new(
            Role::Human,
            vec![
                ContentPart::text("Describe"),
                ContentPart::ImageUrl {
                    url: url.into(),
                    detail: Some("low".into()),
                },
            ],
        )]
    };
    let (_, node) = step(
        &*store,
        &conversation,
        &ask("https://example.com/cat.png"),
        Message::ai("A cat"),
        &options,
    )
    .await;
    let same = store
        .find_or_create_path(&conversation, &ask("https://example.com/cat.png"), &options)
        .await
        .unwrap();
    assert_eq!(same.cache_hit.map(|hit| hit.id()), Some(node.id()));
    let other = store
        .find_or_create_path(&conversation, &ask("https://example.com/dog.png"), &options)
        .await
        .unwrap();
    assert!(other.cache_hit.is_none());
    // Stored as given, detail hint included.
    assert_eq!(
        store.turn(node.id()).await.unwrap().input,
        ask("https://example.com/cat.png")
    );
}

fn weather_turns(arguments: &str, call_id: &str) -> Vec<Message> {
    let mut call = ToolCall::new(call_id, "get_weather", arguments);
    call.reasoning = Some(Reasoning::signature("sig-call"));
    vec![
        Message::human("Weather in Paris?"),
        Message::ai_tool_calls(Some("Let me check.".into()), vec![call]),
        Message::new(
            Role::Tool,
            vec![
                ContentPart::ToolResponse(ToolResponse::new(call_id, "get_weather", "18°C")),
                ContentPart::binary("image/png", vec![9, 8, 7]),
            ],
        ),
    ]
}

pub(crate) async fn nested_tool_arguments_match_whatever_their_key_order(harness: &impl Harness) {
    let store = harness.open().await;
    let conversation = ConversationId::random();
    let options = deterministic();
    let original = weather_turns(
        r#"{"city":"Paris","when":{"day":"today","hours":[9,12,18]},"units":{"temp":"C"}}"#,
        "call_1",
    );
    let (_, call_node) = step(
        &*store,
        &conversation,
        &original[..1],
        original[1].clone(),
        &options,
    )
    .await;
    let (_, answer) = step(
        &*store,
        &conversation,
        &original,
        Message::ai("18°C and clear"),
        &options,
    )
    .await;
    assert_eq!(answer.parent(), Some(call_node.id()));

    // The same conversation as another client writes it: keys reordered, spaced, new ids.
    let mut replay = weather_turns(
        "{ \"units\" : {\"temp\":\"C\"},\n \"when\": {\"hours\": [9, 12, 18], \"day\": \"today\"}, \"city\": \"Paris\" }",
        "toolu_other",
    );
    let path = store
        .find_or_create_path(&conversation, &replay, &options)
        .await
        .unwrap();
    assert_eq!(path.node_ids(), vec![call_node.id()]);
    assert!(path.fully_matched());
    assert_eq!(path.cache_hit.map(|hit| hit.id()), Some(answer.id()));
    // Other argument values are another call: a branch.
    replay[1] = Message::ai_tool_calls(
        Some("Let me check.".into()),
        vec![ToolCall::new("c", "get_weather", r#"{"city":"Lyon"}"#)],
    );
    let branch = store
        .find_or_create_path(&conversation, &replay, &options)
        .await
        .unwrap();
    assert!(branch.turns[0].created);
    // The stored messages are the original ones, ids and argument text as the model wrote them.
    let mut expected = original.clone();
    expected.push(Message::ai("18°C and clear"));
    assert_eq!(
        store.messages_for_path(answer.id()).await.unwrap(),
        expected
    );
}

pub(crate) async fn reasoning_round_trips_and_stripping_it_still_matches(harness: &impl Harness) {
    let store = harness.open().await;
    let conversation = ConversationId::random();
    let options = deterministic();
    let question = vec![Message::human("Think, then answer: 6 × 7?")];
    let answer = Message::new(
        Role::Ai,
        vec![
            ContentPart::Reasoning(Reasoning {
                id: Some("rs_1".into()),
                text: "Six sevens.".into(),
                signature: Some("EqQBCkYIBxgCKkA=".into()),
                encrypted: None,
            }),
            ContentPart::Reasoning(Reasoning {
                encrypted: Some("gAAAAAB…redacted".into()),
                ..Default::default()
            }),
            ContentPart::Text {
                text: "42".into(),
                reasoning: Some(Reasoning::signature("sig-text")),
            },
        ],
    );
    let (_, node) = step(&*store, &conversation, &question, answer.clone(), &options).await;
    let stripped = Message::ai("42");
    assert_eq!(response_hash(&stripped), node.response_hash());

    let mut history = question.clone();
    history.push(stripped);
    history.push(Message::human("And 6 × 8?"));
    let path = store
        .find_or_create_path(&conversation, &history, &options)
        .await
        .unwrap();
    assert_eq!(path.node_ids(), vec![node.id()]);
    assert!(path.fully_matched());
    // Continuing from the store gives back the reasoning, exactly.
    let mut expected = question;
    expected.push(answer);
    assert_eq!(store.messages_for_path(node.id()).await.unwrap(), expected);
}

pub(crate) async fn unicode_round_trips_exactly(harness: &impl Harness) {
    let store = harness.open().await;
    let conversation = ConversationId::new("unicode-✓-会話").unwrap();
    let options = deterministic();
    let texts = [
        "Größe? 日本語 🎉👩‍👩‍👧 עברית",
        "e\u{301} vs é, \u{2028} line separator, NUL-free \u{7f} and \t\r\n",
        "",
    ];
    let mut messages = Vec::new();
    let mut last = None;
    for text in texts {
        messages.push(Message::human(text));
        let answer = Message::ai(format!("echo: {text}"));
        let (_, node) = step(&*store, &conversation, &messages, answer.clone(), &options).await;
        messages.push(answer);
        last = Some(node);
    }
    let last = last.unwrap();
    assert_eq!(store.messages_for_path(last.id()).await.unwrap(), messages);
    let replay = store
        .find_or_create_path(&conversation, &messages, &options)
        .await
        .unwrap();
    assert_eq!(replay.turns.len(), texts.len());
    assert!(replay.fully_matched());
    // Composed and decomposed forms are different text: no normalisation happens.
    assert_ne!(
        prompt_hash(&[Message::human("é")], &options.hash),
        prompt_hash(&[Message::human("e\u{301}")], &options.hash)
    );
    let summary = store.conversation(&conversation).await.unwrap().unwrap();
    assert_eq!(summary.name.as_deref(), Some("Größe? 日本語 🎉👩‍👩‍👧 עברית"));
}

pub(crate) async fn a_one_megabyte_prompt_is_stored_and_found(harness: &impl Harness) {
    let store = harness.open().await;
    let conversation = ConversationId::random();
    let options = deterministic();
    let text: String = "All work and no play makes Jack a dull boy. ❄\n"
        .chars()
        .cycle()
        .take(1 << 20)
        .collect();
    let messages = vec![Message::human(text)];
    let (_, node) = step(
        &*store,
        &conversation,
        &messages,
        Message::ai("Here's Johnny!"),
        &options,
    )
    .await;
    assert_eq!(store.turn(node.id()).await.unwrap().input, messages);
    let hit = store
        .find_or_create_path(&conversation, &messages, &options)
        .await
        .unwrap();
    assert_eq!(hit.cache_hit.map(|hit| hit.id()), Some(node.id()));
    let summary = store.conversation(&conversation).await.unwrap().unwrap();
    assert_eq!(summary.name.map(|name| name.chars().count()), Some(81));
}

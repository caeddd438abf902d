//! Bad input: malformed transcripts, unknown roles, responses to unknown ids, empty chains and
//! huge messages give a typed error or a documented repair, never a panic, and the input is
//! never changed.

use crate::common;

use chain_ast::{ChainAst, ChainError, FALLBACK_REQUEST_ARGS};
use messages::{ContentPart, Message, Role, ToolCall, ToolResponse, TranscriptError};

#[test]
fn malformed_transcript_json_is_a_typed_error() {
    for text in [
        "",
        "{",
        "[{\"role\": \"human\"",
        "[1, 2]",
        "{\"role\": \"human\", \"parts\": []}",
        "[{\"role\": \"human\", \"parts\": [{\"type\": \"text\"}]}]",
    ] {
        let error = messages::transcript::from_json(text).expect_err("malformed");
        let TranscriptError::Invalid { line, column, .. } = &error;
        assert!(*line >= 1, "{text:?}: {error}");
        assert!(
            error
                .to_string()
                .contains(&format!("line {line}, column {column}"))
        );
    }
}

#[test]
fn unknown_roles_and_part_types_are_typed_errors() {
    let unknown_role = r#"[{"role": "assistant", "parts": [{"type": "text", "text": "hi"}]}]"#;
    let error = messages::transcript::from_json(unknown_role).expect_err("unknown role");
    assert!(error.to_string().contains("assistant"), "{error}");
    let unknown_part = r#"[{"role": "human", "parts": [{"type": "video", "url": "x"}]}]"#;
    assert!(messages::transcript::from_json(unknown_part).is_err());
}

#[test]
fn a_response_to_an_unknown_id_is_an_error_or_a_documented_repair() {
    let chain = vec![
        Message::human("Hi"),
        Message::ai_tool_calls(None, vec![ToolCall::new("a", "f", "{}")]),
        Message::new(
            Role::Tool,
            vec![
                ContentPart::ToolResponse(ToolResponse::new("a", "f", "ok")),
                ContentPart::ToolResponse(ToolResponse::new("ghost", "g", "boo")),
            ],
        ),
    ];
    let before = chain.clone();
    assert_eq!(
        ChainAst::new(&chain, false),
        Err(ChainError::UnknownToolCall {
            index: 2,
            ai_index: 1,
            id: "ghost".into()
        })
    );
    let ast = ChainAst::new(&chain, true).expect("repaired");
    let ai = ast.sections()[0].body()[0].ai();
    assert_eq!(
        ai.tool_calls().last(),
        Some(&ToolCall::new("ghost", "g", FALLBACK_REQUEST_ARGS))
    );
    assert_eq!(chain, before, "the input is not changed");
    ast.validate().expect("valid");

    // The mutator has its own error.
    let mut ast = ChainAst::new(&chain[..1], false).expect("valid");
    assert_eq!(
        ast.add_tool_response("ghost", "g", "boo"),
        Err(ChainError::ToolCallNotFound { id: "ghost".into() })
    );
}

#[test]
fn empty_chains_and_empty_messages() {
    let ast = ChainAst::new(&[], false).expect("empty is valid");
    assert!(ast.is_empty() && ast.size() == 0 && ast.messages().is_empty());
    ast.validate().expect("valid");
    assert_eq!(
        ast.to_string(),
        "ChainAst: 0 sections, 0 messages, 0 bytes\n"
    );

    // Messages without parts are structure like any other.
    let chain = vec![
        Message::new(Role::Human, Vec::new()),
        Message::new(Role::Ai, Vec::new()),
        Message::new(Role::Tool, Vec::new()),
    ];
    assert_eq!(
        ChainAst::new(&chain, false),
        Err(ChainError::UnexpectedToolMessage { index: 2 })
    );
    let ast = ChainAst::new(&chain, true).expect("repaired");
    assert_eq!(ast.messages(), chain[..2].to_vec());
}

#[test]
fn huge_messages() {
    // A 16 MiB text, a 4 MiB binary and a message of 100 000 parts.
    let text = "x".repeat(16 << 20);
    let many: Vec<ContentPart> = (0..100_000)
        .map(|n| ContentPart::text(n.to_string()))
        .collect();
    let many_size: usize = (0..100_000).map(|n: usize| n.to_string().len()).sum();
    let chain = vec![
        Message::system(text.clone()),
        Message::new(Role::Human, many.clone()),
        Message::new(
            Role::Human,
            vec![ContentPart::binary("application/pdf", vec![7u8; 4 << 20])],
        ),
        Message::ai("ok"),
    ];
    assert_eq!(
        ChainAst::new(&chain, false),
        Err(ChainError::ConsecutiveHumans { index: 2 })
    );
    let ast = ChainAst::new(&chain, true).expect("repaired");
    assert_eq!(ast.size(), (16 << 20) + many_size + (4 << 20) + 2);
    assert_eq!(
        ast.sections()[0].header().human().map(|h| h.parts.len()),
        Some(100_001)
    );
    common::assert_sizes_exact(&ast);

    // 100 000 consecutive human messages merge in linear time.
    let humans = vec![Message::human("again"); 100_000];
    let ast = ChainAst::new(&humans, true).expect("repaired");
    assert_eq!(ast.size(), 5 * 100_000);
    assert_eq!(ast.message_count(), 1);

    // A tool message answering the same call 100 000 times keeps the first answer.
    let mut parts = vec![ContentPart::ToolResponse(ToolResponse::new("a", "f", "r")); 100_000];
    parts.push(ContentPart::text("tail"));
    let chain = vec![
        Message::human("Hi"),
        Message::ai_tool_calls(None, vec![ToolCall::new("a", "f", "{}")]),
        Message::new(Role::Tool, parts),
    ];
    let (ast, repairs) = ChainAst::repair(&chain);
    assert_eq!(repairs.len(), 99_999);
    assert_eq!(ast.sections()[0].body()[0].tools()[0].parts.len(), 2);
    ast.validate().expect("valid");
}

//! One test per validation rule: the strict error (variant, rule, index, message) and the
//! repair `force = true` makes, which must itself pass strict validation.

use crate::common;

use chain_ast::{
    ChainAst, ChainError, FALLBACK_REQUEST_ARGS, FALLBACK_RESPONSE_CONTENT, Rule,
    SUMMARIZATION_TOOL_ARGS, SUMMARIZATION_TOOL_NAME,
};
use messages::{ContentPart, Message, Role, ToolCall, ToolResponse};

fn calls(ids: &[&str]) -> Message {
    Message::ai_tool_calls(
        None,
        ids.iter()
            .map(|id| ToolCall::new(*id, "get_weather", "{}"))
            .collect(),
    )
}

/// Strict construction fails with `expected`; the message names the rule and says how to repair.
fn assert_breaks(chain: &[Message], expected: ChainError, rule: Rule) {
    let error = ChainAst::new(chain, false).expect_err("strict construction must fail");
    assert_eq!(error, expected);
    assert_eq!(error.rule(), Some(rule));
    let text = error.to_string();
    assert!(
        text.starts_with(&format!("rule {} (", rule.number())),
        "{text}"
    );
    assert!(
        text.contains(
            &error
                .index()
                .expect("rule errors carry an index")
                .to_string()
        ),
        "{text}"
    );
    assert!(text.contains("ChainAst::new(messages, true)"), "{text}");
}

/// Repairs `chain`, checks the repair list starts with the strict error and the result is valid.
fn repaired(chain: &[Message]) -> ChainAst {
    let strict = ChainAst::new(chain, false).expect_err("chain is invalid");
    let (ast, repairs) = ChainAst::repair(chain);
    assert_eq!(repairs.first(), Some(&strict));
    ast.validate()
        .expect("a repaired chain passes strict validation");
    ChainAst::new(&ast.messages(), false).expect("and so do its messages");
    assert_eq!(ChainAst::new(chain, true).expect("force never fails"), ast);
    common::assert_sizes_exact(&ast);
    ast
}

#[test]
fn rule_1_first_message_must_be_system_or_human() {
    let chain = vec![Message::ai("Hi"), Message::human("Hello")];
    assert_breaks(
        &chain,
        ChainError::InvalidFirstMessage {
            index: 0,
            role: Role::Ai,
        },
        Rule::FirstMessage,
    );
    let chain = vec![
        Message::tool_response("a", "f", "x"),
        Message::human("Hello"),
    ];
    assert_breaks(
        &chain,
        ChainError::InvalidFirstMessage {
            index: 0,
            role: Role::Tool,
        },
        Rule::FirstMessage,
    );
    // Repair: leading messages before the first system or human message are dropped.
    let ast = repaired(&[
        Message::ai("Hi"),
        Message::tool_response("a", "f", "x"),
        Message::human("Hello"),
    ]);
    assert_eq!(ast.messages(), vec![Message::human("Hello")]);
}

#[test]
fn rule_2_no_consecutive_humans() {
    let chain = vec![
        Message::system("S"),
        Message::human("First human message"),
        Message::human("Second human message"),
    ];
    assert_breaks(
        &chain,
        ChainError::ConsecutiveHumans { index: 2 },
        Rule::ConsecutiveHumans,
    );
    let ast = repaired(&chain);
    assert_eq!(ast.sections().len(), 1);
    let human = ast.sections()[0].header().human().expect("human");
    assert_eq!(
        human.parts,
        vec![
            ContentPart::text("First human message"),
            ContentPart::text("Second human message")
        ]
    );
}

#[test]
fn rule_3_tool_calls_need_responses() {
    let chain = vec![Message::human("Weather?"), calls(&["b", "a"])];
    assert_breaks(
        &chain,
        ChainError::MissingToolResponses {
            index: 1,
            ids: vec!["a".into(), "b".into()],
        },
        Rule::ToolCallsAnswered,
    );
    // Also when the next section starts before the responses came.
    let chain = vec![
        Message::human("Weather?"),
        calls(&["a"]),
        Message::human("Well?"),
    ];
    assert_breaks(
        &chain,
        ChainError::MissingToolResponses {
            index: 1,
            ids: vec!["a".into()],
        },
        Rule::ToolCallsAnswered,
    );
    let ast = repaired(&chain);
    let pair = &ast.sections()[0].body()[0];
    assert_eq!(
        pair.tools(),
        &[Message::tool_response(
            "a",
            "get_weather",
            FALLBACK_RESPONSE_CONTENT
        )]
    );
    assert_eq!(
        ast.sections().len(),
        2,
        "the fallback lands in the first section"
    );
}

#[test]
fn rule_4_tool_message_needs_a_preceding_ai_message_with_calls() {
    let chain = vec![
        Message::system("S"),
        Message::human("Hi"),
        Message::ai("Hello"),
        Message::tool_response("tool-1", "get_weather", "sunny"),
    ];
    assert_breaks(
        &chain,
        ChainError::UnexpectedToolMessage { index: 3 },
        Rule::ResponsesMatchCalls,
    );
    let ast = repaired(&chain);
    assert_eq!(
        ast.messages(),
        chain[..3].to_vec(),
        "the stray tool message is dropped"
    );

    let after_human = vec![Message::human("Hi"), Message::tool_response("a", "f", "x")];
    assert_breaks(
        &after_human,
        ChainError::UnexpectedToolMessage { index: 1 },
        Rule::ResponsesMatchCalls,
    );
}

#[test]
fn rule_4_responses_must_answer_calls_of_their_pair() {
    let chain = vec![
        Message::human("Hi"),
        calls(&["a"]),
        Message::tool_response("a", "get_weather", "sunny"),
        Message::tool_response("zzz", "get_time", "noon"),
    ];
    assert_breaks(
        &chain,
        ChainError::UnknownToolCall {
            index: 3,
            ai_index: 1,
            id: "zzz".into(),
        },
        Rule::ResponsesMatchCalls,
    );
    // Repair: the AI message gets the call the response answers.
    let ast = repaired(&chain);
    let ai = ast.sections()[0].body()[0].ai();
    assert_eq!(
        ai.tool_calls().last(),
        Some(&ToolCall::new("zzz", "get_time", FALLBACK_REQUEST_ARGS))
    );
}

#[test]
fn rule_4_a_call_is_answered_once() {
    let chain = vec![
        Message::human("Hi"),
        calls(&["a"]),
        Message::tool_response("a", "get_weather", "sunny"),
        Message::new(
            Role::Tool,
            vec![
                ContentPart::ToolResponse(ToolResponse::new("a", "get_weather", "again")),
                ContentPart::text("note"),
            ],
        ),
        Message::tool_response("a", "get_weather", "and again"),
    ];
    assert_breaks(
        &chain,
        ChainError::DuplicateToolResponse {
            index: 3,
            id: "a".into(),
        },
        Rule::ResponsesMatchCalls,
    );
    // Repair: duplicates go; a tool message left empty goes too.
    let ast = repaired(&chain);
    let tools = ast.sections()[0].body()[0].tools();
    assert_eq!(
        tools,
        &[
            Message::tool_response("a", "get_weather", "sunny"),
            Message::new(Role::Tool, vec![ContentPart::text("note")]),
        ]
    );
}

#[test]
fn rule_5_system_messages_anywhere_but_inside_a_tool_round() {
    // A system message after the conversation began opens a section of its own: the chain
    // keeps it where the client put it.
    let chain = vec![
        Message::human("Hi"),
        Message::ai("Hello"),
        Message::system("Be brief."),
    ];
    let ast = ChainAst::new(&chain, false).expect("valid");
    assert_eq!(ast.messages(), chain);
    assert_eq!(ast.sections().len(), 2);
    assert_eq!(
        ast.sections()[1].header().system(),
        Some(&Message::system("Be brief."))
    );

    // Two system messages in a row stay two messages.
    let chain = vec![
        Message::system("A"),
        Message::system("B"),
        Message::human("Hi"),
    ];
    let ast = ChainAst::new(&chain, false).expect("valid");
    assert_eq!(ast.messages(), chain);

    // After a tool round (pydantic-ai's retry of a failed validation), and the chain may end
    // with it.
    let chain = vec![
        Message::system("S"),
        Message::human("Q"),
        Message::ai_tool_calls(None, vec![ToolCall::new("a", "final_result", "{}")]),
        Message::tool_response("a", "final_result", "invalid"),
        Message::system("Fix the errors and try again."),
    ];
    assert_eq!(
        ChainAst::new(&chain, false).expect("valid").messages(),
        chain
    );

    // Between a call and its response it would split the round.
    let chain = vec![
        Message::human("Q"),
        Message::ai_tool_calls(None, vec![ToolCall::new("a", "t", "{}")]),
        Message::system("S"),
        Message::tool_response("a", "t", "r"),
    ];
    assert_breaks(
        &chain,
        ChainError::SystemBeforeToolResponses {
            index: 2,
            ai_index: 1,
            ids: vec!["a".into()],
        },
        Rule::SystemOutsideToolRounds,
    );
    let ast = repaired(&chain);
    assert_eq!(
        ast.messages(),
        vec![
            chain[0].clone(),
            chain[1].clone(),
            Message::tool_response("a", "t", FALLBACK_RESPONSE_CONTENT),
            chain[2].clone(),
        ],
        "the call is answered with the fallback, the late response dropped"
    );
}

#[test]
fn rule_6_calls_answered_before_the_next_ai_message() {
    let chain = vec![
        Message::human("Hi"),
        calls(&["a", "b"]),
        Message::tool_response("b", "get_weather", "ok"),
        Message::ai("Done"),
    ];
    assert_breaks(
        &chain,
        ChainError::AiBeforeToolResponses {
            index: 3,
            ai_index: 1,
            ids: vec!["a".into()],
        },
        Rule::AnsweredBeforeNextAi,
    );
    let ast = repaired(&chain);
    let body = ast.sections()[0].body();
    assert_eq!(body.len(), 2);
    assert_eq!(
        body[0].tools().last(),
        Some(&Message::tool_response(
            "a",
            "get_weather",
            FALLBACK_RESPONSE_CONTENT
        ))
    );
    assert!(body[0].is_valid());
}

#[test]
fn rule_7_summarization_pair_has_one_tool_message() {
    let ai = Message::ai_tool_calls(
        None,
        vec![
            ToolCall::new("s1", SUMMARIZATION_TOOL_NAME, SUMMARIZATION_TOOL_ARGS),
            ToolCall::new("x", "get_x", "{}"),
        ],
    );
    let chain = vec![
        Message::human("Summarize"),
        ai,
        Message::tool_response("s1", SUMMARIZATION_TOOL_NAME, "summary"),
        Message::tool_response("x", "get_x", "x"),
    ];
    assert_breaks(
        &chain,
        ChainError::SummarizationToolMessages {
            index: 3,
            ai_index: 1,
        },
        Rule::OneSummarizationResponse,
    );
    let ast = repaired(&chain);
    let pair = &ast.sections()[0].body()[0];
    assert_eq!(pair.tools().len(), 1);
    assert_eq!(pair.tools()[0].tool_responses().count(), 2);
    assert!(pair.is_valid());
}

#[test]
fn summarization_fallbacks_join_the_one_tool_message() {
    let ai = Message::ai_tool_calls(
        None,
        vec![
            ToolCall::new("s1", SUMMARIZATION_TOOL_NAME, SUMMARIZATION_TOOL_ARGS),
            ToolCall::new("x", "get_x", "{}"),
        ],
    );
    let chain = vec![
        Message::human("Summarize"),
        ai,
        Message::tool_response("s1", SUMMARIZATION_TOOL_NAME, "s"),
    ];
    let ast = repaired(&chain);
    let pair = &ast.sections()[0].body()[0];
    assert_eq!(pair.tools().len(), 1);
    assert!(pair.is_valid());
}

#[test]
fn human_after_ai_in_a_system_only_section_starts_a_new_section() {
    // Accepted as a new section: the order is kept and the chain is valid.
    let chain = vec![
        Message::system("S"),
        Message::ai("Welcome!"),
        Message::human("Hi"),
    ];
    let ast = ChainAst::new(&chain, false).expect("valid");
    assert_eq!(ast.sections().len(), 2);
    assert!(ast.sections()[0].header().human().is_none());
    assert_eq!(ast.messages(), chain);
}

#[test]
fn every_rule_error_names_its_rule_and_index() {
    let errors = [
        ChainError::InvalidFirstMessage {
            index: 4,
            role: Role::Ai,
        },
        ChainError::ConsecutiveHumans { index: 4 },
        ChainError::MissingToolResponses {
            index: 4,
            ids: vec!["a".into()],
        },
        ChainError::UnexpectedToolMessage { index: 4 },
        ChainError::UnknownToolCall {
            index: 4,
            ai_index: 1,
            id: "a".into(),
        },
        ChainError::DuplicateToolResponse {
            index: 4,
            id: "a".into(),
        },
        ChainError::SystemBeforeToolResponses {
            index: 4,
            ai_index: 1,
            ids: vec!["a".into()],
        },
        ChainError::AiBeforeToolResponses {
            index: 4,
            ai_index: 1,
            ids: vec!["a".into()],
        },
        ChainError::SummarizationToolMessages {
            index: 4,
            ai_index: 1,
        },
    ];
    let mut rules: Vec<u8> = errors
        .iter()
        .map(|error| {
            let rule = error.rule().expect("a rule error");
            assert_eq!(error.index(), Some(4));
            assert!(error.to_string().contains(&rule.to_string()));
            rule.number()
        })
        .collect();
    rules.dedup();
    assert_eq!(
        rules,
        vec![1, 2, 3, 4, 5, 6, 7],
        "each of the seven rules has an error"
    );
    assert_eq!(ChainError::NoSection.rule(), None);
}

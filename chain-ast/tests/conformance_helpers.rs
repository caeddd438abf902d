//! Conformance of the chain AST's helpers: body pair constructors, reasoning helpers, tool-call
//! id normalisation, clearing reasoning and sanitising arguments.
//!
//! Nothing tests dropping calls without a function: a Skein `ToolCall` always has a name and
//! arguments, so there is no "nil function call" to drop.

use crate::common;

use chain_ast::{
    BodyPair, BodyPairKind, ChainAst, ChainError, FAKE_THOUGHT_SIGNATURE, IdTemplate,
    SUMMARIZATION_TOOL_ARGS, SUMMARIZATION_TOOL_NAME, contains_tool_call_reasoning,
    extract_reasoning_message, sanitize_json_control_chars,
};
use messages::{ContentPart, Message, Reasoning, Role, ToolCall};

fn thought(text: &str) -> Reasoning {
    Reasoning {
        text: text.to_owned(),
        signature: Some(format!("sig-{text}")),
        ..Reasoning::default()
    }
}

fn signed_call(id: &str, name: &str) -> ToolCall {
    ToolCall {
        reasoning: Some(thought("call")),
        ..ToolCall::new(id, name, "{}")
    }
}

fn reasoned_text(text: &str, reasoning: Reasoning) -> ContentPart {
    ContentPart::Text {
        text: text.to_owned(),
        reasoning: Some(reasoning),
    }
}

fn calls_ai(calls: Vec<ToolCall>) -> Message {
    Message::ai_tool_calls(None, calls)
}

#[test]
fn body_pair_new() {
    let completion = BodyPair::new(Message::ai("answer"), Vec::new()).expect("roles");
    assert_eq!(completion.kind(), BodyPairKind::Completion);
    assert!(completion.is_valid());
    let multi = Message::new(
        Role::Ai,
        vec![ContentPart::text("a"), ContentPart::text("b")],
    );
    assert_eq!(
        BodyPair::new(multi, Vec::new()).expect("roles").kind(),
        BodyPairKind::Completion
    );

    let rr = BodyPair::new(
        calls_ai(vec![ToolCall::new("t", "f", "{}")]),
        vec![Message::tool_response("t", "f", "r")],
    )
    .expect("roles");
    assert_eq!(rr.kind(), BodyPairKind::RequestResponse);
    assert!(rr.is_valid());

    let summary_call = ToolCall::new("s", SUMMARIZATION_TOOL_NAME, SUMMARIZATION_TOOL_ARGS);
    let summary = BodyPair::new(
        calls_ai(vec![summary_call]),
        vec![Message::tool_response("s", SUMMARIZATION_TOOL_NAME, "sum")],
    )
    .expect("roles");
    assert_eq!(summary.kind(), BodyPairKind::Summarization);
    assert!(summary.is_valid());

    assert!(matches!(
        BodyPair::new(Message::ai("x"), vec![Message::human("no")]),
        Err(ChainError::WrongRole {
            constructor: "BodyPair::new",
            index: 1,
            expected: Role::Tool,
            found: Role::Human
        })
    ));
    // A request-response pair without its responses is not (yet) valid.
    let pending =
        BodyPair::new(calls_ai(vec![ToolCall::new("t", "f", "{}")]), Vec::new()).expect("roles");
    assert!(!pending.is_valid());
    assert_eq!(
        pending
            .tool_calls_info()
            .pending
            .keys()
            .copied()
            .collect::<Vec<_>>(),
        ["t"]
    );
}

#[test]
fn body_pair_from_messages() {
    let one = BodyPair::from_messages(vec![
        calls_ai(vec![ToolCall::new("t1", "f", "{}")]),
        Message::tool_response("t1", "f", "r"),
    ])
    .expect("pair");
    assert_eq!(
        (one.kind(), one.ai().tool_calls().count()),
        (BodyPairKind::RequestResponse, 1)
    );
    let two = BodyPair::from_messages(vec![
        calls_ai(vec![
            ToolCall::new("t1", "f", "{}"),
            ToolCall::new("t2", "g", "{}"),
        ]),
        Message::tool_response("t1", "f", "r"),
        Message::tool_response("t2", "g", "r"),
    ])
    .expect("pair");
    assert_eq!((two.ai().tool_calls().count(), two.tools().len()), (2, 2));
    assert!(two.is_valid());
    let completion = BodyPair::from_messages(vec![Message::ai("hi")]).expect("pair");
    assert_eq!(completion.kind(), BodyPairKind::Completion);

    assert_eq!(
        BodyPair::from_messages(Vec::new()),
        Err(ChainError::EmptyBodyPair)
    );
    assert!(matches!(
        BodyPair::from_messages(vec![Message::tool_response("t", "f", "r")]),
        Err(ChainError::WrongRole {
            index: 0,
            expected: Role::Ai,
            ..
        })
    ));
    let error = BodyPair::from_messages(vec![
        Message::ai("a"),
        Message::tool_response("t", "f", "r"),
        Message::human("h"),
    ])
    .expect_err("a human message in a body pair");
    assert!(matches!(
        error,
        ChainError::WrongRole {
            index: 2,
            found: Role::Human,
            ..
        }
    ));
    assert!(
        error.to_string().contains("BodyPair::from_messages"),
        "{error}"
    );
}

#[test]
fn body_pair_from_summarization() {
    let pair = BodyPair::from_summarization("This is a summary", &IdTemplate::default(), false);
    assert_eq!(pair.kind(), BodyPairKind::Summarization);
    let call = pair.ai().tool_calls().next().expect("a call");
    assert_eq!(
        (call.name.as_str(), call.arguments.as_str()),
        (SUMMARIZATION_TOOL_NAME, SUMMARIZATION_TOOL_ARGS)
    );
    assert_eq!(call.reasoning, None);
    assert!(
        call.id.starts_with("call_") && call.id.len() == 29,
        "{}",
        call.id
    );
    assert_eq!(
        pair.tools(),
        &[Message::tool_response(
            &call.id,
            SUMMARIZATION_TOOL_NAME,
            "This is a summary"
        )]
    );
    assert!(pair.is_valid() && pair.is_summary());
    // Overhead of a summarization pair with a 29-character id: call 29+31+84, response 29+31.
    assert_eq!(
        pair.size(),
        29 + 31 + 84 + 29 + 31 + "This is a summary".len()
    );

    let empty = BodyPair::from_summarization("", &IdTemplate::default(), false);
    assert!(empty.is_valid());
}

#[test]
fn body_pair_from_summarization_with_fake_signature() {
    let pair = BodyPair::from_summarization("Summary", &IdTemplate::default(), true);
    let call = pair.ai().tool_calls().next().expect("a call");
    assert_eq!(
        call.reasoning,
        Some(Reasoning::signature(FAKE_THOUGHT_SIGNATURE))
    );
    assert!(pair.is_valid());
}

#[test]
fn body_pair_from_summarization_with_reasoning_message() {
    let reasoning = Message::new(
        Role::Ai,
        vec![reasoned_text("Let me think", thought("deep"))],
    );
    let pair = BodyPair::from_summarization_with_reasoning(
        "Summary",
        &IdTemplate::new("toolu_{r:24:b}"),
        true,
        reasoning,
    );
    let parts = &pair.ai().parts;
    assert_eq!(parts.len(), 2);
    assert_eq!(parts[0], reasoned_text("Let me think", thought("deep")));
    let ContentPart::ToolCall(call) = &parts[1] else {
        panic!("second part is the call: {parts:?}");
    };
    assert_eq!(
        call.reasoning,
        Some(Reasoning::signature(FAKE_THOUGHT_SIGNATURE))
    );
    assert!(call.id.starts_with("toolu_"));
    assert!(pair.is_valid());
}

#[test]
fn contains_tool_call_reasoning_cases() {
    assert!(!contains_tool_call_reasoning(&[]), "EmptyMessages");
    assert!(
        !contains_tool_call_reasoning(&[
            Message::human("hi"),
            calls_ai(vec![ToolCall::new("t", "f", "{}")])
        ]),
        "MessagesWithoutReasoning"
    );
    let text_only = Message::new(Role::Ai, vec![reasoned_text("x", thought("t"))]);
    let standalone = Message::new(Role::Ai, vec![ContentPart::Reasoning(thought("r"))]);
    assert!(
        !contains_tool_call_reasoning(&[text_only.clone(), standalone]),
        "TextContentReasoningOnly"
    );
    assert!(
        contains_tool_call_reasoning(&[calls_ai(vec![signed_call("t", "f")])]),
        "ToolCallReasoning"
    );
    assert!(
        contains_tool_call_reasoning(&[
            Message::human("h"),
            text_only,
            calls_ai(vec![ToolCall::new("a", "f", "{}"), signed_call("b", "g")]),
        ]),
        "MultipleMessagesWithMixedContent"
    );
}

#[test]
fn extract_reasoning_message_cases() {
    assert_eq!(extract_reasoning_message(&[]), None, "EmptyMessages");
    assert_eq!(
        extract_reasoning_message(&[Message::human("h"), Message::ai("a")]),
        None,
        "NoReasoning"
    );
    let first = Message::new(
        Role::Ai,
        vec![
            ContentPart::text("plain"),
            reasoned_text("because", thought("one")),
        ],
    );
    assert_eq!(
        extract_reasoning_message(std::slice::from_ref(&first)),
        Some(Message::new(
            Role::Ai,
            vec![reasoned_text("because", thought("one"))]
        )),
        "ExtractReasoningFromTextContent"
    );
    let second = Message::new(Role::Ai, vec![reasoned_text("later", thought("two"))]);
    assert_eq!(
        extract_reasoning_message(&[second.clone(), first]).map(|m| m.parts),
        Some(second.parts),
        "ExtractFirstReasoningMessage"
    );
    let empty = Message::new(Role::Ai, vec![reasoned_text("x", Reasoning::default())]);
    assert_eq!(
        extract_reasoning_message(&[empty]),
        None,
        "SkipEmptyReasoning"
    );
    // Human messages with reasoning are not AI reasoning.
    let human = Message::new(Role::Human, vec![reasoned_text("x", thought("h"))]);
    assert_eq!(extract_reasoning_message(&[human]), None);
    // A standalone thinking block counts (where Skein keeps Anthropic's).
    let block = Message::new(Role::Ai, vec![ContentPart::Reasoning(thought("block"))]);
    assert_eq!(
        extract_reasoning_message(std::slice::from_ref(&block)),
        Some(block)
    );
}

fn normalize(chain: &[Message], template: &str) -> ChainAst {
    let mut ast = ChainAst::new(chain, true).expect("force never fails");
    ast.normalize_tool_call_ids(&IdTemplate::new(template));
    for pair in ast.sections().iter().flat_map(|s| s.body()) {
        let info = pair.tool_calls_info();
        assert!(info.pending.is_empty() && info.unmatched.is_empty());
        assert!(pair.is_valid());
    }
    ChainAst::new(&ast.messages(), false).expect("re-parse");
    common::assert_sizes_exact(&ast);
    ast
}

fn call_ids(ast: &ChainAst) -> Vec<String> {
    ast.iter_messages()
        .flat_map(Message::tool_calls)
        .map(|c| c.id.clone())
        .collect()
}

fn response_ids(ast: &ChainAst) -> Vec<String> {
    ast.iter_messages()
        .flat_map(Message::tool_responses)
        .map(|r| r.tool_call_id.clone())
        .collect()
}

#[test]
fn normalize_tool_call_ids_cases() {
    let anthropic = IdTemplate::new("toolu_{r:24:b}");
    let chain = vec![
        Message::human("Hi"),
        calls_ai(vec![ToolCall::new("a1b2c3d4", "search", "{}")]),
        Message::tool_response("a1b2c3d4", "search", "found"),
    ];
    // Complete format mismatch: Gemini to Anthropic.
    let ast = normalize(&chain, "toolu_{r:24:b}");
    let ids = call_ids(&ast);
    assert!(ids[0].starts_with("toolu_") && ids[0].len() == 30);
    assert_eq!(response_ids(&ast), ids);

    // Partial match, wrong length.
    let short = [
        Message::human("Hi"),
        calls_ai(vec![ToolCall::new("call_abc", "f", "{}")]),
        Message::tool_response("call_abc", "f", "r"),
    ];
    assert_eq!(call_ids(&normalize(&short, "call_{r:24:x}"))[0].len(), 29);

    // Already valid: unchanged.
    let valid_id = anthropic.generate("search");
    let valid = [
        Message::human("Hi"),
        calls_ai(vec![ToolCall::new(&valid_id, "search", "{}")]),
        Message::tool_response(&valid_id, "search", "r"),
    ];
    assert_eq!(
        call_ids(&normalize(&valid, "toolu_{r:24:b}")),
        std::slice::from_ref(&valid_id)
    );

    // Several calls, mixed validity: only the invalid one changes; both stay answered.
    let mixed = [
        Message::human("Hi"),
        calls_ai(vec![
            ToolCall::new("bad", "f", "{}"),
            ToolCall::new(&valid_id, "g", "{}"),
        ]),
        Message::tool_response(&valid_id, "g", "r2"),
        Message::tool_response("bad", "f", "r1"),
    ];
    let ast = normalize(&mixed, "toolu_{r:24:b}");
    let ids = call_ids(&ast);
    assert_ne!(ids[0], "bad");
    assert_eq!(ids[1], valid_id);
    assert_ne!(ids[0], ids[1]);

    // Summarization calls are renamed too.
    let summary = [
        Message::human("Hi"),
        calls_ai(vec![ToolCall::new(
            "summary-1",
            SUMMARIZATION_TOOL_NAME,
            SUMMARIZATION_TOOL_ARGS,
        )]),
        Message::tool_response("summary-1", SUMMARIZATION_TOOL_NAME, "s"),
    ];
    let ast = normalize(&summary, "toolu_{r:24:b}");
    assert!(
        anthropic
            .check(&call_ids(&ast)[0], SUMMARIZATION_TOOL_NAME)
            .is_ok()
    );

    // Empty chain and a chain without calls: nothing to do.
    let mut empty = ChainAst::empty();
    assert_eq!(empty.normalize_tool_call_ids(&anthropic), 0);
    let plain = vec![Message::human("Hi"), Message::ai("Hello")];
    assert_eq!(normalize(&plain, "toolu_{r:24:b}").messages(), plain);
}

#[test]
fn normalize_tool_call_ids_integration() {
    let chain = vec![
        Message::system("S"),
        Message::human("Find and read"),
        calls_ai(vec![ToolCall::new("call_1", "search", "{}")]),
        Message::tool_response("call_1", "search", "file.txt"),
        calls_ai(vec![ToolCall::new("call_2", "read", "{}")]),
        Message::tool_response("call_2", "read", "contents"),
        Message::ai("Done."),
    ];
    let template = IdTemplate::new("toolu_{r:24:b}");
    let mut ast = ChainAst::new(&chain, false).expect("valid");
    assert_eq!(ast.normalize_tool_call_ids(&template), 2);
    for call in ast.iter_messages().flat_map(Message::tool_calls) {
        template.check(&call.id, &call.name).expect("normalised");
    }
    assert_eq!(call_ids(&ast), response_ids(&ast));
    ast.validate().expect("valid");
}

#[test]
fn normalize_keeps_shared_ids_paired_and_avoids_collisions() {
    // Kimi's template has ten ids per tool; two calls must not end up with the same one.
    let chain = [
        Message::human("Hi"),
        calls_ai(vec![
            ToolCall::new("x", "get_number", "{}"),
            ToolCall::new("y", "get_number", "{}"),
        ]),
        Message::tool_response("x", "get_number", "1"),
        Message::tool_response("y", "get_number", "2"),
    ];
    for _ in 0..20 {
        let ast = normalize(&chain, "{f}:{r:1:d}");
        let ids = call_ids(&ast);
        assert_ne!(ids[0], ids[1]);
        assert!(ids.iter().all(|id| id.starts_with("get_number:")));
    }
}

fn reasoning_free(ast: &ChainAst) -> bool {
    ast.iter_messages()
        .flat_map(|m| &m.parts)
        .all(|part| match part {
            ContentPart::Text { reasoning, .. } => reasoning.is_none(),
            ContentPart::ToolCall(call) => call.reasoning.is_none(),
            ContentPart::Reasoning(_) => false,
            _ => true,
        })
}

#[test]
fn clear_reasoning_cases() {
    let with_everything = vec![
        Message::new(Role::System, vec![reasoned_text("S", thought("s"))]),
        Message::human("Hi"),
        Message::new(
            Role::Ai,
            vec![
                ContentPart::Reasoning(thought("block")),
                reasoned_text("Let me", thought("t")),
                ContentPart::ToolCall(signed_call("c1", "f")),
            ],
        ),
        Message::new(
            Role::Tool,
            vec![
                reasoned_text("note", thought("n")),
                ContentPart::ToolResponse(messages::ToolResponse::new("c1", "f", "r")),
            ],
        ),
    ];
    let mut ast = ChainAst::new(&with_everything, false).expect("valid");
    let size = ast.size();
    ast.clear_reasoning();
    assert!(reasoning_free(&ast));
    assert_eq!(ast.size(), size, "reasoning is never counted");
    assert_eq!(
        ast.sections()[0].body()[0].ai().parts.len(),
        2,
        "the standalone block is gone"
    );
    ChainAst::new(&ast.messages(), false).expect("re-parse");

    let mut empty = ChainAst::empty();
    empty.clear_reasoning();
    assert!(empty.is_empty());

    let plain = vec![Message::human("Hi"), Message::ai("Hello")];
    let mut ast = ChainAst::new(&plain, false).expect("valid");
    ast.clear_reasoning();
    assert_eq!(ast.messages(), plain);
}

#[test]
fn clear_reasoning_after_normalize() {
    let chain = vec![
        Message::human("Hi"),
        calls_ai(vec![signed_call("abc", "f")]),
        Message::tool_response("abc", "f", "r"),
    ];
    let mut ast = ChainAst::new(&chain, false).expect("valid");
    ast.normalize_tool_call_ids(&IdTemplate::default());
    ast.clear_reasoning();
    assert!(call_ids(&ast)[0].starts_with("call_"));
    assert!(reasoning_free(&ast));
    ChainAst::new(&ast.messages(), false).expect("re-parse");
}

#[test]
fn sanitize_json_control_chars_cases() {
    let cases = [
        ("valid JSON", r#"{"a": "b"}"#, r#"{"a": "b"}"#),
        ("escaped newline", r#"{"a": "x\ny"}"#, r#"{"a": "x\ny"}"#),
        ("literal newline", "{\"a\": \"x\ny\"}", r#"{"a": "x\ny"}"#),
        ("literal CR", "{\"a\": \"x\ry\"}", r#"{"a": "x\ry"}"#),
        ("literal tab", "{\"a\": \"x\ty\"}", r#"{"a": "x\ty"}"#),
        (
            "backspace, form feed",
            "{\"a\": \"\u{8}\u{c}\"}",
            r#"{"a": "\b\f"}"#,
        ),
        ("SOH", "{\"a\": \"\u{1}\"}", r#"{"a": "\u0001"}"#),
        (
            "control char outside a string",
            "{\u{1}\"a\": 1}",
            "{\u{1}\"a\": 1}",
        ),
        (
            "only the broken field",
            "{\"ok\": \"fine\", \"bad\": \"x\ny\"}",
            r#"{"ok": "fine", "bad": "x\ny"}"#,
        ),
        (
            "escaped backslash before a quote",
            "{\"p\": \"c:\\\\\", \"q\": \"a\nb\"}",
            r#"{"p": "c:\\", "q": "a\nb"}"#,
        ),
        (
            "vLLM heredoc",
            "{\"command\": \"cat <<EOF\nline1\n\tline2\nEOF\", \"timeout\": 30}",
            r#"{"command": "cat <<EOF\nline1\n\tline2\nEOF", "timeout": 30}"#,
        ),
        ("empty JSON string", r#""""#, r#""""#),
        ("broken, nothing to escape", "{broken", "{broken"),
    ];
    for (name, input, expected) in cases {
        assert_eq!(sanitize_json_control_chars(input), expected, "{name}");
    }
}

#[test]
fn sanitize_tool_call_arguments_cases() {
    let cases = [
        ("valid", r#"{"a": 1}"#, r#"{"a": 1}"#),
        ("newline", "{\"cmd\": \"a\nb\"}", r#"{"cmd": "a\nb"}"#),
        (
            "several",
            "{\"a\": \"1\n2\", \"b\": \"3\t4\"}",
            r#"{"a": "1\n2", "b": "3\t4"}"#,
        ),
        (
            "already escaped",
            r#"{"cmd": "a\nb"}"#,
            r#"{"cmd": "a\nb"}"#,
        ),
        ("empty name", r#"{}"#, r#"{}"#),
        ("open brace", "{", "{}"),
        ("partial object", r#"{"cmd": "ls"#, "{}"),
        ("empty", "", "{}"),
        ("array", "[]", "[]"),
    ];
    for (name, arguments, expected) in cases {
        let tool_name = if name == "empty name" { "" } else { "terminal" };
        let chain = [
            Message::human("Hi"),
            calls_ai(vec![ToolCall::new("t", tool_name, arguments)]),
            Message::tool_response("t", tool_name, "r"),
        ];
        let mut ast = ChainAst::new(&chain, false).expect("valid");
        let changed = ast.sanitize_tool_call_arguments();
        let call = ast.sections()[0].body()[0]
            .ai()
            .tool_calls()
            .next()
            .cloned()
            .expect("call");
        assert_eq!(call.arguments, expected, "{name}");
        assert_eq!(changed, usize::from(arguments != expected), "{name}");
        common::assert_sizes_exact(&ast);
    }
}

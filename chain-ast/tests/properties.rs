//! Properties over generated chains: round trips, exact sizes after any mutations, repairs that
//! always validate, and a fuzz of the transcript reader feeding construction.

use crate::common;

use chain_ast::{
    BodyPair, ChainAst, ChainSection, Header, IdTemplate, message_size, sanitize_json_control_chars,
};
use common::{any_chain, any_message, assert_sizes_exact, valid_chain};
use messages::{ContentPart, Message, Role, ToolCall};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Strict construction of a valid chain gives back exactly its messages; every pair is
    /// valid; repairing changes nothing.
    #[test]
    fn valid_chains_round_trip(chain in valid_chain()) {
        let ast = ChainAst::new(&chain, false).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(ast.messages(), chain.clone());
        prop_assert_eq!(ast.message_count(), chain.len());
        prop_assert!(ast.validate().is_ok());
        prop_assert!(ast.sections().iter().flat_map(ChainSection::body).all(BodyPair::is_valid));
        prop_assert_eq!(ast.size(), chain.iter().map(message_size).sum::<usize>());
        assert_sizes_exact(&ast);
        let (repaired, repairs) = ChainAst::repair(&chain);
        prop_assert!(repairs.is_empty(), "{:?}", repairs);
        prop_assert_eq!(&repaired, &ast);
        prop_assert_eq!(ast.clone().into_messages(), chain);
    }

    /// Force construction never panics and always yields a chain that passes strict
    /// validation; a chain that passes strictly is kept as it is.
    #[test]
    fn force_always_yields_a_valid_chain(chain in any_chain()) {
        let before = chain.clone();
        let strict = ChainAst::new(&chain, false);
        let (ast, repairs) = ChainAst::repair(&chain);
        prop_assert_eq!(&chain, &before, "the input is never changed");
        prop_assert!(ast.validate().is_ok(), "{:?}", ast.validate());
        let reparsed = ChainAst::new(&ast.messages(), false);
        prop_assert!(reparsed.is_ok(), "{:?}", reparsed.err());
        prop_assert_eq!(reparsed.map(|r| r.messages()).unwrap_or_default(), ast.messages());
        assert_sizes_exact(&ast);
        match strict {
            Ok(strict) => {
                prop_assert!(repairs.is_empty());
                prop_assert_eq!(strict.messages(), chain);
            }
            Err(error) => prop_assert_eq!(repairs.first(), Some(&error)),
        }
    }

    /// Repairs keep the order: the AI messages of the output are the input's AI messages after
    /// the first system or human message, in order (calls may be appended to them).
    #[test]
    fn force_keeps_ai_messages_in_order(chain in any_chain()) {
        let start = chain.iter().position(|m| matches!(m.role, Role::System | Role::Human));
        let expected: Vec<&Message> = start
            .map(|start| chain[start..].iter().filter(|m| m.role == Role::Ai).collect())
            .unwrap_or_default();
        let ast = ChainAst::new(&chain, true).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let output = ast.messages();
        let actual: Vec<&Message> = output.iter().filter(|m| m.role == Role::Ai).collect();
        prop_assert_eq!(actual.len(), expected.len());
        for (actual, expected) in actual.iter().zip(&expected) {
            prop_assert!(actual.parts.starts_with(&expected.parts));
        }
    }

    /// After any sequence of mutations, every cached size equals the size recomputed from the
    /// messages, and `validate` agrees with strict construction of the flattened chain.
    #[test]
    fn sizes_stay_exact_after_mutations(
        chain in any_chain(),
        ops in proptest::collection::vec(op(), 0..24),
    ) {
        let mut ast = ChainAst::new(&chain, true).map_err(|e| TestCaseError::fail(e.to_string()))?;
        for op in ops {
            apply(&mut ast, op);
            assert_sizes_exact(&ast);
            prop_assert_eq!(ast.validate().is_ok(), ChainAst::new(&ast.messages(), false).is_ok());
        }
    }

    /// Arbitrary messages (any roles, any parts) through the transcript JSON into construction.
    #[test]
    fn fuzz_messages_through_transcript(chain in proptest::collection::vec(any_message(), 0..12)) {
        let json = messages::transcript::to_json(&chain);
        let read = messages::transcript::from_json(&json).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(&read, &chain);
        construct_both_ways(&read)?;
    }

    /// Arbitrary text as transcript JSON: a typed error or a chain, never a panic.
    #[test]
    fn fuzz_arbitrary_text(text in "\\PC{0,200}") {
        if let Ok(chain) = messages::transcript::from_json(&text) {
            construct_both_ways(&chain)?;
        }
    }

    /// Transcript-shaped JSON with wrong roles, part types, fields and values, then cut or
    /// spliced: typed errors or chains, never a panic.
    #[test]
    fn fuzz_transcript_shaped_json(value in transcript_like(), cut in any::<prop::sample::Index>(), junk in "\\PC{0,4}") {
        let text = value.to_string();
        let chain = messages::transcript::from_json(&text);
        if let Ok(chain) = &chain {
            construct_both_ways(chain)?;
        }
        let at = cut.index(text.len() + 1);
        if text.is_char_boundary(at) {
            let spliced = format!("{}{}{}", &text[..at], junk, &text[at..]);
            if let Ok(chain) = messages::transcript::from_json(&spliced) {
                construct_both_ways(&chain)?;
            }
            match messages::transcript::from_json(&text[..at]) {
                Ok(chain) => construct_both_ways(&chain)?,
                Err(error) => prop_assert!(error.to_string().contains("invalid transcript")),
            }
        }
    }

    /// Text that is JSON is left alone; strings with raw control characters come out as JSON
    /// that decodes to the same strings.
    #[test]
    fn sanitize_restores_json(key in "\\PC{0,6}", value in "[\\x00-\\x1f a-z\"\\\\]{0,12}") {
        let valid = serde_json::json!({ key.clone(): value.clone() }).to_string();
        prop_assert_eq!(sanitize_json_control_chars(&valid), valid.as_str());
        // Raw control characters inside the string, everything else escaped as JSON does.
        let escaped = serde_json::to_string(&value).unwrap_or_default();
        let broken = unescape_controls(&escaped);
        let fixed = sanitize_json_control_chars(&broken);
        let decoded: Result<String, _> = serde_json::from_str(&fixed);
        prop_assert_eq!(decoded.ok(), Some(value));
    }
}

/// `\n`, `\t`, … and `\u00XX` escapes of control characters turned back into raw characters.
fn unescape_controls(json: &str) -> String {
    let mut out = String::new();
    let mut chars = json.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('b') => out.push('\u{8}'),
            Some('f') => out.push('\u{c}'),
            Some('u') => {
                let hex: String = chars.by_ref().take(4).collect();
                match u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32) {
                    Some(control) if control < ' ' => out.push(control),
                    _ => {
                        out.push_str("\\u");
                        out.push_str(&hex);
                    }
                }
            }
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
}

fn construct_both_ways(chain: &[Message]) -> Result<(), TestCaseError> {
    let before = chain.to_vec();
    if let Ok(ast) = ChainAst::new(chain, false) {
        prop_assert_eq!(ast.messages(), chain.to_vec());
    }
    let ast = ChainAst::new(chain, true).map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert!(ast.validate().is_ok());
    prop_assert_eq!(chain, before.as_slice());
    Ok(())
}

/// JSON that looks like a transcript, with mistakes in every place.
fn transcript_like() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::{Value, json};
    let role = prop_oneof![
        12 => prop_oneof![Just("system"), Just("human"), Just("ai"), Just("tool")].prop_map(Value::from),
        1 => prop_oneof![Just("user"), Just("assistant"), Just("function"), Just("AI"), Just("")].prop_map(Value::from),
        1 => Just(Value::Null),
        1 => any::<i64>().prop_map(Value::from),
    ];
    let text = "\\PC{0,12}".prop_map(Value::from);
    let part = prop_oneof![
        3 => text.clone().prop_map(|t| json!({"type": "text", "text": t})),
        1 => text.clone().prop_map(|t| json!({"type": "text", "text": t, "reasoning": {"signature": "s", "text": "r"}})),
        1 => text.clone().prop_map(|u| json!({"type": "image_url", "url": u, "detail": "low"})),
        1 => prop_oneof![Just("AAEC"), Just("not base64!"), Just("")].prop_map(|d| json!({"type": "binary", "mime_type": "image/png", "data": d})),
        1 => Just(json!({"type": "reasoning", "encrypted": "x"})),
        2 => (prop_oneof![Just("a"), Just("b")], prop_oneof![Just("f"), Just(chain_ast::SUMMARIZATION_TOOL_NAME)])
            .prop_map(|(id, name)| json!({"type": "tool_call", "id": id, "name": name, "arguments": "{}"})),
        2 => prop_oneof![Just("a"), Just("b"), Just("c")]
            .prop_map(|id| json!({"type": "tool_response", "tool_call_id": id, "name": "f", "content": "r"})),
        1 => prop_oneof![Just("video"), Just("TEXT"), Just("")].prop_map(|t| json!({"type": t, "text": "x"})),
        1 => Just(json!({"type": "tool_call", "id": 5})),
        1 => Just(json!("just a string")),
    ];
    let message = (role, proptest::collection::vec(part, 0..4), any::<bool>()).prop_map(
        |(role, parts, extra)| {
            let mut message = json!({"role": role, "parts": parts});
            if extra {
                message["unknown_field"] = json!(1);
            }
            message
        },
    );
    prop_oneof![
        8 => proptest::collection::vec(message, 0..8).prop_map(Value::from),
        1 => Just(json!({"role": "human", "parts": []})),
        1 => Just(Value::Null),
    ]
}

/// A mutation of a chain.
#[derive(Clone, Debug)]
enum Op {
    AppendHuman(String),
    AppendHumanParts(Vec<ContentPart>),
    AddCompletion(String),
    AddCalls(Vec<&'static str>),
    AddSummary(String, bool),
    AddToolResponse(&'static str, String),
    AddSection(Option<String>, Vec<Message>),
    Normalize(&'static str),
    Sanitize,
    ClearReasoning,
}

fn op() -> impl Strategy<Value = Op> {
    let id = prop_oneof![Just("a"), Just("b"), Just("c")];
    prop_oneof![
        "\\PC{0,8}".prop_map(Op::AppendHuman),
        proptest::collection::vec(
            prop_oneof![
                "[a-z]{0,5}".prop_map(ContentPart::text),
                Just(ContentPart::image_url("https://x.test/i.png")),
            ],
            0..3
        )
        .prop_map(Op::AppendHumanParts),
        "\\PC{0,8}".prop_map(Op::AddCompletion),
        proptest::collection::vec(id.clone(), 1..3).prop_map(Op::AddCalls),
        ("[a-z ]{0,12}", any::<bool>()).prop_map(|(text, sign)| Op::AddSummary(text, sign)),
        (id, "\\PC{0,10}").prop_map(|(id, content)| Op::AddToolResponse(id, content)),
        (
            proptest::option::of("[a-z]{1,6}"),
            proptest::collection::vec(any_message(), 0..3)
        )
            .prop_map(|(human, pair)| Op::AddSection(human, pair)),
        prop_oneof![Just("call_{r:24:x}"), Just("{f}:{r:1:d}"), Just("x")].prop_map(Op::Normalize),
        Just(Op::Sanitize),
        Just(Op::ClearReasoning),
    ]
}

fn apply(ast: &mut ChainAst, op: Op) {
    match op {
        Op::AppendHuman(text) => ast.append_human_message(text),
        Op::AppendHumanParts(parts) => ast.append_human_parts(parts),
        Op::AddCompletion(text) => {
            let _ = ast.add_body_pair(BodyPair::from_completion(text));
        }
        Op::AddCalls(ids) => {
            let calls = ids
                .iter()
                .map(|id| ToolCall::new(*id, "get_x", "{\"a\":\n1}"))
                .collect();
            if let Ok(pair) = BodyPair::new(Message::ai_tool_calls(None, calls), Vec::new()) {
                let _ = ast.add_body_pair(pair);
            }
        }
        Op::AddSummary(text, sign) => {
            let _ = ast.add_body_pair(BodyPair::from_summarization(
                text,
                &IdTemplate::default(),
                sign,
            ));
        }
        Op::AddToolResponse(id, content) => {
            let _ = ast.add_tool_response(id, "get_x", &content);
        }
        Op::AddSection(human, messages) => {
            let header = Header::new(None, human.map(Message::human)).unwrap_or_default();
            let body = BodyPair::from_messages(messages).into_iter().collect();
            ast.add_section(ChainSection::new(header, body));
        }
        Op::Normalize(template) => {
            ast.normalize_tool_call_ids(&IdTemplate::new(template));
        }
        Op::Sanitize => {
            ast.sanitize_tool_call_arguments();
        }
        Op::ClearReasoning => ast.clear_reasoning(),
    }
}

/// Puts a system message before each message of `chain` at `places` (indexes taken modulo
/// `chain.len() + 1`, the end included), the later places first so earlier indexes stay put.
fn with_system_messages(chain: &[Message], places: &[usize]) -> Vec<Message> {
    let mut places: Vec<usize> = places.iter().map(|p| p % (chain.len() + 1)).collect();
    places.sort_unstable();
    let mut out = chain.to_vec();
    for (n, place) in places.into_iter().enumerate().rev() {
        out.insert(place, Message::system(format!("instruction {n}")));
    }
    out
}

/// Whether a system message put before `chain[place]` would come between tool calls and their
/// responses (tool messages always follow the AI message or the tool message of their round).
fn splits_a_round(chain: &[Message], place: usize) -> bool {
    chain.get(place).is_some_and(|m| m.role == Role::Tool)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// System messages anywhere outside a tool round (as OpenAI clients send them: at the
    /// start, between turns, after a tool round, at the end) keep a valid chain exactly as
    /// given; inside a round they break rule 5 alone, and the repair is valid.
    #[test]
    fn system_messages_anywhere_outside_a_tool_round(
        chain in valid_chain(),
        places in proptest::collection::vec(any::<usize>(), 1..5),
    ) {
        let splits = places
            .iter()
            .any(|p| splits_a_round(&chain, p % (chain.len() + 1)));
        let with_system = with_system_messages(&chain, &places);
        match ChainAst::new(&with_system, false) {
            Ok(ast) => {
                prop_assert!(!splits, "a split round must be refused");
                prop_assert_eq!(ast.messages(), with_system.clone());
                prop_assert!(ast.validate().is_ok());
                assert_sizes_exact(&ast);
            }
            Err(error) => {
                prop_assert!(splits, "refused without a split round: {}", error);
                prop_assert_eq!(error.rule(), Some(chain_ast::Rule::SystemOutsideToolRounds));
                let (repaired, _) = ChainAst::repair(&with_system);
                prop_assert!(repaired.validate().is_ok());
                let kept = repaired.messages();
                prop_assert_eq!(
                    kept.iter().filter(|m| m.role == Role::System).count(),
                    with_system.iter().filter(|m| m.role == Role::System).count(),
                    "the repair keeps every system message"
                );
            }
        }
    }
}

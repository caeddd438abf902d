//! Conformance of the chain AST: construction, messages, constructors, sizes and mutators.
//! Helper tests (reasoning, ids, sanitising) are in `conformance_helpers.rs`.
#![cfg(feature = "testing")]

use crate::common;

use chain_ast::testing::*;
use chain_ast::{
    BodyPair, BodyPairKind, ChainAst, ChainError, ChainSection, FALLBACK_RESPONSE_CONTENT, Header,
    has_tool_calls, message_size,
};
use messages::{ContentPart, Message, Role, ToolCall};

fn header_count(ast: &ChainAst) -> usize {
    ast.sections()
        .iter()
        .map(|section| {
            usize::from(section.header().system().is_some())
                + usize::from(section.header().human().is_some())
        })
        .sum()
}

fn calls_and_responses(pair: &BodyPair) -> (usize, usize) {
    let responses = pair
        .tools()
        .iter()
        .map(|tool| tool.tool_responses().count())
        .sum();
    (pair.ai().tool_calls().count(), responses)
}

#[test]
fn new_chain_ast_empty_chain() {
    let ast = ChainAst::new(&empty_chain(), false).expect("empty is valid");
    assert!(ast.sections().is_empty());
    assert!(ast.messages().is_empty());
    assert_eq!(ast.size(), 0);
}

#[test]
fn new_chain_ast_basic_chains() {
    let cases: [(&str, Vec<Message>, usize); 4] = [
        ("System only", system_only_chain(), 1),
        ("Human only", human_only_chain(), 1),
        ("System + Human", system_human_chain(), 2),
        ("System + Human + AI", basic_conversation_chain(), 2),
    ];
    for (name, chain, headers) in cases {
        let ast = ChainAst::new(&chain, false).unwrap_or_else(|error| panic!("{name}: {error}"));
        assert_eq!(ast.sections().len(), 1, "{name}");
        assert_eq!(header_count(&ast), headers, "{name}");
        assert!(ast.sections()[0].header().size() > 0, "{name}");
        assert!(ast.sections()[0].size() > 0 && ast.size() > 0, "{name}");
        assert_eq!(ast.messages(), chain, "{name}");
    }
}

#[test]
fn new_chain_ast_tool_call_chains() {
    // (name, chain, force, calls, responses)
    let cases = [
        (
            "tool call, no response, with force",
            chain_with_tool(),
            true,
            1,
            1,
        ),
        (
            "tool call and response",
            chain_with_single_tool_response(),
            false,
            1,
            1,
        ),
        (
            "multiple tool calls, no responses, with force",
            chain_with_multiple_tools(),
            true,
            2,
            2,
        ),
        (
            "missing tool response, with force",
            chain_with_missing_tool_response(),
            true,
            2,
            2,
        ),
    ];
    for (name, chain, force, calls, responses) in cases {
        let ast = ChainAst::new(&chain, force).unwrap_or_else(|error| panic!("{name}: {error}"));
        let body = ast.sections()[0].body();
        assert_eq!(body.len(), 1, "{name}");
        assert_eq!(body[0].kind(), BodyPairKind::RequestResponse, "{name}");
        assert_eq!(calls_and_responses(&body[0]), (calls, responses), "{name}");
        assert!(body[0].tool_calls_info().pending.is_empty(), "{name}");
        if !force {
            assert_eq!(ast.messages(), chain, "{name}");
        }
    }
    assert!(matches!(
        ChainAst::new(&chain_with_tool(), false),
        Err(ChainError::MissingToolResponses { index: 2, .. })
    ));
}

#[test]
fn new_chain_ast_multiple_human_messages() {
    let chain = chain_with_multiple_sections();
    let ast = ChainAst::new(&chain, false).expect("valid");
    let sections = ast.sections();
    assert_eq!(sections.len(), 2);
    assert!(sections[0].header().system().is_some() && sections[0].header().human().is_some());
    assert_eq!(sections[0].body().len(), 1);
    assert_eq!(sections[0].body()[0].kind(), BodyPairKind::Completion);
    assert!(sections[1].header().human().is_some());
    assert_eq!(sections[1].body()[0].kind(), BodyPairKind::RequestResponse);
    assert_eq!(sections[1].body()[0].tools().len(), 1);
    assert_eq!(ast.messages().len(), chain.len());
}

#[test]
fn new_chain_ast_consecutive_humans() {
    let chain = chain_with_consecutive_humans();
    assert!(ChainAst::new(&chain, false).is_err());
    let ast = ChainAst::new(&chain, true).expect("repaired");
    assert_eq!(ast.sections().len(), 1);
    assert_eq!(
        ast.sections()[0]
            .header()
            .human()
            .expect("human")
            .parts
            .len(),
        2
    );
}

#[test]
fn new_chain_ast_unexpected_tool() {
    let chain = chain_with_unexpected_tool();
    assert!(ChainAst::new(&chain, false).is_err());
    let ast = ChainAst::new(&chain, true).expect("repaired");
    assert_eq!(ast.sections().len(), 1);
    let section = &ast.sections()[0];
    assert!(section.header().system().is_some() && section.header().human().is_some());
    assert_eq!(section.body().len(), 1);
    assert!(ast.messages().len() < chain.len());
}

fn completed_chain() -> Vec<Message> {
    vec![
        Message::system("You are a helpful assistant."),
        Message::human("What's the weather like?"),
        Message::ai_tool_calls(
            None,
            vec![ToolCall::new(
                "test-tool-1",
                "get_weather",
                r#"{"location": "New York"}"#,
            )],
        ),
        Message::tool_response("test-tool-1", "get_weather", "Initial response"),
    ]
}

#[test]
fn add_tool_response() {
    let mut ast = ChainAst::new(&completed_chain(), false).expect("valid");
    let updated = "The weather in New York is sunny.";
    ast.add_tool_response("test-tool-1", "renamed", updated)
        .expect("found");
    let responses = ast.find_tool_call_responses("test-tool-1");
    assert_eq!(responses.len(), 1);
    assert_eq!(responses[0].content, updated);
    assert_eq!(responses[0].name, "get_weather", "the name is kept");
    assert_eq!(
        ast.add_tool_response("invalid-id", "invalid-name", "content"),
        Err(ChainError::ToolCallNotFound {
            id: "invalid-id".into()
        })
    );
    common::assert_sizes_exact(&ast);
}

#[test]
fn append_human_message() {
    let cases = [
        ("Empty chain", empty_chain(), "Hello", 1, 1),
        ("Chain with system only", system_only_chain(), "Hello", 1, 2),
        (
            "Chain with existing conversation",
            basic_conversation_chain(),
            "Tell me more",
            2,
            3,
        ),
    ];
    for (name, chain, text, sections, headers) in cases {
        let mut ast = ChainAst::new(&chain, false).expect("valid");
        ast.append_human_message(text);
        assert_eq!(ast.sections().len(), sections, "{name}");
        assert_eq!(header_count(&ast), headers, "{name}");
        let human = ast
            .sections()
            .last()
            .and_then(|s| s.header().human())
            .expect("human");
        assert!(human.parts.contains(&ContentPart::text(text)), "{name}");
        assert_eq!(ast.messages().len(), chain.len() + 1, "{name}");
        ast.validate().expect("still valid");
    }
}

#[test]
fn generated_chains() {
    let ast = ChainAst::new(&generate_chain(&ChainConfig::default()), false).expect("valid");
    assert_eq!(
        (ast.sections().len(), ast.sections()[0].body().len()),
        (1, 1)
    );

    let config = ChainConfig {
        include_system: true,
        sections: 3,
        body_pairs_per_section: vec![1, 2, 1],
        tools_for_body_pairs: vec![false, true, false],
        tool_calls_per_body_pair: vec![0, 2, 0],
        include_all_tool_responses: true,
    };
    let chain = generate_chain(&config);
    let ast = ChainAst::new(&chain, false).expect("valid");
    assert_eq!(ast.sections().len(), 3);
    assert_eq!(
        ast.sections().iter().map(|s| s.body().len()).sum::<usize>(),
        4
    );
    assert_eq!(ast.messages(), chain);

    let missing = ChainConfig {
        tools_for_body_pairs: vec![true],
        tool_calls_per_body_pair: vec![2],
        include_all_tool_responses: false,
        ..ChainConfig::default()
    };
    let chain = generate_chain(&missing);
    let ast = ChainAst::new(&chain, true).expect("repaired");
    assert_eq!(
        (ast.sections().len(), ast.sections()[0].body().len()),
        (1, 1)
    );
    assert!(ast.messages().len() >= chain.len());
}

#[test]
fn complex_generated_chains() {
    for (sections, calls, missing) in [(2, 1, 0), (3, 2, 2), (5, 3, 7)] {
        let chain = generate_complex_chain(sections, calls, missing);
        let ast = ChainAst::new(&chain, true).expect("force never fails");
        let messages = ast.messages();
        assert!(messages.len() >= chain.len());
        let reparsed = ChainAst::new(&messages, false).expect("a repaired chain is valid");
        for pair in reparsed.sections().iter().flat_map(ChainSection::body) {
            if pair.kind() == BodyPairKind::RequestResponse {
                let (calls, responses) = calls_and_responses(pair);
                assert_eq!(calls, responses);
            }
        }
        let fallbacks = messages
            .iter()
            .flat_map(Message::tool_responses)
            .filter(|response| response.content == FALLBACK_RESPONSE_CONTENT)
            .count();
        let all_calls = sections.div_ceil(2) * calls;
        assert_eq!(
            fallbacks,
            missing.min(all_calls),
            "({sections}, {calls}, {missing})"
        );
    }
}

#[test]
fn messages() {
    let header = Header::new(Some(Message::system("S")), Some(Message::human("H"))).expect("roles");
    assert_eq!(
        header.messages(),
        vec![Message::system("S"), Message::human("H")]
    );
    let pair =
        BodyPair::from_messages(chain_with_single_tool_response()[2..].to_vec()).expect("pair");
    assert_eq!(
        pair.messages(),
        chain_with_single_tool_response()[2..].to_vec()
    );
    let section = ChainSection::new(header, vec![pair]);
    assert_eq!(section.messages().len(), 4);
    let chain = chain_with_multiple_sections();
    let ast = ChainAst::new(&chain, false).expect("valid");
    let roles: Vec<Role> = ast.messages().iter().map(|m| m.role).collect();
    assert_eq!(roles, chain.iter().map(|m| m.role).collect::<Vec<_>>());
}

#[test]
fn constructors() {
    let header = Header::new(Some(Message::system("S")), None).expect("roles");
    assert!(header.human().is_none() && header.size() > 0);
    let header = Header::new(None, Some(Message::human("H"))).expect("roles");
    assert!(header.system().is_none() && header.size() > 0);

    let completion = BodyPair::new(Message::ai("answer"), Vec::new()).expect("roles");
    assert_eq!(completion.kind(), BodyPairKind::Completion);
    let tool_pair = BodyPair::new(
        Message::ai_tool_calls(None, vec![ToolCall::new("t", "f", "{}")]),
        vec![Message::tool_response("t", "f", "r")],
    )
    .expect("roles");
    assert_eq!(tool_pair.kind(), BodyPairKind::RequestResponse);

    // An AI text message and a tool message make a completion with one tool message.
    let odd = BodyPair::from_messages(vec![
        Message::ai("text"),
        Message::tool_response("t", "f", "r"),
    ])
    .expect("roles");
    assert_eq!(
        (odd.kind(), odd.tools().len(), odd.is_valid()),
        (BodyPairKind::Completion, 1, false)
    );
    assert!(matches!(
        BodyPair::from_messages(vec![Message::human("x")]),
        Err(ChainError::WrongRole {
            index: 0,
            expected: Role::Ai,
            found: Role::Human,
            ..
        })
    ));
    assert_eq!(
        BodyPair::from_messages(Vec::new()),
        Err(ChainError::EmptyBodyPair)
    );

    let section = ChainSection::new(header.clone(), vec![completion.clone(), tool_pair.clone()]);
    assert_eq!(
        section.size(),
        header.size() + completion.size() + tool_pair.size()
    );

    let pair = BodyPair::from_completion("This is a response");
    assert_eq!(pair.ai(), &Message::ai("This is a response"));
    assert!(!has_tool_calls(pair.ai()));
    assert!(has_tool_calls(tool_pair.ai()));
}

#[test]
fn size_tracking() {
    assert_eq!(message_size(&Message::human("Hello world")), 11);
    let url = "https://example.com/image.jpg";
    assert_eq!(
        message_size(&Message::new(
            Role::Human,
            vec![ContentPart::image_url(url)]
        )),
        url.len()
    );
    assert_eq!(
        message_size(&Message::new(
            Role::Human,
            vec![ContentPart::binary("image/png", vec![0; 7])]
        )),
        7
    );
    // The messages model has no tool-call `type` field, so no 8 bytes for "function".
    let call = Message::ai_tool_calls(
        None,
        vec![ToolCall::new(
            "call-1",
            "test_function",
            r#"{"param1": "value1"}"#,
        )],
    );
    assert_eq!(message_size(&call), 6 + 13 + 20);
    let response = Message::tool_response("call-1", "test_function", "Success response");
    assert_eq!(message_size(&response), 6 + 13 + 16);

    let mut ast = ChainAst::new(&system_human_chain(), false).expect("valid");
    let before = ast.size();
    ast.append_human_message("Human message");
    assert_eq!(ast.size(), before + 13);
    let pair = BodyPair::from_completion("AI response");
    let pair_size = pair.size();
    ast.add_body_pair(pair).expect("a section exists");
    assert_eq!(ast.size(), before + 13 + pair_size);
    common::assert_sizes_exact(&ast);
}

#[test]
fn add_section_and_body_pair() {
    let mut ast = ChainAst::empty();
    assert_eq!(
        ast.add_body_pair(BodyPair::from_completion("x")),
        Err(ChainError::NoSection)
    );
    let first = Header::new(None, Some(Message::human("Hello"))).expect("roles");
    ast.add_section(ChainSection::new(
        first,
        vec![BodyPair::from_completion("Hi")],
    ));
    let mut second = ChainSection::new(
        Header::new(None, Some(Message::human("Weather?"))).expect("roles"),
        Vec::new(),
    );
    second.add_body_pair(
        BodyPair::new(
            Message::ai_tool_calls(None, vec![ToolCall::new("t1", "get_weather", "{}")]),
            vec![Message::tool_response("t1", "get_weather", "sunny")],
        )
        .expect("roles"),
    );
    ast.add_section(second);
    let roles: Vec<Role> = ast.messages().iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [Role::Human, Role::Ai, Role::Human, Role::Ai, Role::Tool]
    );
    assert_eq!(
        ast.sections()[1].body()[0].kind(),
        BodyPairKind::RequestResponse
    );
    ast.validate().expect("valid");
    common::assert_sizes_exact(&ast);
}

#[test]
fn append_human_message_complex() {
    // Rule 1: empty chain.
    let mut ast = ChainAst::empty();
    ast.append_human_message("Initial");
    assert_eq!(ast.sections().len(), 1);
    // Rule 4: no body, a human message: a new part.
    ast.append_human_message("Additional");
    assert_eq!(
        ast.sections()[0].header().human().expect("human").parts,
        vec![
            ContentPart::text("Initial"),
            ContentPart::text("Additional")
        ]
    );
    // Rule 2: the last section has a body: a new section without a system message.
    ast.add_body_pair(BodyPair::from_completion("Answer"))
        .expect("section");
    ast.append_human_message("Next");
    assert_eq!(ast.sections().len(), 2);
    assert!(ast.sections()[1].header().system().is_none());
    // Rule 3: system only: the human message joins the header.
    let mut ast = ChainAst::new(&system_only_chain(), false).expect("valid");
    ast.append_human_message("Hello");
    assert_eq!(ast.sections().len(), 1);
    assert_eq!(
        ast.sections()[0].header().human(),
        Some(&Message::human("Hello"))
    );
    common::assert_sizes_exact(&ast);
}

#[test]
fn add_tool_response_complex() {
    let mut ast = ChainAst::new(&chain_with_multiple_tools(), true).expect("repaired");
    assert_eq!(
        ast.find_tool_call_responses("tool-1")[0].content,
        FALLBACK_RESPONSE_CONTENT
    );
    ast.add_tool_response("tool-1", "get_weather", "Sunny")
        .expect("found");
    ast.add_tool_response("tool-2", "get_time", "Noon")
        .expect("found");
    assert_eq!(ast.find_tool_call_responses("tool-1")[0].content, "Sunny");
    assert_eq!(ast.find_tool_call_responses("tool-2")[0].content, "Noon");
    ast.add_tool_response("tool-1", "get_weather", "Rainy")
        .expect("found");
    assert_eq!(ast.find_tool_call_responses("tool-1").len(), 1);
    assert_eq!(ast.find_tool_call_responses("tool-1")[0].content, "Rainy");
    assert!(ast.add_tool_response("nope", "x", "y").is_err());
    common::assert_sizes_exact(&ast);
    ast.validate().expect("valid");
}

#[test]
fn add_tool_response_to_a_pair_without_tool_messages() {
    let chain = [
        Message::human("Hi"),
        Message::ai_tool_calls(
            None,
            vec![ToolCall::new("a", "f", "{}"), ToolCall::new("b", "g", "{}")],
        ),
    ];
    let mut ast = ChainAst::empty();
    ast.append_human_message("Hi");
    ast.add_body_pair(BodyPair::from_messages(chain[1..].to_vec()).expect("pair"))
        .expect("section");
    ast.add_tool_response("a", "f", "ra").expect("found");
    ast.add_tool_response("b", "g", "rb").expect("found");
    // The second response joins the last tool message.
    let tools = ast.sections()[0].body()[0].tools();
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0].tool_responses().count(), 2);
    ast.validate().expect("valid");
    common::assert_sizes_exact(&ast);
}

#[test]
fn new_chain_ast_summarization() {
    let ast = ChainAst::new(&chain_with_summarization(), false).expect("valid");
    let pair = &ast.sections()[0].body()[0];
    assert_eq!(pair.kind(), BodyPairKind::Summarization);
    let info = pair.tool_calls_info();
    assert!(info.pending.is_empty() && info.unmatched.is_empty());
    assert_eq!(
        info.completed["summary-1"].response.name,
        chain_ast::SUMMARIZATION_TOOL_NAME
    );
    assert!(pair.is_valid() && pair.is_summary());
    ChainAst::new(&ast.messages(), false).expect("re-parse");

    let ast = ChainAst::new(&chain_with_summarization_and_other_pairs(), false).expect("valid");
    let kinds: Vec<BodyPairKind> = ast.sections()[0]
        .body()
        .iter()
        .map(BodyPair::kind)
        .collect();
    assert_eq!(
        kinds,
        [
            BodyPairKind::Summarization,
            BodyPairKind::Completion,
            BodyPairKind::RequestResponse
        ]
    );

    let missing = chain_with_summarization()[..3].to_vec();
    assert!(matches!(
        ChainAst::new(&missing, false),
        Err(ChainError::MissingToolResponses { index: 2, .. })
    ));
    let ast = ChainAst::new(&missing, true).expect("repaired");
    let pair = &ast.sections()[0].body()[0];
    assert_eq!(
        pair.tools()[0]
            .tool_responses()
            .next()
            .map(|r| r.content.as_str()),
        Some(FALLBACK_RESPONSE_CONTENT)
    );
    assert!(pair.is_valid());
}

#[test]
fn every_predefined_chain_round_trips_or_fails_strictly() {
    let chains: [(&str, Vec<Message>, bool); 17] = [
        ("empty", empty_chain(), true),
        ("system only", system_only_chain(), true),
        ("human only", human_only_chain(), true),
        ("system human", system_human_chain(), true),
        ("basic conversation", basic_conversation_chain(), true),
        ("with tool", chain_with_tool(), false),
        (
            "single tool response",
            chain_with_single_tool_response(),
            true,
        ),
        ("multiple tools", chain_with_multiple_tools(), false),
        (
            "multiple tool responses",
            chain_with_multiple_tool_responses(),
            true,
        ),
        ("multiple sections", chain_with_multiple_sections(), true),
        ("consecutive humans", chain_with_consecutive_humans(), false),
        (
            "missing tool response",
            chain_with_missing_tool_response(),
            false,
        ),
        ("unexpected tool", chain_with_unexpected_tool(), false),
        ("summarization", chain_with_summarization(), true),
        (
            "summarization and other pairs",
            chain_with_summarization_and_other_pairs(),
            true,
        ),
        ("provider switch", provider_switch_chain(false), true),
        (
            "provider switch with reasoning",
            provider_switch_chain(true),
            true,
        ),
    ];
    for (name, chain, valid) in chains {
        match ChainAst::new(&chain, false) {
            Ok(ast) => {
                assert!(valid, "{name} should be invalid");
                assert_eq!(ast.messages(), chain, "{name}");
            }
            Err(error) => assert!(!valid, "{name}: {error}"),
        }
        let repaired = ChainAst::new(&chain, true).expect("force never fails");
        repaired
            .validate()
            .unwrap_or_else(|error| panic!("{name}: {error}"));
        common::assert_sizes_exact(&repaired);
    }
}

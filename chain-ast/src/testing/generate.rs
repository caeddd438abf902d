//! Chain generators: [`ChainConfig`], [`generate_chain`], [`generate_complex_chain`].

use messages::{Message, ToolCall};

/// What [`generate_chain`] makes.
///
/// `tools_for_body_pairs` and `tool_calls_per_body_pair` are indexed by the body pair's position
/// in the **whole chain**, not within its section (which would make every section repeat the
/// first entries). A pair past the end of `tools_for_body_pairs` is a completion, a tool pair
/// past the end of `tool_calls_per_body_pair` makes one call, a section past the end of
/// `body_pairs_per_section` has one pair.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChainConfig {
    /// Whether the chain starts with a system message.
    pub include_system: bool,
    /// Number of sections, each opened by a human message `Question n`.
    pub sections: usize,
    /// Body pairs in each section.
    pub body_pairs_per_section: Vec<usize>,
    /// Whether each body pair calls tools.
    pub tools_for_body_pairs: Vec<bool>,
    /// Calls made by each tool-calling body pair.
    pub tool_calls_per_body_pair: Vec<usize>,
    /// Whether every call gets a response.
    pub include_all_tool_responses: bool,
}

impl Default for ChainConfig {
    /// A system message, one question and its completion.
    fn default() -> Self {
        ChainConfig {
            include_system: true,
            sections: 1,
            body_pairs_per_section: vec![1],
            tools_for_body_pairs: vec![false],
            tool_calls_per_body_pair: vec![0],
            include_all_tool_responses: true,
        }
    }
}

/// A chain as `config` describes.
///
/// Human messages are `Question {s}`, completions `Response to question {s}` (`s` from 1). Calls
/// are numbered across the chain: the `k`-th is `tool-{k}`; the `n`-th call of a pair (from 1)
/// is `get_data_{n}` with arguments `{"query": "Test query {n}"}`, and its response, one tool
/// message per call in call order, is `Response for tool-{k}`.
pub fn generate_chain(config: &ChainConfig) -> Vec<Message> {
    let mut chain = Vec::new();
    if config.include_system {
        chain.push(Message::system("You are a helpful assistant."));
    }
    let (mut pair, mut call_number) = (0, 0);
    for section in 1..=config.sections {
        chain.push(Message::human(format!("Question {section}")));
        let pairs = config
            .body_pairs_per_section
            .get(section - 1)
            .copied()
            .unwrap_or(1);
        for _ in 0..pairs {
            let uses_tools = config
                .tools_for_body_pairs
                .get(pair)
                .copied()
                .unwrap_or(false);
            if uses_tools {
                let calls = config
                    .tool_calls_per_body_pair
                    .get(pair)
                    .copied()
                    .unwrap_or(1);
                let calls: Vec<ToolCall> = (1..=calls)
                    .map(|n| {
                        call_number += 1;
                        ToolCall::new(
                            format!("tool-{call_number}"),
                            format!("get_data_{n}"),
                            format!(r#"{{"query": "Test query {n}"}}"#),
                        )
                    })
                    .collect();
                let responses: Vec<Message> = calls
                    .iter()
                    .map(|call| {
                        Message::tool_response(
                            &call.id,
                            &call.name,
                            format!("Response for {}", call.id),
                        )
                    })
                    .collect();
                chain.push(Message::ai_tool_calls(None, calls));
                if config.include_all_tool_responses {
                    chain.extend(responses);
                }
            } else {
                chain.push(Message::ai(format!("Response to question {section}")));
            }
            pair += 1;
        }
    }
    chain
}

/// A chain of `sections` sections with one body pair each: a pair of `tool_calls_per_pair` calls
/// in the odd sections (first, third, …), a completion in the even ones; then the first
/// `missing_responses` tool messages of the chain are dropped.
pub fn generate_complex_chain(
    sections: usize,
    tool_calls_per_pair: usize,
    missing_responses: usize,
) -> Vec<Message> {
    let config = ChainConfig {
        include_system: true,
        sections,
        body_pairs_per_section: vec![1; sections],
        tools_for_body_pairs: (0..sections).map(|section| section % 2 == 0).collect(),
        tool_calls_per_body_pair: vec![tool_calls_per_pair; sections],
        include_all_tool_responses: true,
    };
    let mut missing = missing_responses;
    generate_chain(&config)
        .into_iter()
        .filter(|message| {
            let drop = message.role == messages::Role::Tool && missing > 0;
            missing -= usize::from(drop);
            !drop
        })
        .collect()
}

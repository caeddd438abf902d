//! Shared test helpers: proptest strategies for valid chains and for arbitrary messages, and a
//! from-scratch size check.
#![allow(dead_code, unreachable_pub)]

use chain_ast::{ChainAst, SUMMARIZATION_TOOL_NAME, message_size};
use messages::{ContentPart, Message, Reasoning, Role, ToolCall, ToolResponse};
use proptest::prelude::*;

/// Asserts that every cached size equals the size recomputed from the messages.
pub fn assert_sizes_exact(ast: &ChainAst) {
    let total: usize = ast.messages().iter().map(message_size).sum();
    assert_eq!(ast.size(), total, "chain size");
    let mut sections = 0;
    for section in ast.sections() {
        let header: usize = section.header().messages().iter().map(message_size).sum();
        assert_eq!(section.header().size(), header, "header size");
        for pair in section.body() {
            let expected: usize = pair.messages().iter().map(message_size).sum();
            assert_eq!(pair.size(), expected, "body pair size");
        }
        let expected: usize = section.messages().iter().map(message_size).sum();
        assert_eq!(section.size(), expected, "section size");
        sections += section.size();
    }
    assert_eq!(
        ast.size(),
        sections,
        "chain size is the sum of section sizes"
    );
}

fn short_text() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        "[a-z ]{1,12}",
        "\\PC{0,8}",
        Just("naïve café ☕".to_owned()),
    ]
}

fn reasoning() -> impl Strategy<Value = Reasoning> {
    (
        proptest::option::of("rs_[a-z0-9]{3}"),
        "[a-z ]{0,8}",
        proptest::option::of("sig-[a-z]{2}"),
    )
        .prop_map(|(id, text, signature)| Reasoning {
            id,
            text,
            signature,
            encrypted: None,
        })
}

/// A part of a human, system or completion message: text (maybe with reasoning), an image, bytes
/// or a standalone reasoning block.
fn plain_part() -> impl Strategy<Value = ContentPart> {
    prop_oneof![
        4 => (short_text(), proptest::option::of(reasoning()))
            .prop_map(|(text, reasoning)| ContentPart::Text { text, reasoning }),
        1 => "https://img\\.example/[a-z]{1,6}\\.png".prop_map(ContentPart::image_url),
        1 => proptest::collection::vec(any::<u8>(), 0..16)
            .prop_map(|data| ContentPart::binary("application/octet-stream", data)),
        1 => reasoning().prop_map(ContentPart::Reasoning),
    ]
}

fn plain_message(role: Role) -> impl Strategy<Value = Message> {
    proptest::collection::vec(plain_part(), 1..3).prop_map(move |parts| Message::new(role, parts))
}

/// How a generated body pair looks.
#[derive(Clone, Debug)]
// Test data, made a few hundred times per property: boxing would only add noise.
#[allow(clippy::large_enum_variant)]
enum PairShape {
    Completion(Message),
    Calls {
        summarization: bool,
        names: Vec<String>,
        preamble: Vec<ContentPart>,
        signed: Vec<bool>,
        /// For each call, which tool message (by number, folded into range) answers it.
        slots: Vec<usize>,
        extra: Option<ContentPart>,
    },
}

fn pair_shape() -> impl Strategy<Value = PairShape> {
    prop_oneof![
        2 => plain_message(Role::Ai).prop_map(PairShape::Completion),
        3 => (
            any::<bool>(),
            proptest::collection::vec("get_[a-z]{1,5}", 1..4),
            proptest::collection::vec(plain_part(), 0..2),
            proptest::collection::vec(any::<bool>(), 4),
            proptest::collection::vec(0usize..3, 4),
            proptest::option::of(plain_part()),
        )
            .prop_map(|(summarization, names, preamble, signed, slots, extra)| PairShape::Calls {
                summarization,
                names,
                preamble,
                signed,
                slots,
                extra,
            }),
    ]
}

/// Builds the messages of one body pair; `tag` makes its call ids unique in the chain.
fn pair_messages(shape: PairShape, tag: usize) -> Vec<Message> {
    let (summarization, names, preamble, signed, slots, extra) = match shape {
        PairShape::Completion(message) => return vec![message],
        PairShape::Calls {
            summarization,
            names,
            preamble,
            signed,
            slots,
            extra,
        } => (summarization, names, preamble, signed, slots, extra),
    };
    let calls: Vec<ToolCall> = names
        .iter()
        .enumerate()
        .map(|(n, name)| {
            let name = if summarization && n == 0 {
                SUMMARIZATION_TOOL_NAME.to_owned()
            } else {
                name.clone()
            };
            ToolCall {
                reasoning: signed[n].then(|| Reasoning::signature("sig")),
                ..ToolCall::new(format!("call-{tag}-{n}"), name, r#"{"q": 1}"#)
            }
        })
        .collect();
    let mut ai_parts = preamble;
    ai_parts.extend(calls.iter().cloned().map(ContentPart::ToolCall));
    let ai = Message::new(Role::Ai, ai_parts);

    // A summarization pair answers everything in one tool message.
    let slot_count = if summarization { 1 } else { 3 };
    let mut tools: Vec<Vec<ContentPart>> = vec![Vec::new(); slot_count];
    for (n, call) in calls.iter().enumerate() {
        let slot = slots[n] % slot_count;
        tools[slot].push(ContentPart::ToolResponse(ToolResponse::new(
            &call.id,
            &call.name,
            format!("result {n}"),
        )));
    }
    let mut tools: Vec<Message> = tools
        .into_iter()
        .filter(|parts| !parts.is_empty())
        .map(|parts| Message::new(Role::Tool, parts))
        .collect();
    if let (Some(extra), Some(last)) = (extra, tools.last_mut()) {
        last.parts.push(extra);
    }
    let mut messages = vec![ai];
    messages.extend(tools);
    messages
}

/// A chain that passes strict validation: optional system message, sections of a human message
/// (the first section may instead be system-only) and body pairs of every kind, with reasoning,
/// media, multi-part and several tool messages.
pub fn valid_chain() -> impl Strategy<Value = Vec<Message>> {
    (
        proptest::option::of(plain_message(Role::System)),
        any::<bool>(),
        proptest::collection::vec(
            (
                plain_message(Role::Human),
                proptest::collection::vec(pair_shape(), 0..4),
            ),
            0..5,
        ),
    )
        .prop_map(|(system, system_only_first, sections)| {
            let mut chain: Vec<Message> = system.clone().into_iter().collect();
            let count = sections.len();
            let mut tag = 0;
            for (index, (human, mut pairs)) in sections.into_iter().enumerate() {
                let skip_human =
                    index == 0 && system.is_some() && system_only_first && !pairs.is_empty();
                if !skip_human {
                    chain.push(human);
                }
                // Only the last section may end without a body pair: two human messages in a row
                // break rule 2.
                if pairs.is_empty() && index + 1 < count {
                    pairs.push(PairShape::Completion(Message::ai("filler")));
                }
                for shape in pairs {
                    tag += 1;
                    chain.extend(pair_messages(shape, tag));
                }
            }
            chain
        })
}

/// Any part at all, with tool ids and names from small pools so that calls and responses meet.
fn any_part() -> impl Strategy<Value = ContentPart> {
    let id = prop_oneof![Just("a"), Just("b"), Just("c"), Just("")].prop_map(str::to_owned);
    let name = prop_oneof![
        Just("get_x".to_owned()),
        Just(SUMMARIZATION_TOOL_NAME.to_owned()),
        Just(String::new()),
    ];
    prop_oneof![
        3 => plain_part(),
        2 => (id.clone(), name.clone(), proptest::option::of(reasoning())).prop_map(|(id, name, reasoning)| {
            ContentPart::ToolCall(ToolCall { reasoning, ..ToolCall::new(id, name, "{\"k\":\"v\n\"}") })
        }),
        2 => (id, name, short_text())
            .prop_map(|(id, name, content)| ContentPart::ToolResponse(ToolResponse::new(id, name, content))),
    ]
}

fn any_role() -> impl Strategy<Value = Role> {
    prop_oneof![
        Just(Role::System),
        Just(Role::Human),
        Just(Role::Ai),
        Just(Role::Tool)
    ]
}

/// Any message: any role with any parts.
pub fn any_message() -> impl Strategy<Value = Message> {
    (any_role(), proptest::collection::vec(any_part(), 0..4))
        .prop_map(|(role, parts)| Message::new(role, parts))
}

/// Any sequence of messages, valid or not.
pub fn any_chain() -> impl Strategy<Value = Vec<Message>> {
    proptest::collection::vec(any_message(), 0..16)
}

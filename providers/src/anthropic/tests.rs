//! Unit and property tests of the Anthropic mapping: stop reasons, usage arithmetic, request
//! invariants for arbitrary conversations, and the stream parser fed arbitrary bytes and
//! arbitrary events (it must never panic).

use futures::StreamExt;
use messages::{ContentPart, Message, Reasoning, Role, ToolCall, ToolResponse};
use proptest::prelude::*;
use serde_json::{Value, json};

use super::wire::{UsageTotals, WireUsage, finish_reason};
use super::{decode_stream, request};
use crate::assemble::{Chunk, UsageUpdate};
use crate::{
    CacheBreakpoint, ChatOptions, ChatRequest, FinishReason, PromptCache, ProviderError,
    StreamEvent,
};

#[test]
fn debug_of_the_model_hides_the_key() {
    let secret = "sk-ant-api03-very-secret";
    let mut config = crate::ModelConfig {
        api_key: Some(secret.into()),
        ..crate::ModelConfig::new("claude-sonnet-4-5")
    };
    config
        .default_headers
        .insert("x-custom-token".into(), "also-secret".into());
    let info = crate::ModelInfo::lookup(crate::Provider::Anthropic, &config.model_id);
    let model = super::model(&config, info).expect("builds");
    let shown = format!("{model:?}");
    assert!(shown.contains("claude-sonnet-4-5"), "{shown}");
    assert!(
        !shown.contains(secret) && !shown.contains("also-secret"),
        "{shown}"
    );
}

#[test]
fn a_final_request_without_tools_declares_the_tools_its_history_used() {
    let history = vec![
        Message::human("Weather in Paris and Rome?"),
        Message::ai_tool_calls(
            None,
            vec![
                ToolCall::new("toolu_1", "get_weather", r#"{"city":"Paris"}"#),
                ToolCall::new("toolu_2", "get_weather", r#"{"city":"Rome"}"#),
                ToolCall::new("toolu_3", "get_time", "{}"),
            ],
        ),
        Message::tool_response("toolu_1", "get_weather", "18°C"),
        Message::tool_response("toolu_2", "get_weather", "24°C"),
        Message::tool_response("toolu_3", "get_time", "12:00"),
        Message::human("Tool limit reached: answer now."),
    ];
    let request = ChatRequest::new(history);
    let built = request::build("claude-sonnet-4-5", 1024, &request, false).expect("builds");
    let body = serde_json::to_value(&built.body).expect("serialises");
    assert_eq!(
        body["tools"],
        json!([
            {"name": "get_weather", "description": "", "input_schema": {"type": "object"}},
            {"name": "get_time", "description": "", "input_schema": {"type": "object"}},
        ])
    );
    assert_eq!(body["tool_choice"], json!({"type": "none"}));

    // Without tool history nothing is declared.
    let plain = ChatRequest::new(vec![Message::human("Hi")]);
    let built = request::build("claude-sonnet-4-5", 1024, &plain, false).expect("builds");
    let body = serde_json::to_value(&built.body).expect("serialises");
    assert!(
        body.get("tools").is_none() && body.get("tool_choice").is_none(),
        "{body}"
    );
}

#[test]
fn stop_reasons() {
    let cases = [
        ("end_turn", FinishReason::Stop),
        ("stop_sequence", FinishReason::Stop),
        ("max_tokens", FinishReason::Length),
        ("model_context_window_exceeded", FinishReason::Length),
        ("tool_use", FinishReason::ToolCalls),
        ("refusal", FinishReason::ContentFilter),
        ("pause_turn", FinishReason::Other("pause_turn".into())),
    ];
    for (wire, reason) in cases {
        assert_eq!(finish_reason(wire), reason, "{wire}");
    }
}

fn wire_usage(value: Value) -> WireUsage {
    serde_json::from_value(value).expect("usage JSON")
}

#[test]
fn usage_adds_cache_reads_and_writes_to_the_prompt_and_keeps_the_latest_fields() {
    let mut totals = UsageTotals::default();
    let start = totals.update(wire_usage(json!({
        "input_tokens": 2, "cache_read_input_tokens": 1590,
        "cache_creation_input_tokens": 7, "output_tokens": 1,
    })));
    assert_eq!(
        start,
        Chunk::Usage(UsageUpdate {
            input_tokens: Some(1599),
            output_tokens: Some(1),
            cached_input_tokens: Some(1590),
            cache_creation_tokens: Some(7),
            reasoning_tokens: None,
        })
    );
    // An old-style `message_delta` carries only the output count.
    let delta = totals.update(wire_usage(json!({
        "output_tokens": 40, "output_tokens_details": {"thinking_tokens": 12},
    })));
    assert_eq!(
        delta,
        Chunk::Usage(UsageUpdate {
            input_tokens: Some(1599),
            output_tokens: Some(40),
            cached_input_tokens: Some(1590),
            cache_creation_tokens: Some(7),
            reasoning_tokens: Some(12),
        })
    );
    // Absurd numbers are ignored (never summed into an overflow); the sane ones still count.
    let huge = UsageTotals::default().update(wire_usage(json!({
        "input_tokens": u64::MAX, "cache_read_input_tokens": 5,
    })));
    assert!(matches!(
        huge,
        Chunk::Usage(UsageUpdate {
            input_tokens: Some(5),
            ..
        })
    ));
    // Nothing about the prompt: no input figure at all.
    let none = UsageTotals::default().update(wire_usage(json!({"output_tokens": 3})));
    assert!(matches!(
        none,
        Chunk::Usage(UsageUpdate {
            input_tokens: None,
            ..
        })
    ));
}

/// The body the adapter would send for `request`, as JSON.
fn body(request: &ChatRequest) -> Result<Value, ProviderError> {
    let built = request::build("claude-test", 1024, request, false)?;
    Ok(serde_json::to_value(&built.body).expect("the body serialises"))
}

fn part() -> impl Strategy<Value = ContentPart> {
    let text = "[a-z {}\"]{0,8}";
    prop_oneof![
        text.prop_map(ContentPart::text),
        Just(ContentPart::text("")),
        Just(ContentPart::image_url("https://example.com/a.png")),
        Just(ContentPart::binary("image/png", vec![1, 2, 3])),
        (
            text,
            proptest::option::of(text),
            proptest::option::of(text),
            proptest::option::of(text)
        )
            .prop_map(|(text, id, signature, encrypted)| {
                ContentPart::Reasoning(Reasoning {
                    id,
                    text,
                    signature,
                    encrypted,
                })
            }),
        ("[a-z]{1,4}", text).prop_map(|(id, arguments)| {
            ContentPart::ToolCall(ToolCall::new(id, "f", arguments))
        }),
        ("[a-z]{1,4}", text).prop_map(|(id, content)| {
            ContentPart::ToolResponse(ToolResponse::new(id, "f", content))
        }),
    ]
}

fn message() -> impl Strategy<Value = Message> {
    let role = prop_oneof![
        Just(Role::System),
        Just(Role::Human),
        Just(Role::Ai),
        Just(Role::Tool)
    ];
    (role, proptest::collection::vec(part(), 0..5))
        .prop_map(|(role, parts)| Message::new(role, parts))
}

fn breakpoint() -> impl Strategy<Value = CacheBreakpoint> {
    prop_oneof![
        Just(CacheBreakpoint::Tools),
        Just(CacheBreakpoint::System),
        Just(CacheBreakpoint::LastMessage),
        (0usize..6).prop_map(CacheBreakpoint::Message),
    ]
}

proptest! {
    /// Whatever the conversation, the body alternates roles, sends no empty content, every
    /// `tool_use.input` is an object, thinking blocks carry no `cache_control`, and at most
    /// four blocks do.
    #[test]
    fn request_invariants(
        messages in proptest::collection::vec(message(), 0..8),
        breakpoints in proptest::collection::vec(breakpoint(), 0..7),
    ) {
        let request = ChatRequest {
            options: ChatOptions {
                cache: PromptCache { breakpoints, ..Default::default() },
                ..ChatOptions::default()
            },
            ..ChatRequest::new(messages)
        };
        let body = match body(&request) {
            Ok(body) => body,
            // Only out-of-range breakpoints can fail here (the media is always accepted).
            Err(err) => {
                prop_assert!(matches!(err, ProviderError::Config { .. }), "{err:?}");
                return Ok(());
            }
        };
        let turns = body["messages"].as_array().cloned().unwrap_or_default();
        for pair in turns.windows(2) {
            prop_assert_ne!(&pair[0]["role"], &pair[1]["role"]);
        }
        for turn in &turns {
            let blocks = turn["content"].as_array().cloned().unwrap_or_default();
            prop_assert!(!blocks.is_empty());
            for block in blocks {
                if block["type"] == "text" {
                    prop_assert_ne!(&block["text"], "");
                }
                if block["type"] == "tool_use" {
                    prop_assert!(block["input"].is_object());
                }
                if block["type"] == "thinking" || block["type"] == "redacted_thinking" {
                    prop_assert!(block.get("cache_control").is_none());
                    prop_assert_eq!(&turn["role"], "assistant");
                }
            }
        }
        let text = body.to_string();
        prop_assert!(text.matches("cache_control").count() <= 4);
        prop_assert!(!text.contains("\"role\":\"system\""));
    }

    /// Arbitrary bytes never make the decoder panic, and a stream ends at most once.
    #[test]
    fn arbitrary_bytes_never_panic(
        pieces in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..64), 0..8),
    ) {
        check_stream(pieces)?;
    }

    /// Arbitrary events, well-formed or not, in any order, never make the parser panic.
    #[test]
    fn arbitrary_events_never_panic(events in proptest::collection::vec(event(), 0..24)) {
        let body: String = events
            .iter()
            .map(|(name, data)| format!("event: {name}\ndata: {data}\n\n"))
            .collect();
        check_stream(vec![body.into_bytes()])?;
    }
}

fn check_stream(pieces: Vec<Vec<u8>>) -> Result<(), TestCaseError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .map_err(|err| TestCaseError::fail(err.to_string()))?;
    let items: Vec<Result<StreamEvent, ProviderError>> =
        runtime.block_on(decode_stream(futures::stream::iter(pieces)).collect());
    let done = items
        .iter()
        .filter(|item| matches!(item, Ok(StreamEvent::Done { .. })))
        .count();
    prop_assert!(done <= 1);
    let ends = items
        .iter()
        .position(|item| matches!(item, Ok(StreamEvent::Done { .. }) | Err(_)));
    // Nothing follows the end (Done or an error).
    prop_assert!(ends.is_none_or(|end| end == items.len() - 1));
    Ok(())
}

/// An SSE event of the Messages stream with arbitrary (often nonsensical) fields.
fn event() -> impl Strategy<Value = (String, String)> {
    let kind = prop_oneof![
        Just("message_start"),
        Just("content_block_start"),
        Just("content_block_delta"),
        Just("content_block_stop"),
        Just("message_delta"),
        Just("message_stop"),
        Just("ping"),
        Just("error"),
        Just("mystery"),
    ];
    let block = prop_oneof![
        Just(json!({"type": "text", "text": "hi"})),
        Just(json!({"type": "thinking", "thinking": "", "signature": ""})),
        Just(json!({"type": "redacted_thinking", "data": "Eq"})),
        Just(json!({"type": "redacted_thinking"})),
        Just(json!({"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}})),
        Just(json!({"type": "tool_use", "input": {"a": [1, 2]}})),
        Just(json!({"type": "server_tool_use", "id": "srv", "name": "web_search", "input": {}})),
        Just(json!({"type": 7})),
        Just(json!(null)),
    ];
    let delta = prop_oneof![
        "[a-z\"{}]{0,6}".prop_map(|t| json!({"type": "text_delta", "text": t})),
        "[a-z]{0,6}".prop_map(|t| json!({"type": "thinking_delta", "thinking": t})),
        "[A-Za-z0-9+/]{0,6}".prop_map(|s| json!({"type": "signature_delta", "signature": s})),
        "[a-z\"{}:,]{0,6}".prop_map(|j| json!({"type": "input_json_delta", "partial_json": j})),
        Just(json!({"type": "citations_delta", "citation": {}})),
        Just(json!({"stop_reason": "end_turn"})),
        Just(json!({"stop_reason": 3})),
        Just(json!("text")),
    ];
    let index = prop_oneof![
        Just(json!(0)),
        Just(json!(1)),
        Just(json!(usize::MAX)),
        Just(json!(-1)),
        Just(json!("0"))
    ];
    let usage = prop_oneof![
        Just(json!({"input_tokens": 5, "output_tokens": 2})),
        Just(json!({"output_tokens": u64::MAX, "cache_read_input_tokens": u64::MAX})),
        Just(json!({"input_tokens": -1})),
    ];
    (kind, index, block, delta, usage, any::<bool>()).prop_map(
        |(kind, index, block, delta, usage, garble)| {
            let data = json!({
                "type": kind,
                "index": index,
                "content_block": block,
                "delta": delta,
                "usage": usage,
                "message": {"id": "msg_1", "model": "claude", "usage": usage},
                "error": {"type": "overloaded_error", "message": "Overloaded"},
            })
            .to_string();
            // Sometimes cut the JSON short.
            let data = if garble {
                data.chars().take(data.len() / 2).collect()
            } else {
                data
            };
            (kind.to_owned(), data)
        },
    )
}

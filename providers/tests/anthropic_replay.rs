//! Every recorded Anthropic answer in `tests/fixtures/anthropic` replayed byte for byte through
//! `model_from_config`, asserting what WIRE.md §8.3 and the fixture README list.

use crate::support;

use futures::StreamExt;
use proptest::prelude::*;
use providers::{
    ChatModel, ChatRequest, ChatResponse, ContentPart, FinishReason, Message, StreamEvent, Usage,
    model_from_config,
};
use support::{
    Replay, calls, config, decoded, delta_text, fixture, fixture_json, reasoning_parts, split_at,
    streamed,
};

const PATH: &str = "/v1/messages";

fn model(replay: &Replay, model_id: &str) -> Box<dyn ChatModel> {
    model_from_config(&config(model_id, &replay.url())).expect("the Anthropic model builds")
}

fn request() -> ChatRequest {
    ChatRequest::new(vec![Message::human("Hi")])
}

/// Streams the `.sse` fixture `name` and returns its events and collected answer.
async fn stream_fixture(name: &str) -> (Vec<StreamEvent>, ChatResponse) {
    let replay = Replay::fixture(PATH, &format!("anthropic/{name}")).await;
    streamed(model(&replay, "claude-haiku-4-5").as_ref(), request())
        .await
        .unwrap_or_else(|err| panic!("{name} streams: {err}"))
}

/// `complete` on the `.json` fixture `name`.
async fn complete_fixture(name: &str) -> ChatResponse {
    let replay = Replay::fixture(PATH, &format!("anthropic/{name}")).await;
    model(&replay, "claude-sonnet-4-0")
        .complete(request())
        .await
        .unwrap_or_else(|err| panic!("{name} parses: {err}"))
}

fn usage(input: u64, output: u64) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: output,
        ..Default::default()
    }
}

/// The kinds of a message's parts, in order.
fn shape(response: &ChatResponse) -> Vec<&'static str> {
    response
        .message
        .parts
        .iter()
        .map(|part| match part {
            ContentPart::Text { .. } => "text",
            ContentPart::Reasoning(_) => "reasoning",
            ContentPart::ToolCall(_) => "tool_call",
            _ => "other",
        })
        .collect()
}

fn chars(text: &str) -> usize {
    text.chars().count()
}

/// The blocks of the assistant message in a recorded follow-up request.
fn echoed_blocks(followup: &str) -> Vec<serde_json::Value> {
    let recorded = fixture_json(&format!("anthropic/{followup}"));
    recorded["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|message| message["role"] == "assistant")
        .and_then(|message| message["content"].as_array().cloned())
        .expect("the follow-up echoes an assistant message")
}

#[tokio::test]
async fn stream_thinking_then_tool_use() {
    let (events, response) = stream_fixture("stream_thinking_tool_use.sse").await;

    assert_eq!(response.id.as_deref(), Some("msg_01JdU4xqNHXL9QCFWkwCDKGr"));
    assert_eq!(response.model.as_deref(), Some("claude-haiku-4-5-20251001"));
    assert_eq!(shape(&response), ["reasoning", "tool_call"]);
    let thinking = reasoning_parts(&response)[0];
    assert_eq!(chars(&thinking.text), 180);
    assert!(
        thinking
            .text
            .starts_with("The user wants me to:\n1. Use the fixed_version tool\n")
    );
    assert!(thinking.text.ends_with("to see what version it returns."));
    let signature = thinking.signature.as_deref().expect("a signature");
    assert_eq!(signature.len(), 524);
    assert!(signature.starts_with("EoQDCm0IDhgCKkCDzGs2"));
    assert_eq!(
        (thinking.id.as_deref(), thinking.encrypted.as_deref()),
        (None, None)
    );
    // Both are exactly what the recorded follow-up sent back.
    let echoed = echoed_blocks("stream_thinking_tool_use.followup.request.json");
    assert_eq!(echoed[0]["thinking"], thinking.text.as_str());
    assert_eq!(echoed[0]["signature"], signature);

    assert_eq!(
        calls(&response),
        [(
            "toolu_01825dXWLSoJwCst1qTsiWdb".into(),
            "fixed_version".into(),
            "{}".into()
        )]
    );
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    assert_eq!(
        response.usage,
        Usage {
            reasoning_tokens: 53,
            ..usage(598, 92)
        }
    );
    // The thinking streamed as deltas before the whole block.
    let deltas: Vec<&str> = events
        .iter()
        .filter_map(|event| match event {
            StreamEvent::ReasoningDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(deltas.len(), 2, "the empty thinking_delta is not an event");
    assert_eq!(deltas.concat(), thinking.text);
    assert!(matches!(events[0], StreamEvent::Started { .. }));
}

#[tokio::test]
async fn stream_thinking_then_text() {
    let (events, response) = stream_fixture("stream_thinking_text.sse").await;
    assert_eq!(shape(&response), ["reasoning", "text"]);
    let thinking = reasoning_parts(&response)[0];
    assert_eq!(chars(&thinking.text), 289);
    assert!(
        thinking
            .text
            .starts_with("The user wants two names for a pet pelican")
    );
    let signature = thinking.signature.as_deref().expect("a signature");
    assert_eq!(signature.len(), 656);
    assert!(signature.starts_with("EuYDCmMIDBgCKkC05Zda4P+C"));
    assert_eq!(
        response.message.text(),
        "1. **Pouch** - references their iconic bill pouch\n2. **Pelé** - playful take on \"pelican\""
    );
    assert_eq!(delta_text(&events), response.message.text());
    assert_eq!(response.finish_reason, FinishReason::Stop);
    assert_eq!(response.usage, usage(46, 133));
    assert_eq!(response.id.as_deref(), Some("msg_01Eg56TYRnKCEgWtZu2yjR1t"));
}

#[tokio::test]
async fn stream_text_after_tool_result() {
    let (events, response) = stream_fixture("stream_text_after_tool.sse").await;
    let text = response.message.text();
    assert_eq!(chars(&text), 277);
    assert!(text.starts_with("The version is **0.32a0**."));
    assert!(text.contains("going through a \"0.32a good time\" before becoming stable! 😄"));
    assert_eq!(delta_text(&events), text);
    assert_eq!(shape(&response), ["text"]);
    assert_eq!(response.finish_reason, FinishReason::Stop);
    assert_eq!(response.usage, usage(707, 89));
    assert_eq!(response.id.as_deref(), Some("msg_01Qb3MMmP6RUjBckfsEVddrQ"));
}

#[tokio::test]
async fn stream_plain_text() {
    // The README files this under Gemini by mistake; it is an Anthropic stream
    // (simonw/llm-anthropic `test_prompt.yaml`).
    let (_, response) = stream_fixture("stream_text.sse").await;
    assert_eq!(response.message.text(), "- Captain\n- Scoop");
    assert_eq!(response.finish_reason, FinishReason::Stop);
    assert_eq!(response.usage, usage(17, 10));
    assert_eq!(
        response.model.as_deref(),
        Some("claude-sonnet-4-5-20250929")
    );
    assert_eq!(response.id.as_deref(), Some("msg_017A4s3HAsrqf5d2WvBmrpLr"));
}

#[tokio::test]
async fn stream_parallel_tool_use_without_input() {
    let (events, response) = stream_fixture("stream_parallel_tool_use.sse").await;
    assert_eq!(
        calls(&response),
        [
            (
                "toolu_01LtHJmixrs9NcWQkK8hu8hj".into(),
                "pelican_name_generator".into(),
                "{}".into()
            ),
            (
                "toolu_01N8a4jWyf116qKTMqKKmjyt".into(),
                "pelican_name_generator".into(),
                "{}".into()
            ),
        ]
    );
    assert_eq!(shape(&response), ["tool_call", "tool_call"]);
    let starts: Vec<(usize, Option<&str>)> = events
        .iter()
        .filter_map(|event| match event {
            StreamEvent::ToolCallDelta {
                index,
                id: Some(id),
                ..
            } => Some((*index, Some(id.as_str()))),
            _ => None,
        })
        .collect();
    assert_eq!(
        starts,
        [
            (0, Some("toolu_01LtHJmixrs9NcWQkK8hu8hj")),
            (1, Some("toolu_01N8a4jWyf116qKTMqKKmjyt"))
        ]
    );
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    assert_eq!(response.usage, usage(542, 62));
    assert_eq!(response.message.text(), "");
}

#[tokio::test]
async fn stream_server_tool_blocks_are_skipped_client_tool_kept() {
    let (events, response) = stream_fixture("stream_server_tool_then_tool_use.sse").await;
    let first = "Let me search for a tool that can provide current exchange rate information.";
    let second =
        "I found the right tool! Let me fetch the current USD to EUR exchange rate for you.";
    assert_eq!((chars(first), chars(second)), (76, 82));
    // Both text blocks arrive; with nothing Skein keeps between them they form one text part.
    assert_eq!(delta_text(&events), format!("{first}{second}"));
    assert_eq!(response.message.text(), format!("{first}{second}"));
    // The server tool (run by Anthropic) is not a call for the caller; its input deltas are
    // not argument deltas of any call.
    assert_eq!(
        calls(&response),
        [(
            "toolu_01EFn5wTNBYA8Reni8rbmnHT".into(),
            "get_exchange_rate".into(),
            r#"{"from_currency": "USD", "to_currency": "EUR"}"#.into()
        )]
    );
    assert!(!events.iter().any(|event| matches!(
        event,
        StreamEvent::ToolCallDelta { name: Some(name), .. } if name.starts_with("tool_search")
    )));
    assert_eq!(shape(&response), ["text", "tool_call"]);
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    // `message_start` said 702 input tokens; the cumulative `message_delta` says 1591.
    assert_eq!(response.usage, usage(1591, 175));
    let arguments: serde_json::Value = serde_json::from_str(
        &response
            .message
            .tool_calls()
            .next()
            .expect("a call")
            .arguments,
    )
    .expect("the assembled input is JSON");
    assert_eq!(arguments["to_currency"], "EUR");
}

#[tokio::test]
async fn stream_redacted_thinking() {
    let (_, response) = stream_fixture("stream_redacted_thinking.sse").await;
    assert_eq!(shape(&response), ["reasoning", "reasoning", "text"]);
    let redacted = reasoning_parts(&response);
    let data: Vec<&str> = redacted
        .iter()
        .map(|r| r.encrypted.as_deref().expect("redacted data"))
        .collect();
    assert_eq!((data[0].len(), data[1].len()), (744, 296));
    assert!(data[0].starts_with("EqkECkYIBxgC"));
    assert!(data[1].starts_with("EtgBCkYIBxgC"));
    for block in &redacted {
        assert_eq!(
            (block.text.as_str(), block.signature.as_deref()),
            ("", None)
        );
    }
    let text = response.message.text();
    assert_eq!(chars(&text), 359);
    assert!(text.starts_with("I notice that you've sent what appears to be"));
    assert_eq!(response.finish_reason, FinishReason::Stop);
    assert_eq!(response.usage, usage(92, 189));
    assert_eq!(response.id.as_deref(), Some("msg_018XZkwvj9asBiffg3fXt88s"));
}

#[tokio::test]
async fn message_thinking_text_and_tool_use() {
    let response = complete_fixture("message_thinking_tool_use.json").await;
    assert_eq!(response.id.as_deref(), Some("msg_01WvueFjZVbHcj4H4zUzeGv2"));
    assert_eq!(response.model.as_deref(), Some("claude-sonnet-4-20250514"));
    assert_eq!(shape(&response), ["reasoning", "text", "tool_call"]);
    let thinking = reasoning_parts(&response)[0];
    assert_eq!(chars(&thinking.text), 376);
    let signature = thinking.signature.as_deref().expect("a signature");
    assert_eq!(signature.len(), 736);
    assert!(signature.starts_with("EqEECkYICxgCKkAo3UA4"));
    let echoed = echoed_blocks("message_thinking_tool_use.followup.request.json");
    assert_eq!(echoed[0]["thinking"], thinking.text.as_str());
    assert_eq!(echoed[0]["signature"], signature);
    assert_eq!(
        response.message.text(),
        "I'll help you find the largest city in your country. First, let me determine which country you're from."
    );
    assert_eq!(
        calls(&response),
        [(
            "toolu_01YGzqpRE16Vricda3Aqcejo".into(),
            "get_user_country".into(),
            "{}".into()
        )]
    );
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    assert_eq!(response.usage, usage(398, 155));
}

#[tokio::test]
async fn message_text_after_tool_result() {
    let response = complete_fixture("message_text_after_tool.json").await;
    let text = response.message.text();
    assert!(text.starts_with("Based on the information that you're from Mexico, the largest city"));
    assert!(text.contains("**Mexico City** (Ciudad de México)"));
    assert_eq!(response.finish_reason, FinishReason::Stop);
    assert_eq!(response.usage, usage(566, 126));
    assert_eq!(response.id.as_deref(), Some("msg_01SZ8KP8HhB1TxP6Ybbv6iKz"));
}

#[tokio::test]
async fn message_thinking_then_text() {
    let response = complete_fixture("messages_thinking_text.json").await;
    assert_eq!(shape(&response), ["reasoning", "text"]);
    let thinking = reasoning_parts(&response)[0];
    assert_eq!(chars(&thinking.text), 1893);
    assert!(
        thinking
            .text
            .starts_with("I need to find all primes below 400 that contain \"79\"")
    );
    let signature = thinking.signature.as_deref().expect("a signature");
    assert_eq!(signature.len(), 3044);
    assert!(signature.starts_with("EuURCkYICxgCKkAL"));
    assert_eq!(response.message.text(), "3");
    assert_eq!(response.finish_reason, FinishReason::Stop);
    assert_eq!(response.usage, usage(67, 964));
}

#[tokio::test]
async fn message_parallel_tool_use_keeps_the_input_text() {
    let response = complete_fixture("messages_parallel_tool_use.json").await;
    assert_eq!(shape(&response), ["text", "tool_call", "tool_call"]);
    assert_eq!(
        response.message.text(),
        "I'll retrieve the secrets for both passwords you provided."
    );
    assert_eq!(
        calls(&response),
        [
            (
                "toolu_01BUvqBj8Yb34pNAbCJJY1oc".into(),
                "secret_retrieval_tool".into(),
                r#"{"password":"mellon"}"#.into()
            ),
            (
                "toolu_01VPuQJ1LonDBYXrr8pqPkqQ".into(),
                "secret_retrieval_tool".into(),
                r#"{"password":"radiance"}"#.into()
            ),
        ]
    );
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    assert_eq!(response.usage, usage(416, 109));
}

#[tokio::test]
async fn prompt_cache_write_then_read() {
    let write = complete_fixture("message_cache_write.json").await;
    assert_eq!(write.message.text(), "OK");
    assert_eq!(
        write.usage,
        Usage {
            input_tokens: 2 + 1590,
            output_tokens: 4,
            cached_input_tokens: 0,
            cache_creation_tokens: 1590,
            reasoning_tokens: 0,
        }
    );
    let read = complete_fixture("message_cache_read.json").await;
    assert_eq!(read.message.text(), "OK");
    assert_eq!(
        read.usage,
        Usage {
            input_tokens: 2 + 1590,
            output_tokens: 4,
            cached_input_tokens: 1590,
            cache_creation_tokens: 0,
            reasoning_tokens: 0,
        }
    );
    assert_eq!(read.finish_reason, FinishReason::Stop);
    assert_eq!(read.model.as_deref(), Some("claude-opus-4-8"));
}

#[tokio::test]
async fn cached_system_prompt_written() {
    let response = complete_fixture("messages_cache_creation.json").await;
    let text = response.message.text();
    assert_eq!(chars(&text), 822);
    assert!(text.starts_with("**General Kenobi!**"));
    assert_eq!(
        response.usage,
        Usage {
            input_tokens: 8 + 4167,
            output_tokens: 204,
            cache_creation_tokens: 4167,
            ..Default::default()
        }
    );
    assert_eq!(response.finish_reason, FinishReason::Stop);
}

#[tokio::test]
async fn cached_tools_read_with_a_lone_tool_use() {
    let response = complete_fixture("messages_cache_read_tool_use.json").await;
    assert_eq!(
        calls(&response),
        [(
            "toolu_01EeJVqRCRdPfudV8KZxzDYe".into(),
            "star_wars_tool".into(),
            "{}".into()
        )]
    );
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    assert_eq!(
        response.usage,
        Usage {
            input_tokens: 151 + 4602,
            output_tokens: 38,
            cached_input_tokens: 4602,
            ..Default::default()
        }
    );
}

/// Every `.sse` fixture.
const STREAMS: [&str; 7] = [
    "stream_parallel_tool_use.sse",
    "stream_redacted_thinking.sse",
    "stream_server_tool_then_tool_use.sse",
    "stream_text.sse",
    "stream_text_after_tool.sse",
    "stream_thinking_text.sse",
    "stream_thinking_tool_use.sse",
];

async fn decode_pieces(pieces: Vec<Vec<u8>>) -> Vec<StreamEvent> {
    let (events, _) = decoded(providers::anthropic::decode_stream(futures::stream::iter(
        pieces,
    )))
    .await
    .expect("the stream decodes");
    events
}

/// Re-split at byte boundaries, one byte per read (inside multi-byte characters and between
/// `\n`s), every recording decodes to the same events as in one read, and to the same as over
/// HTTP.
#[tokio::test]
async fn one_byte_reads_decode_the_same() {
    for name in STREAMS {
        let body = fixture(&format!("anthropic/{name}"));
        let whole = decode_pieces(vec![body.clone()]).await;
        let bytes = decode_pieces(body.iter().map(|b| vec![*b]).collect()).await;
        assert_eq!(whole, bytes, "{name}");
        let (over_http, _) = stream_fixture(name).await;
        assert_eq!(whole, over_http, "{name}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn arbitrary_chunking_decodes_the_same(
        which in 0..STREAMS.len(),
        cuts in proptest::collection::vec(any::<usize>(), 0..12),
    ) {
        let body = fixture(&format!("anthropic/{}", STREAMS[which]));
        let offsets: Vec<usize> = cuts.iter().map(|c| c % (body.len() + 1)).collect();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        let (whole, split) = runtime.block_on(async {
            (
                decode_pieces(vec![body.clone()]).await,
                decode_pieces(split_at(&body, &offsets)).await,
            )
        });
        prop_assert_eq!(whole, split);
    }
}

/// `collect` of a stream and the events' own whole parts agree on the message.
#[tokio::test]
async fn collected_message_is_the_whole_events_in_order() {
    for name in STREAMS {
        let (events, response) = stream_fixture(name).await;
        let mut stream = providers::anthropic::decode_stream(futures::stream::iter([fixture(
            &format!("anthropic/{name}"),
        )]));
        let mut wholes = Vec::new();
        while let Some(event) = stream.next().await {
            match event.expect("decodes") {
                StreamEvent::Reasoning(r) => wholes.push(ContentPart::Reasoning(r)),
                StreamEvent::ToolCall(c) => wholes.push(ContentPart::ToolCall(c)),
                _ => {}
            }
        }
        let kept: Vec<&ContentPart> = response
            .message
            .parts
            .iter()
            .filter(|p| !matches!(p, ContentPart::Text { .. }))
            .collect();
        assert_eq!(kept, wholes.iter().collect::<Vec<_>>(), "{name}");
        assert!(
            events
                .iter()
                .all(|e| !matches!(e, StreamEvent::TextReasoning(_)))
        );
    }
}

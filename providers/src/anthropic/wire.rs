//! What Anthropic answers with, shared by streamed and non-streamed answers: content blocks
//! (and the [`Chunk`]s each one becomes), usage, stop reasons and the error envelope.
//!
//! The structs are flat on purpose: the hot path (`content_block_delta`, thousands per answer)
//! deserialises borrowed strings straight out of the event without buffering a tagged enum,
//! and unknown block, delta and event types simply leave their fields unset.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::error::WireError;
use crate::assemble::{Chunk, UsageUpdate};
use crate::http::sse::{MaybeText, Skipped, nullable_list};
use crate::wire_numbers::Lenient;
use crate::{FinishReason, Provider};

pub(super) const PROVIDER: Provider = Provider::Anthropic;

/// A message object: the non-streamed answer, or `message_start.message`.
#[derive(Debug, Deserialize)]
pub(super) struct WireMessage<'a> {
    #[serde(rename = "type", default, borrow)]
    pub(super) kind: MaybeText<'a>,
    #[serde(default, borrow)]
    pub(super) id: MaybeText<'a>,
    #[serde(default, borrow)]
    pub(super) model: MaybeText<'a>,
    /// Whole blocks: the answer's, or those a stream's `message_start` already holds (a
    /// server tool's results and the client call they lead to, when a turn continues).
    #[serde(default, borrow, deserialize_with = "nullable_list")]
    pub(super) content: Vec<WireBlock<'a>>,
    #[serde(default, borrow)]
    pub(super) stop_reason: MaybeText<'a>,
    #[serde(default)]
    pub(super) usage: Lenient<WireUsage>,
    #[serde(borrow)]
    pub(super) error: Option<WireError<'a>>,
}

/// A content block: `text`, `thinking`, `redacted_thinking`, `tool_use`, or a kind Skein does
/// not read (server tools and their results, MCP, fallbacks, compaction, …). Every field is
/// read leniently: a kind Skein skips may use these names for values of other shapes.
#[derive(Debug, Deserialize)]
pub(super) struct WireBlock<'a> {
    #[serde(rename = "type", default, borrow)]
    pub(super) kind: MaybeText<'a>,
    #[serde(default, borrow)]
    pub(super) text: MaybeText<'a>,
    #[serde(default, borrow)]
    pub(super) thinking: MaybeText<'a>,
    #[serde(default, borrow)]
    pub(super) signature: MaybeText<'a>,
    /// `redacted_thinking.data`.
    #[serde(default, borrow)]
    pub(super) data: MaybeText<'a>,
    #[serde(default, borrow)]
    pub(super) id: MaybeText<'a>,
    #[serde(default, borrow)]
    pub(super) name: MaybeText<'a>,
    /// `tool_use.input`, kept as the exact JSON text the model wrote.
    #[serde(default, borrow)]
    pub(super) input: Option<&'a RawValue>,
}

/// A block that has started and not yet stopped, as the parser tracks it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum OpenBlock {
    Text,
    /// A thinking or redacted-thinking block; `signature` collects `signature_delta`s.
    Reasoning {
        signature: String,
    },
    /// A client tool call; `has_input` says whether any input JSON arrived.
    ToolUse {
        has_input: bool,
    },
    /// A block Skein does not surface. Server tools (`server_tool_use`, `web_search_tool_result`,
    /// `tool_search_tool_result`, …) ran on Anthropic's side: they are not calls for the caller
    /// to make, so they are not [`ToolCall`](messages::ToolCall)s, and the message model has no
    /// part to keep them in; their deltas are ignored.
    Skipped,
}

/// The chunks that open block `key`; returns the block's state. Kinds Skein does not read
/// are named in `skipped`.
pub(super) fn open_block(
    key: usize,
    block: WireBlock<'_>,
    out: &mut Vec<Chunk>,
    skipped: &mut Skipped,
) -> OpenBlock {
    match block.kind.0.as_deref() {
        Some("text") => {
            if let Some(text) = block.text.non_empty() {
                out.push(Chunk::Text(text.into_owned()));
            }
            OpenBlock::Text
        }
        Some("thinking") => {
            if let Some(text) = block.thinking.non_empty() {
                out.push(Chunk::ReasoningDelta {
                    key,
                    text: text.into_owned(),
                });
            }
            let signature = block.signature.0.map(Cow::into_owned).unwrap_or_default();
            set_signature(key, &signature, out);
            OpenBlock::Reasoning { signature }
        }
        Some("redacted_thinking") => {
            out.push(Chunk::ReasoningSet {
                key,
                fields: messages::Reasoning {
                    encrypted: block.data.non_empty().map(Cow::into_owned),
                    ..Default::default()
                },
            });
            OpenBlock::Reasoning {
                signature: String::new(),
            }
        }
        Some("tool_use") => {
            out.push(Chunk::ToolCallStart {
                key,
                id: block.id.0.map(Cow::into_owned).unwrap_or_default(),
                name: block.name.0.map(Cow::into_owned).unwrap_or_default(),
                reasoning: None,
            });
            // Streams open with `input: {}` and send the input as deltas; a whole block
            // (non-streamed answer, or one `message_start` already holds) carries it here.
            let input = block
                .input
                .map(RawValue::get)
                .filter(|raw| !is_empty_object(raw) && *raw != "null");
            if let Some(input) = input {
                out.push(Chunk::ToolCallArgs {
                    key,
                    arguments: input.to_owned(),
                });
            }
            OpenBlock::ToolUse {
                has_input: input.is_some(),
            }
        }
        other => {
            skipped.note(PROVIDER, "content block", other.unwrap_or("(untyped)"));
            OpenBlock::Skipped
        }
    }
}

/// The chunks that close block `key`.
pub(super) fn close_block(key: usize, block: OpenBlock, out: &mut Vec<Chunk>) {
    match block {
        OpenBlock::Reasoning { .. } => out.push(Chunk::ReasoningEnd { key }),
        OpenBlock::ToolUse { has_input } => {
            if !has_input {
                // A tool without arguments streams one empty `partial_json`: its input is `{}`
                // (sent as a delta too, so a call's argument deltas always add up to it).
                out.push(Chunk::ToolCallArgs {
                    key,
                    arguments: "{}".into(),
                });
            }
            out.push(Chunk::ToolCallEnd { key });
        }
        OpenBlock::Text | OpenBlock::Skipped => {}
    }
}

/// Sets the signature of reasoning block `key` (nothing for an empty one: an empty
/// `signature` field is a placeholder, not a value to echo).
pub(super) fn set_signature(key: usize, signature: &str, out: &mut Vec<Chunk>) {
    if !signature.is_empty() {
        out.push(Chunk::ReasoningSet {
            key,
            fields: messages::Reasoning::signature(signature),
        });
    }
}

fn is_empty_object(raw: &str) -> bool {
    let inner = raw.trim();
    inner
        .strip_prefix('{')
        .and_then(|rest| rest.strip_suffix('}'))
        .is_some_and(|body| body.trim().is_empty())
}

/// `usage` of `message_start`, `message_delta` or a whole message.
#[derive(Clone, Copy, Debug, Default, Deserialize)]
pub(super) struct WireUsage {
    #[serde(default, deserialize_with = "crate::wire_numbers::token_count")]
    input_tokens: Option<u64>,
    #[serde(default, deserialize_with = "crate::wire_numbers::token_count")]
    output_tokens: Option<u64>,
    #[serde(default, deserialize_with = "crate::wire_numbers::token_count")]
    cache_creation_input_tokens: Option<u64>,
    #[serde(default, deserialize_with = "crate::wire_numbers::token_count")]
    cache_read_input_tokens: Option<u64>,
    output_tokens_details: Option<OutputDetails>,
}

#[derive(Clone, Copy, Debug, Default, Deserialize)]
struct OutputDetails {
    #[serde(default, deserialize_with = "crate::wire_numbers::token_count")]
    thinking_tokens: Option<u64>,
}

/// The token counts seen so far in one answer.
///
/// Anthropic's `input_tokens` leaves out the cached prefix (read and written), while
/// [`Usage::input_tokens`](crate::Usage) counts the whole prompt, so the total is the sum of the
/// three. Each event may repeat some fields (`message_delta` is cumulative), so the latest
/// value of each field wins before they are added up.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct UsageTotals {
    input: Option<u64>,
    output: Option<u64>,
    cache_read: Option<u64>,
    cache_creation: Option<u64>,
    thinking: Option<u64>,
}

impl UsageTotals {
    /// Applies `usage` and returns the update for the assembler.
    pub(super) fn update(&mut self, usage: WireUsage) -> Chunk {
        let fields = [
            (usage.input_tokens, &mut self.input),
            (usage.output_tokens, &mut self.output),
            (usage.cache_read_input_tokens, &mut self.cache_read),
            (usage.cache_creation_input_tokens, &mut self.cache_creation),
            (
                usage.output_tokens_details.and_then(|d| d.thinking_tokens),
                &mut self.thinking,
            ),
        ];
        for (new, slot) in fields {
            if new.is_some() {
                *slot = new;
            }
        }
        let prompt = [self.input, self.cache_read, self.cache_creation];
        let input_tokens = prompt.iter().any(Option::is_some).then(|| {
            prompt
                .iter()
                .flatten()
                .fold(0u64, |sum, n| sum.saturating_add(*n))
        });
        Chunk::Usage(UsageUpdate {
            input_tokens,
            output_tokens: self.output,
            cached_input_tokens: self.cache_read,
            cache_creation_tokens: self.cache_creation,
            reasoning_tokens: self.thinking,
        })
    }
}

/// `stop_reason` as a [`FinishReason`].
///
/// `stop_sequence` is a natural stop; `model_context_window_exceeded` ends the answer for lack
/// of room like `max_tokens` does; `pause_turn` (a long server-tool turn to continue) and
/// unknown reasons keep their name.
pub(super) fn finish_reason(reason: &str) -> FinishReason {
    match reason {
        "end_turn" | "stop_sequence" => FinishReason::Stop,
        "max_tokens" | "model_context_window_exceeded" => FinishReason::Length,
        "tool_use" => FinishReason::ToolCalls,
        "refusal" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_owned()),
    }
}

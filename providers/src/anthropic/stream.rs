//! The Messages SSE stream → [`Chunk`]s.
//!
//! Events (`event:` equals the payload's `type`): `message_start` (id, model, input and cache
//! usage), then per content block `content_block_start` / `content_block_delta`s /
//! `content_block_stop` keyed by `index`, then `message_delta` (stop reason, cumulative usage)
//! and `message_stop`. `ping` and unknown events are ignored; `error` ends the stream with a
//! [`ProviderError::Stream`]. Payloads are padded with spaces before their closing brace, so
//! they are only ever read with a JSON parser.

use std::borrow::Cow;

use serde::Deserialize;

use super::error::{WireError, stream_error};
use super::wire::{
    OpenBlock, PROVIDER, UsageTotals, WireBlock, WireMessage, WireUsage, close_block,
    finish_reason, open_block, set_signature,
};
use crate::ProviderError;
use crate::assemble::{Chunk, Overflow};
use crate::http::sse::{EventParser, json};
use crate::wire_numbers::Lenient;

#[derive(Deserialize)]
struct Event<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    index: Option<usize>,
    #[serde(borrow)]
    message: Option<WireMessage<'a>>,
    #[serde(borrow)]
    content_block: Option<WireBlock<'a>>,
    #[serde(borrow)]
    delta: Option<Delta<'a>>,
    #[serde(default)]
    usage: Lenient<WireUsage>,
    #[serde(borrow)]
    error: Option<WireError<'a>>,
}

/// A content block delta or the `delta` of `message_delta`.
#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(borrow)]
    thinking: Option<Cow<'a, str>>,
    #[serde(borrow)]
    signature: Option<Cow<'a, str>>,
    #[serde(borrow)]
    partial_json: Option<Cow<'a, str>>,
    #[serde(borrow)]
    stop_reason: Option<Cow<'a, str>>,
}

/// Parses one Messages stream; see the module docs.
#[derive(Debug, Default)]
pub(crate) struct StreamParser {
    /// Blocks started and not stopped, by index (rarely more than one).
    open: Vec<(usize, OpenBlock)>,
    usage: UsageTotals,
}

impl EventParser for StreamParser {
    fn parse(
        &mut self,
        event: &str,
        data: &str,
        out: &mut Vec<Chunk>,
    ) -> Result<(), ProviderError> {
        let payload: Event<'_> = json(PROVIDER, data)?;
        // The payload's `type` is authoritative; the SSE name covers servers that omit it.
        let kind = payload.kind.as_deref().unwrap_or(event);
        match kind {
            "message_start" => {
                if let Some(message) = payload.message {
                    out.push(Chunk::Started {
                        id: message.id.map(Cow::into_owned),
                        model: message.model.map(Cow::into_owned),
                    });
                    if let Some(usage) = message.usage.0 {
                        out.push(self.usage.update(usage));
                    }
                }
            }
            "content_block_start" => {
                if let (Some(key), Some(block)) = (payload.index, payload.content_block) {
                    // A repeated start replaces the block (closing what it held first).
                    if let Some(stale) = self.take(key) {
                        close_block(key, stale, out);
                    }
                    // `index` is only a key: a huge one opens one block, but a stream that
                    // never stops its blocks may not open more than the cap.
                    Overflow::check(self.open.len(), "content block", key)
                        .map_err(|overflow| overflow.into_error(PROVIDER))?;
                    let state = open_block(key, block, out);
                    self.open.push((key, state));
                }
            }
            "content_block_delta" => {
                if let (Some(key), Some(delta)) = (payload.index, payload.delta) {
                    self.delta(key, delta, out);
                }
            }
            "content_block_stop" => {
                if let Some(block) = payload.index.and_then(|key| Some((key, self.take(key)?))) {
                    close_block(block.0, block.1, out);
                }
            }
            "message_delta" => {
                if let Some(reason) = payload.delta.and_then(|delta| delta.stop_reason) {
                    out.push(Chunk::Finish(finish_reason(&reason)));
                }
                if let Some(usage) = payload.usage.0 {
                    out.push(self.usage.update(usage));
                }
            }
            "message_stop" => out.push(Chunk::Done),
            "error" => return Err(stream_error(payload.error)),
            // `ping`, and events added to the API later.
            _ => {}
        }
        Ok(())
    }

    // A stop reason means the content is complete even if `message_stop` was lost.
    const FINISH_REASON_COMPLETES: bool = true;

    const MISSING_END: &'static str =
        "no message_delta with a stop_reason and no message_stop before the stream ended";
}

impl StreamParser {
    fn take(&mut self, key: usize) -> Option<OpenBlock> {
        let position = self.open.iter().position(|(k, _)| *k == key)?;
        Some(self.open.swap_remove(position).1)
    }

    fn delta(&mut self, key: usize, delta: Delta<'_>, out: &mut Vec<Chunk>) {
        let block = self
            .open
            .iter_mut()
            .find(|(k, _)| *k == key)
            .map(|(_, block)| block);
        match (delta.kind.as_deref(), block) {
            // Deltas of skipped blocks (server tools) are not the caller's.
            (_, Some(OpenBlock::Skipped)) => {}
            (Some("text_delta"), None | Some(OpenBlock::Text)) => {
                if let Some(text) = delta.text.filter(|text| !text.is_empty()) {
                    out.push(Chunk::Text(text.into_owned()));
                }
            }
            (Some("thinking_delta"), None | Some(OpenBlock::Reasoning { .. })) => {
                if let Some(text) = delta.thinking.filter(|text| !text.is_empty()) {
                    out.push(Chunk::ReasoningDelta {
                        key,
                        text: text.into_owned(),
                    });
                }
            }
            (Some("signature_delta"), Some(OpenBlock::Reasoning { signature })) => {
                // One delta in practice; should it come in pieces, they add up.
                signature.push_str(delta.signature.as_deref().unwrap_or_default());
                set_signature(key, signature, out);
            }
            (Some("input_json_delta"), Some(OpenBlock::ToolUse { has_input })) => {
                if let Some(json) = delta.partial_json.filter(|json| !json.is_empty()) {
                    *has_input = true;
                    out.push(Chunk::ToolCallArgs {
                        key,
                        arguments: json.into_owned(),
                    });
                }
            }
            // `citations_delta`, deltas of unknown kinds, or deltas that do not fit the block.
            _ => {}
        }
    }
}

//! The Messages SSE stream → [`Chunk`]s.
//!
//! Events (`event:` equals the payload's `type`): `message_start` (id, model, input and cache
//! usage, and sometimes whole content blocks already), then per content block
//! `content_block_start` / `content_block_delta`s / `content_block_stop` keyed by `index`,
//! then `message_delta` (stop reason, cumulative usage) and `message_stop`. `ping` is ignored;
//! unknown events, block types and delta types are skipped (named once at `debug` level);
//! `error` ends the stream with a [`ProviderError::Stream`]. Payloads are padded with spaces
//! before their closing brace, so they are only ever read with a JSON parser. A block event's
//! `index` is the only thing that places it: a missing one, or one that is not a non-negative
//! integer (`-1`, `1e26`), ends the stream with [`ProviderError::Decode`] instead of dropping
//! the block (a tool call, its arguments) unseen.
//!
//! One stream carries one message. A repeated `message_start` for the same message (a proxy
//! replaying it) is ignored but for its usage; a `message_start` for another message while the
//! first is still open means a proxy spliced a retried generation into the body after losing
//! the first one mid-way: the stream breaks the protocol and ends with
//! [`ProviderError::Decode`] instead of merging two generations (whose thinking signatures and
//! cut tool input could never be sent back).

use std::borrow::Cow;

use serde::Deserialize;

use super::error::{WireError, stream_error};
use super::wire::{
    OpenBlock, PROVIDER, UsageTotals, WireBlock, WireMessage, WireUsage, close_block,
    finish_reason, open_block, set_signature,
};
use crate::ProviderError;
use crate::assemble::{Chunk, Overflow};
use crate::http::sse::{EventParser, MaybeText, Skipped, event_json, field, index_field};
use crate::wire_numbers::Lenient;

#[derive(Deserialize)]
struct Event<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: MaybeText<'a>,
    /// The content block a `content_block_*` event is about, read by [`block_key`].
    #[serde(default, borrow)]
    index: Option<&'a serde_json::value::RawValue>,
    /// `message_start.message`, read only for that event.
    #[serde(default, borrow)]
    message: Option<&'a serde_json::value::RawValue>,
    #[serde(default, borrow)]
    content_block: Option<WireBlock<'a>>,
    #[serde(default, borrow)]
    delta: Option<Delta<'a>>,
    #[serde(default)]
    usage: Lenient<WireUsage>,
    #[serde(default, borrow)]
    error: Option<WireError<'a>>,
}

/// A content block delta or the `delta` of `message_delta`. The fields are read leniently:
/// delta types Skein does not read may use the same names for other values.
#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: MaybeText<'a>,
    #[serde(default, borrow)]
    text: MaybeText<'a>,
    #[serde(default, borrow)]
    thinking: MaybeText<'a>,
    #[serde(default, borrow)]
    signature: MaybeText<'a>,
    #[serde(default, borrow)]
    partial_json: MaybeText<'a>,
    #[serde(default, borrow)]
    stop_reason: MaybeText<'a>,
}

/// Keys of the blocks `message_start` holds whole, apart from the streamed blocks' indexes.
const PREPOPULATED: usize = usize::MAX / 2;

/// Parses one Messages stream; see the module docs.
#[derive(Debug, Default)]
pub(crate) struct StreamParser {
    /// The message this stream carries, once `message_start` came: its id (`None` if the
    /// server sent none).
    message: Option<Option<String>>,
    /// Blocks started and not stopped, by index (rarely more than one).
    open: Vec<(usize, OpenBlock)>,
    usage: UsageTotals,
    skipped: Skipped,
}

impl EventParser for StreamParser {
    fn parse(
        &mut self,
        event: &str,
        data: &str,
        out: &mut Vec<Chunk>,
    ) -> Result<(), ProviderError> {
        let payload: Event<'_> = event_json(PROVIDER, data)?;
        // The payload's `type` is authoritative; the SSE name covers servers that omit it.
        let kind = payload.kind.0.as_deref().unwrap_or(event);
        match kind {
            "message_start" => {
                if let Some(raw) = payload.message {
                    let message: WireMessage<'_> = field(PROVIDER, kind, "message", raw)?;
                    self.message_start(message, data, out)?;
                }
            }
            "content_block_start" => {
                let key = block_key(kind, payload.index, data)?;
                if let Some(block) = payload.content_block {
                    // A repeated start replaces the block (closing what it held first).
                    if let Some(stale) = self.take(key) {
                        close_block(key, stale, out);
                    }
                    // `index` is only a key: a huge one opens one block, but a stream that
                    // never stops its blocks may not open more than the cap.
                    Overflow::check(self.open.len(), "content block", key)
                        .map_err(|overflow| overflow.into_error(PROVIDER))?;
                    let state = open_block(key, block, out, &mut self.skipped);
                    self.open.push((key, state));
                }
            }
            "content_block_delta" => {
                let key = block_key(kind, payload.index, data)?;
                if let Some(delta) = payload.delta {
                    self.delta(key, delta, out);
                }
            }
            "content_block_stop" => {
                let key = block_key(kind, payload.index, data)?;
                if let Some(block) = self.take(key) {
                    close_block(key, block, out);
                }
            }
            "message_delta" => {
                if let Some(reason) = payload
                    .delta
                    .and_then(|delta| delta.stop_reason.non_empty())
                {
                    out.push(Chunk::Finish(finish_reason(&reason)));
                }
                if let Some(usage) = payload.usage.0 {
                    out.push(self.usage.update(usage));
                }
            }
            "message_stop" => out.push(Chunk::Done),
            "error" => return Err(stream_error(payload.error)),
            "ping" => {}
            other => self.skipped.note(PROVIDER, "event", other),
        }
        Ok(())
    }

    // A stop reason means the content is complete even if `message_stop` was lost.
    const FINISH_REASON_COMPLETES: bool = true;

    const MISSING_END: &'static str =
        "no message_delta with a stop_reason and no message_stop before the stream ended";
}

/// The block a `content_block_*` event of type `kind` is about. Every such event names its
/// block by `index` and nothing else: one without a usable index (missing, `-1`, `1e26`)
/// would drop a tool call or its arguments without a word, so it refuses the answer.
fn block_key(
    kind: &str,
    raw: Option<&serde_json::value::RawValue>,
    data: &str,
) -> Result<usize, ProviderError> {
    index_field(PROVIDER, kind, "index", raw, data)?.ok_or_else(|| {
        ProviderError::decode(
            PROVIDER,
            format!(
                "a `{kind}` event has no `index`: the content block it is about cannot be \
                 placed, so the answer is refused rather than lose it"
            ),
            data,
        )
    })
}

impl StreamParser {
    fn message_start(
        &mut self,
        message: WireMessage<'_>,
        raw_event: &str,
        out: &mut Vec<Chunk>,
    ) -> Result<(), ProviderError> {
        let id = message.id.non_empty();
        if let Some(open) = &self.message {
            return match (open.as_deref(), id.as_deref()) {
                (Some(open), Some(id)) if open != id => Err(ProviderError::decode(
                    PROVIDER,
                    format!(
                        "a `message_start` for message `{id}` while message `{open}` was still open: one stream carries one message, so two generations were spliced into it (a proxy retrying upstream); they are not merged"
                    ),
                    raw_event,
                )),
                // The same message again: only its usage counts.
                _ => {
                    if let Some(usage) = message.usage.0 {
                        out.push(self.usage.update(usage));
                    }
                    Ok(())
                }
            };
        }
        self.message = Some(id.as_ref().map(|id| id.to_string()));
        out.push(Chunk::Started {
            id: id.map(Cow::into_owned),
            model: message.model.0.map(Cow::into_owned),
        });
        if let Some(usage) = message.usage.0 {
            out.push(self.usage.update(usage));
        }
        // Whole blocks the message already holds (keys apart from the streamed blocks').
        for (position, block) in message.content.into_iter().enumerate() {
            let key = PREPOPULATED.saturating_add(position);
            let state = open_block(key, block, out, &mut self.skipped);
            close_block(key, state, out);
        }
        if let Some(reason) = message.stop_reason.non_empty() {
            out.push(Chunk::Finish(finish_reason(&reason)));
        }
        Ok(())
    }

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
        match (delta.kind.0.as_deref(), block) {
            // Deltas of skipped blocks (server tools) are not the caller's.
            (_, Some(OpenBlock::Skipped)) => {}
            (Some("text_delta"), None | Some(OpenBlock::Text)) => {
                if let Some(text) = delta.text.non_empty() {
                    out.push(Chunk::Text(text.into_owned()));
                }
            }
            (Some("thinking_delta"), None | Some(OpenBlock::Reasoning { .. })) => {
                if let Some(text) = delta.thinking.non_empty() {
                    out.push(Chunk::ReasoningDelta {
                        key,
                        text: text.into_owned(),
                    });
                }
            }
            (Some("signature_delta"), Some(OpenBlock::Reasoning { signature })) => {
                // One delta in practice; should it come in pieces, they add up.
                signature.push_str(delta.signature.0.as_deref().unwrap_or_default());
                set_signature(key, signature, out);
            }
            (Some("input_json_delta"), Some(OpenBlock::ToolUse { has_input })) => {
                if let Some(json) = delta.partial_json.non_empty() {
                    *has_input = true;
                    out.push(Chunk::ToolCallArgs {
                        key,
                        arguments: json.into_owned(),
                    });
                }
            }
            // Deltas that do not fit their block.
            (Some("text_delta" | "thinking_delta" | "signature_delta" | "input_json_delta"), _) => {
            }
            // `citations_delta`, and kinds added to the API later.
            (other, _) => self.skipped.note(
                PROVIDER,
                "content block delta",
                other.unwrap_or("(untyped)"),
            ),
        }
    }
}

//! Responses API answers → [`Chunk`]s: the SSE event stream and the non-streamed JSON.
//!
//! Each event is dispatched on its `type` first, and only the fields that type is read for
//! are decoded: the API adds item and event types often, and their fields need not look like
//! the ones Skein reads under the same names (`delta` is an object on
//! `response.shell_call_output_content.delta`, `arguments` on a `tool_search_call` item). A
//! field Skein does read that has another shape is a [`ProviderError::Decode`] naming the
//! event type and the field; so is an `output_index` that is not a non-negative integer
//! (`-1`, `1e26`): a call's events are placed by it, and read as missing it would open the
//! call a second time.
//!
//! What becomes part of the answer: `message` items (their `output_text` and `refusal`
//! parts: the streamed deltas, or the finished text of a part when no delta came),
//! `reasoning` items (their summary parts joined with a blank line, or their
//! `reasoning_text` content when they have no summary; id and `encrypted_content` of the
//! finished item), and client calls: `function_call` items and `custom_tool_call` items
//! (client-defined tools whose free-form `input` is the call's arguments). Built-in tools
//! (web search, file search, code interpreter, shell, apply-patch, MCP, tool search, …) run on
//! OpenAI's side or are not calls for the caller to answer; their items and events are
//! skipped, each type named once at `debug` level.
//!
//! Log probabilities (asked for with `include: ["message.output_text.logprobs"]`) are read
//! from each `response.output_text.delta` and, for text no delta showed, from the finished
//! part; they come before the text they describe.

use std::borrow::Cow;

use messages::{Reasoning, ToolCall};
use serde::Deserialize;
use serde_json::value::RawValue;

use super::error::ResponseError;
use crate::assemble::{Chunk, UsageUpdate};
use crate::http::sse::{
    EventParser, MaybeText, Skipped, event_json, field, index_field, json, lenient_index,
    nullable_list,
};
use crate::openai::error::{ErrorEnvelope, WireError, stream_error};
use crate::openai::wire::WireUsage;
use crate::wire_numbers::Lenient;
use crate::{FinishReason, Provider, ProviderError, TokenLogprob};

const PROVIDER: Provider = Provider::OpenAi;

/// Joins the parts of a reasoning summary in [`Reasoning::text`].
const SUMMARY_SEPARATOR: &str = "\n\n";

/// One event, its fields kept as raw JSON until its type says which are read.
#[derive(Deserialize)]
struct Event<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: MaybeText<'a>,
    /// The output item the event is about, read with [`index_field`]: the item a call's
    /// events are placed by.
    #[serde(default, borrow)]
    output_index: Option<&'a RawValue>,
    #[serde(default, deserialize_with = "lenient_index")]
    content_index: Option<usize>,
    #[serde(default, deserialize_with = "lenient_index")]
    summary_index: Option<usize>,
    #[serde(default, borrow)]
    delta: Option<&'a RawValue>,
    #[serde(default, borrow)]
    arguments: Option<&'a RawValue>,
    #[serde(default, borrow)]
    input: Option<&'a RawValue>,
    #[serde(default, borrow)]
    text: Option<&'a RawValue>,
    #[serde(default, borrow)]
    refusal: Option<&'a RawValue>,
    /// Of an `output_text` delta: `[]` unless log probabilities were asked for, kept raw so
    /// the usual delta costs no parse for it.
    #[serde(default, borrow)]
    logprobs: Option<&'a RawValue>,
    #[serde(default, borrow)]
    part: Option<&'a RawValue>,
    #[serde(default, borrow)]
    item: Option<&'a RawValue>,
    #[serde(default, borrow)]
    response: Option<&'a RawValue>,
    #[serde(default, borrow)]
    error: Option<&'a RawValue>,
    /// Top-level `code` / `message` of an `error` event (the documented form; some
    /// recordings nest them under `error`).
    #[serde(default, borrow)]
    code: Option<&'a RawValue>,
    #[serde(default, borrow)]
    message: Option<&'a RawValue>,
}

/// What every item has: its type.
#[derive(Deserialize)]
struct ItemHead<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: MaybeText<'a>,
}

/// The fields of the item types Skein reads (`function_call`, `custom_tool_call`,
/// `reasoning`, `message`); each type reads its own.
#[derive(Default, Deserialize)]
struct Item<'a> {
    #[serde(default, borrow)]
    id: MaybeText<'a>,
    #[serde(default, borrow)]
    call_id: MaybeText<'a>,
    #[serde(default, borrow)]
    name: MaybeText<'a>,
    #[serde(default, borrow)]
    arguments: MaybeText<'a>,
    #[serde(default, borrow)]
    input: MaybeText<'a>,
    #[serde(default, borrow)]
    encrypted_content: MaybeText<'a>,
    #[serde(default, borrow, deserialize_with = "nullable_list")]
    summary: Vec<TextPart<'a>>,
    #[serde(default, borrow, deserialize_with = "nullable_list")]
    content: Vec<TextPart<'a>>,
}

/// `summary_text`, `reasoning_text`, `output_text` or `refusal` parts.
#[derive(Deserialize)]
struct TextPart<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: MaybeText<'a>,
    #[serde(default, borrow)]
    text: MaybeText<'a>,
    #[serde(default, borrow)]
    refusal: MaybeText<'a>,
    /// An `output_text` part's log probabilities (with `include:
    /// ["message.output_text.logprobs"]`).
    #[serde(default, borrow)]
    logprobs: Option<&'a RawValue>,
}

/// The log probabilities of an `output_text` delta or part; the delta's tokens have no
/// `bytes` (OpenAI sends them only on the part), read as `None`.
fn logprobs(raw: Option<&RawValue>) -> Option<Chunk> {
    crate::logprobs::read_list(raw?.get(), "logprobs", |token: TokenLogprob| token)
        .map(Chunk::Logprobs)
}

impl<'a> TextPart<'a> {
    fn text(self) -> Option<Cow<'a, str>> {
        if self.kind.0.as_deref() == Some("refusal") {
            self.refusal.0
        } else {
            self.text.0
        }
    }
}

/// The kinds of items Skein reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Message,
    Reasoning,
    /// `function_call` (arguments) or `custom_tool_call` (input).
    Call {
        custom: bool,
    },
    Other,
}

impl Kind {
    fn of(kind: Option<&str>) -> Kind {
        match kind {
            Some("message") => Kind::Message,
            Some("reasoning") => Kind::Reasoning,
            Some("function_call") => Kind::Call { custom: false },
            Some("custom_tool_call") => Kind::Call { custom: true },
            _ => Kind::Other,
        }
    }
}

/// A part of an item: whether deltas came for it, and (reasoning) its text so far.
#[derive(Debug, Default)]
struct Part {
    /// `true` for a reasoning item's summary part, `false` for a content part.
    summary: bool,
    index: usize,
    streamed: Option<String>,
    final_text: Option<String>,
    /// A message part whose text reached the answer.
    shown: bool,
}

/// An output item, keyed by `output_index`.
#[derive(Debug)]
struct ItemState {
    key: usize,
    kind: Kind,
    /// A call the assembler was told about.
    announced: bool,
    parts: Vec<Part>,
}

impl ItemState {
    /// Part `index` of the summary or the content, tracked if new; `None` past
    /// [`MAX_PARTS`] parts (indexes come from the wire: a key, never a size).
    fn part(&mut self, summary: bool, index: usize) -> Option<&mut Part> {
        let position = match self
            .parts
            .iter()
            .position(|p| p.summary == summary && p.index == index)
        {
            Some(position) => position,
            None if self.parts.len() < MAX_PARTS => {
                self.parts.push(Part {
                    summary,
                    index,
                    ..Part::default()
                });
                self.parts.len() - 1
            }
            None => return None,
        };
        Some(&mut self.parts[position])
    }

    /// A reasoning item's text: its summary parts (streamed, else finished text) joined, or
    /// its content parts when it has no summary.
    fn reasoning_text(&mut self) -> String {
        let summary = self.parts.iter().any(|p| p.summary);
        self.parts.sort_by_key(|p| (p.summary, p.index));
        let texts: Vec<&str> = self
            .parts
            .iter()
            .filter(|p| p.summary == summary)
            .map(|p| {
                p.streamed
                    .as_deref()
                    .or(p.final_text.as_deref())
                    .unwrap_or_default()
            })
            .collect();
        texts.join(SUMMARY_SEPARATOR)
    }
}

/// Most output items one answer may have (a key per item, never a size).
const MAX_ITEMS: usize = crate::MAX_OPEN_BLOCKS;
/// Most parts one item may have.
const MAX_PARTS: usize = crate::MAX_OPEN_BLOCKS;

#[derive(Deserialize)]
struct ResponseHead<'a> {
    #[serde(default, borrow)]
    id: MaybeText<'a>,
    #[serde(default, borrow)]
    model: MaybeText<'a>,
}

/// The fields of a finished response the stream reads.
#[derive(Deserialize)]
struct ResponseTail<'a> {
    #[serde(default, borrow)]
    status: MaybeText<'a>,
    #[serde(default)]
    usage: Lenient<WireUsage>,
    #[serde(default, borrow)]
    incomplete_details: Option<IncompleteDetails<'a>>,
    #[serde(default, borrow)]
    error: Option<ResponseError<'a>>,
}

#[derive(Deserialize)]
struct IncompleteDetails<'a> {
    #[serde(default, borrow)]
    reason: MaybeText<'a>,
}

/// Parses the events of a Responses stream (`response.completed` ends it).
#[derive(Debug, Default)]
pub(crate) struct ResponsesStreamParser {
    started: bool,
    items: Vec<ItemState>,
    skipped: Skipped,
}

impl EventParser for ResponsesStreamParser {
    fn parse(
        &mut self,
        sse_event: &str,
        data: &str,
        out: &mut Vec<Chunk>,
    ) -> Result<(), ProviderError> {
        let event: Event<'_> = event_json(PROVIDER, data)?;
        let kind = event.kind.0.as_deref().unwrap_or(sse_event);
        // Missing, it means the last item; any other value that is no index cannot be placed
        // (read as missing, a call's `done` would open a second call).
        let output_index = index_field(PROVIDER, kind, "output_index", event.output_index, data)?;
        match kind {
            "response.created" | "response.in_progress" | "response.queued" => {
                if let (false, Some(raw)) = (self.started, event.response) {
                    let head: ResponseHead<'_> = field(PROVIDER, kind, "response", raw)?;
                    self.started = true;
                    out.push(Chunk::Started {
                        id: head.id.0.map(Cow::into_owned),
                        model: head.model.0.map(Cow::into_owned),
                    });
                }
            }
            "response.output_item.added" => {
                let key = output_index.unwrap_or(self.items.len());
                if let Some(raw) = event.item {
                    self.item_added(kind, key, raw, out)?;
                }
            }
            "response.output_item.done" => {
                // Missing, it is the item opened last: a new slot would announce the call a
                // second time.
                let key = output_index
                    .unwrap_or_else(|| self.items.last().map_or(self.items.len(), |item| item.key));
                if let Some(raw) = event.item {
                    self.item_done(kind, key, raw, out)?;
                }
            }
            "response.content_part.added" | "response.reasoning_summary_part.added" => {
                let summary = kind == "response.reasoning_summary_part.added";
                let index = if summary {
                    event.summary_index
                } else {
                    event.content_index
                };
                if let Some(item) = self.item(output_index) {
                    let key = item.key;
                    let index = index.unwrap_or(0);
                    let reasoning = item.kind == Kind::Reasoning;
                    let fresh = !item.parts.iter().any(|p| p.summary == summary);
                    item.part(summary, index);
                    // Summary parts are shown joined as they will be kept.
                    if summary && reasoning && !fresh {
                        out.push(Chunk::ReasoningDelta {
                            key,
                            text: SUMMARY_SEPARATOR.into(),
                        });
                    }
                }
            }
            "response.output_text.delta" | "response.refusal.delta" => {
                let Some(delta) = self.text_field(kind, "delta", event.delta)? else {
                    return Ok(());
                };
                if let Some(part) = self
                    .item(output_index)
                    .and_then(|item| item.part(false, event.content_index.unwrap_or(0)))
                {
                    part.streamed.get_or_insert_with(String::new);
                    part.shown = true;
                }
                out.extend(logprobs(event.logprobs));
                out.push(Chunk::Text(delta.into_owned()));
            }
            "response.output_text.done" | "response.refusal.done" => {
                let (name, raw) = if kind == "response.refusal.done" {
                    ("refusal", event.refusal)
                } else {
                    ("text", event.text)
                };
                if let Some(text) = self.text_field(kind, name, raw)? {
                    self.message_part_done(
                        output_index,
                        event.content_index,
                        text,
                        event.logprobs,
                        out,
                    );
                }
            }
            "response.content_part.done" | "response.reasoning_summary_part.done" => {
                let summary = kind == "response.reasoning_summary_part.done";
                let Some(raw) = event.part else {
                    return Ok(());
                };
                let part = field::<TextPart<'_>>(PROVIDER, kind, "part", raw)?;
                let tokens = part.logprobs;
                let Some(text) = part.text() else {
                    return Ok(());
                };
                if summary {
                    let index = event.summary_index.unwrap_or(0);
                    if let Some(part) = self
                        .item(output_index)
                        .and_then(|item| item.part(true, index))
                    {
                        part.final_text.get_or_insert_with(|| text.into_owned());
                    }
                } else {
                    self.message_part_done(output_index, event.content_index, text, tokens, out);
                }
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                let summary = kind == "response.reasoning_summary_text.delta";
                let Some(delta) = self.text_field(kind, "delta", event.delta)? else {
                    return Ok(());
                };
                let index = if summary {
                    event.summary_index
                } else {
                    event.content_index
                };
                let key = match self.item(output_index) {
                    Some(item) => {
                        if let Some(part) = item.part(summary, index.unwrap_or(0)) {
                            part.streamed
                                .get_or_insert_with(String::new)
                                .push_str(&delta);
                        }
                        item.key
                    }
                    None => output_index.unwrap_or(0),
                };
                out.push(Chunk::ReasoningDelta {
                    key,
                    text: delta.into_owned(),
                });
            }
            "response.reasoning_summary_text.done" | "response.reasoning_text.done" => {
                let summary = kind == "response.reasoning_summary_text.done";
                let index = if summary {
                    event.summary_index
                } else {
                    event.content_index
                };
                if let Some(text) = self.text_field(kind, "text", event.text)?
                    && let Some(part) = self
                        .item(output_index)
                        .and_then(|item| item.part(summary, index.unwrap_or(0)))
                {
                    part.final_text = Some(text.into_owned());
                }
            }
            "response.function_call_arguments.delta" | "response.custom_tool_call_input.delta" => {
                if let Some(delta) = self.text_field(kind, "delta", event.delta)? {
                    let key = self.call_key(output_index);
                    out.push(Chunk::ToolCallArgs {
                        key,
                        arguments: delta.into_owned(),
                    });
                }
            }
            "response.function_call_arguments.done" | "response.custom_tool_call_input.done" => {
                let (name, raw) = if kind == "response.custom_tool_call_input.done" {
                    ("input", event.input)
                } else {
                    ("arguments", event.arguments)
                };
                if let Some(arguments) = self.text_field(kind, name, raw)? {
                    let key = self.call_key(output_index);
                    out.push(Chunk::ToolCallArgsDone {
                        key,
                        arguments: arguments.into_owned(),
                    });
                }
            }
            "response.completed" | "response.incomplete" => {
                if let Some(raw) = event.response {
                    let tail: ResponseTail<'_> = field(PROVIDER, kind, "response", raw)?;
                    finish(kind == "response.incomplete", tail, out);
                }
                out.push(Chunk::Done);
            }
            "response.failed" => {
                let error = event
                    .response
                    .and_then(|raw| serde_json::from_str::<ResponseTail<'_>>(raw.get()).ok())
                    .and_then(|tail| tail.error);
                return Err(super::error::failed(error));
            }
            "error" => {
                let nested = event
                    .error
                    .and_then(|raw| serde_json::from_str::<WireError<'_>>(raw.get()).ok());
                let error = nested.unwrap_or_else(|| WireError::Object {
                    message: raw_text(event.message),
                    kind: None,
                    code: raw_text(event.code).map(Cow::into_owned),
                });
                return Err(stream_error(error));
            }
            other => self.skipped.note(PROVIDER, "event", other),
        }
        Ok(())
    }

    const FINISH_REASON_COMPLETES: bool = false;

    const MISSING_END: &'static str = "no response.completed event before the stream ended";
}

impl ResponsesStreamParser {
    /// A text field the event type is read for: `None` when absent or `null`.
    fn text_field<'a>(
        &self,
        kind: &str,
        name: &str,
        raw: Option<&'a RawValue>,
    ) -> Result<Option<Cow<'a, str>>, ProviderError> {
        match raw {
            Some(raw) => field::<Option<Cow<'a, str>>>(PROVIDER, kind, name, raw),
            None => Ok(None),
        }
    }

    /// The item an event is about: the one at `output_index`, else the last one.
    fn item(&mut self, output_index: Option<usize>) -> Option<&mut ItemState> {
        match output_index {
            Some(key) => self.items.iter_mut().find(|item| item.key == key),
            None => self.items.last_mut(),
        }
    }

    /// The item at `key`, recorded if new (`None` past [`MAX_ITEMS`]).
    fn track(&mut self, key: usize, kind: Kind) -> Option<&mut ItemState> {
        let position = match self.items.iter().position(|item| item.key == key) {
            Some(position) => {
                self.items[position].kind = kind;
                position
            }
            None if self.items.len() < MAX_ITEMS => {
                self.items.push(ItemState {
                    key,
                    kind,
                    announced: false,
                    parts: Vec::new(),
                });
                self.items.len() - 1
            }
            None => return None,
        };
        Some(&mut self.items[position])
    }

    /// The key of the call an arguments event is about. Arguments of an item never
    /// announced open the call without id or name; `output_item.done` fills them in.
    fn call_key(&self, output_index: Option<usize>) -> usize {
        output_index.unwrap_or_else(|| self.items.last().map_or(0, |item| item.key))
    }

    fn item_added(
        &mut self,
        kind_name: &str,
        key: usize,
        raw: &RawValue,
        out: &mut Vec<Chunk>,
    ) -> Result<(), ProviderError> {
        let head: ItemHead<'_> = field(PROVIDER, kind_name, "item", raw)?;
        let kind = Kind::of(head.kind.0.as_deref());
        match kind {
            Kind::Call { .. } => {
                let item: Item<'_> = field(PROVIDER, kind_name, "item", raw)?;
                if let Some(state) = self.track(key, kind) {
                    state.announced = true;
                }
                out.push(Chunk::ToolCallStart {
                    key,
                    id: item.call_id.0.map(Cow::into_owned).unwrap_or_default(),
                    name: item.name.0.map(Cow::into_owned).unwrap_or_default(),
                    reasoning: None,
                });
            }
            Kind::Reasoning => {
                let item: Item<'_> = field(PROVIDER, kind_name, "item", raw)?;
                self.track(key, kind);
                out.push(Chunk::ReasoningSet {
                    key,
                    fields: Reasoning {
                        id: item.id.non_empty().map(Cow::into_owned),
                        ..Default::default()
                    },
                });
            }
            Kind::Message => {
                self.track(key, kind);
            }
            Kind::Other => {
                self.track(key, kind);
                self.skipped.note(
                    PROVIDER,
                    "output item",
                    head.kind.0.as_deref().unwrap_or("(untyped)"),
                );
            }
        }
        Ok(())
    }

    /// A finished output item: the authoritative arguments, reasoning summary and encrypted
    /// content (the encrypted token differs between `added` and `done`; `done`'s is the one to
    /// send back), and message text that no delta brought.
    fn item_done(
        &mut self,
        kind_name: &str,
        key: usize,
        raw: &RawValue,
        out: &mut Vec<Chunk>,
    ) -> Result<(), ProviderError> {
        let head: ItemHead<'_> = field(PROVIDER, kind_name, "item", raw)?;
        let kind = Kind::of(head.kind.0.as_deref());
        match kind {
            Kind::Call { custom } => {
                let item: Item<'_> = field(PROVIDER, kind_name, "item", raw)?;
                let announced = self.track(key, kind).is_some_and(|state| state.announced);
                if !announced {
                    out.push(Chunk::ToolCallStart {
                        key,
                        id: item
                            .call_id
                            .0
                            .clone()
                            .map(Cow::into_owned)
                            .unwrap_or_default(),
                        name: item.name.0.clone().map(Cow::into_owned).unwrap_or_default(),
                        reasoning: None,
                    });
                }
                let arguments = if custom { item.input } else { item.arguments };
                if let Some(arguments) = arguments.0 {
                    out.push(Chunk::ToolCallArgsDone {
                        key,
                        arguments: arguments.into_owned(),
                    });
                }
                out.push(Chunk::ToolCallEnd { key });
            }
            Kind::Reasoning => {
                let item: Item<'_> = field(PROVIDER, kind_name, "item", raw)?;
                let id = item.id.clone().non_empty().map(Cow::into_owned);
                let encrypted = item
                    .encrypted_content
                    .clone()
                    .non_empty()
                    .map(Cow::into_owned);
                let text = match self.track(key, kind) {
                    Some(state) => {
                        for (summary, parts) in [(true, item.summary), (false, item.content)] {
                            for (index, part) in parts.into_iter().enumerate() {
                                if let (Some(text), Some(slot)) =
                                    (part.text(), state.part(summary, index))
                                {
                                    slot.final_text.get_or_insert_with(|| text.into_owned());
                                }
                            }
                        }
                        state.reasoning_text()
                    }
                    None => reasoning_text(item.summary, item.content),
                };
                out.push(Chunk::ReasoningSet {
                    key,
                    fields: Reasoning {
                        id,
                        text,
                        signature: None,
                        encrypted,
                    },
                });
                out.push(Chunk::ReasoningEnd { key });
            }
            Kind::Message => {
                let item: Item<'_> = field(PROVIDER, kind_name, "item", raw)?;
                self.track(key, kind);
                for (index, part) in item.content.into_iter().enumerate() {
                    let tokens = part.logprobs;
                    if let Some(text) = part.text() {
                        self.message_part_done(Some(key), Some(index), text, tokens, out);
                    }
                }
            }
            Kind::Other => {
                self.skipped.note(
                    PROVIDER,
                    "output item",
                    head.kind.0.as_deref().unwrap_or("(untyped)"),
                );
            }
        }
        Ok(())
    }

    /// The finished text of a message part: shown if no delta showed the part (with its log
    /// probabilities, `tokens`).
    fn message_part_done(
        &mut self,
        output_index: Option<usize>,
        content_index: Option<usize>,
        text: Cow<'_, str>,
        tokens: Option<&RawValue>,
        out: &mut Vec<Chunk>,
    ) {
        let Some(part) = self
            .item(output_index)
            .and_then(|item| item.part(false, content_index.unwrap_or(0)))
        else {
            return;
        };
        if !part.shown {
            part.shown = true;
            out.extend(logprobs(tokens));
            out.push(Chunk::Text(text.into_owned()));
        }
    }
}

/// A top-level string field of an event kept raw, leniently.
fn raw_text(raw: Option<&RawValue>) -> Option<Cow<'_, str>> {
    raw.and_then(|raw| serde_json::from_str::<MaybeText<'_>>(raw.get()).ok())
        .and_then(|text| text.0)
}

/// The text of a reasoning item read whole: summary parts joined, or the content parts when
/// there is no summary.
fn reasoning_text(summary: Vec<TextPart<'_>>, content: Vec<TextPart<'_>>) -> String {
    let parts = if summary.is_empty() { content } else { summary };
    let texts: Vec<Cow<'_, str>> = parts
        .into_iter()
        .map(|part| part.text().unwrap_or_default())
        .collect();
    texts.join(SUMMARY_SEPARATOR)
}

fn finish(incomplete: bool, response: ResponseTail<'_>, out: &mut Vec<Chunk>) {
    if let Some(usage) = response.usage.0 {
        out.push(Chunk::Usage(UsageUpdate::from(usage)));
    }
    let reason = if incomplete || response.status.0.as_deref() == Some("incomplete") {
        match response
            .incomplete_details
            .and_then(|d| d.reason.non_empty())
            .as_deref()
        {
            Some("max_output_tokens") => FinishReason::Length,
            Some("content_filter") => FinishReason::ContentFilter,
            Some(other) => FinishReason::Other(other.to_owned()),
            None => FinishReason::Other("incomplete".into()),
        }
    } else {
        FinishReason::Stop
    };
    out.push(Chunk::Finish(reason));
}

/// A non-streamed Responses object.
#[derive(Deserialize)]
struct Response<'a> {
    #[serde(default, borrow)]
    id: MaybeText<'a>,
    #[serde(default, borrow)]
    model: MaybeText<'a>,
    #[serde(default, borrow, deserialize_with = "nullable_list")]
    output: Vec<&'a RawValue>,
}

/// A non-streamed Responses object as chunks, in the order a stream would give them.
pub(crate) fn response_chunks(body: &str) -> Result<Vec<Chunk>, ProviderError> {
    if let Ok(envelope) = serde_json::from_str::<ErrorEnvelope<'_>>(body) {
        return Err(stream_error(envelope.error));
    }
    let response: Response<'_> = json(PROVIDER, body)?;
    let tail: ResponseTail<'_> = json(PROVIDER, body)?;
    if tail.status.0.as_deref() == Some("failed") {
        return Err(super::error::failed(tail.error));
    }
    let mut out = vec![Chunk::Started {
        id: response.id.0.map(Cow::into_owned),
        model: response.model.0.map(Cow::into_owned),
    }];
    let mut skipped = Skipped::default();
    for (key, raw) in response.output.into_iter().enumerate() {
        let head: ItemHead<'_> = field(PROVIDER, "response", "output", raw)?;
        let kind = Kind::of(head.kind.0.as_deref());
        if kind == Kind::Other {
            skipped.note(
                PROVIDER,
                "output item",
                head.kind.0.as_deref().unwrap_or("(untyped)"),
            );
            continue;
        }
        let item: Item<'_> = field(PROVIDER, "response", "output", raw)?;
        match kind {
            Kind::Reasoning => {
                let fields = Reasoning {
                    id: item.id.non_empty().map(Cow::into_owned),
                    signature: None,
                    encrypted: item.encrypted_content.non_empty().map(Cow::into_owned),
                    text: reasoning_text(item.summary, item.content),
                };
                out.push(Chunk::ReasoningSet { key, fields });
                out.push(Chunk::ReasoningEnd { key });
            }
            Kind::Message => {
                for part in item.content {
                    let tokens = logprobs(part.logprobs);
                    if let Some(text) = part.text() {
                        out.extend(tokens);
                        out.push(Chunk::Text(text.into_owned()));
                    }
                }
            }
            Kind::Call { custom } => {
                let arguments = if custom { item.input } else { item.arguments };
                out.push(Chunk::ToolCall(Box::new(ToolCall::new(
                    item.call_id.0.map(Cow::into_owned).unwrap_or_default(),
                    item.name.0.map(Cow::into_owned).unwrap_or_default(),
                    arguments.0.map(Cow::into_owned).unwrap_or_default(),
                ))));
            }
            Kind::Other => {}
        }
    }
    finish(false, tail, &mut out);
    out.push(Chunk::Done);
    Ok(out)
}

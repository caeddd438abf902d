//! Chat Completions answers → [`Chunk`]s: the SSE chunk stream and the non-streamed JSON.
//!
//! Written for OpenAI and for the dialects of the servers that copy its format (DeepSeek,
//! vLLM, Ollama, llama.cpp, LM Studio, xAI, Mistral, Azure, OpenRouter). What they do
//! differently, and what Skein does about it:
//!
//! - **Text** is `delta.content`, a string, or (Mistral) an array of typed chunks:
//!   `{"type":"text","text":…}` is text, `{"type":"thinking","thinking":[{"type":"text",…}]}`
//!   is reasoning; other chunk types are skipped. An empty string is no text.
//! - **Reasoning** is `reasoning_content` (DeepSeek, most servers) or `reasoning` (vLLM,
//!   Ollama, OpenRouter); a run of it not interrupted by text or a tool call is one
//!   [`Reasoning`](messages::Reasoning) block. OpenRouter also sends `reasoning_details`,
//!   entries keyed by `index` (`reasoning.text` with an optional `signature`,
//!   `reasoning.summary`, `reasoning.encrypted` with opaque `data`, each with an `id` and a
//!   `format`): when a delta has them they are the reasoning (the plain `reasoning` string
//!   repeats their text), one block per entry `index`, with the signature, the encrypted data
//!   and the id kept as the block's opaque fields. `messages::Reasoning` has no field for
//!   `format`, so that one is not kept.
//! - **Tool calls** are keyed by `index`, but: some servers send no `index`, or `index: 0`
//!   for every parallel call, or one index for calls with different ids, and some send no id
//!   at all (or an empty one, or, like llama.cpp's server once, one inside `function`). A
//!   fragment continues the call with its id; a new id starts a new call even under a used
//!   index; an id-less fragment continues the call under its index (without an index, the
//!   call the previous fragment went to), unless it names a tool
//!   after that call is complete (named, with complete JSON arguments) and brings arguments
//!   or another name: then it starts a new call (servers that repeat the name on every
//!   fragment send it again with the rest of the arguments). A call the server gave no id
//!   gets one minted, [`MINTED_ID_PREFIX`]`<stem>_<n>` (`stem` unique to the stream, `n`
//!   counting its minted calls), so that a conversation can pair it with its result.
//! - **Finish reasons** `""` and `null` are no reason; a `stop` with tool calls finishes as
//!   [`FinishReason::ToolCalls`](crate::FinishReason) (the assembler's rule).
//! - **Log probabilities** (`logprobs.content`, and `logprobs.refusal` for a refusal's
//!   tokens) come before their chunk's text; a `logprobs` that is not OpenAI's shape is left
//!   out (with a warning), never the text.
//! - **Placeholders**: Azure's first chunk has `"id": ""` and `"model": ""`; the first
//!   non-empty id and model are the answer's.
//! - **Keep-alives**: SSE comments are dropped by the framing; an empty `data:` and a `data:`
//!   that is itself a comment (`data: : keepalive`) are skipped; a named event that carries no
//!   chunk is skipped and named at `debug` level.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

use super::error::{ErrorEnvelope, WireError, stream_error};
use super::wire::{WireUsage, finish_reason};
use crate::assemble::{Chunk, MAX_TOOL_CALLS, Overflow, UsageUpdate};
use crate::http::sse::{
    EventParser, MaybeText, Skipped, event_json, json, lenient_index, nullable_list,
};
use crate::wire_numbers::Lenient;
use crate::{Provider, ProviderError};

const PROVIDER: Provider = Provider::OpenAi;
/// Key of the reasoning block that `reasoning_content`, `reasoning` and Mistral's thinking
/// chunks fill. `reasoning_details` entry `i` is block `i + 1`.
const REASONING: usize = 0;

/// How tool-call ids Skein minted for servers that sent none start: `skein_call_<stem>_<n>`,
/// only ASCII letters, digits and `_` (valid for every provider's id syntax). Such an id never
/// came from a provider.
pub(crate) const MINTED_ID_PREFIX: &str = "skein_call_";

#[derive(Deserialize)]
struct StreamChunk<'a> {
    #[serde(default, borrow)]
    id: MaybeText<'a>,
    #[serde(default, borrow)]
    model: MaybeText<'a>,
    #[serde(default, borrow, deserialize_with = "nullable_list")]
    choices: Vec<StreamChoice<'a>>,
    /// Boxed, like `error`: both come once per stream at most, and the chunk, moved a few
    /// times per event, stays small.
    #[serde(default)]
    usage: Lenient<Box<WireUsage>>,
    #[serde(borrow)]
    error: Option<Box<WireError<'a>>>,
}

#[derive(Deserialize)]
struct StreamChoice<'a> {
    #[serde(default, deserialize_with = "lenient_index")]
    index: Option<usize>,
    /// Boxed: a choice is moved a few times while the event is read, its delta is not.
    #[serde(default, borrow)]
    delta: Option<Box<Delta<'a>>>,
    #[serde(default, borrow)]
    finish_reason: MaybeText<'a>,
    /// Kept raw: `null` on every chunk unless log probabilities were asked for, so the usual
    /// chunk costs no parse and no allocation for it.
    #[serde(default, borrow)]
    logprobs: Option<&'a RawValue>,
}

/// A choice's `logprobs`: those of the text, and of a refusal (which is answer text too).
#[derive(Deserialize)]
struct ChoiceLogprobs<'a> {
    #[serde(default, borrow)]
    content: Option<&'a RawValue>,
    #[serde(default, borrow)]
    refusal: Option<&'a RawValue>,
}

/// The `Logprobs` chunk of a choice's `logprobs`, when it holds any tokens.
fn logprobs(raw: Option<&RawValue>) -> Option<Chunk> {
    let choice: ChoiceLogprobs<'_> = match serde_json::from_str(raw?.get()) {
        Ok(choice) => choice,
        Err(err) => {
            tracing::warn!("a provider's logprobs cannot be read ({err}); they are left out");
            return None;
        }
    };
    let read = |raw: Option<&RawValue>| {
        raw.and_then(|raw| crate::logprobs::read_list(raw.get(), "logprobs", |t| t))
    };
    let tokens = match (read(choice.content), read(choice.refusal)) {
        (Some(mut content), Some(refusal)) => {
            content.extend(refusal);
            content
        }
        (content, refusal) => content.or(refusal)?,
    };
    Some(Chunk::Logprobs(tokens))
}

/// A chunk's `delta`, or a non-streamed answer's `message` (the same fields).
#[derive(Default, Deserialize)]
struct Delta<'a> {
    #[serde(default, borrow)]
    content: Content<'a>,
    #[serde(default, borrow)]
    refusal: MaybeText<'a>,
    /// DeepSeek and most compatible servers.
    #[serde(default, borrow)]
    reasoning_content: MaybeText<'a>,
    /// vLLM, Ollama, OpenRouter, Groq.
    #[serde(default, borrow)]
    reasoning: MaybeText<'a>,
    /// OpenRouter's structured reasoning, read only when present.
    #[serde(default, borrow)]
    reasoning_details: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "nullable_list")]
    tool_calls: Vec<ToolCallDelta<'a>>,
}

/// `delta.content`: a string (the hot path: borrowed straight from the event), or Mistral's
/// array of typed chunks.
#[derive(Default)]
enum Content<'a> {
    #[default]
    None,
    Text(Cow<'a, str>),
    Chunks(Vec<TypedChunk<'a>>),
}

impl<'de: 'a, 'a> Deserialize<'de> for Content<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ContentVisitor(PhantomData))
    }
}

struct ContentVisitor<'a>(PhantomData<&'a ()>);

impl<'de: 'a, 'a> Visitor<'de> for ContentVisitor<'a> {
    type Value = Content<'a>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string or an array of content chunks")
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Content::Text(Cow::Borrowed(v)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Content::Text(Cow::Owned(v.to_owned())))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Content::Text(Cow::Owned(v)))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Content::None)
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Content::None)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut chunks = Vec::new();
        while let Some(chunk) = seq.next_element::<TypedChunk<'a>>()? {
            chunks.push(chunk);
        }
        Ok(Content::Chunks(chunks))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        // No server is known to send one object; it holds nothing Skein can show.
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Content::None)
    }
}

/// One element of an array `content`: `text`, `thinking` (whose `thinking` is an array of
/// text chunks, or a string), or a type Skein does not model (`reference`, `image_url`, …).
#[derive(Deserialize)]
struct TypedChunk<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: MaybeText<'a>,
    #[serde(default, borrow)]
    text: MaybeText<'a>,
    #[serde(default, borrow)]
    thinking: Option<Thinking<'a>>,
}

/// `thinking` of a thinking chunk: its text pieces.
#[derive(Deserialize)]
#[serde(untagged)]
enum Thinking<'a> {
    Text(#[serde(borrow)] Cow<'a, str>),
    Chunks(#[serde(borrow)] Vec<ThinkingText<'a>>),
    Other(IgnoredAny),
}

#[derive(Deserialize)]
struct ThinkingText<'a> {
    #[serde(default, borrow)]
    text: MaybeText<'a>,
}

#[derive(Deserialize)]
struct ToolCallDelta<'a> {
    #[serde(default, deserialize_with = "lenient_index")]
    index: Option<usize>,
    #[serde(default, borrow)]
    id: MaybeText<'a>,
    #[serde(default, borrow)]
    function: Option<FunctionDelta<'a>>,
}

#[derive(Deserialize)]
struct FunctionDelta<'a> {
    #[serde(default, borrow)]
    name: MaybeText<'a>,
    /// Where llama.cpp's server put the call id before it moved it onto the call.
    #[serde(default, borrow)]
    id: MaybeText<'a>,
    /// A string of JSON text; some servers send the arguments as a JSON object instead.
    #[serde(default, borrow)]
    arguments: Option<&'a RawValue>,
}

impl FunctionDelta<'_> {
    /// The argument text: the string's content, or the JSON text of an object.
    fn arguments(&self) -> Option<Cow<'_, str>> {
        let raw = self.arguments?.get();
        match raw.as_bytes().first() {
            Some(b'"') => serde_json::from_str::<Cow<'_, str>>(raw).ok(),
            Some(b'n') => None,
            _ => Some(Cow::Borrowed(raw)),
        }
    }
}

/// One `reasoning_details` entry (OpenRouter).
#[derive(Deserialize)]
struct ReasoningDetail<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: MaybeText<'a>,
    #[serde(default, borrow)]
    text: MaybeText<'a>,
    #[serde(default, borrow)]
    summary: MaybeText<'a>,
    #[serde(default, borrow)]
    data: MaybeText<'a>,
    #[serde(default, borrow)]
    signature: MaybeText<'a>,
    #[serde(default, borrow)]
    id: MaybeText<'a>,
    #[serde(default, deserialize_with = "lenient_index")]
    index: Option<usize>,
}

/// A tool call of this answer, as the parser tracks it to place id-less and index-less
/// fragments.
#[derive(Debug)]
struct Call {
    /// The assembler's key for it.
    key: usize,
    /// The wire's `index`, if it had one.
    index: Option<usize>,
    /// The id the server gave, or the one Skein minted.
    id: String,
    minted: bool,
    /// Whether the assembler was told about it, and the name it has so far.
    announced: bool,
    name: String,
    arguments: JsonDepth,
}

/// Whether argument text seen so far is a complete JSON value, without keeping the text (the
/// assembler keeps it): nesting depth outside strings.
#[derive(Debug, Default)]
struct JsonDepth {
    depth: u32,
    started: bool,
    in_string: bool,
    escaped: bool,
}

impl JsonDepth {
    fn feed(&mut self, text: &str) {
        for byte in text.bytes() {
            if self.in_string {
                match (self.escaped, byte) {
                    (true, _) => self.escaped = false,
                    (false, b'\\') => self.escaped = true,
                    (false, b'"') => self.in_string = false,
                    _ => {}
                }
                continue;
            }
            match byte {
                b'"' => {
                    self.in_string = true;
                    self.started = true;
                }
                b'{' | b'[' => {
                    self.depth = self.depth.saturating_add(1);
                    self.started = true;
                }
                b'}' | b']' => self.depth = self.depth.saturating_sub(1),
                b if !b.is_ascii_whitespace() => self.started = true,
                _ => {}
            }
        }
    }

    fn complete(&self) -> bool {
        self.started && self.depth == 0 && !self.in_string
    }
}

/// Parses `data:` payloads of a Chat Completions stream (`[DONE]` ends it).
#[derive(Debug, Default)]
pub(crate) struct ChatStreamParser {
    /// Whether an id, and a model, were reported yet.
    have_id: bool,
    have_model: bool,
    /// The calls of this answer, in order (at most [`MAX_TOOL_CALLS`], the assembler's cap on
    /// calls per answer: this list remembers every call, so it is bounded by the same count).
    calls: Vec<Call>,
    /// The call the last fragment went to.
    current: Option<usize>,
    /// The stem of minted ids, made on first use.
    stem: Option<String>,
    minted: usize,
    skipped: Skipped,
}

impl EventParser for ChatStreamParser {
    fn parse(
        &mut self,
        event: &str,
        data: &str,
        out: &mut Vec<Chunk>,
    ) -> Result<(), ProviderError> {
        let trimmed = data.trim();
        if trimmed == "[DONE]" {
            out.push(Chunk::Done);
            return Ok(());
        }
        // Keep-alives: an event without data, or a comment sent as data (`data: : keepalive`).
        if trimmed.is_empty() || trimmed.starts_with(':') {
            self.skipped
                .note(PROVIDER, "keep-alive", "empty or comment data");
            return Ok(());
        }
        let chunk: StreamChunk<'_> = event_json(PROVIDER, data)?;
        if let Some(error) = chunk.error {
            return Err(stream_error(*error));
        }
        let carries_chunk =
            chunk.id.0.is_some() || !chunk.choices.is_empty() || chunk.usage.0.is_some();
        if event != "message" && !carries_chunk {
            self.skipped.note(PROVIDER, "event", event);
        }
        self.started(chunk.id, chunk.model, out);
        // Only the first choice is read: Skein never asks for `n > 1`.
        for choice in chunk.choices {
            if choice.index.unwrap_or(0) != 0 {
                continue;
            }
            out.extend(logprobs(choice.logprobs));
            if let Some(delta) = choice.delta {
                self.delta(*delta, out)?;
            }
            if let Some(reason) = choice.finish_reason.non_empty() {
                out.push(Chunk::Finish(finish_reason(&reason)));
            }
        }
        if let Some(usage) = chunk.usage.0 {
            out.push(Chunk::Usage(UsageUpdate::from(*usage)));
        }
        Ok(())
    }

    // Some compatible servers omit `[DONE]`; a finish reason is enough to be complete.
    const FINISH_REASON_COMPLETES: bool = true;

    const MISSING_END: &'static str = "no finish_reason and no [DONE] before the stream ended";
}

impl ChatStreamParser {
    /// Reports the response id and model the first time each is non-empty.
    fn started(&mut self, id: MaybeText<'_>, model: MaybeText<'_>, out: &mut Vec<Chunk>) {
        let id = id.non_empty().filter(|_| !self.have_id);
        let model = model.non_empty().filter(|_| !self.have_model);
        if id.is_some() || model.is_some() {
            self.have_id |= id.is_some();
            self.have_model |= model.is_some();
            out.push(Chunk::Started {
                id: id.map(Cow::into_owned),
                model: model.map(Cow::into_owned),
            });
        }
    }

    /// One `delta` (or a non-streamed `message`): reasoning, text, refusal, tool calls, in
    /// that order.
    fn delta(&mut self, delta: Delta<'_>, out: &mut Vec<Chunk>) -> Result<(), ProviderError> {
        let details = delta
            .reasoning_details
            .and_then(|raw| self.reasoning_details(raw, out));
        if details.is_none() {
            let text = delta
                .reasoning_content
                .non_empty()
                .or_else(|| delta.reasoning.non_empty());
            if let Some(text) = text {
                out.push(Chunk::ReasoningDelta {
                    key: REASONING,
                    text: text.into_owned(),
                });
            }
        }
        match delta.content {
            Content::None => {}
            Content::Text(text) => {
                if !text.is_empty() {
                    out.push(Chunk::Text(text.into_owned()));
                }
            }
            Content::Chunks(chunks) => self.typed_chunks(chunks, out),
        }
        if let Some(refusal) = delta.refusal.non_empty() {
            out.push(Chunk::Text(refusal.into_owned()));
        }
        for call in delta.tool_calls {
            self.tool_call(call, out)?;
        }
        Ok(())
    }

    /// Mistral's typed content chunks, in order.
    fn typed_chunks(&mut self, chunks: Vec<TypedChunk<'_>>, out: &mut Vec<Chunk>) {
        for chunk in chunks {
            match chunk.kind.0.as_deref() {
                Some("text") => {
                    if let Some(text) = chunk.text.non_empty() {
                        out.push(Chunk::Text(text.into_owned()));
                    }
                }
                Some("thinking") => {
                    let pieces = match chunk.thinking {
                        Some(Thinking::Text(text)) => vec![text],
                        Some(Thinking::Chunks(chunks)) => chunks
                            .into_iter()
                            .filter_map(|chunk| chunk.text.non_empty())
                            .collect(),
                        Some(Thinking::Other(_)) | None => Vec::new(),
                    };
                    for text in pieces.into_iter().filter(|text| !text.is_empty()) {
                        out.push(Chunk::ReasoningDelta {
                            key: REASONING,
                            text: text.into_owned(),
                        });
                    }
                }
                other => {
                    self.skipped
                        .note(PROVIDER, "content chunk", other.unwrap_or("(untyped)"));
                }
            }
        }
    }

    /// OpenRouter's `reasoning_details`; `None` when there were none to read (the plain
    /// reasoning string is used instead).
    fn reasoning_details(&mut self, raw: &RawValue, out: &mut Vec<Chunk>) -> Option<()> {
        let details: Vec<ReasoningDetail<'_>> = match serde_json::from_str(raw.get()) {
            Ok(details) => details,
            Err(_) => {
                self.skipped
                    .note(PROVIDER, "reasoning_details", "(not a list of entries)");
                return None;
            }
        };
        if details.is_empty() {
            return None;
        }
        for detail in details {
            let key = detail.index.unwrap_or(0).saturating_add(1);
            let (text, fields) = match detail.kind.0.as_deref() {
                Some("reasoning.text") => (
                    detail.text.non_empty(),
                    messages::Reasoning {
                        signature: detail.signature.non_empty().map(Cow::into_owned),
                        ..Default::default()
                    },
                ),
                Some("reasoning.summary") => (detail.summary.non_empty(), Default::default()),
                Some("reasoning.encrypted") => (
                    None,
                    messages::Reasoning {
                        encrypted: detail.data.non_empty().map(Cow::into_owned),
                        ..Default::default()
                    },
                ),
                other => {
                    self.skipped.note(
                        PROVIDER,
                        "reasoning_details entry",
                        other.unwrap_or("(untyped)"),
                    );
                    continue;
                }
            };
            if let Some(text) = text {
                out.push(Chunk::ReasoningDelta {
                    key,
                    text: text.into_owned(),
                });
            }
            let fields = messages::Reasoning {
                id: detail.id.non_empty().map(Cow::into_owned),
                ..fields
            };
            if !fields.is_empty() {
                out.push(Chunk::ReasoningSet { key, fields });
            }
        }
        Some(())
    }

    fn tool_call(
        &mut self,
        call: ToolCallDelta<'_>,
        out: &mut Vec<Chunk>,
    ) -> Result<(), ProviderError> {
        let (name, arguments, inner_id) = match &call.function {
            Some(function) => (
                function.name.clone().non_empty(),
                function.arguments(),
                function.id.clone().non_empty(),
            ),
            None => (None, None, None),
        };
        let id = call.id.non_empty().or(inner_id);
        let fresh_arguments = arguments.as_deref().is_some_and(|a| !a.is_empty());
        let position = self.place(call.index, id.as_deref(), name.as_deref(), fresh_arguments)?;
        let slot = &mut self.calls[position];
        self.current = Some(position);
        let key = slot.key;
        // The assembler learns the id when the call opens and the name when it first comes
        // (servers that repeat the name on every fragment send the same one again).
        if !slot.announced || (name.is_some() && slot.name.is_empty()) {
            slot.announced = true;
            if let Some(name) = &name {
                slot.name.clone_from(&name.to_string());
            }
            out.push(Chunk::ToolCallStart {
                key,
                id: slot.id.clone(),
                name: name.map(Cow::into_owned).unwrap_or_default(),
                reasoning: None,
            });
        }
        if let Some(arguments) = arguments.filter(|arguments| !arguments.is_empty()) {
            self.calls[position].arguments.feed(&arguments);
            out.push(Chunk::ToolCallArgs {
                key,
                arguments: arguments.into_owned(),
            });
        }
        Ok(())
    }

    /// The position in `calls` of the call a fragment belongs to (opened if new); see the
    /// module docs for the rules. `arguments` says whether the fragment brings argument text.
    fn place(
        &mut self,
        index: Option<usize>,
        id: Option<&str>,
        name: Option<&str>,
        arguments: bool,
    ) -> Result<usize, ProviderError> {
        if let Some(id) = id {
            if let Some(position) = self.calls.iter().position(|call| call.id == id) {
                return Ok(position);
            }
            // The id of a call opened without one (it came on a later fragment): that call
            // keeps the id it was given first.
            if let Some(position) = self.continued(index)
                && self.calls[position].minted
                && name.is_none()
            {
                return Ok(position);
            }
            return self.open(index, Some(id));
        }
        match self.continued(index) {
            Some(position) => {
                let call = &self.calls[position];
                // Without ids, a named fragment after a complete call is the next call, unless
                // it only repeats that call's name (servers that send it on every fragment).
                let next = name.is_some_and(|name| {
                    !call.name.is_empty()
                        && call.arguments.complete()
                        && (arguments || name != call.name)
                });
                if next {
                    self.open(index, None)
                } else {
                    Ok(position)
                }
            }
            None => self.open(index, None),
        }
    }

    /// The call an id-less fragment continues: the last one under its index, or without an
    /// index the one the previous fragment went to.
    fn continued(&self, index: Option<usize>) -> Option<usize> {
        match index {
            Some(index) => self
                .calls
                .iter()
                .rposition(|call| call.index == Some(index)),
            None => self.current,
        }
    }

    fn open(&mut self, index: Option<usize>, id: Option<&str>) -> Result<usize, ProviderError> {
        let key = self.calls.len();
        Overflow::check_tool_calls(self.calls.len(), index.unwrap_or(key))
            .map_err(|overflow| overflow.into_error(PROVIDER))?;
        debug_assert!(self.calls.len() < MAX_TOOL_CALLS);
        let (id, minted) = match id {
            Some(id) => (id.to_owned(), false),
            None => (self.mint(), true),
        };
        self.calls.push(Call {
            key,
            index,
            id,
            minted,
            announced: false,
            name: String::new(),
            arguments: JsonDepth::default(),
        });
        Ok(key)
    }

    /// A new id for a call the server gave none: `skein_call_<stem>_<n>`.
    fn mint(&mut self) -> String {
        let stem = self.stem.get_or_insert_with(unique_stem);
        let id = format!("{MINTED_ID_PREFIX}{stem}_{}", self.minted);
        self.minted += 1;
        id
    }

    /// Feeds a whole non-streamed message through the stream path.
    fn message(
        &mut self,
        mut message: Delta<'_>,
        out: &mut Vec<Chunk>,
    ) -> Result<(), ProviderError> {
        // A message lists whole calls: each is its own call whatever its index says.
        for (position, call) in message.tool_calls.iter_mut().enumerate() {
            call.index = Some(position);
        }
        self.delta(message, out)
    }
}

/// A value unique to this process and moment (hex of the clock's nanoseconds and a counter),
/// the stem of minted ids: response ids of compatible servers repeat across restarts
/// (`chatcmpl-1`), so they cannot be the stem.
fn unique_stem() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::{SystemTime, UNIX_EPOCH};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos());
    format!("{nanos:x}{:x}", COUNTER.fetch_add(1, Ordering::Relaxed))
}

#[derive(Deserialize)]
struct Completion<'a> {
    #[serde(default, borrow)]
    id: MaybeText<'a>,
    #[serde(default, borrow)]
    model: MaybeText<'a>,
    #[serde(default, borrow, deserialize_with = "nullable_list")]
    choices: Vec<CompletionChoice<'a>>,
    #[serde(default)]
    usage: Lenient<WireUsage>,
}

#[derive(Deserialize)]
struct CompletionChoice<'a> {
    #[serde(default, deserialize_with = "lenient_index")]
    index: Option<usize>,
    #[serde(default, borrow)]
    message: Option<Delta<'a>>,
    #[serde(default, borrow)]
    finish_reason: MaybeText<'a>,
    #[serde(default, borrow)]
    logprobs: Option<&'a RawValue>,
}

/// A non-streamed `chat.completion` as chunks, in the order a stream would give them (the
/// message goes through the same code as a stream's deltas).
pub(crate) fn response_chunks(body: &str) -> Result<Vec<Chunk>, ProviderError> {
    if let Ok(envelope) = serde_json::from_str::<ErrorEnvelope<'_>>(body) {
        return Err(stream_error(envelope.error));
    }
    let completion: Completion<'_> = json(PROVIDER, body)?;
    let mut parser = ChatStreamParser::default();
    let mut out = Vec::new();
    parser.started(completion.id, completion.model, &mut out);
    if let Some(choice) = completion
        .choices
        .into_iter()
        .find(|choice| choice.index.unwrap_or(0) == 0)
    {
        out.extend(logprobs(choice.logprobs));
        if let Some(message) = choice.message {
            parser.message(message, &mut out)?;
        }
        if let Some(reason) = choice.finish_reason.non_empty() {
            out.push(Chunk::Finish(finish_reason(&reason)));
        }
    }
    if let Some(usage) = completion.usage.0 {
        out.push(Chunk::Usage(UsageUpdate::from(usage)));
    }
    out.push(Chunk::Done);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunks(events: &[&str]) -> Vec<Chunk> {
        let mut parser = ChatStreamParser::default();
        let mut out = Vec::new();
        for event in events {
            parser.parse("message", event, &mut out).expect("parses");
        }
        out
    }

    #[test]
    fn json_depth_knows_when_arguments_are_complete() {
        let mut depth = JsonDepth::default();
        assert!(!depth.complete());
        depth.feed(r#"{"a": "}{\"", "b": [1, {"#);
        assert!(!depth.complete());
        depth.feed("}]}");
        assert!(depth.complete());
    }

    #[test]
    fn mistral_typed_chunks_are_reasoning_and_text() {
        let out = chunks(&[
            r#"{"choices":[{"index":0,"delta":{"content":[{"type":"thinking","thinking":[{"type":"text","text":"Hmm"}],"closed":true}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":[{"type":"text","text":"Hi"},{"type":"reference","reference_ids":[1]}]}}]}"#,
        ]);
        assert_eq!(
            out,
            [
                Chunk::ReasoningDelta {
                    key: REASONING,
                    text: "Hmm".into()
                },
                Chunk::Text("Hi".into()),
            ]
        );
    }

    #[test]
    fn minted_ids_are_unique_and_prefixed() {
        let a = ChatStreamParser::default().mint();
        let b = ChatStreamParser::default().mint();
        assert_ne!(a, b);
        for id in [&a, &b] {
            assert!(id.starts_with(MINTED_ID_PREFIX), "{id}");
            assert!(
                id.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
                "{id}"
            );
        }
    }
}

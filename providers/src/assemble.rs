//! The shared delta assembler: turns what an adapter parsed off the wire ([`Chunk`]s) into
//! public [`StreamEvent`]s.
//!
//! Adapters only translate their wire format into chunks ("text arrived", "tool call 3 got
//! these argument bytes", "reasoning block 0 ends with this signature"). This module does the
//! bookkeeping every provider needs once: argument buffers per call, reasoning blocks, usage
//! merging, the finish reason when tools were called, and closing whatever is still open when
//! the answer ends. Streams and non-streamed answers both go through it, so
//! [`collect`](crate::collect()) of a stream equals `complete`.

// Builds without an HTTP provider (only `testing`) use part of the assembler.
#![cfg_attr(not(feature = "__http"), allow(dead_code))]

use messages::{Reasoning, ToolCall};

use crate::{FinishReason, Limit, Provider, ProviderError, StreamEvent, TokenLogprob, Usage};

/// Most tool calls, and most reasoning blocks, one answer may have open at the same time (and,
/// for parsers that remember every call of an answer, most calls per answer).
///
/// Keys come from the wire (an OpenAI tool-call `index`, a Responses `output_index`, an
/// Anthropic content-block `index`), so they are only ever keys into maps of at most this many
/// entries, never sizes or positions: a provider sending `"index": 4294967295` opens one call,
/// and one sending a thousand distinct indexes gets its answer ended with
/// [`ProviderError::LimitExceeded`] instead of a thousand buffers.
pub const MAX_OPEN_BLOCKS: usize = 1024;

/// Most tool calls one answer may make, counted over the whole answer (closed calls too), for
/// every protocol.
///
/// Every adapter's calls pass through the shared delta assembler, so this one count bounds
/// them all: an answer that closes each call before opening the next never has many open at
/// once, but a round of twenty thousand calls is still work (and memory) no real answer asks
/// for. The call past the cap ends the answer with [`ProviderError::LimitExceeded`]
/// ([`Limit::ToolCalls`]).
pub const MAX_TOOL_CALLS: usize = 1024;

/// A chunk that would have gone past [`MAX_OPEN_BLOCKS`] or [`MAX_TOOL_CALLS`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Overflow {
    /// Which cap it would have passed.
    pub(crate) limit: Limit,
    /// What kind of block: `tool call`, `reasoning block`, `content block`.
    pub(crate) kind: &'static str,
    /// The key the wire gave it.
    pub(crate) key: usize,
}

impl Overflow {
    /// `Ok` when one more block of `kind` (wire key `key`) fits next to the `open` ones.
    pub(crate) fn check(open: usize, kind: &'static str, key: usize) -> Result<(), Overflow> {
        if open >= MAX_OPEN_BLOCKS {
            return Err(Overflow {
                limit: Limit::OpenBlocks,
                kind,
                key,
            });
        }
        Ok(())
    }

    /// `Ok` when one more tool call (wire key `key`) fits after the `seen` ones of this answer.
    pub(crate) fn check_tool_calls(seen: usize, key: usize) -> Result<(), Overflow> {
        if seen >= MAX_TOOL_CALLS {
            return Err(Overflow {
                limit: Limit::ToolCalls,
                kind: "tool call",
                key,
            });
        }
        Ok(())
    }

    /// The error that ends `provider`'s answer.
    pub(crate) fn into_error(self, provider: Provider) -> ProviderError {
        let max = match self.limit {
            Limit::ToolCalls => MAX_TOOL_CALLS,
            _ => MAX_OPEN_BLOCKS,
        };
        ProviderError::LimitExceeded {
            provider,
            limit: self.limit,
            what: format!(
                "one {} too many (key {}) in one answer",
                self.kind, self.key
            ),
            max: max as u64,
        }
    }
}

/// One fact an adapter read off the wire. `key` identifies a block within one answer (an
/// Anthropic content index, an OpenAI `output_index` or tool-call `index`); keys of reasoning
/// blocks and tool calls are separate namespaces.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Chunk {
    /// Response id and model name.
    Started {
        id: Option<String>,
        model: Option<String>,
    },
    /// Answer text to append.
    Text(String),
    /// The log probabilities of the tokens of the next `Text` (sent before it, so that
    /// consumers can put them beside it); never empty.
    #[cfg_attr(
        not(any(feature = "openai", feature = "gemini")),
        allow(dead_code, reason = "Anthropic reports no log probabilities")
    )]
    Logprobs(Vec<TokenLogprob>),
    /// Reasoning riding on the current text part (Gemini).
    #[cfg_attr(
        not(feature = "gemini"),
        allow(dead_code, reason = "only Gemini signs text parts")
    )]
    TextReasoning(Reasoning),
    /// Reasoning text to append to block `key` (opened if new).
    ReasoningDelta { key: usize, text: String },
    /// Fields of reasoning block `key` (opened if new): non-empty `text` and `Some` fields
    /// replace what the block holds.
    ReasoningSet { key: usize, fields: Reasoning },
    /// Reasoning block `key` is complete.
    ReasoningEnd { key: usize },
    /// Tool call `key` starts.
    #[cfg_attr(
        not(any(feature = "openai", feature = "anthropic")),
        allow(dead_code, reason = "Gemini delivers every call whole")
    )]
    ToolCallStart {
        key: usize,
        id: String,
        name: String,
        reasoning: Option<Box<Reasoning>>,
    },
    /// Argument text to append to call `key`.
    #[cfg_attr(
        not(any(feature = "openai", feature = "anthropic")),
        allow(dead_code, reason = "Gemini delivers every call whole")
    )]
    ToolCallArgs { key: usize, arguments: String },
    /// The complete argument text of call `key` (replaces the appended pieces).
    #[cfg_attr(
        not(feature = "openai"),
        allow(dead_code, reason = "only the Responses API repeats whole arguments")
    )]
    ToolCallArgsDone { key: usize, arguments: String },
    /// Tool call `key` is complete.
    #[cfg_attr(
        not(any(feature = "openai", feature = "anthropic")),
        allow(dead_code, reason = "Gemini delivers every call whole")
    )]
    ToolCallEnd { key: usize },
    /// A tool call delivered whole (boxed, like a call's reasoning above: a chunk is moved a
    /// few times on its way to the assembler, and every text delta is one, so the rare large
    /// variants must not set the size of all).
    #[cfg_attr(
        not(any(feature = "openai", feature = "gemini", feature = "testing")),
        allow(
            dead_code,
            reason = "the Anthropic adapter streams every call in pieces"
        )
    )]
    ToolCall(Box<ToolCall>),
    /// Token counts; `Some` fields replace earlier values (providers repeat cumulative counts).
    Usage(UsageUpdate),
    /// Why the model stopped.
    Finish(FinishReason),
    /// The provider said the answer is complete.
    Done,
}

/// A partial [`Usage`]: the fields a provider reported in one event.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct UsageUpdate {
    pub(crate) input_tokens: Option<u64>,
    pub(crate) output_tokens: Option<u64>,
    pub(crate) cached_input_tokens: Option<u64>,
    pub(crate) cache_creation_tokens: Option<u64>,
    pub(crate) reasoning_tokens: Option<u64>,
}

impl UsageUpdate {
    fn apply(self, usage: &mut Usage) {
        let fields = [
            (self.input_tokens, &mut usage.input_tokens),
            (self.output_tokens, &mut usage.output_tokens),
            (self.cached_input_tokens, &mut usage.cached_input_tokens),
            (self.cache_creation_tokens, &mut usage.cache_creation_tokens),
            (self.reasoning_tokens, &mut usage.reasoning_tokens),
        ];
        for (new, slot) in fields {
            if let Some(new) = new {
                *slot = new;
            }
        }
    }
}

impl From<Usage> for UsageUpdate {
    fn from(usage: Usage) -> Self {
        UsageUpdate {
            input_tokens: Some(usage.input_tokens),
            output_tokens: Some(usage.output_tokens),
            cached_input_tokens: Some(usage.cached_input_tokens),
            cache_creation_tokens: Some(usage.cache_creation_tokens),
            reasoning_tokens: Some(usage.reasoning_tokens),
        }
    }
}

#[derive(Debug)]
struct OpenCall {
    key: usize,
    index: usize,
    call: ToolCall,
}

/// Turns [`Chunk`]s into [`StreamEvent`]s; see the module docs.
#[derive(Debug, Default)]
pub(crate) struct Assembler {
    reasoning: Vec<(usize, Reasoning)>,
    calls: Vec<OpenCall>,
    calls_seen: usize,
    usage: Option<Usage>,
    finish: Option<FinishReason>,
    done: bool,
}

impl Assembler {
    /// Whether the answer is complete ([`Chunk::Done`] was pushed or [`Self::finish`] ran).
    pub(crate) fn is_done(&self) -> bool {
        self.done
    }

    /// Whether the provider reported a finish reason.
    pub(crate) fn has_finish_reason(&self) -> bool {
        self.finish.is_some()
    }

    /// Applies one chunk, appending the events it produces to `out`. A chunk that would open
    /// more than [`MAX_OPEN_BLOCKS`] tool calls or reasoning blocks at once, or a tool call
    /// past [`MAX_TOOL_CALLS`] in the answer, is refused; the caller ends the answer with the
    /// error.
    pub(crate) fn push(
        &mut self,
        chunk: Chunk,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), Overflow> {
        if self.done {
            return Ok(());
        }
        match chunk {
            Chunk::Started { id, model } => {
                // An empty id or model is a placeholder (Azure's first chunk), not a value.
                let id = id.filter(|id| !id.is_empty());
                let model = model.filter(|model| !model.is_empty());
                if id.is_some() || model.is_some() {
                    out.push(StreamEvent::Started { id, model });
                }
            }
            Chunk::Text(text) => {
                // Empty text is no text: compatible servers send `"content": ""` beside every
                // reasoning piece, which must not cut the reasoning into one block per chunk.
                if !text.is_empty() {
                    self.close_reasoning(out);
                    out.push(StreamEvent::TextDelta(text));
                }
            }
            Chunk::Logprobs(tokens) => out.push(StreamEvent::Logprobs(tokens)),
            Chunk::TextReasoning(reasoning) => {
                self.close_reasoning(out);
                out.push(StreamEvent::TextReasoning(reasoning));
            }
            Chunk::ReasoningDelta { key, text } => {
                if !text.is_empty() {
                    self.reasoning_block(key)?.text.push_str(&text);
                    out.push(StreamEvent::ReasoningDelta { text });
                }
            }
            Chunk::ReasoningSet { key, fields } => {
                let block = self.reasoning_block(key)?;
                if !fields.text.is_empty() {
                    block.text = fields.text;
                }
                for (new, slot) in [
                    (fields.id, &mut block.id),
                    (fields.signature, &mut block.signature),
                    (fields.encrypted, &mut block.encrypted),
                ] {
                    if new.is_some() {
                        *slot = new;
                    }
                }
            }
            Chunk::ReasoningEnd { key } => {
                if let Some(position) = self.reasoning.iter().position(|(k, _)| *k == key) {
                    let (_, reasoning) = self.reasoning.remove(position);
                    emit_reasoning(reasoning, out);
                }
            }
            Chunk::ToolCallStart {
                key,
                id,
                name,
                reasoning,
            } => {
                self.close_reasoning(out);
                if let Some(open) = self.calls.iter_mut().find(|open| open.key == key) {
                    // Some servers repeat the id and name on every fragment.
                    if open.call.name.is_empty() {
                        open.call.name = name;
                    }
                    if open.call.id.is_empty() {
                        open.call.id = id;
                    }
                    return Ok(());
                }
                let index = self.open_call(key)?;
                if let Some(open) = self.calls.last_mut() {
                    open.call.id.clone_from(&id);
                    open.call.name.clone_from(&name);
                    open.call.reasoning = reasoning.map(|reasoning| *reasoning);
                }
                out.push(StreamEvent::ToolCallDelta {
                    index,
                    id: Some(id),
                    name: Some(name),
                    arguments: String::new(),
                });
            }
            Chunk::ToolCallArgs { key, arguments } => {
                if arguments.is_empty() {
                    return Ok(());
                }
                let open = self.call(key)?;
                open.call.arguments.push_str(&arguments);
                let index = open.index;
                out.push(StreamEvent::ToolCallDelta {
                    index,
                    id: None,
                    name: None,
                    arguments,
                });
            }
            Chunk::ToolCallArgsDone { key, arguments } => {
                self.call(key)?.call.arguments = arguments
            }
            Chunk::ToolCallEnd { key } => {
                if let Some(position) = self.calls.iter().position(|open| open.key == key) {
                    let open = self.calls.remove(position);
                    out.push(StreamEvent::ToolCall(open.call));
                }
            }
            Chunk::ToolCall(call) => {
                let call = *call;
                Overflow::check_tool_calls(self.calls_seen, self.calls_seen)?;
                self.close_reasoning(out);
                let index = self.calls_seen;
                self.calls_seen += 1;
                out.push(StreamEvent::ToolCallDelta {
                    index,
                    id: Some(call.id.clone()),
                    name: Some(call.name.clone()),
                    arguments: call.arguments.clone(),
                });
                out.push(StreamEvent::ToolCall(call));
            }
            Chunk::Usage(update) => update.apply(self.usage.get_or_insert_with(Usage::default)),
            Chunk::Finish(reason) => self.finish = Some(reason),
            Chunk::Done => self.finish(out),
        }
        Ok(())
    }

    /// Ends the answer: closes open reasoning blocks and tool calls, then emits the usage and
    /// [`StreamEvent::Done`]. A provider-reported `Stop` becomes `ToolCalls` when the answer
    /// called tools (Gemini and the Responses API report no tool-call finish reason).
    pub(crate) fn finish(&mut self, out: &mut Vec<StreamEvent>) {
        if self.done {
            return;
        }
        self.close_reasoning(out);
        for open in self.calls.drain(..) {
            out.push(StreamEvent::ToolCall(open.call));
        }
        if let Some(usage) = self.usage {
            out.push(StreamEvent::Usage(usage));
        }
        let finish = match self.finish.take() {
            None | Some(FinishReason::Stop) if self.calls_seen > 0 => FinishReason::ToolCalls,
            finish => finish.unwrap_or_default(),
        };
        out.push(StreamEvent::Done { finish });
        self.done = true;
    }

    fn reasoning_block(&mut self, key: usize) -> Result<&mut Reasoning, Overflow> {
        let position = match self.reasoning.iter().position(|(k, _)| *k == key) {
            Some(position) => position,
            None => {
                Overflow::check(self.reasoning.len(), "reasoning block", key)?;
                self.reasoning.push((key, Reasoning::default()));
                self.reasoning.len() - 1
            }
        };
        Ok(&mut self.reasoning[position].1)
    }

    fn close_reasoning(&mut self, out: &mut Vec<StreamEvent>) {
        for (_, reasoning) in self.reasoning.drain(..) {
            emit_reasoning(reasoning, out);
        }
    }

    /// Opens call `key` and returns its public index.
    fn open_call(&mut self, key: usize) -> Result<usize, Overflow> {
        Overflow::check(self.calls.len(), "tool call", key)?;
        Overflow::check_tool_calls(self.calls_seen, key)?;
        let index = self.calls_seen;
        self.calls_seen += 1;
        self.calls.push(OpenCall {
            key,
            index,
            call: ToolCall::default(),
        });
        Ok(index)
    }

    /// Call `key`, opened without id or name if a server sent arguments first.
    fn call(&mut self, key: usize) -> Result<&mut OpenCall, Overflow> {
        let position = match self.calls.iter().position(|open| open.key == key) {
            Some(position) => position,
            None => {
                self.open_call(key)?;
                self.calls.len() - 1
            }
        };
        Ok(&mut self.calls[position])
    }
}

fn emit_reasoning(reasoning: Reasoning, out: &mut Vec<StreamEvent>) {
    if !reasoning.is_empty() {
        out.push(StreamEvent::Reasoning(reasoning));
    }
}

/// Runs a complete list of chunks through an [`Assembler`] (non-streamed answers of
/// `provider`).
#[cfg(feature = "__http")]
pub(crate) fn events_from_chunks(
    provider: Provider,
    chunks: impl IntoIterator<Item = Chunk>,
) -> Result<Vec<StreamEvent>, ProviderError> {
    let mut assembler = Assembler::default();
    let mut events = Vec::new();
    for chunk in chunks {
        assembler
            .push(chunk, &mut events)
            .map_err(|overflow| overflow.into_error(provider))?;
    }
    assembler.finish(&mut events);
    Ok(events)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(chunks: Vec<Chunk>) -> Vec<StreamEvent> {
        let mut assembler = Assembler::default();
        let mut events = Vec::new();
        for chunk in chunks {
            assembler.push(chunk, &mut events).unwrap();
        }
        assembler.finish(&mut events);
        events
    }

    #[test]
    fn interleaved_tool_arguments_accumulate_per_key() {
        let events = run(vec![
            Chunk::ToolCallStart {
                key: 0,
                id: "a".into(),
                name: "f".into(),
                reasoning: None,
            },
            Chunk::ToolCallStart {
                key: 1,
                id: "b".into(),
                name: "g".into(),
                reasoning: None,
            },
            Chunk::ToolCallArgs {
                key: 1,
                arguments: "{\"y\":".into(),
            },
            Chunk::ToolCallArgs {
                key: 0,
                arguments: "{}".into(),
            },
            Chunk::ToolCallArgs {
                key: 1,
                arguments: "2}".into(),
            },
            Chunk::Finish(FinishReason::Stop),
        ]);
        let calls: Vec<_> = events
            .iter()
            .filter_map(|event| match event {
                StreamEvent::ToolCall(call) => Some((call.id.as_str(), call.arguments.as_str())),
                _ => None,
            })
            .collect();
        assert_eq!(calls, [("a", "{}"), ("b", "{\"y\":2}")]);
        assert_eq!(
            events.last(),
            Some(&StreamEvent::Done {
                finish: FinishReason::ToolCalls
            })
        );
    }

    #[test]
    fn reasoning_closes_before_text_and_keeps_opaque_fields() {
        let events = run(vec![
            Chunk::ReasoningDelta {
                key: 0,
                text: "think".into(),
            },
            Chunk::ReasoningSet {
                key: 0,
                fields: Reasoning::signature("sig"),
            },
            Chunk::Text("answer".into()),
        ]);
        assert_eq!(
            events,
            [
                StreamEvent::ReasoningDelta {
                    text: "think".into()
                },
                StreamEvent::Reasoning(Reasoning {
                    text: "think".into(),
                    signature: Some("sig".into()),
                    ..Default::default()
                }),
                StreamEvent::TextDelta("answer".into()),
                StreamEvent::Done {
                    finish: FinishReason::Stop
                },
            ]
        );
    }

    #[test]
    fn usage_updates_merge_field_by_field() {
        let events = run(vec![
            Chunk::Usage(UsageUpdate {
                input_tokens: Some(10),
                output_tokens: Some(1),
                ..Default::default()
            }),
            Chunk::Usage(UsageUpdate {
                output_tokens: Some(7),
                ..Default::default()
            }),
        ]);
        assert!(events.contains(&StreamEvent::Usage(Usage {
            input_tokens: 10,
            output_tokens: 7,
            ..Default::default()
        })));
    }
}

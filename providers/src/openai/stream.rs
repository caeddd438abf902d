//! Chat Completions answers → [`Chunk`]s: the SSE chunk stream and the non-streamed JSON.

use std::borrow::Cow;

use messages::ToolCall;
use serde::Deserialize;

use super::error::{ErrorEnvelope, WireError, stream_error};
use super::wire::{WireUsage, finish_reason};
use crate::assemble::{Chunk, Overflow, UsageUpdate};
use crate::http::sse::{EventParser, json};
use crate::wire_numbers::Lenient;
use crate::{Provider, ProviderError};

const PROVIDER: Provider = Provider::OpenAi;
/// Key of the one reasoning block a Chat answer has (`reasoning_content`).
const REASONING: usize = 0;

#[derive(Deserialize)]
struct StreamChunk<'a> {
    #[serde(borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    model: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    choices: Vec<StreamChoice<'a>>,
    #[serde(default)]
    usage: Lenient<WireUsage>,
    #[serde(borrow)]
    error: Option<WireError<'a>>,
}

#[derive(Deserialize)]
struct StreamChoice<'a> {
    #[serde(default)]
    index: u32,
    #[serde(default, borrow)]
    delta: Delta<'a>,
    #[serde(borrow)]
    finish_reason: Option<Cow<'a, str>>,
}

#[derive(Default, Deserialize)]
struct Delta<'a> {
    #[serde(borrow)]
    content: Option<Cow<'a, str>>,
    #[serde(borrow)]
    refusal: Option<Cow<'a, str>>,
    /// DeepSeek and most compatible servers.
    #[serde(borrow)]
    reasoning_content: Option<Cow<'a, str>>,
    /// OpenRouter, vLLM, Groq.
    #[serde(borrow)]
    reasoning: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    tool_calls: Vec<ToolCallDelta<'a>>,
}

#[derive(Deserialize)]
struct ToolCallDelta<'a> {
    index: Option<usize>,
    #[serde(borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    function: Option<FunctionDelta<'a>>,
}

#[derive(Deserialize)]
struct FunctionDelta<'a> {
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow)]
    arguments: Option<Cow<'a, str>>,
}

/// Parses `data:` payloads of a Chat Completions stream (`[DONE]` ends it).
#[derive(Debug, Default)]
pub(crate) struct ChatStreamParser {
    started: bool,
    /// The calls seen, in order: (key, id), to place fragments of servers that send no
    /// `index`. The key is the wire's `index` (any number: it is a key, never a position),
    /// and the list holds at most [`MAX_OPEN_BLOCKS`](crate::MAX_OPEN_BLOCKS) calls.
    calls: Vec<(usize, String)>,
}

impl EventParser for ChatStreamParser {
    fn parse(
        &mut self,
        _event: &str,
        data: &str,
        out: &mut Vec<Chunk>,
    ) -> Result<(), ProviderError> {
        if data.trim() == "[DONE]" {
            out.push(Chunk::Done);
            return Ok(());
        }
        let chunk: StreamChunk<'_> = json(PROVIDER, data)?;
        if let Some(error) = chunk.error {
            return Err(stream_error(error));
        }
        if !self.started && (chunk.id.is_some() || chunk.model.is_some()) {
            self.started = true;
            out.push(Chunk::Started {
                id: chunk.id.map(Cow::into_owned),
                model: chunk.model.map(Cow::into_owned),
            });
        }
        // Only the first choice is read: Skein never asks for `n > 1`.
        for choice in chunk.choices.into_iter().filter(|c| c.index == 0) {
            let delta = choice.delta;
            if let Some(text) = delta.reasoning_content.or(delta.reasoning) {
                out.push(Chunk::ReasoningDelta {
                    key: REASONING,
                    text: text.into_owned(),
                });
            }
            for text in [delta.content, delta.refusal].into_iter().flatten() {
                out.push(Chunk::Text(text.into_owned()));
            }
            for call in delta.tool_calls {
                self.tool_call(call, out)?;
            }
            if let Some(reason) = choice.finish_reason {
                out.push(Chunk::Finish(finish_reason(&reason)));
            }
        }
        if let Some(usage) = chunk.usage.0 {
            out.push(Chunk::Usage(UsageUpdate::from(usage)));
        }
        Ok(())
    }

    // Some compatible servers omit `[DONE]`; a finish reason is enough to be complete.
    const FINISH_REASON_COMPLETES: bool = true;

    const MISSING_END: &'static str = "no finish_reason and no [DONE] before the stream ended";
}

impl ChatStreamParser {
    fn tool_call(
        &mut self,
        call: ToolCallDelta<'_>,
        out: &mut Vec<Chunk>,
    ) -> Result<(), ProviderError> {
        let id = call.id.map(Cow::into_owned).filter(|id| !id.is_empty());
        // Key by `index`; servers without it (Gemini's compatibility layer) are keyed by id
        // (a new id gets the next number), and an id-less fragment continues the last call.
        let key = match (call.index, &id) {
            (Some(index), _) => index,
            (None, Some(id)) => self
                .calls
                .iter()
                .find(|(_, seen)| seen == id)
                .map_or(self.calls.len(), |(key, _)| *key),
            (None, None) => self.calls.last().map_or(0, |(key, _)| *key),
        };
        let (name, arguments) = match call.function {
            Some(f) => (f.name.map(Cow::into_owned), f.arguments),
            None => (None, None),
        };
        if id.is_some() || name.is_some() {
            let position = match self.calls.iter().position(|(seen, _)| *seen == key) {
                Some(position) => position,
                None => {
                    Overflow::check(self.calls.len(), "tool call", key)
                        .map_err(|overflow| overflow.into_error(PROVIDER))?;
                    self.calls.push((key, String::new()));
                    self.calls.len() - 1
                }
            };
            if let Some(id) = &id {
                self.calls[position].1.clone_from(id);
            }
            out.push(Chunk::ToolCallStart {
                key,
                id: id.unwrap_or_default(),
                name: name.unwrap_or_default(),
                reasoning: None,
            });
        }
        if let Some(arguments) = arguments {
            out.push(Chunk::ToolCallArgs {
                key,
                arguments: arguments.into_owned(),
            });
        }
        Ok(())
    }
}

#[derive(Deserialize)]
struct Completion {
    id: Option<String>,
    model: Option<String>,
    #[serde(default)]
    choices: Vec<CompletionChoice>,
    #[serde(default)]
    usage: Lenient<WireUsage>,
}

#[derive(Deserialize)]
struct CompletionChoice {
    message: CompletionMessage,
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct CompletionMessage {
    content: Option<String>,
    refusal: Option<String>,
    reasoning_content: Option<String>,
    reasoning: Option<String>,
    #[serde(default)]
    tool_calls: Vec<CompletionToolCall>,
}

#[derive(Deserialize)]
struct CompletionToolCall {
    id: String,
    function: CompletionFunction,
}

#[derive(Deserialize)]
struct CompletionFunction {
    name: String,
    #[serde(default)]
    arguments: String,
}

/// A non-streamed `chat.completion` as chunks, in the order a stream would give them.
pub(crate) fn response_chunks(body: &str) -> Result<Vec<Chunk>, ProviderError> {
    if let Ok(envelope) = serde_json::from_str::<ErrorEnvelope<'_>>(body) {
        return Err(stream_error(envelope.error));
    }
    let completion: Completion = json(PROVIDER, body)?;
    let mut out = vec![Chunk::Started {
        id: completion.id,
        model: completion.model,
    }];
    if let Some(choice) = completion.choices.into_iter().next() {
        let message = choice.message;
        if let Some(text) = message.reasoning_content.or(message.reasoning) {
            out.push(Chunk::ReasoningDelta {
                key: REASONING,
                text,
            });
        }
        for text in [message.content, message.refusal].into_iter().flatten() {
            out.push(Chunk::Text(text));
        }
        for call in message.tool_calls {
            out.push(Chunk::ToolCall(ToolCall::new(
                call.id,
                call.function.name,
                call.function.arguments,
            )));
        }
        if let Some(reason) = choice.finish_reason {
            out.push(Chunk::Finish(finish_reason(&reason)));
        }
    }
    if let Some(usage) = completion.usage.0 {
        out.push(Chunk::Usage(UsageUpdate::from(usage)));
    }
    out.push(Chunk::Done);
    Ok(out)
}

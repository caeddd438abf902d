//! OpenAI Chat Completions: a model's answer as `chat.completion.chunk` events, or as one
//! `chat.completion` body. Reasoning of any provider is `reasoning_content`; the client's tool
//! calls are `tool_calls`.

use messages::{ContentPart, Message, Reasoning};
use providers::{ChatResponse, FinishReason, StreamEvent, TokenLogprob, Usage};
use serde::Serialize;
use utoipa::ToSchema;

use super::extra::ExtraContent;
use crate::api::sse::{Frames, TextTemplate};

/// One streamed chunk.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct ChatCompletionChunk {
    /// The completion id, the same on every chunk.
    pub id: String,
    /// Always `chat.completion.chunk`.
    pub object: &'static str,
    /// When the completion started, in Unix seconds.
    pub created: u64,
    /// The model asked for.
    pub model: String,
    /// One choice (index 0), or none on the usage chunk.
    pub choices: Vec<ChunkChoice>,
    /// The usage of the whole answer: on the last chunk when `stream_options.include_usage`
    /// is set (null on the others), absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Option<CompletionUsage>>,
}

/// The choice of a chunk.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct ChunkChoice {
    /// Always 0.
    pub index: u32,
    /// What this chunk adds.
    pub delta: Delta,
    /// The log probabilities of this chunk's text tokens; null unless `logprobs` asked for
    /// them (and on chunks without text).
    pub logprobs: Option<ChoiceLogprobs>,
    /// Why the answer ended, on its last chunk.
    pub finish_reason: Option<&'static str>,
}

/// A choice's `logprobs`, OpenAI's `ChoiceLogprobs`.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct ChoiceLogprobs {
    /// Per text token, in order: `token`, `logprob`, `bytes` (null where the provider sends
    /// none, as Gemini) and the `top_logprobs` asked for.
    #[schema(value_type = Vec<Object>)]
    pub content: Vec<TokenLogprob>,
    /// Always null: a refusal's tokens are text tokens, in `content`.
    #[schema(value_type = Option<Vec<Object>>)]
    pub refusal: Option<Vec<TokenLogprob>>,
}

impl ChoiceLogprobs {
    /// The `logprobs` of `tokens`.
    pub fn new(tokens: Vec<TokenLogprob>) -> Self {
        ChoiceLogprobs {
            content: tokens,
            refusal: None,
        }
    }
}

/// What a chunk adds to the message.
#[derive(Clone, Debug, Default, PartialEq, Serialize, ToSchema)]
pub struct Delta {
    /// `assistant`, on the first chunk.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<&'static str>,
    /// Answer text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// Reasoning text, whichever provider reasoned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    /// Pieces of tool calls.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ToolCallDelta>>,
    /// Whole reasoning blocks with the opaque data their provider needs back.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_details: Option<Vec<ReasoningDetail>>,
}

/// A reasoning block as a client sends it back on the assistant message
/// (`reasoning_details`): Anthropic refuses thinking without its signature, and OpenAI's
/// Responses API needs its encrypted items, so text alone cannot continue a conversation.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
#[serde(tag = "type")]
pub enum ReasoningDetail {
    /// Reasoning text, with the provider's signature.
    #[serde(rename = "reasoning.text")]
    Text {
        /// The reasoning text.
        text: String,
        /// The provider's signature of it.
        #[serde(skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
        /// The provider's id of the block.
        #[serde(skip_serializing_if = "Option::is_none")]
        id: Option<String>,
    },
    /// Reasoning the provider only hands out encrypted.
    #[serde(rename = "reasoning.encrypted")]
    Encrypted {
        /// The opaque data.
        data: String,
        /// The provider's id of the block.
        #[serde(skip_serializing_if = "Option::is_none")]
        id: Option<String>,
    },
}

impl ReasoningDetail {
    /// The detail of `block`, when it holds something a provider needs back.
    pub fn of(block: &Reasoning) -> Option<Self> {
        match (&block.encrypted, &block.signature) {
            (Some(data), _) => Some(ReasoningDetail::Encrypted {
                data: data.clone(),
                id: block.id.clone(),
            }),
            (None, Some(signature)) => Some(ReasoningDetail::Text {
                text: block.text.clone(),
                signature: Some(signature.clone()),
                id: block.id.clone(),
            }),
            (None, None) => None,
        }
    }
}

/// A piece of a tool call: the first carries its id, type and name.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct ToolCallDelta {
    /// The call's position in the answer.
    pub index: usize,
    /// The call id, on the first piece.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// `function`, on the first piece.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<&'static str>,
    /// The name (first piece) and argument text to append.
    pub function: FunctionDelta,
    /// What the provider needs back with the call (Gemini's thought signature), once known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extra_content: Option<ExtraContent>,
}

/// The function part of a tool-call piece.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct FunctionDelta {
    /// The tool's name, on the first piece.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Argument text to append.
    pub arguments: String,
}

/// Token counts with OpenAI's names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, ToSchema)]
pub struct CompletionUsage {
    /// All prompt tokens.
    pub prompt_tokens: u64,
    /// All generated tokens, reasoning included.
    pub completion_tokens: u64,
    /// Both.
    pub total_tokens: u64,
    /// Of the prompt: read from the provider's cache.
    pub prompt_tokens_details: PromptTokensDetails,
    /// Of the answer: spent on reasoning.
    pub completion_tokens_details: CompletionTokensDetails,
}

/// `prompt_tokens_details`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, ToSchema)]
pub struct PromptTokensDetails {
    /// Prompt tokens read from the provider's cache.
    pub cached_tokens: u64,
}

/// `completion_tokens_details`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, ToSchema)]
pub struct CompletionTokensDetails {
    /// Generated tokens spent on reasoning.
    pub reasoning_tokens: u64,
}

impl From<&Usage> for CompletionUsage {
    fn from(usage: &Usage) -> Self {
        CompletionUsage {
            prompt_tokens: usage.input_tokens,
            completion_tokens: usage.output_tokens,
            total_tokens: usage.total_tokens(),
            prompt_tokens_details: PromptTokensDetails {
                cached_tokens: usage.cached_input_tokens,
            },
            completion_tokens_details: CompletionTokensDetails {
                reasoning_tokens: usage.reasoning_tokens,
            },
        }
    }
}

/// OpenAI's name of why an answer ended.
fn finish_name(finish: &FinishReason, called_tools: bool) -> &'static str {
    match finish {
        _ if called_tools => "tool_calls",
        FinishReason::Length => "length",
        FinishReason::ContentFilter => "content_filter",
        FinishReason::ToolCalls => "tool_calls",
        _ => "stop",
    }
}

/// Turns a model's stream events into chunks, in order.
#[derive(Debug)]
pub struct ChunkEncoder {
    id: String,
    model: String,
    created: u64,
    include_usage: bool,
    started: bool,
    /// The ids of the calls whose pieces were streamed, by index.
    streamed_calls: Vec<Option<String>>,
    calls: usize,
    usage: Option<Usage>,
    /// A text delta's chunk after the first, but for its text: most chunks of an answer.
    text_chunk: Option<TextTemplate>,
    /// Log probabilities waiting for the text delta they describe (the provider sends them
    /// just before it).
    logprobs: Option<Vec<TokenLogprob>>,
}

impl ChunkEncoder {
    /// An encoder for completion `id` of `model`.
    pub fn new(id: String, model: String, created: u64, include_usage: bool) -> Self {
        let mut encoder = ChunkEncoder {
            id,
            model,
            created,
            include_usage,
            started: false,
            streamed_calls: Vec::new(),
            calls: 0,
            usage: None,
            text_chunk: None,
            logprobs: None,
        };
        encoder.text_chunk = TextTemplate::new(|text| ChatCompletionChunk {
            id: encoder.id.clone(),
            object: "chat.completion.chunk",
            created: encoder.created,
            model: encoder.model.clone(),
            choices: vec![ChunkChoice {
                index: 0,
                delta: Delta {
                    content: Some(text),
                    ..Delta::default()
                },
                logprobs: None,
                finish_reason: None,
            }],
            usage: encoder.include_usage.then_some(None),
        });
        encoder
    }

    /// Writes the chunks `event` adds as `data:` events: those of [`encode`](Self::encode),
    /// a text delta after the first chunk from its template (unless it carries log
    /// probabilities, which the template has no place for).
    pub(crate) fn write(&mut self, event: StreamEvent, frames: &mut Frames) {
        match (&event, &self.text_chunk) {
            (StreamEvent::TextDelta(text), Some(template))
                if self.started && !text.is_empty() && self.logprobs.is_none() =>
            {
                frames.data_in(template, text);
            }
            _ => {
                for chunk in self.encode(event) {
                    frames.data(&chunk);
                }
            }
        }
    }

    fn chunk(
        &mut self,
        mut delta: Delta,
        finish_reason: Option<&'static str>,
    ) -> ChatCompletionChunk {
        if !self.started {
            self.started = true;
            delta.role = Some("assistant");
        }
        // Waiting log probabilities go with the text they describe, or, if the answer ends
        // without it, with the last chunk rather than nowhere.
        let logprobs = if delta.content.is_some() || finish_reason.is_some() {
            self.logprobs.take().map(ChoiceLogprobs::new)
        } else {
            None
        };
        ChatCompletionChunk {
            id: self.id.clone(),
            object: "chat.completion.chunk",
            created: self.created,
            model: self.model.clone(),
            choices: vec![ChunkChoice {
                index: 0,
                delta,
                logprobs,
                finish_reason,
            }],
            usage: self.include_usage.then_some(None),
        }
    }

    /// The chunks `event` adds (none for events a Chat Completions client has no field for).
    pub fn encode(&mut self, event: StreamEvent) -> Vec<ChatCompletionChunk> {
        match event {
            StreamEvent::TextDelta(text) if !text.is_empty() => vec![self.chunk(
                Delta {
                    content: Some(text),
                    ..Delta::default()
                },
                None,
            )],
            StreamEvent::ReasoningDelta { text } if !text.is_empty() => vec![self.chunk(
                Delta {
                    reasoning_content: Some(text),
                    ..Delta::default()
                },
                None,
            )],
            StreamEvent::ToolCallDelta {
                index,
                id,
                name,
                arguments,
            } => {
                if self.streamed_calls.len() <= index {
                    self.streamed_calls.resize(index + 1, None);
                }
                let first = id.is_some() && self.streamed_calls[index].is_none();
                if first {
                    self.streamed_calls[index].clone_from(&id);
                    self.calls = self.calls.max(index + 1);
                }
                vec![self.call_chunk(ToolCallDelta {
                    index,
                    kind: first.then_some("function"),
                    id,
                    function: FunctionDelta { name, arguments },
                    extra_content: None,
                })]
            }
            StreamEvent::ToolCall(call) => {
                // Providers that hand out whole calls only (no pieces) still reach the client.
                if let Some(index) = self
                    .streamed_calls
                    .iter()
                    .position(|id| id.as_deref() == Some(call.id.as_str()))
                {
                    // A streamed call's signature is known once the call is whole.
                    return ExtraContent::of(&call)
                        .map(|extra| {
                            self.call_chunk(ToolCallDelta {
                                index,
                                id: None,
                                kind: None,
                                function: FunctionDelta {
                                    name: None,
                                    arguments: String::new(),
                                },
                                extra_content: Some(extra),
                            })
                        })
                        .into_iter()
                        .collect();
                }
                let index = self.calls;
                self.calls += 1;
                self.streamed_calls.resize(self.calls, None);
                self.streamed_calls[index] = Some(call.id.clone());
                let extra_content = ExtraContent::of(&call);
                vec![self.call_chunk(ToolCallDelta {
                    extra_content,
                    index,
                    id: Some(call.id),
                    kind: Some("function"),
                    function: FunctionDelta {
                        name: Some(call.name),
                        arguments: call.arguments,
                    },
                })]
            }
            StreamEvent::Reasoning(block) => match ReasoningDetail::of(&block) {
                Some(detail) => vec![self.chunk(
                    Delta {
                        reasoning_details: Some(vec![detail]),
                        ..Delta::default()
                    },
                    None,
                )],
                None => Vec::new(),
            },
            StreamEvent::Logprobs(tokens) => {
                match &mut self.logprobs {
                    Some(waiting) => waiting.extend(tokens),
                    None => self.logprobs = Some(tokens),
                }
                Vec::new()
            }
            StreamEvent::Usage(usage) => {
                self.usage = Some(usage);
                Vec::new()
            }
            StreamEvent::Done { finish } => {
                let finish = finish_name(&finish, self.calls > 0);
                let mut chunks = vec![self.chunk(Delta::default(), Some(finish))];
                if self.include_usage {
                    let usage = self.usage.unwrap_or_default();
                    chunks.push(ChatCompletionChunk {
                        id: self.id.clone(),
                        object: "chat.completion.chunk",
                        created: self.created,
                        model: self.model.clone(),
                        choices: Vec::new(),
                        usage: Some(Some(CompletionUsage::from(&usage))),
                    });
                }
                chunks
            }
            _ => Vec::new(),
        }
    }

    fn call_chunk(&mut self, call: ToolCallDelta) -> ChatCompletionChunk {
        self.chunk(
            Delta {
                tool_calls: Some(vec![call]),
                ..Delta::default()
            },
            None,
        )
    }
}

/// A whole answer: `POST /v1/chat/completions` without `stream`.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct ChatCompletion {
    /// The completion id.
    pub id: String,
    /// Always `chat.completion`.
    pub object: &'static str,
    /// When the completion started, in Unix seconds.
    pub created: u64,
    /// The model asked for.
    pub model: String,
    /// One choice.
    pub choices: Vec<Choice>,
    /// Token counts.
    pub usage: CompletionUsage,
    /// The key–value pairs the request was tagged with (`metadata`): shown when a stored
    /// completion is read back (`GET /v1/chat/completions/{id}`), empty when it had none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<std::collections::BTreeMap<String, String>>,
}

/// The choice of a whole answer.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct Choice {
    /// Always 0.
    pub index: u32,
    /// The answer.
    pub message: AssistantMessage,
    /// The log probabilities of the answer's text tokens; null unless `logprobs` asked for
    /// them.
    pub logprobs: Option<ChoiceLogprobs>,
    /// Why it ended.
    pub finish_reason: &'static str,
}

/// The assistant's message.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct AssistantMessage {
    /// Always `assistant`.
    pub role: &'static str,
    /// The answer text (null when the model only called tools).
    pub content: Option<String>,
    /// The reasoning text, when the model reasoned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    /// The calls the model made, for the client to run.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<MessageToolCall>,
    /// Reasoning blocks to send back on this message to continue the conversation.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub reasoning_details: Vec<ReasoningDetail>,
}

/// A tool call of the answer.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct MessageToolCall {
    /// The call id.
    pub id: String,
    /// Always `function`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The function and its arguments.
    pub function: FunctionCallOut,
    /// What the provider needs back with the call (Gemini's thought signature); send it
    /// back unchanged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extra_content: Option<ExtraContent>,
}

/// The function of a tool call.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct FunctionCallOut {
    /// The tool's name.
    pub name: String,
    /// The arguments as JSON text.
    pub arguments: String,
}

impl ChatCompletion {
    /// The body of `response`.
    pub fn new(id: String, model: String, created: u64, response: &ChatResponse) -> Self {
        let message = assistant_message(&response.message);
        let finish = finish_name(&response.finish_reason, !message.tool_calls.is_empty());
        ChatCompletion {
            id,
            object: "chat.completion",
            created,
            model,
            choices: vec![Choice {
                index: 0,
                message,
                logprobs: response.logprobs.clone().map(ChoiceLogprobs::new),
                finish_reason: finish,
            }],
            usage: CompletionUsage::from(&response.usage),
            metadata: None,
        }
    }
}

fn assistant_message(message: &Message) -> AssistantMessage {
    let mut text = String::new();
    let mut reasoning = String::new();
    let mut tool_calls = Vec::new();
    let mut reasoning_details = Vec::new();
    for part in &message.parts {
        match part {
            ContentPart::Text { text: piece, .. } => text.push_str(piece),
            ContentPart::Reasoning(block) => {
                reasoning.push_str(&block.text);
                reasoning_details.extend(ReasoningDetail::of(block));
            }
            ContentPart::ToolCall(call) => tool_calls.push(MessageToolCall {
                extra_content: ExtraContent::of(call),
                id: call.id.clone(),
                kind: "function",
                function: FunctionCallOut {
                    name: call.name.clone(),
                    arguments: call.arguments.clone(),
                },
            }),
            _ => {}
        }
    }
    AssistantMessage {
        role: "assistant",
        content: (!text.is_empty() || tool_calls.is_empty()).then_some(text),
        reasoning_content: (!reasoning.is_empty()).then_some(reasoning),
        tool_calls,
        reasoning_details,
    }
}

#[cfg(test)]
mod tests {
    use providers::FinishReason;

    use super::*;

    fn events() -> Vec<StreamEvent> {
        vec![
            StreamEvent::TextDelta("Hel".into()),
            StreamEvent::Logprobs(vec![TokenLogprob {
                token: "lo".into(),
                logprob: -0.25,
                bytes: Some(b"lo".to_vec()),
                top_logprobs: Vec::new(),
            }]),
            StreamEvent::TextDelta("lo \"you\"\n".into()),
            StreamEvent::ReasoningDelta { text: "hm".into() },
            StreamEvent::TextDelta(String::new()),
            StreamEvent::TextDelta("!".into()),
            StreamEvent::Usage(Usage::default()),
            StreamEvent::Done {
                finish: FinishReason::Stop,
            },
        ]
    }

    #[test]
    fn written_chunks_are_the_encoded_chunks_serialised() {
        for include_usage in [false, true] {
            let new = || ChunkEncoder::new("chatcmpl-1".into(), "m".into(), 7, include_usage);
            let (mut writer, mut encoder) = (new(), new());
            let (mut written, mut serialised) = (Frames::default(), Frames::default());
            for event in events() {
                writer.write(event.clone(), &mut written);
                for chunk in encoder.encode(event) {
                    serialised.data(&chunk);
                }
            }
            assert_eq!(written.take(), serialised.take());
        }
    }

    #[test]
    fn log_probabilities_go_with_the_next_text_and_leave_the_rest_null() {
        let mut encoder = ChunkEncoder::new("chatcmpl-1".into(), "m".into(), 7, false);
        let chunks: Vec<ChatCompletionChunk> = events()
            .into_iter()
            .flat_map(|event| encoder.encode(event))
            .collect();
        let logprobs: Vec<(Option<&str>, Option<&str>)> = chunks
            .iter()
            .map(|chunk| {
                let choice = &chunk.choices[0];
                let token = choice
                    .logprobs
                    .as_ref()
                    .map(|l| l.content[0].token.as_str());
                (choice.delta.content.as_deref(), token)
            })
            .collect();
        assert_eq!(
            logprobs,
            [
                (Some("Hel"), None),
                (Some("lo \"you\"\n"), Some("lo")),
                (None, None),
                (Some("!"), None),
                (None, None),
            ]
        );
    }
}

//! [`AnswerAsText`]: a JSON answer a model gave as a forced tool call comes back as text.
//!
//! Claude models before 4.5 have no `output_config.format`, and every model lacks a schema-free
//! JSON mode: the request then makes the model call [`ANSWER_TOOL`] with the answer as input
//! (see `request.rs`). The caller asked for a JSON answer, not a tool call, so the call's input
//! is handed back as the answer's text, streamed or not, and the finish reason is `stop` unless
//! the model also called one of the caller's tools.

use std::collections::BTreeMap;

use async_trait::async_trait;
use futures::StreamExt;
use messages::ContentPart;

use super::request::{ANSWER_TOOL, JsonOutput};
use crate::{
    ChatModel, ChatRequest, ChatResponse, EventStream, FinishReason, ModelInfo, ProviderError,
    StreamEvent,
};

/// An Anthropic model whose forced answer-tool calls read as text.
#[derive(Debug)]
pub(super) struct AnswerAsText<M> {
    inner: M,
    json: JsonOutput,
}

impl<M: ChatModel> AnswerAsText<M> {
    /// Wraps `inner`, which asks for JSON natively or through the tool as its registry entry
    /// says.
    pub(super) fn new(inner: M) -> Self {
        let json = if inner.info().native_json_schema() {
            JsonOutput::Native
        } else {
            JsonOutput::ForcedTool
        };
        AnswerAsText { inner, json }
    }

    fn uses_tool(&self, request: &ChatRequest) -> bool {
        self.json.for_request(request) == Some(JsonOutput::ForcedTool)
    }
}

#[async_trait]
impl<M: ChatModel> ChatModel for AnswerAsText<M> {
    fn info(&self) -> &ModelInfo {
        self.inner.info()
    }

    fn unsupported_options(&self, options: &crate::ChatOptions) -> Vec<&'static str> {
        self.inner.unsupported_options(options)
    }

    fn guarantees_schema(&self, format: &crate::ResponseFormat) -> bool {
        self.inner.guarantees_schema(format)
    }

    async fn complete(&self, request: ChatRequest) -> Result<ChatResponse, ProviderError> {
        let uses_tool = self.uses_tool(&request);
        let mut response = self.inner.complete(request).await?;
        if uses_tool {
            answer_as_text(&mut response);
        }
        Ok(response)
    }

    async fn stream(&self, request: ChatRequest) -> Result<EventStream, ProviderError> {
        let uses_tool = self.uses_tool(&request);
        let stream = self.inner.stream(request).await?;
        Ok(if uses_tool { rewrite(stream) } else { stream })
    }

    async fn stream_borrowed(&self, request: &ChatRequest) -> Result<EventStream, ProviderError> {
        let stream = self.inner.stream_borrowed(request).await?;
        Ok(if self.uses_tool(request) {
            rewrite(stream)
        } else {
            stream
        })
    }
}

/// The answer tool's calls in `response` become text parts.
fn answer_as_text(response: &mut ChatResponse) {
    let mut other_calls = false;
    for part in &mut response.message.parts {
        if let ContentPart::ToolCall(call) = part {
            if call.name == ANSWER_TOOL {
                *part = ContentPart::text(std::mem::take(&mut call.arguments));
            } else {
                other_calls = true;
            }
        }
    }
    if !other_calls && response.finish_reason == FinishReason::ToolCalls {
        response.finish_reason = FinishReason::Stop;
    }
}

/// The stream with the answer tool's argument pieces as text deltas, the other calls
/// renumbered from 0 and the finish reason as in [`answer_as_text`].
fn rewrite(stream: EventStream) -> EventStream {
    let mut calls = Calls::default();
    Box::pin(stream.filter_map(move |item| {
        let out = match item {
            Ok(event) => calls.rewrite(event).map(Ok),
            Err(error) => Some(Err(error)),
        };
        std::future::ready(out)
    }))
}

/// What the stream said so far about its tool calls.
#[derive(Default)]
struct Calls {
    /// For each call index seen: its index among the caller's calls, or `None` for an answer
    /// call (with whether any of its text went out).
    seen: BTreeMap<usize, Slot>,
    next: usize,
}

enum Slot {
    Caller(usize),
    Answer { streamed: bool },
}

impl Calls {
    fn rewrite(&mut self, event: StreamEvent) -> Option<StreamEvent> {
        match event {
            StreamEvent::ToolCallDelta {
                index,
                id,
                name,
                arguments,
            } => {
                if !self.seen.contains_key(&index) {
                    let slot = if name.as_deref() == Some(ANSWER_TOOL) {
                        Slot::Answer { streamed: false }
                    } else {
                        self.next += 1;
                        Slot::Caller(self.next - 1)
                    };
                    self.seen.insert(index, slot);
                }
                match self.seen.get_mut(&index)? {
                    Slot::Caller(renumbered) => Some(StreamEvent::ToolCallDelta {
                        index: *renumbered,
                        id,
                        name,
                        arguments,
                    }),
                    Slot::Answer { streamed } => {
                        if arguments.is_empty() {
                            return None;
                        }
                        *streamed = true;
                        Some(StreamEvent::TextDelta(arguments))
                    }
                }
            }
            StreamEvent::ToolCall(call) if call.name == ANSWER_TOOL => {
                let streamed = self
                    .seen
                    .values()
                    .any(|slot| matches!(slot, Slot::Answer { streamed: true }));
                (!streamed).then_some(StreamEvent::TextDelta(call.arguments))
            }
            StreamEvent::Done {
                finish: FinishReason::ToolCalls,
            } if self.next == 0 => Some(StreamEvent::Done {
                finish: FinishReason::Stop,
            }),
            other => Some(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use messages::ToolCall;

    #[test]
    fn answer_calls_become_text_and_other_calls_keep_their_order() {
        let mut calls = Calls::default();
        let events = [
            StreamEvent::ToolCallDelta {
                index: 0,
                id: Some("toolu_1".into()),
                name: Some(ANSWER_TOOL.into()),
                arguments: String::new(),
            },
            StreamEvent::ToolCallDelta {
                index: 0,
                id: None,
                name: None,
                arguments: "{\"a\":".into(),
            },
            StreamEvent::ToolCallDelta {
                index: 0,
                id: None,
                name: None,
                arguments: "1}".into(),
            },
            StreamEvent::ToolCall(ToolCall::new("toolu_1", ANSWER_TOOL, "{\"a\":1}")),
            StreamEvent::Done {
                finish: FinishReason::ToolCalls,
            },
        ];
        let out: Vec<StreamEvent> = events
            .into_iter()
            .filter_map(|e| calls.rewrite(e))
            .collect();
        assert_eq!(
            out,
            [
                StreamEvent::TextDelta("{\"a\":".into()),
                StreamEvent::TextDelta("1}".into()),
                StreamEvent::Done {
                    finish: FinishReason::Stop
                },
            ]
        );
    }

    #[test]
    fn a_caller_tool_beside_keeps_tool_calls_as_the_finish() {
        let mut response = ChatResponse {
            message: messages::Message::ai_tool_calls(
                None,
                vec![
                    ToolCall::new("1", "weather", "{}"),
                    ToolCall::new("2", ANSWER_TOOL, "{\"x\":2}"),
                ],
            ),
            finish_reason: FinishReason::ToolCalls,
            ..ChatResponse::default()
        };
        answer_as_text(&mut response);
        assert_eq!(response.message.text(), "{\"x\":2}");
        assert_eq!(response.message.tool_calls().count(), 1);
        assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    }
}

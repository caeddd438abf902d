//! [`collect`]: fold a stream of [`StreamEvent`]s into a [`ChatResponse`].

#![cfg_attr(not(feature = "__http"), allow(dead_code))]

use futures::StreamExt;
use messages::{ContentPart, Role};

use crate::{ChatResponse, EventStream, FinishReason, ProviderError, StreamEvent};

/// Reads a stream to its end and returns the complete answer — the same [`ChatResponse`]
/// [`ChatModel::complete`](crate::ChatModel::complete) gives.
///
/// The first error in the stream is returned; a stream that ends without
/// [`StreamEvent::Done`] gives [`ProviderError::StreamTruncated`].
pub async fn collect(mut stream: EventStream) -> Result<ChatResponse, ProviderError> {
    let mut builder = ResponseBuilder::default();
    while let Some(event) = stream.next().await {
        builder.push(event?);
        if builder.finish.is_some() {
            break;
        }
    }
    builder.finish()
}

/// Builds a [`ChatResponse`] from events in order. The one place where events become a message:
/// [`collect`] uses it, and so does a caller that forwards a stream while keeping its answer.
///
/// ```
/// use providers::{FinishReason, ResponseBuilder, StreamEvent};
///
/// let mut builder = ResponseBuilder::default();
/// builder.push(StreamEvent::TextDelta("Hel".into()));
/// builder.push(StreamEvent::TextDelta("lo".into()));
/// builder.push(StreamEvent::Done { finish: FinishReason::Stop });
/// assert_eq!(builder.finish()?.message.text(), "Hello");
/// # Ok::<(), providers::ProviderError>(())
/// ```
#[derive(Debug, Default)]
pub struct ResponseBuilder {
    response: ChatResponse,
    finish: Option<FinishReason>,
}

impl ResponseBuilder {
    /// Adds the next event.
    pub fn push(&mut self, event: StreamEvent) {
        let response = &mut self.response;
        let parts = &mut response.message.parts;
        match event {
            StreamEvent::Started { id, model } => {
                response.id = response.id.take().or(id);
                response.model = response.model.take().or(model);
            }
            StreamEvent::TextDelta(delta) => match parts.last_mut() {
                Some(ContentPart::Text { text, .. }) => text.push_str(&delta),
                _ => parts.push(ContentPart::text(delta)),
            },
            StreamEvent::TextReasoning(reasoning) => match parts.last_mut() {
                Some(ContentPart::Text {
                    reasoning: slot @ None,
                    ..
                }) => *slot = Some(reasoning),
                _ => parts.push(ContentPart::Text {
                    text: String::new(),
                    reasoning: Some(reasoning),
                }),
            },
            StreamEvent::Reasoning(reasoning) => parts.push(ContentPart::Reasoning(reasoning)),
            StreamEvent::ToolCall(call) => parts.push(ContentPart::ToolCall(call)),
            StreamEvent::Logprobs(tokens) => match &mut response.logprobs {
                Some(all) => all.extend(tokens),
                None => response.logprobs = Some(tokens),
            },
            StreamEvent::Usage(usage) => response.usage = usage,
            StreamEvent::Done { finish } => self.finish = Some(finish),
            // Progress only: the whole block or call follows.
            StreamEvent::ReasoningDelta { .. } | StreamEvent::ToolCallDelta { .. } => {}
        }
    }

    /// Adds the next event without taking it, for a caller that forwards the event too: a
    /// text delta is appended and progress events are passed over, so the deltas that make up
    /// almost all of a stream cost no copy of the event.
    pub fn push_ref(&mut self, event: &StreamEvent) {
        match event {
            StreamEvent::TextDelta(delta) => match self.response.message.parts.last_mut() {
                Some(ContentPart::Text { text, .. }) => text.push_str(delta),
                _ => self
                    .response
                    .message
                    .parts
                    .push(ContentPart::text(delta.clone())),
            },
            StreamEvent::ReasoningDelta { .. } | StreamEvent::ToolCallDelta { .. } => {}
            other => self.push(other.clone()),
        }
    }

    /// The answer so far, whether or not `Done` arrived (an interrupted stream's partial
    /// answer, to keep); its finish reason is `Stop` when none arrived.
    pub fn into_partial(self) -> ChatResponse {
        let mut response = self.response;
        response.message.role = Role::Ai;
        response.finish_reason = self.finish.unwrap_or_default();
        response
    }

    /// Whether the stream's `Done` arrived.
    pub fn is_done(&self) -> bool {
        self.finish.is_some()
    }

    /// The answer; [`ProviderError::StreamTruncated`] when `Done` never arrived.
    pub fn finish(self) -> Result<ChatResponse, ProviderError> {
        let Some(finish_reason) = self.finish else {
            return Err(ProviderError::StreamTruncated {
                provider: None,
                detail: "the event stream ended without a Done event".into(),
            });
        };
        let mut response = self.response;
        response.message.role = Role::Ai;
        response.finish_reason = finish_reason;
        Ok(response)
    }
}

/// The answer of a list of events that is known to be complete (used by `complete`).
pub(crate) fn response_from_events(
    events: impl IntoIterator<Item = StreamEvent>,
) -> Result<ChatResponse, ProviderError> {
    let mut builder = ResponseBuilder::default();
    for event in events {
        builder.push(event);
    }
    builder.finish()
}

#[cfg(test)]
mod tests {
    use messages::{Reasoning, ToolCall};

    use super::*;
    use crate::Usage;

    #[test]
    fn pushing_by_reference_builds_the_same_answer() {
        let events = [
            StreamEvent::Started {
                id: Some("r1".into()),
                model: Some("m".into()),
            },
            StreamEvent::ReasoningDelta { text: "hm".into() },
            StreamEvent::Reasoning(Reasoning {
                text: "hm".into(),
                signature: Some("sig".into()),
                ..Reasoning::default()
            }),
            StreamEvent::Logprobs(vec![crate::TokenLogprob {
                token: "Hel".into(),
                logprob: -0.5,
                ..Default::default()
            }]),
            StreamEvent::TextDelta("Hel".into()),
            StreamEvent::TextDelta("lo".into()),
            StreamEvent::TextReasoning(Reasoning::signature("g")),
            StreamEvent::ToolCallDelta {
                index: 0,
                id: Some("c1".into()),
                name: Some("f".into()),
                arguments: "{}".into(),
            },
            StreamEvent::ToolCall(ToolCall::new("c1", "f", "{}")),
            StreamEvent::Usage(Usage {
                input_tokens: 3,
                output_tokens: 2,
                ..Usage::default()
            }),
            StreamEvent::Done {
                finish: FinishReason::ToolCalls,
            },
        ];
        let mut owned = ResponseBuilder::default();
        let mut borrowed = ResponseBuilder::default();
        for event in events {
            borrowed.push_ref(&event);
            owned.push(event);
        }
        assert!(borrowed.is_done());
        assert_eq!(borrowed.finish().unwrap(), owned.finish().unwrap());
    }
}

//! One model call: streamed, its deltas forwarded as events, stopped at once on cancellation.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use messages::{ContentPart, Message, Reasoning, Role, ToolCall};
use providers::{
    ChatModel, ChatRequest, ChatResponse, EventStream, ProviderError, ResponseBuilder, StreamEvent,
};
use tokio_util::sync::CancellationToken;

use crate::emit::Emitter;
use crate::gate::until_cancelled;

/// How a model call ended.
pub(crate) enum Asked {
    /// The whole answer.
    Answer(ChatResponse),
    /// Cancelled; what had arrived: the reasoning, the text and the complete tool calls, if
    /// any.
    Cancelled(Option<Message>),
    /// The provider failed (before or during the stream), with what had arrived before.
    Failed(ProviderError, Option<Message>),
}

/// Streams `request`, forwarding text (when `stream_text`) and reasoning deltas to `emitter`.
/// Returns how the call ended and when its first output arrived, measured from the request
/// (`None` when nothing did).
///
/// The stream is read under `cancel`: on cancellation it is dropped at once, which closes the
/// provider connection.
pub(crate) async fn ask(
    model: &dyn ChatModel,
    request: &ChatRequest,
    cancel: &CancellationToken,
    emitter: &Arc<Emitter>,
    stream_text: bool,
) -> (Asked, Option<Duration>) {
    emitter.next_answer();
    let started = Instant::now();
    let stream = match until_cancelled(cancel, model.stream_borrowed(request)).await {
        None => return (Asked::Cancelled(None), None),
        Some(Err(error)) => return (Asked::Failed(error, None), None),
        Some(Ok(stream)) => stream,
    };
    let mut reading = Reading {
        answer: ResponseBuilder::default(),
        thinking: String::new(),
        first_output: None,
        started,
    };
    let read = reading.read(stream, emitter, stream_text);
    let result = until_cancelled(cancel, read).await;
    let ttft = reading.first_output;
    let asked = match result {
        Some(Ok(())) => reading.end(),
        Some(Err(error)) => Asked::Failed(error, reading.partial()),
        None => Asked::Cancelled(reading.partial()),
    };
    (asked, ttft)
}

/// The answer being read: every event goes into it once, and a text or reasoning delta is
/// then moved into its event, so a delta is held once however many want it.
struct Reading {
    /// The answer as `collect` builds it, which is also what arrived when the stream stops.
    answer: ResponseBuilder,
    /// Reasoning deltas of a block not complete yet (the answer keeps only complete blocks).
    thinking: String,
    /// When the first output arrived, from `started`.
    first_output: Option<Duration>,
    started: Instant,
}

impl Reading {
    /// Reads `stream` until its `Done` (or its end); the first error stops it.
    async fn read(
        &mut self,
        mut stream: EventStream,
        emitter: &Emitter,
        stream_text: bool,
    ) -> Result<(), ProviderError> {
        while let Some(event) = stream.next().await {
            let event = event?;
            if event.is_output() {
                let started = self.started;
                self.first_output.get_or_insert_with(|| started.elapsed());
            }
            match event {
                StreamEvent::TextDelta(_) | StreamEvent::ReasoningDelta { .. } => {
                    // A text delta is appended to the answer by reference, then moved into
                    // its event.
                    self.answer.push_ref(&event);
                    self.forward(event, emitter, stream_text);
                }
                StreamEvent::Reasoning(_) => {
                    self.thinking.clear();
                    self.answer.push(event);
                }
                other => self.answer.push(other),
            }
            if self.answer.is_done() {
                break;
            }
        }
        Ok(())
    }

    /// Sends a delta's event, moving its text; reasoning deltas are kept until their block is
    /// complete.
    fn forward(&mut self, delta: StreamEvent, emitter: &Emitter, stream_text: bool) {
        match delta {
            StreamEvent::TextDelta(text) if stream_text => emitter.content(text),
            StreamEvent::ReasoningDelta { text } => {
                self.thinking.push_str(&text);
                emitter.reasoning(text);
            }
            _ => {}
        }
    }

    /// How a stream that ended by itself ended: the answer, or the truncation `collect`
    /// reports for a stream without `Done`, with what had arrived.
    fn end(mut self) -> Asked {
        // Without `Done` the builder's `finish` is the truncation error whatever it holds, so
        // what arrived is taken out first.
        let partial = if self.answer.is_done() {
            None
        } else {
            self.partial()
        };
        match self.answer.finish() {
            Ok(response) => Asked::Answer(response),
            Err(error) => Asked::Failed(error, partial),
        }
    }

    /// What arrived of an answer that did not end: the complete reasoning blocks, the
    /// reasoning of an open block, the text, the complete tool calls, in that order; `None`
    /// when nothing did. Takes it out.
    fn partial(&mut self) -> Option<Message> {
        let arrived = std::mem::take(&mut self.answer).into_partial().message;
        let mut blocks: Vec<Reasoning> = Vec::new();
        let mut text = String::new();
        let mut calls: Vec<ToolCall> = Vec::new();
        for part in arrived.parts {
            match part {
                ContentPart::Reasoning(block) => blocks.push(block),
                ContentPart::Text { text: more, .. } if text.is_empty() => text = more,
                ContentPart::Text { text: more, .. } => text.push_str(&more),
                ContentPart::ToolCall(call) => calls.push(call),
                _ => {}
            }
        }
        // An unfinished block has no signature: providers that need one do not get it back.
        let open = (!self.thinking.is_empty()).then(|| Reasoning {
            text: std::mem::take(&mut self.thinking),
            ..Reasoning::default()
        });
        let reasoning = blocks.into_iter().chain(open).map(ContentPart::Reasoning);
        let text = (!text.is_empty()).then(|| ContentPart::text(text));
        let calls = calls.into_iter().map(ContentPart::ToolCall);
        let parts: Vec<ContentPart> = reasoning.chain(text).chain(calls).collect();
        (!parts.is_empty()).then(|| Message::new(Role::Ai, parts))
    }
}

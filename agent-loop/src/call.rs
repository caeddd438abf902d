//! One model call: streamed, its deltas forwarded as events, stopped at once on cancellation.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use futures::StreamExt;
use messages::{ContentPart, Message, Reasoning, Role, ToolCall};
use providers::{
    ChatModel, ChatRequest, ChatResponse, EventStream, ProviderError, StreamEvent, collect,
};
use tokio_util::sync::CancellationToken;

use crate::emit::Emitter;

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

/// What arrived of an answer, for a stream that did not end.
#[derive(Default)]
struct Partial {
    /// Complete reasoning blocks, with the opaque fields providers want back.
    blocks: Vec<Reasoning>,
    /// Reasoning deltas of a block not complete yet.
    reasoning: String,
    text: String,
    calls: Vec<ToolCall>,
}

impl Partial {
    fn into_message(self) -> Option<Message> {
        // An unfinished block has no signature: providers that need one do not get it back.
        let open = (!self.reasoning.is_empty()).then(|| Reasoning {
            text: self.reasoning,
            ..Reasoning::default()
        });
        let reasoning = self
            .blocks
            .into_iter()
            .chain(open)
            .map(ContentPart::Reasoning);
        let text = (!self.text.is_empty()).then(|| ContentPart::text(self.text));
        let calls = self.calls.into_iter().map(ContentPart::ToolCall);
        let parts: Vec<ContentPart> = reasoning.chain(text).chain(calls).collect();
        (!parts.is_empty()).then(|| Message::new(Role::Ai, parts))
    }
}

/// Streams `request`, forwarding text (when `stream_text`) and reasoning deltas to `emitter`.
/// Returns how the call ended and when its first output arrived, measured from the request
/// (`None` when nothing did).
///
/// The stream is read under `cancel`: on cancellation it is dropped at once, which closes the
/// provider connection.
pub(crate) async fn ask(
    model: &dyn ChatModel,
    request: ChatRequest,
    cancel: &CancellationToken,
    emitter: &Arc<Emitter>,
    stream_text: bool,
) -> (Asked, Option<Duration>) {
    emitter.next_answer();
    let started = Instant::now();
    let stream = match cancel.run_until_cancelled(model.stream(request)).await {
        None => return (Asked::Cancelled(None), None),
        Some(Err(error)) => return (Asked::Failed(error, None), None),
        Some(Ok(stream)) => stream,
    };
    let partial = Arc::new(Mutex::new(Partial::default()));
    let first_output = Arc::new(Mutex::new(None::<Duration>));
    let tap = {
        let emitter = Arc::clone(emitter);
        let partial = Arc::clone(&partial);
        let first_output = Arc::clone(&first_output);
        move |item: &Result<StreamEvent, ProviderError>| {
            let lock = || partial.lock().unwrap_or_else(PoisonError::into_inner);
            if let Ok(event) = item
                && event.is_output()
            {
                first_output
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .get_or_insert_with(|| started.elapsed());
            }
            match item {
                Ok(StreamEvent::TextDelta(text)) => {
                    lock().text.push_str(text);
                    if stream_text {
                        emitter.content(text);
                    }
                }
                Ok(StreamEvent::ReasoningDelta { text }) => {
                    lock().reasoning.push_str(text);
                    emitter.reasoning(text);
                }
                Ok(StreamEvent::Reasoning(block)) => {
                    let mut partial = lock();
                    partial.reasoning.clear();
                    partial.blocks.push(block.clone());
                }
                Ok(StreamEvent::ToolCall(call)) => lock().calls.push(call.clone()),
                _ => {}
            }
        }
    };
    let tapped: EventStream = Box::pin(stream.inspect(tap));
    let result = cancel.run_until_cancelled(collect(tapped)).await;
    let partial = || {
        std::mem::take(&mut *partial.lock().unwrap_or_else(PoisonError::into_inner)).into_message()
    };
    let asked = match result {
        Some(Ok(response)) => Asked::Answer(response),
        Some(Err(error)) => Asked::Failed(error, partial()),
        None => Asked::Cancelled(partial()),
    };
    let ttft = *first_output.lock().unwrap_or_else(PoisonError::into_inner);
    (asked, ttft)
}

//! One model call: streamed, its deltas forwarded as events, stopped at once on cancellation.

use std::sync::{Arc, Mutex, PoisonError};

use futures::StreamExt;
use messages::{Message, ToolCall};
use providers::{
    ChatModel, ChatRequest, ChatResponse, EventStream, ProviderError, StreamEvent, collect,
};
use tokio_util::sync::CancellationToken;

use crate::emit::Emitter;

/// How a model call ended.
pub(crate) enum Asked {
    /// The whole answer.
    Answer(ChatResponse),
    /// Cancelled; what had arrived: the text and the complete tool calls, if any.
    Cancelled(Option<Message>),
    /// The provider failed (before or during the stream).
    Failed(ProviderError),
}

/// What arrived of an answer, for a cancellation mid-stream.
#[derive(Default)]
struct Partial {
    text: String,
    calls: Vec<ToolCall>,
}

impl Partial {
    fn into_message(self) -> Option<Message> {
        if self.text.is_empty() && self.calls.is_empty() {
            return None;
        }
        let text = (!self.text.is_empty()).then_some(self.text);
        Some(Message::ai_tool_calls(text, self.calls))
    }
}

/// Streams `request`, forwarding text (when `stream_text`) and reasoning deltas to `emitter`.
///
/// The stream is read under `cancel`: on cancellation it is dropped at once, which closes the
/// provider connection.
pub(crate) async fn ask(
    model: &dyn ChatModel,
    request: ChatRequest,
    cancel: &CancellationToken,
    emitter: &Arc<Emitter>,
    stream_text: bool,
) -> Asked {
    emitter.next_answer();
    let stream = match cancel.run_until_cancelled(model.stream(request)).await {
        None => return Asked::Cancelled(None),
        Some(Err(error)) => return Asked::Failed(error),
        Some(Ok(stream)) => stream,
    };
    let partial = Arc::new(Mutex::new(Partial::default()));
    let tap = {
        let emitter = Arc::clone(emitter);
        let partial = Arc::clone(&partial);
        move |item: &Result<StreamEvent, ProviderError>| {
            let lock = || partial.lock().unwrap_or_else(PoisonError::into_inner);
            match item {
                Ok(StreamEvent::TextDelta(text)) => {
                    lock().text.push_str(text);
                    if stream_text {
                        emitter.content(text);
                    }
                }
                Ok(StreamEvent::ReasoningDelta { text }) => emitter.reasoning(text),
                Ok(StreamEvent::ToolCall(call)) => lock().calls.push(call.clone()),
                _ => {}
            }
        }
    };
    let tapped: EventStream = Box::pin(stream.inspect(tap));
    match cancel.run_until_cancelled(collect(tapped)).await {
        Some(Ok(response)) => Asked::Answer(response),
        Some(Err(error)) => Asked::Failed(error),
        None => {
            let partial =
                std::mem::take(&mut *partial.lock().unwrap_or_else(PoisonError::into_inner));
            Asked::Cancelled(partial.into_message())
        }
    }
}

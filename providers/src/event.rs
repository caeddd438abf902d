//! [`StreamEvent`]: what a streaming model call yields.

use messages::{Reasoning, ToolCall};

use crate::{FinishReason, TokenLogprob, Usage};

/// One event of a streamed answer.
///
/// Deltas are for showing progress; every part of the final message is also delivered whole:
/// reasoning blocks as [`Reasoning`](StreamEvent::Reasoning), tool calls as
/// [`ToolCall`](StreamEvent::ToolCall). [`collect`](crate::collect) builds the
/// [`ChatResponse`](crate::ChatResponse) from the whole events and the text deltas, in stream
/// order, so it equals what [`ChatModel::complete`](crate::ChatModel::complete) returns.
///
/// A well-formed stream ends with exactly one [`Done`](StreamEvent::Done), preceded by at most
/// one [`Usage`](StreamEvent::Usage); a stream that ends without `Done` was truncated.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum StreamEvent {
    /// The provider's response id and model name, when known: the first event, and at most
    /// once more when a later chunk brings what the first lacked (a compatible server whose
    /// first chunk has an empty model); each field is reported once.
    Started {
        /// The provider's response id.
        id: Option<String>,
        /// The model that answers, as the provider names it.
        model: Option<String>,
    },
    /// A piece of answer text. Consecutive deltas form one text part.
    TextDelta(String),
    /// The log probabilities of the tokens of the [`TextDelta`](StreamEvent::TextDelta) that
    /// comes next (the provider sent them together), only when
    /// [`ChatOptions::logprobs`](crate::ChatOptions::logprobs) asked for them and the provider
    /// has them. Sent first so that a consumer can put them beside that text, as the OpenAI
    /// protocols do; [`collect`](crate::collect) gathers them in
    /// [`ChatResponse::logprobs`](crate::ChatResponse::logprobs).
    Logprobs(Vec<TokenLogprob>),
    /// A piece of reasoning ("thinking") text, for display. The complete block follows as
    /// [`StreamEvent::Reasoning`].
    ReasoningDelta {
        /// The new reasoning text.
        text: String,
    },
    /// A complete standalone reasoning block (thinking block, Responses reasoning item,
    /// `reasoning_content`), with the opaque data that must be sent back unchanged.
    Reasoning(Reasoning),
    /// Reasoning that rides on the current text part (Gemini's `thoughtSignature` on a text
    /// part). If no text part is open it opens an empty one.
    TextReasoning(Reasoning),
    /// A piece of a tool call. The first piece of a call carries its id and name; later pieces
    /// carry argument text to append. The complete call follows as [`StreamEvent::ToolCall`].
    ToolCallDelta {
        /// Position of the call among this answer's tool calls (0, 1, …).
        index: usize,
        /// The call id, on the first piece.
        id: Option<String>,
        /// The tool name, on the first piece.
        name: Option<String>,
        /// Argument text to append.
        arguments: String,
    },
    /// A complete tool call.
    ToolCall(ToolCall),
    /// Token counts of the whole answer.
    Usage(Usage),
    /// The answer is complete.
    Done {
        /// Why the model stopped.
        finish: FinishReason,
    },
}

impl StreamEvent {
    /// Whether the event carries output the model generated: text, reasoning or a tool call.
    /// The first such event of a call marks its time to first token; what only describes the
    /// answer ([`Started`](StreamEvent::Started), [`Usage`](StreamEvent::Usage),
    /// [`Done`](StreamEvent::Done)) and empty deltas do not count.
    ///
    /// ```
    /// use providers::{FinishReason, StreamEvent};
    ///
    /// assert!(StreamEvent::TextDelta("Hel".into()).is_output());
    /// assert!(!StreamEvent::TextDelta(String::new()).is_output());
    /// assert!(!StreamEvent::Done { finish: FinishReason::Stop }.is_output());
    /// ```
    pub fn is_output(&self) -> bool {
        match self {
            StreamEvent::TextDelta(text) | StreamEvent::ReasoningDelta { text } => !text.is_empty(),
            StreamEvent::Reasoning(_)
            | StreamEvent::TextReasoning(_)
            | StreamEvent::ToolCallDelta { .. }
            | StreamEvent::ToolCall(_) => true,
            // Log probabilities describe the text that follows them, which is the output.
            StreamEvent::Started { .. }
            | StreamEvent::Logprobs(_)
            | StreamEvent::Usage(_)
            | StreamEvent::Done { .. } => false,
        }
    }
}

//! Chat Shell's `POST /v1/response` stream: each [`AgentEvent`] as an `event: <name>` line and
//! a typed JSON payload. The payload types derive the OpenAPI schemas that
//! `GET /openapi.json` publishes, so the document and the stream cannot drift apart.
//!
//! ```
//! use agent_loop::AgentEvent;
//! use server::encode::chat_shell::ChatShellEvent;
//!
//! let event = AgentEvent::ContentDelta { text: "Hel".into(), block_id: "text-1".into(), block_offset: 0 };
//! let frame = ChatShellEvent::new(&event);
//! assert_eq!(frame.name(), "content.delta");
//! assert_eq!(
//!     serde_json::to_value(&frame)?,
//!     serde_json::json!({"type": "text", "text": "Hel", "block_id": "text-1", "block_offset": 0})
//! );
//! # Ok::<(), serde_json::Error>(())
//! ```

use agent_loop::{AgentError, AgentEvent, AgentOutcome, CompressionNotice, StopReason};
use providers::{ProviderError, Usage};
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::api::failure::{FailureKind, provider_error};
use crate::api::sse::Frames;

mod approval;
mod blocks;

pub use approval::{PendingCallPayload, ToolApprovalEvent};
pub use blocks::{Block, TextBlock, TextStatus, ToolBlock, ToolStatus};

/// One event of the stream; serialising it gives the JSON of its `data:` line.
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
pub enum ChatShellEvent {
    /// `response.start`.
    Start(ResponseStartEvent),
    /// `content.delta`.
    Content(ContentDeltaEvent),
    /// `reasoning.delta`.
    Reasoning(ReasoningDeltaEvent),
    /// `tool.start`.
    ToolStart(ToolStartEvent),
    /// `tool.done`.
    ToolDone(ToolDoneEvent),
    /// `tool.approval`: calls wait for a person's decision (then `response.done` with
    /// `stop_reason: "approval_required"`).
    Approval(ToolApprovalEvent),
    /// `response.done`.
    Done(ResponseDoneEvent),
    /// `response.cancelled`.
    Cancelled(ResponseCancelledEvent),
    /// `response.error`.
    Error(ResponseErrorEvent),
}

/// Encodes the events of one run: each as [`ChatShellEvent::new`] does, with what only the
/// run's earlier events tell: the sources its search tools found (on their `tool.done` and,
/// each once, on `response.done`) and the answer's [`blocks`](Block) so far (on `tool.start`,
/// `tool.done` and `response.done`).
#[derive(Debug, Default)]
pub struct ChatShellEncoder {
    sources: knowledge_base::SourceSet,
    blocks: blocks::Blocks,
}

impl ChatShellEncoder {
    /// The event of `event`, sources and blocks included.
    pub fn encode(&mut self, event: &AgentEvent) -> ChatShellEvent {
        self.blocks.apply(event);
        let mut frame = ChatShellEvent::new(event);
        match &mut frame {
            ChatShellEvent::ToolStart(ToolStartEvent { blocks, .. }) => {
                *blocks = self.blocks.snapshot();
            }
            ChatShellEvent::ToolDone(ToolDoneEvent {
                sources, blocks, ..
            })
            | ChatShellEvent::Done(ResponseDoneEvent {
                sources, blocks, ..
            }) => {
                *sources = self.sources(event);
                *blocks = self.blocks.snapshot();
            }
            _ => {}
        }
        frame
    }

    /// Writes `event`'s frame, numbered `seq`, when it is a piece of answer text (nearly every
    /// event of a stream): straight from the agent's event, byte for byte what
    /// [`encode`](Self::encode) and serialising its [`ContentDeltaEvent`] give, without building
    /// that event. `false`, writing nothing, for any other event.
    pub(crate) fn write_text_delta(
        &mut self,
        seq: u64,
        event: &AgentEvent,
        frames: &mut Frames,
    ) -> bool {
        let AgentEvent::ContentDelta {
            text,
            block_id,
            block_offset,
        } = event
        else {
            return false;
        };
        self.blocks.apply(event);
        frames.id(seq);
        frames.raw(b"event: content.delta\ndata: {\"type\":\"text\",\"text\":");
        frames.json_string(text);
        frames.raw(b",\"block_id\":");
        frames.json_string(block_id);
        frames.raw(b",\"block_offset\":");
        frames.number(*block_offset);
        frames.raw(b"}\n\n");
        true
    }

    /// Every frame of `event`, in order: one, but two for a run that paused for approval
    /// (`tool.approval`, then the `response.done` that ends its stream with
    /// `stop_reason: "approval_required"`).
    pub fn encode_all(&mut self, event: &AgentEvent) -> Vec<ChatShellEvent> {
        let first = self.encode(event);
        let AgentEvent::ApprovalRequired {
            id, usage, outcome, ..
        } = event
        else {
            return vec![first];
        };
        let done = ResponseDoneEvent {
            id: id.clone(),
            usage: UsagePayload::from(usage),
            stop_reason: StopReasonName::ApprovalRequired,
            sources: Some(
                std::mem::take(&mut self.sources)
                    .into_vec()
                    .into_iter()
                    .map(SourcePayload::from)
                    .collect(),
            ),
            blocks: self.blocks.snapshot(),
            ttft_ms: outcome.ttft().map(millis),
            model_calls: ModelCallPayload::of(outcome),
            silent_exit: false,
            silent_exit_reason: None,
            rounds: outcome.rounds,
            conversation_id: approval::conversation_id(outcome),
            node_ids: approval::node_ids(outcome),
            compression: outcome.compression_notice().map(CompressionPayload::from),
        };
        vec![first, ChatShellEvent::Done(done)]
    }

    /// The sources of `event`, as its frame carries them: what a search tool's `tool.done`
    /// found (kept for the end), and on `response.done` everything the run's tools found, each
    /// once. `None` for other events and for a tool that found nothing.
    ///
    /// For a caller that needs the sources without the frames (a whole answer).
    pub fn sources(&mut self, event: &AgentEvent) -> Option<Vec<SourcePayload>> {
        match event {
            AgentEvent::ToolDone { sources, .. } => {
                if sources.is_empty() {
                    return None;
                }
                for source in sources {
                    self.sources.add(source.clone());
                }
                Some(sources.iter().cloned().map(SourcePayload::from).collect())
            }
            AgentEvent::ResponseDone { .. } => Some(
                std::mem::take(&mut self.sources)
                    .into_vec()
                    .into_iter()
                    .map(SourcePayload::from)
                    .collect(),
            ),
            _ => None,
        }
    }
}

/// A source an answer drew on: a knowledge-base passage or a web page.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct SourcePayload {
    /// The document's or page's title.
    pub title: String,
    /// Where it is: `path:12-40`, `file.pdf:p3`, or a URL.
    pub location: String,
    /// The passage or snippet.
    pub passage: String,
}

impl From<knowledge_base::Source> for SourcePayload {
    fn from(source: knowledge_base::Source) -> Self {
        SourcePayload {
            title: source.title,
            location: source.location,
            passage: source.passage,
        }
    }
}

impl ChatShellEvent {
    /// The event of `event`, alone: without the sources and `blocks` only the run's earlier
    /// events tell (empty here; [`ChatShellEncoder`] fills them).
    pub fn new(event: &AgentEvent) -> Self {
        match event {
            AgentEvent::ResponseStart { id, model, created } => {
                ChatShellEvent::Start(ResponseStartEvent {
                    id: id.clone(),
                    model: model.clone(),
                    created: *created,
                })
            }
            AgentEvent::ContentDelta {
                text,
                block_id,
                block_offset,
            } => ChatShellEvent::Content(ContentDeltaEvent {
                kind: TextKind::Text,
                text: text.clone(),
                block_id: block_id.clone(),
                block_offset: *block_offset,
            }),
            AgentEvent::ReasoningDelta { text } => {
                ChatShellEvent::Reasoning(ReasoningDeltaEvent { text: text.clone() })
            }
            AgentEvent::ToolStart {
                id,
                name,
                display_name,
                input,
            } => ChatShellEvent::ToolStart(ToolStartEvent {
                id: id.clone(),
                name: name.clone(),
                input: input.clone(),
                display_name: display_name.clone(),
                blocks: Vec::new(),
            }),
            AgentEvent::ToolDone {
                id,
                name,
                display_name,
                output,
                duration_ms,
                error,
                ..
            } => ChatShellEvent::ToolDone(ToolDoneEvent {
                id: id.clone(),
                name: name.clone(),
                output: output.clone(),
                duration_ms: *duration_ms,
                error: error.clone(),
                sources: None,
                display_name: display_name.clone(),
                blocks: Vec::new(),
            }),
            AgentEvent::ResponseDone {
                id,
                usage,
                stop_reason,
                silent_exit,
                silent_exit_reason,
                rounds,
                conversation_id,
                node_ids,
                outcome,
            } => ChatShellEvent::Done(ResponseDoneEvent {
                id: id.clone(),
                usage: UsagePayload::from(usage),
                stop_reason: (*stop_reason).into(),
                sources: None,
                blocks: Vec::new(),
                ttft_ms: outcome.ttft().map(millis),
                model_calls: ModelCallPayload::of(outcome),
                silent_exit: *silent_exit,
                silent_exit_reason: silent_exit_reason.clone(),
                rounds: *rounds,
                conversation_id: conversation_id.clone(),
                node_ids: node_ids.clone(),
                compression: outcome.compression_notice().map(CompressionPayload::from),
            }),
            AgentEvent::ResponseCancelled {
                id,
                partial_content,
                ..
            } => ChatShellEvent::Cancelled(ResponseCancelledEvent {
                id: id.clone(),
                partial_content: partial_content.clone(),
            }),
            AgentEvent::ResponseError { id, error } => {
                ChatShellEvent::Error(ResponseErrorEvent::new(id.clone(), error))
            }
            AgentEvent::ApprovalRequired {
                id, calls, outcome, ..
            } => ChatShellEvent::Approval(ToolApprovalEvent::new(id, calls, outcome)),
            // `AgentEvent` may grow; a new event is a server change, never a malformed frame.
            other => ChatShellEvent::Error(ResponseErrorEvent {
                id: String::new(),
                code: ErrorCode::InternalError,
                message: format!("the server cannot encode the event {other:?}"),
                details: ErrorDetails::default(),
            }),
        }
    }

    /// The SSE event name.
    pub fn name(&self) -> &'static str {
        match self {
            ChatShellEvent::Start(_) => "response.start",
            ChatShellEvent::Content(_) => "content.delta",
            ChatShellEvent::Reasoning(_) => "reasoning.delta",
            ChatShellEvent::ToolStart(_) => "tool.start",
            ChatShellEvent::ToolDone(_) => "tool.done",
            ChatShellEvent::Approval(_) => "tool.approval",
            ChatShellEvent::Done(_) => "response.done",
            ChatShellEvent::Cancelled(_) => "response.cancelled",
            ChatShellEvent::Error(_) => "response.error",
        }
    }

    /// Replaces the conversation id of `response.done` (a client sees its own id, never the
    /// stored, namespaced one).
    pub fn set_conversation_id(&mut self, client_id: &str) {
        let conversation = match self {
            ChatShellEvent::Done(done) => &mut done.conversation_id,
            ChatShellEvent::Approval(approval) => &mut approval.conversation_id,
            _ => return,
        };
        if conversation.is_some() {
            *conversation = Some(client_id.to_owned());
        }
    }

    /// The `(SSE event name, schema component name)` of every event, in stream order.
    pub(crate) fn names() -> [(&'static str, &'static str); 9] {
        [
            ("response.start", "ResponseStartEvent"),
            ("content.delta", "ContentDeltaEvent"),
            ("reasoning.delta", "ReasoningDeltaEvent"),
            ("tool.start", "ToolStartEvent"),
            ("tool.done", "ToolDoneEvent"),
            ("tool.approval", "ToolApprovalEvent"),
            ("response.done", "ResponseDoneEvent"),
            ("response.cancelled", "ResponseCancelledEvent"),
            ("response.error", "ResponseErrorEvent"),
        ]
    }
}

/// `response.start`: the run began (first event).
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct ResponseStartEvent {
    /// The response id (`resp-…`).
    pub id: String,
    /// The model id.
    pub model: String,
    /// When the run started, in Unix seconds.
    pub created: u64,
}

/// The `type` of a content delta: always `text`.
#[derive(Clone, Copy, Debug, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TextKind {
    /// Answer text.
    Text,
}

/// `content.delta`: a piece of answer text.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct ContentDeltaEvent {
    /// Always `text`.
    #[serde(rename = "type")]
    pub kind: TextKind,
    /// The text.
    pub text: String,
    /// The text block: `text-1`, `text-2`, … (one per model answer with text).
    pub block_id: String,
    /// Characters of this block streamed before this delta.
    pub block_offset: usize,
}

/// `reasoning.delta`: a piece of the model's reasoning text.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct ReasoningDeltaEvent {
    /// The text.
    pub text: String,
}

/// `tool.start`: a tool call starts.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct ToolStartEvent {
    /// The tool-call id.
    pub id: String,
    /// The tool.
    pub name: String,
    /// The arguments as JSON (the raw text as a JSON string when it is not JSON).
    #[schema(value_type = Value)]
    pub input: Value,
    /// The tool's name for people (`Web search`): its own, or one made from `name`.
    pub display_name: String,
    /// The answer so far, in order: its text and tool calls, this one last (pending).
    pub blocks: Vec<Block>,
}

/// `tool.done`: a tool call finished.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct ToolDoneEvent {
    /// The tool-call id, as in `tool.start`.
    pub id: String,
    /// The tool.
    pub name: String,
    /// What the model reads: the output, or the error text.
    pub output: String,
    /// How long the call took, in milliseconds.
    pub duration_ms: u64,
    /// The error, when the call failed.
    pub error: Option<String>,
    /// What a search tool (`knowledge_base_search`, `web_search`) found; null for other tools.
    pub sources: Option<Vec<SourcePayload>>,
    /// The tool's name for people, as in `tool.start`.
    pub display_name: String,
    /// The answer so far, in order, with this call finished.
    pub blocks: Vec<Block>,
}

/// Token counts of every model call of the run, summed, with Chat Shell's names.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, ToSchema)]
pub struct UsagePayload {
    /// All prompt tokens.
    pub input_tokens: u64,
    /// All generated tokens, reasoning included.
    pub output_tokens: u64,
    /// Input and output.
    pub total_tokens: u64,
    /// Prompt tokens read from the provider's cache.
    pub cache_read_input_tokens: u64,
    /// Prompt tokens written to the provider's cache.
    pub cache_creation_input_tokens: u64,
    /// Generated tokens spent on reasoning.
    pub reasoning_tokens: u64,
}

impl From<&Usage> for UsagePayload {
    fn from(usage: &Usage) -> Self {
        UsagePayload {
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
            total_tokens: usage.total_tokens(),
            cache_read_input_tokens: usage.cached_input_tokens,
            cache_creation_input_tokens: usage.cache_creation_tokens,
            reasoning_tokens: usage.reasoning_tokens,
        }
    }
}

/// One model call of a run: how long it took to start answering and to finish.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, ToSchema)]
pub struct ModelCallPayload {
    /// 1-based number of the call in the run.
    pub round: usize,
    /// Time to first token: from sending the request to the first output (text, reasoning or
    /// a tool call), in milliseconds; null when none arrived or the answer came from the store.
    pub ttft_ms: Option<u64>,
    /// From sending the request to the end of the answer, in milliseconds (0 when stored).
    pub duration_ms: u64,
    /// Whether the answer came from the conversation store instead of the model.
    pub cached: bool,
}

impl ModelCallPayload {
    /// The model calls of `outcome`, in order.
    pub fn of(outcome: &AgentOutcome) -> Vec<ModelCallPayload> {
        outcome
            .records
            .iter()
            .map(|record| ModelCallPayload {
                round: record.round,
                ttft_ms: record.timing.ttft.map(millis),
                duration_ms: millis(record.timing.duration),
                cached: record.cached,
            })
            .collect()
    }
}

fn millis(duration: std::time::Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// Why the run ended, as `response.done` says it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum StopReasonName {
    /// The model answered without calling tools.
    #[default]
    EndTurn,
    /// The tool rounds were spent; the answer was asked for without tools.
    ToolLimit,
    /// The answer was cut off at the output token limit.
    MaxTokens,
    /// A tool ended the run without a reply: a normal end.
    SilentExit,
    /// Tool calls wait for a person's decision (`tool.approval` listed them): the run is
    /// paused until `POST /v1/response/{id}/approval` decides them.
    ApprovalRequired,
}

impl From<StopReason> for StopReasonName {
    fn from(reason: StopReason) -> Self {
        match reason {
            StopReason::EndTurn => StopReasonName::EndTurn,
            StopReason::ToolLimit => StopReasonName::ToolLimit,
            StopReason::MaxTokens => StopReasonName::MaxTokens,
            StopReason::SilentExit => StopReasonName::SilentExit,
        }
    }
}

impl StopReasonName {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            StopReasonName::EndTurn => "end_turn",
            StopReasonName::ToolLimit => "tool_limit",
            StopReasonName::MaxTokens => "max_tokens",
            StopReasonName::SilentExit => "silent_exit",
            StopReasonName::ApprovalRequired => "approval_required",
        }
    }
}

/// What context compression did, present only when it acted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, ToSchema)]
pub struct CompressionPayload {
    /// Whether the prompt being answered was cut: the model did not read all of it.
    pub prompt_truncated: bool,
    /// Texts of human and tool messages cut to the attachment limit.
    pub texts_truncated: usize,
    /// Body pairs folded into a model-written summary.
    pub pairs_summarized: usize,
    /// Body pairs pruned.
    pub pairs_pruned: usize,
    /// Whole earlier turns pruned.
    pub sections_pruned: usize,
}

impl From<CompressionNotice> for CompressionPayload {
    fn from(notice: CompressionNotice) -> Self {
        CompressionPayload {
            prompt_truncated: notice.prompt_truncated,
            texts_truncated: notice.texts_truncated,
            pairs_summarized: notice.pairs_summarized,
            pairs_pruned: notice.pairs_pruned,
            sections_pruned: notice.sections_pruned,
        }
    }
}

/// `response.done`: the run ended with an answer (or a silent exit, a normal end too).
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct ResponseDoneEvent {
    /// The response id.
    pub id: String,
    /// Tokens of every model call of the run, summed.
    pub usage: UsagePayload,
    /// Why the run ended.
    pub stop_reason: StopReasonName,
    /// What the run's search tools found, each source once (empty when none ran).
    pub sources: Option<Vec<SourcePayload>>,
    /// The whole answer, in order: the text of each model answer and each tool call, all
    /// complete.
    pub blocks: Vec<Block>,
    /// Time to first token, in milliseconds: from sending the run's first model request to
    /// its first output (text, reasoning or a tool call), what a user waits before anything
    /// appears. Null when that call sent none, or its answer came from the store.
    pub ttft_ms: Option<u64>,
    /// Each model call of the run, in order, with its own time to first token.
    pub model_calls: Vec<ModelCallPayload>,
    /// Whether a tool ended the run without a reply.
    pub silent_exit: bool,
    /// The reason the tool gave.
    pub silent_exit_reason: Option<String>,
    /// Model calls made.
    pub rounds: usize,
    /// The conversation the answer was logged under.
    pub conversation_id: Option<String>,
    /// The stored nodes of this run's responses.
    pub node_ids: Vec<i64>,
    /// Present when context compression acted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compression: Option<CompressionPayload>,
}

/// `response.cancelled`: the run was cancelled.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct ResponseCancelledEvent {
    /// The response id.
    pub id: String,
    /// The answer text streamed before the cancellation.
    pub partial_content: String,
}

/// The `code` of `response.error`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// The input cannot be answered as sent.
    InvalidRequest,
    /// The model call failed at the provider.
    ProviderError,
    /// The model's tool calls were cut off at the output limit again and again.
    OutputTruncated,
    /// The conversation store failed.
    StoreError,
    /// The run was cancelled.
    Cancelled,
    /// A server fault.
    InternalError,
}

impl From<FailureKind> for ErrorCode {
    fn from(kind: FailureKind) -> Self {
        match kind {
            FailureKind::InvalidRequest => ErrorCode::InvalidRequest,
            FailureKind::Provider => ErrorCode::ProviderError,
            FailureKind::OutputTruncated => ErrorCode::OutputTruncated,
            FailureKind::Store => ErrorCode::StoreError,
            FailureKind::Cancelled => ErrorCode::Cancelled,
            FailureKind::Internal => ErrorCode::InternalError,
        }
    }
}

impl ErrorCode {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidRequest => "invalid_request",
            ErrorCode::ProviderError => "provider_error",
            ErrorCode::OutputTruncated => "output_truncated",
            ErrorCode::StoreError => "store_error",
            ErrorCode::Cancelled => "cancelled",
            ErrorCode::InternalError => "internal_error",
        }
    }
}

/// `details` of `response.error`: what failed, whether a retry may help, and the provider's
/// HTTP status when there was one.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, ToSchema)]
pub struct ErrorDetails {
    /// `provider.http`, `provider.stream`, `provider.timeout`, …, `invalid_history`,
    /// `nothing_to_answer`, `output_truncated`, `store` or `agent`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Whether sending the same input again later may succeed.
    pub retryable: bool,
    /// The provider's HTTP status.
    pub status: Option<u16>,
}

/// `response.error`: the run failed.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct ResponseErrorEvent {
    /// The response id.
    pub id: String,
    /// A machine-readable code.
    pub code: ErrorCode,
    /// What went wrong, for people.
    pub message: String,
    /// The kind of failure in more detail.
    pub details: ErrorDetails,
}

impl ResponseErrorEvent {
    fn new(id: String, error: &AgentError) -> Self {
        let provider = provider_error(error);
        let kind = match (error, provider) {
            (_, Some(provider)) => match provider {
                ProviderError::Http { .. } => "provider.http",
                ProviderError::Stream { .. } => "provider.stream",
                ProviderError::Transport { .. } => "provider.transport",
                ProviderError::Redirected { .. } => "provider.redirect",
                ProviderError::Timeout { .. } => "provider.timeout",
                ProviderError::Decode { .. } => "provider.decode",
                ProviderError::StreamTruncated { .. } => "provider.stream_truncated",
                ProviderError::Config { .. } => "provider.config",
                ProviderError::Cancelled => "provider.cancelled",
                _ => "provider.other",
            },
            (AgentError::InvalidHistory(_), _) => "invalid_history",
            (AgentError::NothingToAnswer, _) => "nothing_to_answer",
            (AgentError::OutputTruncated { .. }, _) => "output_truncated",
            (AgentError::Store(_) | AgentError::NoStore { .. }, _) => "store",
            _ => "agent",
        };
        ResponseErrorEvent {
            id,
            code: FailureKind::of(error).into(),
            message: error.to_string(),
            details: ErrorDetails {
                kind: kind.to_owned(),
                retryable: error.is_retryable(),
                status: provider.and_then(ProviderError::status),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// A text delta written straight is the very frame its event serialises to, whatever
        /// its text (quotes, line breaks, control characters, any Unicode), block and numbers.
        #[test]
        fn a_text_delta_written_straight_is_its_serialised_frame(
            text in any::<String>(),
            block_id in any::<String>(),
            block_offset in any::<usize>(),
            seq in any::<u64>(),
        ) {
            let event = AgentEvent::ContentDelta { text, block_id, block_offset };
            let mut served = ChatShellEncoder::default();
            let mut straight = Frames::default();
            prop_assert!(served.write_text_delta(seq, &event, &mut straight));
            let mut serialised = Frames::default();
            let frame = ChatShellEncoder::default().encode(&event);
            serialised.numbered_event(seq, frame.name(), &frame);
            prop_assert_eq!(straight.take(), serialised.take());
            prop_assert_eq!(
                served.blocks.snapshot().len(),
                1,
                "the delta is in the answer's blocks"
            );
        }
    }

    #[test]
    fn only_text_deltas_are_written_straight() {
        let mut frames = Frames::default();
        let reasoning = AgentEvent::ReasoningDelta { text: "hm".into() };
        assert!(!ChatShellEncoder::default().write_text_delta(0, &reasoning, &mut frames));
        assert_eq!(frames.len(), 0, "nothing written");
    }
}

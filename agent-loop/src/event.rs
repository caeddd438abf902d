//! [`AgentEvent`]: what [`Agent::stream`](crate::Agent::stream) yields.
//!
//! These are domain events: they name what happened, not how a protocol spells it. Each server
//! protocol (Chat Shell's `/v1/response`, OpenAI Chat Completions, Responses) has its own
//! encoder of them.

use std::sync::Arc;

use providers::Usage;
use serde_json::Value;

use crate::{AgentError, AgentOutcome};

/// Why a run ended with an answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StopReason {
    /// The model answered without calling tools.
    EndTurn,
    /// The tool rounds were spent; the model gave its final answer without tools.
    ToolLimit,
    /// The answer was cut off at the output token limit.
    MaxTokens,
    /// A tool asked for the run to end without a reply: a normal end, not a failure.
    SilentExit,
}

/// One event of a streamed run: [`ResponseStart`](AgentEvent::ResponseStart) first, then
/// deltas and tool events, then exactly one of [`ResponseDone`](AgentEvent::ResponseDone),
/// [`ApprovalRequired`](AgentEvent::ApprovalRequired),
/// [`ResponseCancelled`](AgentEvent::ResponseCancelled) and
/// [`ResponseError`](AgentEvent::ResponseError).
///
/// ```
/// use agent_loop::AgentEvent;
///
/// let event = AgentEvent::ContentDelta { text: "Hel".into(), block_id: "text-1".into(), block_offset: 0 };
/// assert!(!event.is_terminal());
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum AgentEvent {
    /// The run began (before any model call).
    ResponseStart {
        /// The response id (`resp-…` unless the input named one).
        id: String,
        /// The model id.
        model: String,
        /// When the run started, in Unix seconds.
        created: u64,
    },
    /// A piece of answer text.
    ContentDelta {
        /// The text.
        text: String,
        /// The text block it belongs to: `text-1`, `text-2`, … (one per model answer that has
        /// text, so a client can place tool blocks between them).
        block_id: String,
        /// Characters of this block streamed before this delta.
        block_offset: usize,
    },
    /// A piece of the model's reasoning ("thinking") text.
    ReasoningDelta {
        /// The text.
        text: String,
    },
    /// A tool call starts.
    ToolStart {
        /// The provider's tool-call id (text protocols: `r<round>.call_<n>`).
        id: String,
        /// The tool's name.
        name: String,
        /// The tool's name for people ([`toolchain::DynTool::display_name`]).
        display_name: String,
        /// The arguments as JSON (the raw text as a JSON string when it is not JSON).
        input: Value,
    },
    /// A tool call finished.
    ToolDone {
        /// The provider's tool-call id, as in `tool.start`.
        id: String,
        /// The tool's name.
        name: String,
        /// The tool's name for people, as in `tool.start`.
        display_name: String,
        /// What the model reads: the output, or the error text.
        output: String,
        /// How long the call took, in milliseconds.
        duration_ms: u64,
        /// The error, when the call failed.
        error: Option<String>,
        /// The output as the tool returned it, before it was written for the model (absent
        /// when the call failed): what a front end reads structured results from.
        value: Option<serde_json::Value>,
        /// What the call found for the answer's sources (a search's passages or pages); empty
        /// for other tools and failed calls.
        sources: Vec<toolchain::Source>,
    },
    /// The run ended with an answer, or with a silent exit (a normal end too).
    /// [`AgentOutcome::compression_notice`] tells whether context compression acted.
    ResponseDone {
        /// The response id.
        id: String,
        /// Tokens used by every model call of the run, summed (summaries included).
        usage: Usage,
        /// Why the run ended.
        stop_reason: StopReason,
        /// Whether a tool asked for the run to end without a reply.
        silent_exit: bool,
        /// The reason it gave.
        silent_exit_reason: Option<String>,
        /// Model calls made.
        rounds: usize,
        /// The conversation the responses were logged under, when the agent has a store.
        conversation_id: Option<String>,
        /// The stored nodes of this run's responses, in order.
        node_ids: Vec<i64>,
        /// The whole outcome.
        outcome: Arc<AgentOutcome>,
    },
    /// The run paused before running a round's tools, because some of its calls need a
    /// person's approval: it ends the stream (instead of `ResponseDone`). Resume with
    /// [`Agent::resume_stream`](crate::Agent::resume_stream) and the decisions.
    ApprovalRequired {
        /// The response id.
        id: String,
        /// The calls waiting for a decision, in the answer's order.
        calls: Vec<crate::approval::PendingCall>,
        /// Tokens used by the run's model calls so far.
        usage: Usage,
        /// The whole outcome; its `approval` holds the paused run to keep.
        outcome: Arc<AgentOutcome>,
    },
    /// The run was cancelled.
    ResponseCancelled {
        /// The response id.
        id: String,
        /// The answer text streamed before the cancellation.
        partial_content: String,
        /// The conversation up to the cancellation, a valid chain.
        outcome: Arc<AgentOutcome>,
    },
    /// The run failed.
    ResponseError {
        /// The response id.
        id: String,
        /// What went wrong: match on it for the kind of failure.
        error: Arc<AgentError>,
    },
}

impl AgentEvent {
    /// Whether this is one of the four events that end a stream.
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            AgentEvent::ResponseDone { .. }
                | AgentEvent::ApprovalRequired { .. }
                | AgentEvent::ResponseCancelled { .. }
                | AgentEvent::ResponseError { .. }
        )
    }
}

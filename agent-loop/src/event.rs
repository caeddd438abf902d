//! [`AgentEvent`]: what [`Agent::stream`](crate::Agent::stream) yields, and its SSE form.

use std::sync::Arc;

use providers::Usage;
use serde::{Serialize, Serializer};
use serde_json::{Value, json};

use crate::{AgentError, AgentOutcome};

/// Why a run ended with an answer: the `stop_reason` of `response.done`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model answered without calling tools.
    EndTurn,
    /// The tool rounds were spent; the model gave its final answer without tools.
    ToolLimit,
    /// The answer was cut off at the output token limit.
    MaxTokens,
    /// A tool asked for the run to end without a reply.
    SilentExit,
}

impl StopReason {
    /// The wire name: `end_turn`, `tool_limit`, `max_tokens` or `silent_exit`.
    pub const fn as_str(self) -> &'static str {
        match self {
            StopReason::EndTurn => "end_turn",
            StopReason::ToolLimit => "tool_limit",
            StopReason::MaxTokens => "max_tokens",
            StopReason::SilentExit => "silent_exit",
        }
    }
}

/// One event of a streamed run, in the order of the `/v1/response` SSE stream: `response.start`
/// first, then deltas and tool events, then exactly one of `response.done`, `response.cancelled`
/// and `response.error`.
///
/// Serialising an event (serde) gives the JSON payload of its SSE `data:` line, with the field
/// names of Chat Shell's `/v1/response` stream; [`sse_name`](AgentEvent::sse_name) gives the
/// `event:` line and [`to_sse`](AgentEvent::to_sse) the whole frame, so a server writes events
/// as they come:
///
/// ```
/// use agent_loop::AgentEvent;
///
/// let event = AgentEvent::ContentDelta { text: "Hel".into(), block_id: "text-1".into(), block_offset: 0 };
/// assert_eq!(event.sse_name(), "content.delta");
/// let frame = event.to_sse();
/// assert!(frame.starts_with("event: content.delta\ndata: {"));
/// let data: serde_json::Value = serde_json::from_str(&frame["event: content.delta\ndata: ".len()..])?;
/// assert_eq!(
///     data,
///     serde_json::json!({"type": "text", "text": "Hel", "block_id": "text-1", "block_offset": 0})
/// );
/// # Ok::<(), serde_json::Error>(())
/// ```
///
/// Fields marked "not serialised" are for Rust callers only. Payload keys Chat Shell always
/// sends as `null` here too (`display_name`, `blocks`, `sources`) are written as `null`.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum AgentEvent {
    /// `response.start`: the run began (before any model call).
    ResponseStart {
        /// The response id (`resp-…` unless the input named one).
        id: String,
        /// The model id.
        model: String,
        /// When the run started, in Unix seconds.
        created: u64,
    },
    /// `content.delta`: a piece of answer text.
    ContentDelta {
        /// The text.
        text: String,
        /// The text block it belongs to: `text-1`, `text-2`, … (one per model answer that has
        /// text, so a client can place tool blocks between them).
        block_id: String,
        /// Characters of this block streamed before this delta.
        block_offset: usize,
    },
    /// `reasoning.delta`: a piece of the model's reasoning ("thinking") text.
    ReasoningDelta {
        /// The text.
        text: String,
    },
    /// `tool.start`: a tool call starts.
    ToolStart {
        /// The provider's tool-call id (text protocols: `r<round>.call_<n>`).
        id: String,
        /// The tool's name.
        name: String,
        /// The arguments as JSON (the raw text as a JSON string when it is not JSON).
        input: Value,
    },
    /// `tool.done`: a tool call finished.
    ToolDone {
        /// The provider's tool-call id, as in `tool.start`.
        id: String,
        /// The tool's name.
        name: String,
        /// What the model reads: the output, or the error text.
        output: String,
        /// How long the call took, in milliseconds.
        duration_ms: u64,
        /// The error, when the call failed.
        error: Option<String>,
    },
    /// `response.done`: the run ended with an answer (or a silent exit). When context
    /// compression acted, the payload also has `compression`
    /// ([`AgentOutcome::compression_notice`]: whether the prompt was cut, what was summarised or
    /// pruned); without it the key is left out.
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
        /// The whole outcome (not serialised).
        outcome: Arc<AgentOutcome>,
    },
    /// `response.cancelled`: the run was cancelled.
    ResponseCancelled {
        /// The response id.
        id: String,
        /// The answer text streamed before the cancellation.
        partial_content: String,
        /// The conversation up to the cancellation, a valid chain (not serialised).
        outcome: Arc<AgentOutcome>,
    },
    /// `response.error`: the run failed.
    ResponseError {
        /// The response id.
        id: String,
        /// A machine-readable code ([`AgentError::code`]).
        code: &'static str,
        /// What went wrong, for people.
        message: String,
        /// `{"type": …, "retryable": …}` and, for HTTP errors, `"status"`.
        details: Value,
        /// The error (not serialised).
        error: Arc<AgentError>,
    },
}

impl AgentEvent {
    /// The SSE event name: `response.start`, `content.delta`, `reasoning.delta`, `tool.start`,
    /// `tool.done`, `response.done`, `response.cancelled` or `response.error`.
    pub fn sse_name(&self) -> &'static str {
        match self {
            AgentEvent::ResponseStart { .. } => "response.start",
            AgentEvent::ContentDelta { .. } => "content.delta",
            AgentEvent::ReasoningDelta { .. } => "reasoning.delta",
            AgentEvent::ToolStart { .. } => "tool.start",
            AgentEvent::ToolDone { .. } => "tool.done",
            AgentEvent::ResponseDone { .. } => "response.done",
            AgentEvent::ResponseCancelled { .. } => "response.cancelled",
            AgentEvent::ResponseError { .. } => "response.error",
        }
    }

    /// Whether this is one of the three events that end a stream.
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            AgentEvent::ResponseDone { .. }
                | AgentEvent::ResponseCancelled { .. }
                | AgentEvent::ResponseError { .. }
        )
    }

    /// The SSE `data:` payload: a JSON object with Chat Shell's field names.
    pub fn payload(&self) -> Value {
        match self {
            AgentEvent::ResponseStart { id, model, created } => {
                json!({"id": id, "model": model, "created": created})
            }
            AgentEvent::ContentDelta {
                text,
                block_id,
                block_offset,
            } => json!({
                "type": "text",
                "text": text,
                "block_id": block_id,
                "block_offset": block_offset,
            }),
            AgentEvent::ReasoningDelta { text } => json!({"text": text}),
            AgentEvent::ToolStart { id, name, input } => json!({
                "id": id,
                "name": name,
                "input": input,
                "display_name": null,
                "blocks": null,
            }),
            AgentEvent::ToolDone {
                id,
                name,
                output,
                duration_ms,
                error,
            } => json!({
                "id": id,
                "name": name,
                "output": output,
                "duration_ms": duration_ms,
                "error": error,
                "sources": null,
                "display_name": null,
                "blocks": null,
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
            } => {
                let mut payload = json!({
                    "id": id,
                    "usage": usage_payload(usage),
                    "stop_reason": stop_reason.as_str(),
                    "sources": null,
                    "blocks": null,
                    "silent_exit": silent_exit,
                    "silent_exit_reason": silent_exit_reason,
                    "rounds": rounds,
                    "conversation_id": conversation_id,
                    "node_ids": node_ids,
                });
                if let Some(notice) = outcome.compression_notice() {
                    payload["compression"] = json!(notice);
                }
                payload
            }
            AgentEvent::ResponseCancelled {
                id,
                partial_content,
                ..
            } => json!({"id": id, "partial_content": partial_content}),
            AgentEvent::ResponseError {
                id,
                code,
                message,
                details,
                ..
            } => json!({"id": id, "code": code, "message": message, "details": details}),
        }
    }

    /// The whole SSE frame, as Chat Shell writes it: `event: <name>\ndata: <json>\n\n`
    /// (non-ASCII characters unescaped).
    pub fn to_sse(&self) -> String {
        format!("event: {}\ndata: {}\n\n", self.sse_name(), self.payload())
    }
}

/// Serialises the [`payload`](AgentEvent::payload).
impl Serialize for AgentEvent {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.payload().serialize(serializer)
    }
}

/// The usage object of `response.done`, with Chat Shell's names (Anthropic's cache fields) plus
/// the reasoning tokens.
fn usage_payload(usage: &Usage) -> Value {
    json!({
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "total_tokens": usage.total_tokens(),
        "cache_read_input_tokens": usage.cached_input_tokens,
        "cache_creation_input_tokens": usage.cache_creation_tokens,
        "reasoning_tokens": usage.reasoning_tokens,
    })
}

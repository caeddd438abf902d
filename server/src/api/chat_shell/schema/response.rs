//! Answers that are not event streams: the non-streaming response body and the cancel's.

use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::api::chat_shell::encode::{
    Block, CompressionPayload, ModelCallPayload, PendingCallPayload, StopReasonName, UsagePayload,
};

/// The answer of `POST /v1/response` when `features.streaming` is false: what the events of a
/// stream would have said, in one object.
#[derive(Clone, Debug, Default, PartialEq, Serialize, ToSchema)]
pub struct ResponseBody {
    /// The response id (`resp-…`), as in `response.start`.
    pub id: String,
    /// The model id.
    pub model: String,
    /// When the run started, in Unix seconds.
    pub created: u64,
    /// The final answer's text.
    pub content: String,
    /// The reasoning text the model streamed, if any.
    pub reasoning: Option<String>,
    /// Every tool call of the run, in order.
    pub tool_calls: Vec<ToolActivity>,
    /// Token counts, summed over the run.
    pub usage: UsagePayload,
    /// Why the run ended.
    pub stop_reason: StopReasonName,
    /// Whether a tool ended the run without a reply.
    pub silent_exit: bool,
    /// The reason the tool gave.
    pub silent_exit_reason: Option<String>,
    /// Model calls made.
    pub rounds: usize,
    /// The conversation the answer was logged under: send it back as
    /// `metadata.conversation_id` to continue.
    pub conversation_id: Option<String>,
    /// The stored nodes of this run's responses.
    pub node_ids: Vec<i64>,
    /// What the run's search tools found, each source once.
    pub sources: Vec<crate::api::chat_shell::encode::SourcePayload>,
    /// Present when context compression acted (as on `response.done`): the model did not read
    /// everything that was sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compression: Option<CompressionPayload>,
    /// The whole answer in order, as `response.done` gives it: the text of each model answer
    /// and each tool call.
    pub blocks: Vec<Block>,
    /// Time to first token of the run's first model call, in milliseconds, as in
    /// `response.done`.
    pub ttft_ms: Option<u64>,
    /// Each model call of the run, in order, with its time to first token.
    pub model_calls: Vec<ModelCallPayload>,
    /// With `stop_reason: "approval_required"`: the calls waiting for a person's decision, as
    /// `tool.approval` lists them; decide with `POST /v1/response/{id}/approval`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pending_approvals: Vec<PendingCallPayload>,
}

/// One tool call of a run, as `tool.start` and `tool.done` reported it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, ToSchema)]
pub struct ToolActivity {
    /// The provider's tool-call id.
    pub id: String,
    /// The tool.
    pub name: String,
    /// The tool's name for people.
    pub display_name: String,
    /// The arguments.
    #[schema(value_type = Object)]
    pub input: Value,
    /// What the model read back: the output or the error text.
    pub output: Option<String>,
    /// The error, when the call failed.
    pub error: Option<String>,
    /// How long the call took.
    pub duration_ms: Option<u64>,
}

/// The answer of `POST /v1/response/{id}/cancel`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, ToSchema)]
pub struct CancelResponse {
    /// Always true (an unknown id is a 404, a response that ended before the cancel could stop
    /// it a 409).
    pub success: bool,
    /// `Request cancelled`.
    pub message: String,
}

/// The answer of `POST /v1/response` with `background: true` and `features.streaming` false:
/// the run goes on with no client attached.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, ToSchema)]
pub struct BackgroundResponse {
    /// The response id (`resp-…`): read its events with `GET /v1/response/{id}/events`, stop
    /// it with `POST /v1/response/{id}/cancel`.
    pub id: String,
    /// `queued`: accepted, and about to start.
    #[schema(example = "queued")]
    pub status: String,
    /// The conversation the run answers in: send it back as `session_id` to continue it.
    pub conversation_id: String,
}

//! `tool.approval`: the calls a paused run waits on, as a person deciding them reads them.

use agent_loop::AgentOutcome;
use agent_loop::approval::PendingCall;
use serde::Serialize;
use utoipa::ToSchema;

/// `tool.approval`: the run stopped before running any call of the model's last answer,
/// because these need a person's decision. `response.done` follows with `stop_reason:
/// "approval_required"`; decide with `POST /v1/response/{id}/approval`.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct ToolApprovalEvent {
    /// The response id: where the decisions go.
    pub id: String,
    /// The conversation the run answers in.
    pub conversation_id: Option<String>,
    /// The calls waiting, in the answer's order; each needs one decision.
    pub calls: Vec<PendingCallPayload>,
}

/// A call waiting for approval.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, ToSchema)]
pub struct PendingCallPayload {
    /// The call's id: the key of its decision.
    pub id: String,
    /// The tool, as the model called it (an MCP tool as `{server}__{tool}`).
    pub name: String,
    /// The arguments as the model wrote them (JSON text).
    pub arguments: String,
}

impl From<&PendingCall> for PendingCallPayload {
    fn from(call: &PendingCall) -> Self {
        PendingCallPayload {
            id: call.id.clone(),
            name: call.name.clone(),
            arguments: call.arguments.clone(),
        }
    }
}

impl ToolApprovalEvent {
    /// The event of run `id` paused on `calls`, with `outcome` as it paused.
    pub fn new(id: &str, calls: &[PendingCall], outcome: &AgentOutcome) -> Self {
        ToolApprovalEvent {
            id: id.to_owned(),
            conversation_id: conversation_id(outcome),
            calls: calls.iter().map(PendingCallPayload::from).collect(),
        }
    }
}

/// The conversation `outcome` was logged under.
pub(super) fn conversation_id(outcome: &AgentOutcome) -> Option<String> {
    outcome.conversation_id.as_ref().map(ToString::to_string)
}

/// The stored nodes of `outcome`'s answers.
pub(super) fn node_ids(outcome: &AgentOutcome) -> Vec<i64> {
    outcome.node_ids.iter().map(|node| node.get()).collect()
}

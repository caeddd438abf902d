//! Tool approval in Chat Shell: a run whose tool calls need a person's yes pauses (its stream
//! ends with `tool.approval` and `response.done` whose `stop_reason` is
//! `approval_required`), and `POST /v1/response/{id}/approval` continues it with the
//! decisions, on any replica, minutes or days later.
//!
//! - this module: which policy a run follows, what a paused run's record keeps
//!   ([`PausedDocument`]), and the requests that could not be resumed, refused up front.
//! - `decide`: the decisions' handler; `resume`: a paused run rebuilt and driven on, by a
//!   person's decisions or, past `approval.timeout`, with every call rejected.

pub(crate) mod decide;
mod resume;

pub(crate) use decide::{ApprovalRequest, DecisionBody, DecisionName};
pub(crate) use resume::{Prepared, expired, prepare};

use agent_loop::approval::{ApprovalGrants, ApprovalPolicy, PausedRun};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use service::ToolProtocol;

use crate::api::chat_shell::plan::Planned;
use crate::api::chat_shell::record::StoredRequest;
use crate::api::error::ApiError;
use crate::api::state::App;

/// What a paused Chat Shell run's record keeps (its `paused` document): all a replica needs
/// to resume it, and never a secret.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct PausedDocument {
    /// The request the run answers, its body included (a foreground run's record keeps no
    /// body of its own).
    pub(crate) request: StoredRequest,
    /// The run as it paused: the conversation, the answer whose calls wait, the calls.
    pub(crate) paused: PausedRun,
    /// The tools approved "always" so far in the run.
    pub(crate) grants: ApprovalGrants,
}

/// The policy a run of `planned` follows: the operator's with what the request adds. `None`
/// when no call of the run can wait: the policy never asks, or the run offers no tool.
pub(crate) fn policy(app: &App, planned: &Planned) -> Option<ApprovalPolicy> {
    let spec = &planned.spec;
    let offers_tools = !spec.tools.is_empty()
        || !spec.skills.is_empty()
        || !spec.mcp_servers.is_empty()
        || !spec.knowledge_bases.is_empty()
        || spec.silent_exit_tool;
    let policy = app
        .service
        .approval_policy()
        .clone()
        .with_request(planned.approval.clone());
    (offers_tools && !policy.is_never()).then_some(policy)
}

/// Refuses up front a run that could pause but never be resumed: on a server that stores
/// nothing (nowhere to keep the pause), with a text tool protocol (its calls cannot be held
/// back), or with secrets the record never keeps (a resumed run would lack them). Every
/// reason at once.
pub(crate) fn check_resumable(
    stores_runs: bool,
    planned: &Planned,
    stored: &StoredRequest,
) -> Result<(), ApiError> {
    let requested = !planned.approval.is_never();
    let asked_by = if requested {
        "`require_approval` asks"
    } else {
        "this server's operator asks (`approval` in its configuration)"
    };
    let mut fields: Vec<Value> = Vec::new();
    if !stores_runs {
        fields.push(json!({
            "field": if requested { "require_approval" } else { "tools" },
            "reason": format!(
                "{asked_by} for approval of some tool calls, and a run waiting for one must be \
                 stored, but this server stores nothing (it was started without a store); use a \
                 server with a store, or leave out the tools that need approval"
            ),
        }));
    }
    if matches!(planned.spec.tool_protocol, ToolProtocol::Text { .. }) {
        fields.push(json!({
            "field": "features.tool_mode",
            "reason": format!(
                "{asked_by} for approval of some tool calls, which only native tool calls \
                 allow (a text protocol's calls cannot be held back); use `tool_mode: native` \
                 (the default)"
            ),
        }));
    }
    for secret in &stored.withheld {
        fields.push(json!({
            "field": secret,
            "reason": format!(
                "{asked_by} for approval of some tool calls, and a paused run is resumed from \
                 its stored request, which never keeps `{secret}`; let the server hold the \
                 key, or leave out the tools that need approval"
            ),
        }));
    }
    let Some(first) = fields.first() else {
        return Ok(());
    };
    let message = format!(
        "this run could pause for tool approval but never be resumed: `{}`: {}",
        first["field"].as_str().unwrap_or_default(),
        first["reason"].as_str().unwrap_or_default()
    );
    Err(ApiError::unprocessable("approval_unavailable", message)
        .with_details(json!({ "fields": fields })))
}

//! `POST /v1/response/{id}/approval`: a person's decisions about a paused run's calls, and
//! the run going on with them.
//!
//! The decisions are checked against the stored pause before the run is taken, so a body
//! naming a wrong call leaves the run paused for a better one. Of deciders racing for one
//! pause, exactly one takes it (on any replica); the others are told it is no longer paused.

use std::collections::BTreeMap;
use std::sync::Arc;

use agent_loop::approval::{Decision, Decisions, PausedRun};
use axum::Extension;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::response::Response;
use conversation_tree::runs::{RunProtocol, RunStatus};
use http::{HeaderMap, StatusCode};
use serde::Deserialize;
use serde_json::json;
use service::{Principal, ServiceError};
use utoipa::ToSchema;

use super::resume::{Paused, document};
use crate::api::chat_shell::handlers::{Answer, Started, parse, refuse_when_draining};
use crate::api::chat_shell::replay::store_error;
use crate::api::error::ApiError;
use crate::api::request_log::RequestLog;
use crate::api::state::App;

/// The body of `POST /v1/response/{id}/approval`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"decisions": {"call_1": {"decision": "approve"}, "call_2": {"decision": "reject", "reason": "not that host"}}, "stream": true}))]
pub(crate) struct ApprovalRequest {
    /// One decision per pending call (as `tool.approval` listed them), by call id: every
    /// pending call, and nothing else.
    pub(crate) decisions: BTreeMap<String, DecisionBody>,
    /// Whether the resumed run's events are streamed (default true), else answered as one
    /// JSON body when it ends (or pauses again). A background run without streaming is
    /// answered `202` at once.
    #[serde(default = "yes")]
    #[schema(default = true)]
    pub(crate) stream: bool,
}

fn yes() -> bool {
    true
}

/// A decision about one pending call.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct DecisionBody {
    /// What the person decided.
    pub(crate) decision: DecisionName,
    /// With `reject`: why, in the person's words; the model reads it as the call's result.
    #[serde(default)]
    pub(crate) reason: Option<String>,
}

/// What a person decided about a call.
#[derive(Clone, Copy, Debug, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum DecisionName {
    /// Run the call.
    Approve,
    /// Run it, and every later call of the same tool in this run without asking.
    ApproveAlways,
    /// Do not run it: the model is told the user declined, with the reason.
    Reject,
}

/// Decides a paused response's tool calls and continues it: approved calls run, rejected
/// ones are answered to the model with the reason, and the same response goes on (its events
/// numbered after the stored ones) until it ends, or pauses again.
#[utoipa::path(
    post,
    path = "/v1/response/{id}/approval",
    tag = "response",
    params(("id" = String, Path, description = "The response id (`resp-…`) of a response whose stream ended with `tool.approval`")),
    request_body = ApprovalRequest,
    responses(
        (status = 200, description = "With `stream` (the default): a `text/event-stream` of the \
resumed response's events, as `POST /v1/response` streams them and numbered after the stored ones \
(no second `response.start`): `tool.start`/`tool.done` of the approved calls and the rejected ones, \
the answer, and `response.done` (or `tool.approval` again and `response.done` with \
`stop_reason: \"approval_required\"`). Without `stream`: one JSON body as `POST /v1/response` answers",
            content((String = "text/event-stream"), (crate::api::chat_shell::schema::ResponseBody = "application/json"))),
        (status = 202, description = "A background response without `stream`: it goes on with no client attached; follow it with `GET /v1/response/{id}/events`", body = crate::api::chat_shell::schema::BackgroundResponse),
        (status = 400, description = "The decisions do not fit the pause: `details.problems` names every pending call without a decision, every decision about a call that is not pending, and every `reason` sent with an approval, at once. The response stays paused", body = crate::ErrorBody),
        (status = 401, description = "Missing or invalid bearer token", body = crate::ErrorBody),
        (status = 403, description = "Not on loopback without tokens, a `Host` that is not this server's, or a cross-origin request", body = crate::ErrorBody),
        (status = 404, description = "No such response of this caller: only the token that started a response can decide for it (another's is as absent), or the server stores no runs", body = crate::ErrorBody),
        (status = 408, description = "The body did not arrive within the body read timeout", body = crate::ErrorBody),
        (status = 409, description = "The response is not paused (`not_paused`, `details.status` says what it is): its calls were decided already (perhaps by a request racing this one), it ended, or it never paused", body = crate::ErrorBody),
        (status = 413, description = "The body is larger than the server's limit", body = crate::ErrorBody),
        (status = 415, description = "The body is not sent as `Content-Type: application/json`", body = crate::ErrorBody),
        (status = 422, description = "The body is not an approval request (`details.fields` names the field)", body = crate::ErrorBody),
        (status = 429, description = "The caller's concurrency limit is reached; see `Retry-After`", body = crate::ErrorBody),
        (status = 503, description = "The server is shutting down", body = crate::ErrorBody),
    ),
    security(("bearer" = []))
)]
pub(crate) async fn decide_response(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Principal>,
    Extension(log): Extension<RequestLog>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    refuse_when_draining(&app)?;
    let body = body.map_err(|rejection| {
        ApiError::new(rejection.status(), "invalid_request", rejection.body_text())
    })?;
    let request: ApprovalRequest = parse(&body)?;
    let not_found = || {
        ApiError::not_found(format!(
            "response `{id}` not found: no response of this caller has that id"
        ))
    };
    let Some(records) = app.service.run_records() else {
        return Err(not_found());
    };
    let run = records
        .get(&id, caller)
        .await
        .map_err(store_error)?
        .filter(|run| run.protocol == RunProtocol::ChatShell)
        .ok_or_else(not_found)?;
    if run.status != RunStatus::Paused {
        return Err(not_paused(&ServiceError::RunNotPaused {
            id: id.clone(),
            status: run.status,
        }));
    }
    let (decisions, stray) = decisions(request.decisions);
    let cannot = |reason: String| {
        ApiError::internal(format!(
            "response `{id}` cannot be resumed: {reason}; it stays paused"
        ))
    };
    // Checked before anything is rebuilt or taken: a bad body changes nothing.
    check(&document(&run).map_err(cannot)?.paused, &decisions, &stray)?;
    let paused = Paused::rebuild(&app, run).await.map_err(cannot)?;

    let permit = crate::api::limit::admit(&app.limit, caller, app.config.retry_after()).await?;
    let (taken, worker) = match records.take_paused(&id, caller).await {
        Ok(Some(taken)) => taken,
        Ok(None) => return Err(not_found()),
        Err(error @ ServiceError::RunNotPaused { .. }) => return Err(not_paused(&error)),
        Err(error) => return Err(store_error(error)),
    };
    // Taken as stored now: another decider may have resumed it, and it paused again, on
    // other calls, between the check above and the taking.
    let paused = paused.taken(taken).map_err(|reason| {
        ApiError::internal(format!("response `{id}` cannot be resumed: {reason}"))
    })?;
    if let Err(error) = check(&paused.document.paused, &decisions, &stray) {
        let document = serde_json::to_value(&paused.document).unwrap_or_default();
        if let Err(error) = worker.pause(document).await {
            tracing::warn!(%error, "could not put a run back in its pause");
        }
        return Err(error);
    }
    let mode = paused.run.mode;
    let answer = Answer {
        id: id.clone(),
        request_id: headers
            .get("x-request-id")
            .and_then(|value| value.to_str().ok())
            .map_or_else(|| paused.document.request.request_id.clone(), str::to_owned),
        conversation_id: paused.document.request.client_conversation.clone(),
        streaming: request.stream,
        status: RunStatus::InProgress,
    };
    let span = tracing::info_span!("response", response_id = %id, approval = true);
    let (drive, cancel) = span.in_scope(|| paused.drive(&app, worker, decisions, Some(log)));
    let run = Started {
        drive,
        mode,
        slot: permit,
        cancel,
    };
    answer.run(app.service.runs(), run).await
}

/// The decisions of the body, as the agent takes them, and the calls approved with a
/// `reason` (which nobody would read).
fn decisions(body: BTreeMap<String, DecisionBody>) -> (Decisions, Vec<String>) {
    let mut stray = Vec::new();
    let decisions = body
        .into_iter()
        .map(|(id, body)| {
            let decision = match body.decision {
                DecisionName::Approve => Decision::Approve,
                DecisionName::ApproveAlways => Decision::ApproveAlways,
                DecisionName::Reject => Decision::reject(body.reason.clone().unwrap_or_default()),
            };
            if body.reason.is_some() && decision.approves() {
                stray.push(id.clone());
            }
            (id, decision)
        })
        .collect();
    (decisions, stray)
}

/// Checks the decisions against the pause: every problem at once, in a 400.
fn check(paused: &PausedRun, decisions: &Decisions, stray: &[String]) -> Result<(), ApiError> {
    let mut problems = paused
        .check(decisions)
        .err()
        .map(|error| error.problems)
        .unwrap_or_default();
    problems.extend(stray.iter().map(|id| {
        format!("call `{id}`: `reason` is read only with `reject`; leave it out to approve")
    }));
    if problems.is_empty() {
        return Ok(());
    }
    let pending: Vec<_> = paused
        .pending
        .iter()
        .map(|call| json!({"id": call.id, "name": call.name}))
        .collect();
    let count = problems.len();
    let problems = crate::api::error::capped(problems);
    Err(ApiError::invalid_request(format!(
        "the decisions do not fit the paused response ({count} problem(s)): {}; send one decision \
         per pending call",
        problems.join("; ")
    ))
    .with_details(json!({"problems": problems, "pending": pending})))
}

/// The 409 of a run that is not paused.
fn not_paused(error: &ServiceError) -> ApiError {
    let status = match error {
        ServiceError::RunNotPaused { status, .. } => status.as_str(),
        _ => "unknown",
    };
    ApiError::new(StatusCode::CONFLICT, "not_paused", error.to_string())
        .with_details(json!({ "status": status }))
}

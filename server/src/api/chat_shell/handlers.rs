//! `POST /v1/response`: plan, acquire a slot, prepare, then stream the run's events (or
//! answer once, when streaming is off).

use std::sync::Arc;

use agent_loop::AgentEvent;
use agent_loop::approval::ApprovalGrants;
use axum::Extension;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::response::{IntoResponse, Response};
use conversation_tree::runs::{NewRun, RunMode, RunProtocol, RunStatus};
use futures::{Stream, StreamExt as _, stream};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use providers::ProviderError;
use serde_json::json;
use service::{
    CancellationToken, OwnerError, Principal, RunError, RunRecords, RunWorker, Runs, Slot,
};
use tokio::sync::mpsc;
use tokio_util::sync::DropGuard;
use tracing::Instrument as _;

use crate::api::body::{self, BodyError};
use crate::api::chat_shell::approval;
use crate::api::chat_shell::encode::{
    ChatShellEncoder, ChatShellEvent, CompressionPayload, PendingCallPayload, StopReasonName,
    UsagePayload,
};
use crate::api::chat_shell::plan::plan;
use crate::api::chat_shell::record::StoredRequest;
use crate::api::chat_shell::run::{AttachedRun, Client, Drive, Outgoing};
use crate::api::chat_shell::schema::{
    BackgroundResponse, ResponseBody, ResponseRequest, ToolActivity,
};
use crate::api::chat_shell::takeover;
use crate::api::error::ApiError;
use crate::api::failure::FailureKind;
use crate::api::request_log::RequestLog;
use crate::api::sse;
use crate::api::state::App;

/// Events buffered between a run and a slow client before the run waits.
const EVENT_BUFFER: usize = 64;
const REQUEST_ID: &str = "x-request-id";

/// Creates a response: an SSE stream of the agent's events, or one JSON body.
#[utoipa::path(
    post,
    path = "/v1/response",
    tag = "response",
    request_body = ResponseRequest,
    responses(
        (status = 200, description = "With `features.streaming` (the default): a `text/event-stream` \
of `id: <n>\\nevent: <name>\\ndata: <json>` frames, numbered from 0 (a client that lost the stream \
resumes after its last `id` with `GET /v1/response/{id}/events` and `Last-Event-ID`): `response.start` {id, model, created}; then \
`content.delta` {type, text, block_id, block_offset}, `reasoning.delta` {text}, `tool.start` \
{id, name, input, display_name, blocks}, `tool.done` {id, name, output, duration_ms, error, \
sources, display_name, blocks}, and for a run whose calls need a person's approval `tool.approval` {id, conversation_id, calls: [{id, name, arguments}]} followed by `response.done` with `stop_reason: \"approval_required\"` (decide with `POST /v1/response/{id}/approval`); then exactly one of `response.done` {id, usage, stop_reason, \
sources, blocks, ttft_ms, model_calls, compression (when compression acted), silent_exit, silent_exit_reason, rounds, conversation_id, \
node_ids}, `response.cancelled` {id, partial_content} or `response.error` {id, code, message, \
details}. Without streaming: one JSON body. With `background`, leaving the stream does not \
cancel the run.",
            content((String = "text/event-stream"), (ResponseBody = "application/json"))),
        (status = 202, description = "`background` without streaming: the run goes on with no client \
attached; follow it with `GET /v1/response/{id}/events`", body = BackgroundResponse),
        (status = 400, description = "The body is not one JSON value (or has bytes after it); or \
`background` on a server that stores no runs (`details.fields` names it)", body = crate::ErrorBody),
        (status = 401, description = "Missing or invalid bearer token", body = crate::ErrorBody),
        (status = 403, description = "No tokens configured and the client is not on loopback, or its `Host` is not this server's (`host_not_allowed`); or a cross-origin request from an origin not configured (`cross_origin_forbidden`)", body = crate::ErrorBody),
        (status = 404, description = "`session_id` (or `metadata.conversation_id`) names a conversation another caller started", body = crate::ErrorBody),
        (status = 408, description = "The body did not arrive within the body read timeout", body = crate::ErrorBody),
        (status = 413, description = "The body is larger than the server's limit", body = crate::ErrorBody),
        (status = 415, description = "The body is not sent as `Content-Type: application/json`", body = crate::ErrorBody),
        (status = 422, description = "A field cannot be honoured; `details.fields` names each (a `require_approval` entry that is not a tool selector is named by its index). A run that could pause for approval but never be resumed (`approval_unavailable`: no store, a text `features.tool_mode`, or a key in the request, which is never stored). Or a media URL of the input or the stored history cannot be fetched for a provider that needs its bytes (`invalid_media_url`, the message names the URL)", body = crate::ErrorBody),
        (status = 429, description = "The caller's concurrency limit is reached; see `Retry-After`", body = crate::ErrorBody),
        (status = 503, description = "The server is shutting down", body = crate::ErrorBody),
    ),
    security(("bearer" = []))
)]
pub(crate) async fn create_response(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Principal>,
    Extension(log): Extension<RequestLog>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    refuse_when_draining(&app)?;
    let body = body.map_err(|rejection| {
        let code = match rejection.status() {
            StatusCode::PAYLOAD_TOO_LARGE => "payload_too_large",
            _ => "invalid_request",
        };
        ApiError::new(rejection.status(), code, rejection.body_text())
    })?;
    let request = parse(&body)?;
    let header_id = headers
        .get(REQUEST_ID)
        .and_then(|value| value.to_str().ok());
    let mut planned = plan(
        request,
        &app.config.service,
        app.service.knowledge_bases(caller),
        header_id,
    )?;
    let records = app.service.run_records();
    if planned.background && records.is_none() {
        return Err(ApiError::invalid_request(
            "`background`: this server stores nothing (it was started without a store), so a \
             background run could be neither followed nor continued; leave `background` out, \
             or use a server with a store",
        )
        .with_details(
            json!({"fields": [{"field": "background", "reason": "the server stores no runs"}]}),
        ));
    }
    // The request as a record keeps it: its secrets left out.
    let kept = StoredRequest::new(&body);
    let approval = approval::policy(&app, &planned);
    if approval.is_some() {
        approval::check_resumable(records.is_some(), &planned, &kept)?;
    }
    // The limit is checked before any work and before any event: a refused request is a
    // plain 429, never a stream that starts and then fails.
    let permit = crate::api::limit::admit(&app.limit, caller, app.config.retry_after()).await?;
    // The conversation: the caller's own (404 for another's), stored under its namespaced id.
    let (conversation, owner) = app
        .service
        .own_conversation(caller, planned.spec.conversation.take())
        .await
        .map_err(owner_error)?;
    planned.spec.conversation = Some(conversation.stored.clone());
    planned.spec.owner.clone_from(&owner);
    let client_conversation = conversation.client;

    log.model(
        &planned.spec.model.config.model_id,
        &planned.spec.model.config,
    );
    let response_id = new_response_id();
    planned.spec.response_id = Some(response_id.clone());
    if planned.background {
        // Where a replica that takes the run over finds its last answer.
        planned.spec.label = Some(takeover::label(&response_id));
    }
    let span = tracing::info_span!(
        "response",
        request_id = %planned.request_id,
        response_id = %response_id,
        model = %planned.spec.model.config.model_id,
        labels = %planned.labels,
    );
    let prepared = app
        .service
        .chat()
        .prepare(planned.spec)
        .instrument(span.clone())
        .await
        .map_err(run_error)?;
    let prepared = match &approval {
        Some(policy) => prepared
            .with_approval(policy.clone(), ApprovalGrants::new())
            .map_err(run_error)?,
        None => prepared,
    };
    // The run's record, once the run can start: its events are stored there, and another
    // replica reads, cancels or continues it through it. Only a background run is ever
    // continued from its record: a foreground one's keeps no copy of the request (its input
    // may be megabytes of attachments), unless the run pauses for approval, whose record
    // then keeps it to resume from.
    let stored = StoredRequest {
        request_id: planned.request_id.clone(),
        conversation: conversation.stored.as_str().to_owned(),
        client_conversation: client_conversation.clone(),
        owner,
        offered_bases: app.service.knowledge_bases(caller).to_vec(),
        ..kept
    };
    let mode = if planned.background {
        RunMode::Background
    } else {
        RunMode::Foreground
    };
    let worker = match records {
        Some(records) => {
            let owner = app.service.owner(caller);
            let spec = if planned.background {
                stored.clone()
            } else {
                StoredRequest {
                    request: serde_json::Value::Null,
                    ..stored.clone()
                }
            };
            let run = new_run(&response_id, owner, mode, &spec)?;
            Some(start_record(records, run).await?)
        }
        None => None,
    };
    let (cancel, registration) = app
        .service
        .runs()
        .register(&[&planned.request_id, &response_id], caller);
    let watch = worker
        .as_ref()
        .map(|worker| follow_cancels(worker.cancel_token().clone(), cancel.clone()));
    let drive = Drive {
        // Made in the run's span: the agent's span, entered at each poll, is its child.
        events: span.in_scope(|| prepared.stream(cancel.clone())),
        outgoing: Outgoing::new(worker, client_conversation.clone()),
        registration,
        log: Some(log),
        watch,
        request: approval.map(|_| stored),
        span,
    };
    let answer = Answer {
        id: response_id,
        request_id: planned.request_id,
        conversation_id: client_conversation,
        streaming: planned.streaming,
        status: RunStatus::Queued,
    };
    let run = Started {
        drive,
        mode,
        slot: permit,
        cancel,
    };
    answer.run(app.service.runs(), run).await
}

/// A run ready to go, with what it holds while it runs.
pub(crate) struct Started {
    /// The run and where its events go.
    pub(crate) drive: Drive,
    /// Whether it goes on without its client.
    pub(crate) mode: RunMode,
    /// The caller's place under its concurrency limit, held until the run ends.
    pub(crate) slot: Slot,
    /// Cancels the run (a foreground run's answer, dropped, uses it).
    pub(crate) cancel: CancellationToken,
}

/// How a run's events are answered to the client that started (or resumed) it.
pub(crate) struct Answer {
    /// The response id.
    pub(crate) id: String,
    /// The request id (`X-Request-ID`).
    pub(crate) request_id: String,
    /// The conversation as the client names it.
    pub(crate) conversation_id: String,
    /// Whether the client reads the events as they come (else one JSON body).
    pub(crate) streaming: bool,
    /// The run's status for a background answer without events.
    pub(crate) status: RunStatus,
}

impl Answer {
    /// Runs `run` and answers with its events. A background run is a task of its own,
    /// which its client may leave. A foreground run is polled by the connection of the
    /// client that reads it, so that an event crosses no task boundary on its way out (one
    /// task wake-up per event fewer), and becomes a task of its own when that client leaves
    /// (the dropped answer cancels it, and the rest of it ends, is logged and stored there).
    pub(crate) async fn run(self, runs: &Runs, run: Started) -> Result<Response, ApiError> {
        let Started {
            drive,
            mode,
            slot,
            cancel,
        } = run;
        // Not entered around every poll of the run: the agent's span, a child of the run's,
        // is (see `Drive::span`).
        let run = |client: Client| async move {
            let _slot = slot;
            drive.run(client).await;
        };
        match mode {
            RunMode::Background if self.streaming => {
                let (sender, mut receiver) = mpsc::channel::<Bytes>(EVENT_BUFFER);
                runs.spawn(run(Client::Task(sender)));
                let frames = stream::poll_fn(move |cx| receiver.poll_recv(cx));
                let answer = sse::response(frames, |frame: Bytes, frames| frames.raw(&frame));
                Ok(with_request_id(answer, &self.request_id))
            }
            RunMode::Background => {
                // Nobody reads the events here: the run stores them and goes on.
                runs.spawn(run(Client::Nobody));
                Ok(self.accepted())
            }
            RunMode::Foreground if self.streaming => {
                let (giver, taker) = agent_loop::handoff();
                let run = runs.attach(run(Client::Frames(giver)));
                // Dropping the answer (the client disconnected) cancels the run: the model
                // stream is closed and running tools are stopped.
                let disconnect = cancel.drop_guard();
                let answer = sse::response(AttachedRun::new(run, taker), move |frame, frames| {
                    let _keep_until_the_stream_is_dropped = &disconnect;
                    frames.raw(&frame);
                });
                Ok(with_request_id(answer, &self.request_id))
            }
            RunMode::Foreground => {
                let (giver, taker) = agent_loop::handoff();
                let run = runs.attach(run(Client::Events(giver)));
                let disconnect = cancel.drop_guard();
                let answer = collect(AttachedRun::new(run, taker)).await;
                drop(disconnect);
                answer.map(|mut body| {
                    if body.conversation_id.is_some() {
                        body.conversation_id = Some(self.conversation_id);
                    }
                    with_request_id(axum::Json(body), &self.request_id)
                })
            }
        }
    }

    /// `202` with the id and status of a background run whose client does not stream.
    fn accepted(self) -> Response {
        let body = BackgroundResponse {
            id: self.id,
            status: self.status.as_str().to_owned(),
            conversation_id: self.conversation_id,
        };
        with_request_id((StatusCode::ACCEPTED, axum::Json(body)), &self.request_id)
    }
}

/// Creates the record of `run`, held by this replica.
async fn start_record(records: &RunRecords, run: NewRun) -> Result<RunWorker, ApiError> {
    records
        .start(run)
        .await
        .map_err(|error| ApiError::internal(format!("cannot record the run: {error}")))
}

/// The record of Chat Shell run `id` of `owner`, holding `stored`.
fn new_run(
    id: &str,
    owner: &str,
    mode: RunMode,
    stored: &StoredRequest,
) -> Result<NewRun, ApiError> {
    let spec = serde_json::to_value(stored)
        .map_err(|error| ApiError::internal(format!("cannot record the run: {error}")))?;
    let run = NewRun::new(id, owner, RunProtocol::ChatShell, mode, spec);
    Ok(match mode {
        // Its client waits for its first event, which comes once the run is in progress:
        // stored so at once, that costs no write of its own before the first event.
        RunMode::Foreground => run.in_progress(),
        // Queued, as its `202` answer says, until its task starts it.
        RunMode::Background => run,
    })
}

/// A 503 while the server stops: a new run (or a decided one) would be cut off; the client
/// asks another replica.
pub(crate) fn refuse_when_draining(app: &App) -> Result<(), ApiError> {
    if app.service.runs().is_draining() {
        return Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "shutting_down",
            "the server is shutting down; retry on another instance",
        )
        .with_retry_after(app.config.retry_after()));
    }
    Ok(())
}

/// Cancels `local` (the run's token here) when `record` is cancelled: a cancel asked on
/// another replica, the run's lease lost, or the server stopping. The watch ends when the
/// guard it returns is dropped (with the run).
pub(crate) fn follow_cancels(record: CancellationToken, local: CancellationToken) -> DropGuard {
    let done = CancellationToken::new();
    let ended = done.clone();
    tokio::spawn(async move {
        tokio::select! {
            () = record.cancelled() => local.cancel(),
            () = ended.cancelled() => {}
        }
    });
    done.drop_guard()
}

/// The answer of a conversation the caller cannot use: 404 for another's (as if it did not
/// exist), 500 when the store cannot say.
fn owner_error(error: OwnerError) -> ApiError {
    match error {
        OwnerError::NotYours { .. } => ApiError::not_found(error.to_string()),
        _ => ApiError::internal(error.to_string()),
    }
}

/// `body` as a `T` (a Chat Shell request), or the answer naming what is wrong with it.
pub(crate) fn parse<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    body::parse(body).map_err(|error| match error {
        BodyError::Field { path, reason } => {
            ApiError::unprocessable("invalid_field", format!("`{path}`: {reason}"))
                .with_details(json!({"fields": [{"field": path, "reason": reason}]}))
        }
        BodyError::NotJson(reason) => {
            ApiError::invalid_request(format!("the body is not a JSON request: {reason}"))
        }
        BodyError::Trailing(reason) => ApiError::invalid_request(format!(
            "the body holds more than one JSON value: {reason}; send the request object alone"
        )),
        // Not given by `body::parse`, whose structs refuse an unknown field as they meet it.
        BodyError::Unknown(fields) => ApiError::unprocessable(
            "invalid_field",
            format!("unknown fields: {}", fields.join(", ")),
        ),
    })
}

pub(crate) fn with_request_id(response: impl IntoResponse, request_id: &str) -> Response {
    let mut response = response.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    if let Ok(value) = HeaderValue::from_str(request_id) {
        headers.insert(REQUEST_ID, value);
    }
    response
}

/// The run's events folded into one answer.
pub(crate) async fn collect(
    mut events: impl Stream<Item = AgentEvent> + Unpin,
) -> Result<ResponseBody, ApiError> {
    let mut body = ResponseBody::default();
    let mut reasoning = String::new();
    let mut encoder = ChatShellEncoder::default();
    while let Some(event) = events.next().await {
        let mut frames = encoder.encode_all(&event).into_iter();
        let Some(frame) = frames.next() else {
            continue;
        };
        match event {
            AgentEvent::ResponseStart { id, model, created } => {
                body.id = id;
                body.model = model;
                body.created = created;
            }
            AgentEvent::ReasoningDelta { text } => reasoning.push_str(&text),
            AgentEvent::ToolStart {
                id,
                name,
                display_name,
                input,
            } => body.tool_calls.push(ToolActivity {
                id,
                name,
                display_name,
                input,
                ..ToolActivity::default()
            }),
            AgentEvent::ToolDone {
                id,
                output,
                duration_ms,
                error,
                ..
            } => {
                if let Some(call) = body.tool_calls.iter_mut().rev().find(|call| call.id == id) {
                    call.output = Some(output);
                    call.duration_ms = Some(duration_ms);
                    call.error = error;
                }
            }
            AgentEvent::ResponseDone {
                usage,
                stop_reason,
                silent_exit,
                silent_exit_reason,
                rounds,
                conversation_id,
                node_ids,
                outcome,
                ..
            } => {
                if let ChatShellEvent::Done(done) = frame {
                    body.sources = done.sources.unwrap_or_default();
                    body.blocks = done.blocks;
                    body.ttft_ms = done.ttft_ms;
                    body.model_calls = done.model_calls;
                }
                body.content.clone_from(&outcome.text);
                body.usage = UsagePayload::from(&usage);
                body.stop_reason = StopReasonName::from(stop_reason);
                body.silent_exit = silent_exit;
                body.silent_exit_reason = silent_exit_reason;
                body.rounds = rounds;
                body.conversation_id = conversation_id;
                body.node_ids = node_ids;
                body.compression = outcome.compression_notice().map(CompressionPayload::from);
                body.reasoning = (!reasoning.is_empty()).then_some(reasoning);
                return Ok(body);
            }
            AgentEvent::ApprovalRequired { calls, .. } => {
                if let Some(ChatShellEvent::Done(done)) = frames.next() {
                    body.sources = done.sources.unwrap_or_default();
                    body.blocks = done.blocks;
                    body.ttft_ms = done.ttft_ms;
                    body.model_calls = done.model_calls;
                    body.usage = done.usage;
                    body.rounds = done.rounds;
                    body.conversation_id = done.conversation_id;
                    body.node_ids = done.node_ids;
                    body.compression = done.compression;
                }
                body.stop_reason = StopReasonName::ApprovalRequired;
                body.pending_approvals = calls.iter().map(PendingCallPayload::from).collect();
                body.reasoning = (!reasoning.is_empty()).then_some(reasoning);
                return Ok(body);
            }
            AgentEvent::ResponseCancelled {
                id,
                partial_content,
                ..
            } => {
                return Err(ApiError::new(
                    StatusCode::CONFLICT,
                    "cancelled",
                    "the response was cancelled before it finished",
                )
                .with_details(json!({"id": id, "partial_content": partial_content})));
            }
            event @ AgentEvent::ResponseError { .. } => {
                let AgentEvent::ResponseError { error, .. } = &event else {
                    unreachable!("matched above")
                };
                let status = FailureKind::of(error).status();
                let ChatShellEvent::Error(frame) = frame else {
                    unreachable!("an error event encodes as an error frame")
                };
                return Err(ApiError::new(status, frame.code.as_str(), frame.message)
                    .with_details(json!({"id": frame.id, "error": frame.details})));
            }
            _ => {}
        }
    }
    Err(ApiError::internal("the run ended without a final event"))
}

/// The HTTP answer for a run that could not start.
pub(crate) fn run_error(error: RunError) -> ApiError {
    match &error {
        RunError::Agent(agent)
            if matches!(**agent, agent_loop::AgentError::ApprovalNeedsNativeTools) =>
        {
            ApiError::unprocessable("approval_unavailable", error.to_string())
        }
        RunError::Model(provider)
            if matches!(
                **provider,
                ProviderError::Config { .. }
                    | ProviderError::ForbiddenHeader { .. }
                    | ProviderError::FeatureDisabled { .. }
            ) =>
        {
            ApiError::unprocessable("invalid_model", error.to_string())
        }
        RunError::NotReasoning { .. } | RunError::NoKey(_) => {
            ApiError::unprocessable("invalid_model", error.to_string())
        }
        RunError::Model(_) => {
            ApiError::new(StatusCode::BAD_GATEWAY, "provider_error", error.to_string())
        }
        RunError::Tool(_) => ApiError::unprocessable("unavailable_tool", error.to_string()),
        RunError::Skill(_) => ApiError::unprocessable("unknown_skill", error.to_string()),
        RunError::UnknownMcpServer { .. } => {
            ApiError::unprocessable("unknown_mcp_server", error.to_string())
        }
        RunError::NoKnowledge => ApiError::unprocessable("no_knowledge_store", error.to_string()),
        RunError::Media(_) => ApiError::unprocessable("invalid_media_url", error.to_string()),
        RunError::Knowledge(kb)
            if matches!(
                **kb,
                knowledge_base::KbError::UnknownBase { .. } | knowledge_base::KbError::NoBases
            ) =>
        {
            ApiError::unprocessable("unknown_knowledge_base", error.to_string())
        }
        _ => ApiError::internal(error.to_string()),
    }
}

/// `resp-` and the 32 hex digits of a random UUID v4 (122 random bits): unguessable.
fn new_response_id() -> String {
    format!("resp-{}", uuid::Uuid::new_v4().simple())
}

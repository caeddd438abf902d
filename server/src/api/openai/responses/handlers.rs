//! `POST /v1/responses`, `GET /v1/responses/{id}` and `POST /v1/responses/{id}/cancel`:
//! OpenAI's Responses API in front of every provider, each response a node of the
//! conversation tree that `previous_response_id` continues (after a restart too).

use std::sync::Arc;

use axum::Extension;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, RawQuery, State};
use axum::response::{IntoResponse, Response};
use conversation_tree::{Node, ResponseStatus};
use futures::{Stream, StreamExt as _};
use http::{HeaderValue, StatusCode, header};
use providers::{FinishReason, StreamEvent};
use service::config::AgentAlias;
use service::runs::RunMode;
use service::store::StoreKind;
use service::{
    Answer, GatewayCall, Logging, Principal, Stopped, Thread, answer_events, replay_events,
};

use super::schema::CreateResponseRequest;
use crate::api::openai::error::OpenAiError;
use crate::api::openai::gateway::{
    agent_of, gateway_error, gateway_headers, read_request, stopped_error, store_failed,
    stored_usage, unix_now,
};
use crate::api::openai::responses::encode::{
    DEFAULT_TEMPERATURE, ResponseEncoder, ResponseEvent, ResponseFailure, ResponseObject,
    ResponseState,
};
use crate::api::openai::responses::file_urls::fetch_file_urls;
use crate::api::openai::responses::plan::{
    ResponsesCall, continue_after, name_outputs, response_call,
};
use crate::api::openai::responses::references;
use crate::api::request_log::RequestLog;
use crate::api::sse;
use crate::api::state::App;

/// Creates a response: a stream of Responses events, or one `response` object.
#[utoipa::path(
    post,
    path = "/v1/responses",
    tag = "openai",
    request_body = CreateResponseRequest,
    responses(
        (status = 200, description = "With `stream: true`: a `text/event-stream` of Responses events (`response.created` … `response.completed`), each with its `sequence_number`. Without: one `response` object. With `mcp` tools (operator-configured servers, run here): `mcp_list_tools`, `mcp_call` and `mcp_approval_request` items (streamed with `response.mcp_list_tools.*`, `response.mcp_call.*` and `response.mcp_call_arguments.*`); a response whose calls wait ends `completed`, and `mcp_approval_response` input items with `previous_response_id` continue it.",
            content((crate::api::openai::responses::encode::ResponseEvent = "text/event-stream"), (ResponseObject = "application/json"))),
        (status = 400, description = "A field cannot be honoured; `error.param` names it", body = crate::api::openai::error::OpenAiErrorBody),
        (status = 401, description = "Missing or invalid bearer token", body = crate::api::openai::error::OpenAiErrorBody),
        (status = 403, description = "No tokens configured and the client is not on loopback, a `Host` that is not this server's, or a cross-origin request", body = crate::api::openai::error::OpenAiErrorBody),
        (status = 404, description = "`previous_response_id` names no response of this caller, or the model's provider has no key on this server", body = crate::api::openai::error::OpenAiErrorBody),
        (status = 408, description = "The body did not arrive within the body read timeout", body = crate::api::openai::error::OpenAiErrorBody),
        (status = 409, description = "The answer was cancelled before it was whole (a cancel request, or the server shutting down); what it had produced is kept. Or (`approval_already_answered`) the response `previous_response_id` names had its MCP approval requests answered already, by another request, or they expired", body = crate::api::openai::error::OpenAiErrorBody),
        (status = 413, description = "The body is larger than the server's limit", body = crate::api::openai::error::OpenAiErrorBody),
        (status = 415, description = "The body is not sent as `Content-Type: application/json`", body = crate::api::openai::error::OpenAiErrorBody),
        (status = 422, description = "An agent alias cannot run", body = crate::api::openai::error::OpenAiErrorBody),
        (status = 429, description = "The caller's concurrency limit is reached, or the provider's", body = crate::api::openai::error::OpenAiErrorBody),
        (status = 502, description = "The provider failed", body = crate::api::openai::error::OpenAiErrorBody),
        (status = 503, description = "The server is shutting down", body = crate::api::openai::error::OpenAiErrorBody),
    ),
    security(("bearer" = []))
)]
pub(crate) async fn create_response(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Principal>,
    Extension(log): Extension<RequestLog>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, OpenAiError> {
    // The request as sent, kept with a background run so another replica can run it again.
    let sent = body.as_ref().ok().cloned();
    let request: CreateResponseRequest = read_request(&app, body)?;
    let background = request.background == Some(true);
    if background {
        super::background::check(&request)?;
    }
    let stream = request.stream == Some(true);
    let id = format!("resp_{}", uuid::Uuid::new_v4().simple());
    let mut prepared = prepare(&app, caller, request, id, Some(&log)).await?;
    let permit = crate::api::limit::admit(&app.limit, caller, app.config.retry_after()).await?;
    // An agent alias whose tool calls may wait for approval shows its tool activity, as the
    // items of an `mcp` tool, so that a call can wait for the client's answer.
    if prepared.mcp.is_none()
        && !background
        && !app.service.approval_policy().is_never()
        && let Some(agent) = prepared.agent.clone()
    {
        prepared.mcp = Some(super::mcp::run::McpRun {
            servers: Vec::new(),
            approvals: Vec::new(),
            alias: Some(agent),
        });
    }
    if let Some(mut mcp) = prepared.mcp.take() {
        if mcp.alias.is_none() {
            mcp.alias = prepared.agent.clone();
        }
        if background {
            return Err(OpenAiError::invalid(
                "background",
                "`background` with `mcp` tools or approval answers is not served yet: leave \
                 `background` out, and the response runs while the request is open",
            ));
        }
        return super::mcp::run::answer(&app, caller, prepared, mcp, &log, stream, permit).await;
    }
    if background {
        return super::background::start(&app, caller, prepared, sent, stream, permit).await;
    }
    let Prepared {
        id,
        call,
        agent,
        begun,
        ..
    } = prepared;
    let mut encoder = ResponseEncoder::new(begun.clone());
    let (cancel, registration) = app.service.runs().register(&[&id], caller);
    // Other replicas see it in progress, and their cancel reaches it. A SQLite store has no
    // other replica (one process), and its one writer would pay for the record.
    if call.logging == Logging::On && app.service.store_kind() == StoreKind::Postgres {
        super::stored_run::record_foreground(
            &app,
            caller,
            &begun,
            cancel.clone(),
            registration.ending(),
        );
    }
    // Until it ends, `GET` answers with the response as it began.
    registration.show(begun);
    // An agent's run stops when the client goes away and its answer is dropped.
    let disconnect = cancel.clone().drop_guard();
    let answer = app
        .service
        .call(agent.as_ref(), call, caller, cancel.clone())
        .await
        .map_err(gateway_error)?;

    let (answer, provenance, node) = match answer {
        Answer::Streamed {
            events,
            provenance,
            meter,
        } => {
            log.streamed(meter);
            // Ends at the answer's last item (logged before it comes), or `None` when a
            // stream ends without one.
            let events = events
                .map(Some)
                .chain(futures::stream::once(async { None }));
            // Until its last item the response is in flight: `GET` answers from the run's
            // registration, a cancel can stop it. From its last item on, the tree holds it.
            let mut running = Some(registration);
            let held = (permit, disconnect);
            let start = encoder.start();
            let body = futures::stream::iter(start).chain(events.flat_map(move |event| {
                let _held = &held;
                let Some(registration) = running.take() else {
                    return futures::stream::iter(Vec::new());
                };
                let (frames, ended) = match event {
                    Some(Ok(event)) => {
                        let ended = matches!(event, StreamEvent::Done { .. })
                            .then_some(ResponseStatus::Completed);
                        (encoder.encode(event), ended)
                    }
                    Some(Err(stopped)) => {
                        let status = stopped.status();
                        (fail(&mut encoder, stopped), Some(status))
                    }
                    None => (
                        encoder.fail(ResponseState::Cancelled, cancelled()),
                        Some(ResponseStatus::Cancelled),
                    ),
                };
                match ended {
                    Some(status) => {
                        registration.settle(status);
                        drop(registration);
                    }
                    None => running = Some(registration),
                }
                futures::stream::iter(frames)
            }));
            let mut response = sse(body);
            gateway_headers(&mut response, provenance, None);
            return Ok(response);
        }
        Answer::Whole {
            answer,
            provenance,
            node,
        } => (answer, provenance, node),
    };
    registration.settle(
        answer
            .as_ref()
            .map_or_else(Stopped::status, |_| ResponseStatus::Completed),
    );
    drop((permit, registration, disconnect));
    let answer = answer.map_err(stopped_error)?;
    log.usage(&answer.usage);
    for event in answer_events(&answer) {
        encoder.encode(event);
    }
    let mut response = json(encoder.into_response());
    gateway_headers(&mut response, provenance, node);
    Ok(response)
}

/// A response ready to run: its id, the call, the agent that answers it (if any), and the
/// response as it begins.
pub(crate) struct Prepared {
    pub(crate) id: String,
    pub(crate) call: GatewayCall,
    pub(crate) agent: Option<AgentAlias>,
    pub(crate) begun: ResponseObject,
    /// The `mcp` tools this server runs for the response, and the approvals it carries.
    pub(crate) mcp: Option<super::mcp::run::McpRun>,
}

/// Plans `request` of `caller` as response `id`: its item references and file URLs resolved,
/// the response it continues read from the tree, its agent chosen. (`log`, when given, notes
/// the model asked for.)
pub(crate) async fn prepare(
    app: &App,
    caller: Principal,
    mut request: CreateResponseRequest,
    id: String,
    log: Option<&RequestLog>,
) -> Result<Prepared, OpenAiError> {
    let model_name = request.model.trim().to_owned();
    references::resolve(app, caller, &mut request.input).await?;
    fetch_file_urls(app.service.chat().media_fetcher(), request.input.as_mut()).await?;
    let planned = response_call(request)?;
    if let Some(log) = log {
        log.model(&model_name, &planned.call.model.config);
    }
    let agent = agent_of(app, caller, &planned.call)?;
    let owner = app.service.owner(caller);
    let ResponsesCall {
        mut call,
        previous_response_id,
        instructions,
        tools,
        tool_choice,
        settings,
        mcp,
        approvals,
    } = planned;
    let declared = super::mcp::declarations(mcp, &super::mcp::configured(app.service.config()))?;
    let mcp = super::mcp::run::plan(
        declared,
        approvals,
        previous_response_id.as_deref(),
        agent.is_some(),
        &call.request,
    )?;
    if let Some(previous) = previous_response_id.as_ref().filter(|_| {
        // A continuation of a paused response resumes its run, which holds its history.
        mcp.as_ref().is_none_or(|mcp| mcp.approvals.is_empty())
    }) {
        let found = if is_response_id(previous) {
            app.service
                .chat()
                .previous(previous, owner)
                .await
                .map_err(gateway_error)?
        } else {
            None
        };
        let Some((history, anchor)) = found else {
            super::stored_run::refuse_running_previous(app, caller, previous).await?;
            return Err(not_found(previous).with_param("previous_response_id"));
        };
        call.request.messages =
            continue_after(history, std::mem::take(&mut call.request.messages))?;
        call.thread = Thread::After(anchor);
    } else {
        name_outputs(&mut call.request.messages)?;
    }
    if call.logging == Logging::On {
        call.label = Some(id.clone());
    }
    let begun = ResponseObject {
        instructions,
        previous_response_id,
        tools,
        tool_choice,
        parallel_tool_calls: call.request.options.parallel_tool_calls != Some(false),
        temperature: Some(
            call.request
                .options
                .temperature
                .unwrap_or(DEFAULT_TEMPERATURE),
        ),
        max_output_tokens: call.request.options.max_tokens,
        store: call.logging == Logging::On,
        metadata: call.request.options.metadata.clone(),
        settings,
        ..ResponseObject::begun(id.clone(), unix_now(), model_name)
    };
    Ok(Prepared {
        id,
        call,
        agent,
        begun,
        mcp,
    })
}

/// The frames that end a response that stopped before its `Done`.
pub(super) fn fail(encoder: &mut ResponseEncoder, stopped: Stopped) -> Vec<ResponseEvent> {
    match stopped {
        Stopped::Cancelled => encoder.fail(ResponseState::Cancelled, cancelled()),
        failed @ Stopped::Failed(_) => {
            encoder.fail(ResponseState::Failed, failure(&stopped_error(failed)))
        }
    }
}

/// Reads a response: in progress, or as the conversation tree holds it.
#[utoipa::path(
    get,
    path = "/v1/responses/{id}",
    tag = "openai",
    params(
        ("id" = String, Path, description = "The response id (`resp_…`)"),
        ("stream" = Option<bool>, Query, description = "`true`: the events of a background response as a `text/event-stream`, the stored ones then the live ones until it ends, each as first sent"),
        ("starting_after" = Option<u64>, Query, description = "With `stream=true`: only the events whose `sequence_number` is greater"),
    ),
    responses(
        (status = 200, description = "The response; with `stream=true`, its events", body = ResponseObject),
        (status = 400, description = "`stream` or `starting_after` is not a boolean or a number, or `stream=true` for a response not created with `background: true`", body = crate::api::openai::error::OpenAiErrorBody),
        (status = 401, description = "Missing or invalid bearer token", body = crate::api::openai::error::OpenAiErrorBody),
        (status = 403, description = "No tokens configured and the client is not on loopback, a `Host` that is not this server's, or a cross-origin request", body = crate::api::openai::error::OpenAiErrorBody),
        (status = 404, description = "No response of this caller has this id (or it was created with `store: false`)", body = crate::api::openai::error::OpenAiErrorBody),
    ),
    security(("bearer" = []))
)]
pub(crate) async fn get_response(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Principal>,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> Result<Response, OpenAiError> {
    let query = GetQuery::parse(query.as_deref())?;
    if query.stream {
        return super::stored_run::stream(&app, caller, &id, query.starting_after).await;
    }
    if let Some(running) = app.service.runs().shown::<ResponseObject>(&id, caller) {
        return Ok(json(running));
    }
    // A background response, on whichever replica runs it: as its stored events say.
    let run = super::stored_run::run_of(&app, caller, &id).await?;
    // A response that asked for approvals: as it ended, with its approval requests.
    if let Some(document) = run.as_ref().and_then(super::mcp::run::document_of) {
        return Ok(json(document.response));
    }
    if let Some(run) = &run
        && run.mode == RunMode::Background
    {
        let object = super::stored_run::object_of(&app, run).await?;
        return Ok(json(object));
    }
    let Some(node) = stored(&app, caller, &id).await? else {
        // A foreground response running on another replica: as it began.
        if let Some(run) = run.filter(|run| !run.status.is_terminal()) {
            let object = super::stored_run::object_of(&app, &run).await?;
            return Ok(json(object));
        }
        return Err(not_found(&id));
    };
    Ok(json(from_node(&app, &id, &node).await?))
}

/// The query of `GET /v1/responses/{id}`: `stream` and `starting_after` (OpenAI's other
/// parameters, such as `include`, change nothing here and are accepted).
#[derive(Debug, Default)]
struct GetQuery {
    stream: bool,
    starting_after: Option<u64>,
}

impl GetQuery {
    fn parse(query: Option<&str>) -> Result<Self, OpenAiError> {
        let mut parsed = GetQuery::default();
        for pair in query
            .unwrap_or_default()
            .split('&')
            .filter(|pair| !pair.is_empty())
        {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            match name {
                "stream" => {
                    parsed.stream = match value {
                        "true" => true,
                        "false" => false,
                        _ => {
                            return Err(OpenAiError::invalid(
                                "stream",
                                format!("`stream` is `{value}`; use true or false"),
                            ));
                        }
                    }
                }
                "starting_after" => {
                    parsed.starting_after = Some(value.parse().map_err(|_| {
                        OpenAiError::invalid(
                            "starting_after",
                            format!(
                                "`starting_after` is `{value}`; give the sequence number of \
                                 the last event you have (0 or more)"
                            ),
                        )
                    })?);
                }
                _ => {}
            }
        }
        Ok(parsed)
    }
}

/// Cancels a response in progress: its stream ends with `response.failed` (status
/// `cancelled`), and what it had produced is kept. The answer comes once the response has
/// ended and the tree says how: one whose answer was whole before the cancel could stop it
/// is not cancellable (400), and is stored `completed`.
#[utoipa::path(
    post,
    path = "/v1/responses/{id}/cancel",
    tag = "openai",
    params(("id" = String, Path, description = "The response id (`resp_…`)")),
    responses(
        (status = 200, description = "The response, `cancelled`", body = ResponseObject),
        (status = 400, description = "The response already ended", body = crate::api::openai::error::OpenAiErrorBody),
        (status = 401, description = "Missing or invalid bearer token", body = crate::api::openai::error::OpenAiErrorBody),
        (status = 403, description = "No tokens configured and the client is not on loopback, a `Host` that is not this server's, or a cross-origin request", body = crate::api::openai::error::OpenAiErrorBody),
        (status = 404, description = "No response of this caller has this id", body = crate::api::openai::error::OpenAiErrorBody),
    ),
    security(("bearer" = []))
)]
pub(crate) async fn cancel_response(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Principal>,
    Path(id): Path<String>,
) -> Result<Response, OpenAiError> {
    // As it began, for a response the tree does not keep (`store: false`).
    let running = app.service.runs().shown::<ResponseObject>(&id, caller);
    let ending = app.service.runs().cancel(&id, caller);
    // Not in flight here: a background response, on whichever replica runs it.
    if ending.is_none()
        && let Some(answer) = super::stored_run::cancel(&app, caller, &id).await?
    {
        return Ok(answer);
    }
    let ended = match ending {
        Some(ending) => Some(ending.wait().await),
        None => None,
    };
    // The run has ended and its log says how: the answer is what the tree holds, as `GET`
    // reads it from now on.
    match (stored(&app, caller, &id).await?, ended, running) {
        (Some(node), Some(ResponseStatus::Cancelled), _) => {
            Ok(json(from_node(&app, &id, &node).await?))
        }
        (None, Some(ResponseStatus::Cancelled), Some(mut running)) => {
            running.status = ResponseState::Cancelled;
            Ok(json(running))
        }
        (Some(node), _, _) => Err(OpenAiError::new(
            StatusCode::BAD_REQUEST,
            "response_not_cancellable",
            format!(
                "response `{id}` already ended ({}); only a response in progress can be \
                 cancelled",
                node.status()
            ),
        )),
        (None, Some(status), _) => Err(OpenAiError::new(
            StatusCode::BAD_REQUEST,
            "response_not_cancellable",
            format!(
                "response `{id}` ended ({status}) before the cancel could stop it; only a \
                 response in progress can be cancelled"
            ),
        )),
        (None, None, _) => Err(not_found(&id)),
    }
}

/// Whether `id` can name a response: one of the ids this server gives them. The tree's labels
/// also name chat completions (`chatcmpl-…`), which are not responses to read or continue.
pub(super) fn is_response_id(id: &str) -> bool {
    id.starts_with("resp_")
}

/// The node of `caller`'s response `id`.
pub(super) async fn stored(
    app: &App,
    caller: Principal,
    id: &str,
) -> Result<Option<Node>, OpenAiError> {
    if !is_response_id(id) {
        return Ok(None);
    }
    app.service
        .chat()
        .owned_answer(id, app.service.owner(caller))
        .await
        .map_err(store_failed)
}

/// The events of the answer `node` holds, its usage included, with its last (`Done`) apart.
pub(super) async fn stored_events(
    app: &App,
    node: &Node,
) -> Result<(Vec<StreamEvent>, Option<StreamEvent>), OpenAiError> {
    let turn = app
        .service
        .chat()
        .store()
        .turn(node.id())
        .await
        .map_err(store_failed)?;
    let mut events = replay_events(&turn.response);
    let done = events.pop();
    if let Some(usage) = node.usage() {
        events.push(StreamEvent::Usage(stored_usage(usage)));
    }
    Ok((events, done))
}

/// A stored response as a `response` object.
pub(super) async fn from_node(
    app: &App,
    id: &str,
    node: &Node,
) -> Result<ResponseObject, OpenAiError> {
    let (events, done) = stored_events(app, node).await?;
    // What the tree does not keep (instructions, tools, the continued id, the settings
    // besides temperature and the output limit) reads back empty or as OpenAI's default.
    let begun = ResponseObject {
        temperature: Some(node.options().temperature.unwrap_or(DEFAULT_TEMPERATURE)),
        max_output_tokens: node.options().max_tokens,
        metadata: node.metadata().clone(),
        ..ResponseObject::begun(
            id.to_owned(),
            u64::try_from(node.datetime_utc().as_second()).unwrap_or(0),
            node.model().unwrap_or_default().to_owned(),
        )
    };
    let mut encoder = ResponseEncoder::new(begun);
    for event in events {
        encoder.encode(event);
    }
    match node.status() {
        ResponseStatus::Cancelled => {
            encoder.fail(ResponseState::Cancelled, cancelled());
        }
        ResponseStatus::Failed => {
            encoder.fail(
                ResponseState::Failed,
                ResponseFailure {
                    code: "server_error".into(),
                    message: "the response failed before it was whole; it holds what had \
                              arrived"
                        .into(),
                },
            );
        }
        _ => {
            encoder.encode(done.unwrap_or(StreamEvent::Done {
                finish: FinishReason::Stop,
            }));
        }
    }
    Ok(encoder.into_response())
}

pub(super) fn failure(error: &OpenAiError) -> ResponseFailure {
    let detail = &error.body().error;
    ResponseFailure {
        code: detail.code.clone().unwrap_or_else(|| "server_error".into()),
        message: detail.message.clone(),
    }
}

pub(super) fn cancelled() -> ResponseFailure {
    ResponseFailure {
        code: "cancelled".into(),
        message: "the response was cancelled; it holds what had been produced".into(),
    }
}

pub(super) fn not_found(id: &str) -> OpenAiError {
    OpenAiError::new(
        StatusCode::NOT_FOUND,
        "response_not_found",
        format!(
            "no response `{id}` of yours is kept here: it was created with `store: false`, by \
             another caller, or the server stopped before its answer was logged; continue from \
             the response before it"
        ),
    )
}

/// A response object (typed, or as stored events describe it) as JSON, never cached: it
/// changes while the response runs.
pub(super) fn json(response: impl serde::Serialize) -> Response {
    let mut response = axum::Json(response).into_response();
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// The SSE answer: each event named by its type (`no-cache`, as every SSE answer is).
pub(super) fn sse(events: impl Stream<Item = ResponseEvent> + Send + 'static) -> Response {
    sse::response(events, |event, frames| frames.event(event.name(), &event))
}

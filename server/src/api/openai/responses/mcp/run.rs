//! A response whose `mcp` tools this server runs: the model answers as an agent whose tools
//! are the declared servers' (each filtered by its `allowed_tools`), and its tool activity
//! comes out as the items OpenAI documents: `mcp_list_tools` first, an `mcp_call` per call
//! run, an `mcp_approval_request` per call that waits for the client.
//!
//! A response whose calls wait ends `completed` with its approval requests, and its run
//! record is paused with what resuming needs ([`PausedDocument`]). A later request with
//! `previous_response_id` naming it and `mcp_approval_response` items continues it in a new
//! response, on any replica: the paused run is taken once (of two such requests one wins),
//! the approved calls run, the declined ones are answered to the model with the reason.

use std::collections::{BTreeMap, HashMap};

use agent_loop::approval::{Decision, Decisions, PausedRun};
use agent_loop::{AgentEvent, AgentStream, StopReason};
use axum::response::Response;
use futures::channel::mpsc;
use futures::{SinkExt as _, StreamExt as _};
use http::StatusCode;
use providers::{FinishReason, StreamEvent};
use serde::{Deserialize, Serialize};
use serde_json::json;
use service::runs::{NewRun, Run, RunMode, RunProtocol, RunStatus};
use service::{Principal, RunWorker, ServiceError};
use tracing::Instrument as _;

use service::config::AgentAlias;

use super::McpDeclaration;
use crate::api::openai::error::OpenAiError;
use crate::api::openai::gateway::gateway_error;
use crate::api::openai::responses::encode::{
    McpListedTool, ResponseEncoder, ResponseEvent, ResponseObject, ResponseState,
};
use crate::api::openai::responses::handlers::{self, Prepared};
use crate::api::openai::responses::plan::Approval;
use crate::api::openai::responses::stored_run::run_store_failed;
use crate::api::request_log::RequestLog;
use crate::api::state::App;

/// Events buffered between a run and a slow client before the run waits.
const EVENT_BUFFER: usize = 64;

/// What a response declaring `mcp` tools runs.
#[derive(Debug)]
pub(crate) struct McpRun {
    /// The declared servers, checked.
    pub(crate) servers: Vec<McpDeclaration>,
    /// The `mcp_approval_response` items: with them, the response continues the paused one
    /// `previous_response_id` names.
    pub(crate) approvals: Vec<Approval>,
    /// The agent alias that answers, its tools the operator's (none: the model with the
    /// declared servers' tools).
    pub(crate) alias: Option<AgentAlias>,
}

/// What a paused response's run record keeps: all a replica needs to continue it.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct PausedDocument {
    /// The run as it paused.
    paused: PausedRun,
    /// The servers it offered.
    servers: Vec<McpDeclaration>,
    /// Each approval request's id, to the call it asks about.
    approvals: BTreeMap<String, String>,
    /// The response as it ended (what `GET` shows of it).
    pub(crate) response: serde_json::Value,
}

/// A new approval request's id: unique across responses, as OpenAI's are (a call id is not:
/// a model may give the same one in every response), so a client keeping approvals of several
/// responses never mixes them up. The paused document maps it to its call.
fn new_approval_request_id() -> String {
    format!("mcpr_{}", uuid::Uuid::new_v4().simple())
}

impl PausedDocument {
    /// The approval request that asked about call `call_id`.
    fn request_of(&self, call_id: &str) -> Option<&str> {
        self.approvals
            .iter()
            .find(|(_, call)| *call == call_id)
            .map(|(request, _)| request.as_str())
    }
}

/// Runs `prepared` (a response whose `mcp` tools this server runs), answering as a stream
/// when `stream`, else as one object once it ends.
pub(crate) async fn answer(
    app: &App,
    caller: Principal,
    prepared: Prepared,
    mcp: McpRun,
    log: &RequestLog,
    stream: bool,
    permit: service::Slot,
) -> Result<Response, OpenAiError> {
    let Prepared {
        id, call, begun, ..
    } = prepared;
    let previous = begun.previous_response_id.clone();
    if !begun.store {
        refuse_unstored_pause(app, &mcp)?;
    }
    // A continuation runs what the paused response ran: its decisions are checked against
    // it first, and it is taken only once the new run is ready.
    let continued = match (&previous, mcp.approvals.is_empty()) {
        (Some(previous), false) => Some(decide(app, caller, previous, &mcp.approvals).await?),
        _ => None,
    };
    let servers = match &continued {
        Some((document, _)) => document.servers.clone(),
        None => mcp.servers,
    };
    // A continued call's `mcp_call` names the request it answered (a declined one's too):
    // the client matches each answer it sent to the item that shows what came of it.
    let requested: BTreeMap<String, String> = continued
        .as_ref()
        .map(|(document, _)| {
            document
                .approvals
                .iter()
                .map(|(request, call)| (call.clone(), request.clone()))
                .collect()
        })
        .unwrap_or_default();
    let allowed: Vec<(String, Option<Vec<String>>)> = servers
        .iter()
        .map(|server| (server.server_label.clone(), server.allowed_tools.clone()))
        .collect();
    let (mut spec, _) = match &mcp.alias {
        Some(agent) => app.service.agent_spec(agent, call, caller),
        None => app.service.mcp_run_spec(call, caller, &allowed),
    }
    .map_err(gateway_error)?;
    spec.label = begun.store.then(|| id.clone());
    let grants = continued
        .as_ref()
        .map(|(document, _)| document.paused.grants.clone())
        .unwrap_or_default();
    let policy = app
        .service
        .approval_policy()
        .clone()
        .with_request(super::request_policy(&servers));
    let prepared = app
        .service
        .chat()
        .prepare(spec)
        .await
        .map_err(|error| unusable(&error))?;
    let prepared = if policy.is_never() {
        prepared
    } else {
        prepared
            .with_approval(policy, grants)
            .map_err(|error| unusable(&error))?
    };
    let listed = if continued.is_some() {
        Vec::new()
    } else {
        listings(app, &servers)
    };
    let resumed = match (continued, &previous) {
        (Some((_, decisions)), Some(previous)) => {
            Some((take(app, caller, previous).await?, decisions))
        }
        _ => None,
    };
    let worker = record(app, caller, &begun).await?;
    let (cancel, registration) = app.service.runs().register(&[&id], caller);
    registration.show(begun.clone());
    let events = match resumed {
        Some((mut paused, decisions)) => {
            // The continuation is a response of its own: its answers carry its id.
            paused.label = begun.store.then(|| id.clone());
            prepared
                .agent()
                .resume_stream(paused, decisions, Some(id.clone()), cancel.clone())
        }
        None => prepared.stream(cancel.clone()),
    };
    let mut drive = Drive {
        own_label: begun.model.clone(),
        encoder: ResponseEncoder::new(begun),
        events,
        servers,
        listed,
        requested,
        calls: HashMap::new(),
        worker,
        log: log.clone(),
    };
    let (mut sender, receiver) = mpsc::channel::<ResponseEvent>(EVENT_BUFFER);
    let (done, ended) = tokio::sync::oneshot::channel();
    app.service.runs().spawn(
        async move {
            let _permit = permit;
            let response = drive.run(&mut sender).await;
            registration.settle(match response.status {
                ResponseState::Cancelled => conversation_tree::ResponseStatus::Cancelled,
                ResponseState::Failed => conversation_tree::ResponseStatus::Failed,
                _ => conversation_tree::ResponseStatus::Completed,
            });
            let _ = done.send(response);
        }
        .instrument(tracing::info_span!("response", response_id = %id, mcp = true)),
    );
    // Leaving the answer stops the run, as for any foreground response.
    let disconnect = cancel.drop_guard();
    if stream {
        let events = receiver.map(move |event| {
            let _held = &disconnect;
            event
        });
        return Ok(handlers::sse(events));
    }
    drop(receiver);
    let response = ended.await.map_err(|_| {
        OpenAiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "server_error",
            "the response's run ended without an answer",
        )
    })?;
    drop(disconnect);
    Ok(handlers::json(response))
}

/// Refuses a `store: false` response that could wait for approval: a paused response is kept
/// until it is answered (its run, its calls and the conversation so far), which `store: false`
/// asks never to happen. A continuation runs under the paused response's policy, so it may
/// wait again.
fn refuse_unstored_pause(app: &App, mcp: &McpRun) -> Result<(), OpenAiError> {
    let policy = app
        .service
        .approval_policy()
        .clone()
        .with_request(super::request_policy(&mcp.servers));
    if mcp.approvals.is_empty() && policy.is_never() {
        return Ok(());
    }
    Err(OpenAiError::invalid(
        "store",
        "`store: false` keeps nothing, but a response whose MCP calls wait for approval is kept \
         until they are answered: leave `store` out (or `true`), or give each `mcp` tool \
         `require_approval: \"never\"` (the operator's approval policy may still ask for some \
         tools)",
    ))
}

/// The `mcp_list_tools` items of `servers`: each server's tools the model may call.
fn listings(app: &App, servers: &[McpDeclaration]) -> Vec<(String, Vec<McpListedTool>)> {
    servers
        .iter()
        .map(|server| {
            let label = &server.server_label;
            let tools = app
                .service
                .chat()
                .mcp()
                .tools(label)
                .map(|tools| {
                    tools
                        .iter()
                        .filter_map(|tool| {
                            let name = on_server(label, tool.name())?;
                            let allowed = server
                                .allowed_tools
                                .as_ref()
                                .is_none_or(|allowed| allowed.iter().any(|one| one == name));
                            allowed.then(|| McpListedTool {
                                name: name.to_owned(),
                                description: tool.description().to_owned(),
                                input_schema: tool.spec().parameters.clone(),
                            })
                        })
                        .collect()
                })
                .unwrap_or_default();
            (label.clone(), tools)
        })
        .collect()
}

/// The name on server `label` of the tool the model calls `name` (`{label}__{tool}`).
fn on_server<'a>(label: &str, name: &'a str) -> Option<&'a str> {
    name.strip_prefix(label)?.strip_prefix("__")
}

/// A record of the response, so that it can pause (and another replica read it).
async fn record(
    app: &App,
    caller: Principal,
    begun: &ResponseObject,
) -> Result<Option<RunWorker>, OpenAiError> {
    let Some(records) = app.service.run_records() else {
        return Ok(None);
    };
    let run = NewRun::new(
        begun.id.clone(),
        app.service.owner(caller),
        RunProtocol::Responses,
        RunMode::Foreground,
        json!({"response": begun}),
    );
    let worker = records.start(run).await.map_err(run_store_failed)?;
    worker.in_progress().await.map_err(run_store_failed)?;
    Ok(Some(worker))
}

/// The paused response `previous` of `caller` and the decisions `approvals` carry, checked
/// (every unknown or missing approval named at once; the response stays paused).
async fn decide(
    app: &App,
    caller: Principal,
    previous: &str,
    approvals: &[Approval],
) -> Result<(PausedDocument, Decisions), OpenAiError> {
    let records = super::super::stored_run::records(app)?;
    let first = || format!("{}.approval_request_id", approvals[0].field);
    let not_pending = |reason: &str| {
        let ids: Vec<String> = approvals
            .iter()
            .map(|approval| format!("`{}`", approval.approval_request_id))
            .collect();
        OpenAiError::invalid(
            first(),
            format!(
                "no MCP approval request is pending with the id(s) {}: {reason}; answer only \
                 the `mcp_approval_request` items of the response `previous_response_id` names",
                ids.join(", ")
            ),
        )
    };
    let run = records
        .get(previous, caller)
        .await
        .map_err(run_store_failed)?
        .filter(|run| run.protocol == RunProtocol::Responses);
    let Some(run) = run else {
        // A response of the caller's that kept no run record asked for nothing.
        if handlers::stored(app, caller, previous).await?.is_some() {
            return Err(not_pending(&format!(
                "response `{previous}` asked for no approval"
            )));
        }
        return Err(handlers::not_found(previous).with_param("previous_response_id"));
    };
    let document = document_of(&run)
        .ok_or_else(|| not_pending(&format!("response `{previous}` asked for no approval")))?;
    if run.status != RunStatus::Paused {
        return Err(decided(previous, &run));
    }
    let mut problems = Vec::new();
    let mut decisions = Decisions::new();
    // Where each request was answered first: a second answer (even the same one) is refused,
    // as which of two differing answers counts would be a guess.
    let mut answered: HashMap<&str, &str> = HashMap::new();
    for approval in approvals {
        let id = approval.approval_request_id.as_str();
        if let Some(first) = answered.get(id) {
            problems.push(format!(
                "`{}.approval_request_id` answers `{id}` again (`{first}` answered it already)",
                approval.field
            ));
            continue;
        }
        answered.insert(id, &approval.field);
        match document.approvals.get(id) {
            Some(call) => {
                let decision = if approval.approve {
                    Decision::Approve
                } else {
                    Decision::reject(approval.reason.clone().unwrap_or_default())
                };
                decisions = decisions.decide(call.clone(), decision);
            }
            None => problems.push(format!(
                "`{}.approval_request_id` is `{}`, not an approval request of `{previous}`",
                approval.field, approval.approval_request_id
            )),
        }
    }
    if let Err(error) = document.paused.check(&decisions) {
        problems.extend(
            document
                .paused
                .pending
                .iter()
                .filter(|call| decisions.get(&call.id).is_none())
                .map(|call| {
                    format!(
                        "approval request `{}` ({}) has no `mcp_approval_response`",
                        document.request_of(&call.id).unwrap_or(&call.id),
                        call.name
                    )
                }),
        );
        if problems.is_empty() {
            problems.extend(error.problems);
        }
    }
    if !problems.is_empty() {
        let count = problems.len();
        return Err(OpenAiError::invalid(
            first(),
            format!(
                "the approvals do not fit response `{previous}` ({count} problem(s)): {}; answer \
                 each of its `mcp_approval_request` items once",
                crate::api::error::capped(problems).join("; ")
            ),
        ));
    }
    Ok((document, decisions))
}

/// Takes the paused response `previous` of `caller`, once across replicas, and ends its
/// record `completed` (its answer was whole: the calls' results come in the new response);
/// the paused run it held.
async fn take(app: &App, caller: Principal, previous: &str) -> Result<PausedRun, OpenAiError> {
    let records = super::super::stored_run::records(app)?;
    let gone = || handlers::not_found(previous).with_param("previous_response_id");
    let (run, worker) = match records.take_paused(previous, caller).await {
        Ok(Some(taken)) => taken,
        Ok(None) => return Err(gone()),
        Err(ServiceError::RunNotPaused { .. }) => {
            let run = records
                .get(previous, caller)
                .await
                .map_err(run_store_failed)?;
            return Err(run.map_or_else(gone, |run| decided(previous, &run)));
        }
        Err(error) => return Err(run_store_failed(error)),
    };
    if let Err(error) = worker.finish(RunStatus::Completed, None).await {
        tracing::warn!(run = %run.id, %error, "could not end a decided response's record");
    }
    document_of(&run)
        .map(|document| document.paused)
        .ok_or_else(|| {
            OpenAiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "server_error",
                format!("response `{previous}` was paused, but what resumes it cannot be read"),
            )
        })
}

/// The 409 of a paused response another request already continued, or whose approval
/// requests expired.
fn decided(previous: &str, run: &Run) -> OpenAiError {
    let message = match &run.error {
        Some(error) if run.status == RunStatus::Completed => {
            format!("response `{previous}` is over: {error}; ask again in a new response")
        }
        _ => format!(
            "the approval requests of response `{previous}` were answered already (its run is \
             {}): another request continued it; continue from that request's response",
            run.status
        ),
    };
    OpenAiError::new(StatusCode::CONFLICT, "approval_already_answered", message)
        .with_param("previous_response_id")
}

/// The paused document a run record keeps, if it paused.
pub(crate) fn document_of(run: &Run) -> Option<PausedDocument> {
    serde_json::from_value(run.paused.clone()?).ok()
}

/// A run that cannot be built: its model, or an MCP server that cannot be used.
fn unusable(error: &service::RunError) -> OpenAiError {
    OpenAiError::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_request_error",
        format!("the response's tools cannot run: {error}"),
    )
    .with_param("tools")
}

/// A response's run, its events encoded and sent as they come.
struct Drive {
    /// The label of the calls of tools no declared server holds: an agent alias's own,
    /// shown under the alias's name.
    own_label: String,
    encoder: ResponseEncoder,
    events: AgentStream,
    servers: Vec<McpDeclaration>,
    /// The `mcp_list_tools` items to send first.
    listed: Vec<(String, Vec<McpListedTool>)>,
    /// The approval request each decided call answered, by call id.
    requested: BTreeMap<String, String>,
    /// Each `mcp_call` in flight, by call id: its position in `output`.
    calls: HashMap<String, usize>,
    worker: Option<RunWorker>,
    log: RequestLog,
}

impl Drive {
    /// Runs to the end (or the pause), sending each event to `client` while it listens, and
    /// returns the response as it ended.
    async fn run(&mut self, client: &mut mpsc::Sender<ResponseEvent>) -> ResponseObject {
        let mut out = self.encoder.start();
        for (label, tools) in std::mem::take(&mut self.listed) {
            out.extend(self.encoder.mcp_list_tools(&label, tools));
        }
        send(client, out).await;
        while let Some(event) = self.events.next().await {
            let (out, ended) = self.encode(event);
            if let Some(ended) = ended {
                // The record says how it ended before the last event goes out: a client that
                // continues at once finds the pause stored.
                self.end(ended).await;
            }
            send(client, out).await;
        }
        if self.worker.is_some() {
            let stopped = "the run ended without a final event".to_owned();
            let out = self.encoder.fail(
                ResponseState::Failed,
                crate::api::openai::responses::encode::ResponseFailure {
                    code: "server_error".into(),
                    message: stopped.clone(),
                },
            );
            self.end(End::Status(RunStatus::Failed, Some(stopped)))
                .await;
            send(client, out).await;
        }
        self.encoder.response().clone()
    }

    /// The events `event` stands for, and how the run ends when it is its last.
    fn encode(&mut self, event: AgentEvent) -> (Vec<ResponseEvent>, Option<End>) {
        match event {
            AgentEvent::ContentDelta { text, .. } => {
                (self.encoder.encode(StreamEvent::TextDelta(text)), None)
            }
            AgentEvent::ReasoningDelta { text } => (
                self.encoder.encode(StreamEvent::ReasoningDelta { text }),
                None,
            ),
            AgentEvent::ToolStart {
                id, name, input, ..
            } => {
                let (label, tool) = self.split(&name);
                let arguments = input.to_string();
                let request = self.requested.get(&id).cloned();
                let (index, out) = self
                    .encoder
                    .mcp_call_start(&label, &tool, &arguments, request);
                self.calls.insert(id, index);
                (out, None)
            }
            AgentEvent::ToolDone {
                id, output, error, ..
            } => match self.calls.remove(&id) {
                Some(index) => {
                    let result = match error {
                        None => Ok(output),
                        Some(error) => Err(error),
                    };
                    (self.encoder.mcp_call_done(index, result), None)
                }
                None => (Vec::new(), None),
            },
            AgentEvent::ApprovalRequired { calls, outcome, .. } => {
                let mut out = Vec::new();
                let mut approvals = BTreeMap::new();
                for call in &calls {
                    let (label, tool) = self.split(&call.name);
                    let request = new_approval_request_id();
                    approvals.insert(request.clone(), call.id.clone());
                    out.extend(self.encoder.mcp_approval_request(
                        request,
                        &label,
                        &tool,
                        &call.arguments,
                    ));
                }
                self.log.usage(&outcome.usage);
                out.extend(self.encoder.encode(StreamEvent::Usage(outcome.usage)));
                out.extend(self.encoder.encode(StreamEvent::Done {
                    finish: FinishReason::Stop,
                }));
                let end = match outcome.approval.clone() {
                    Some(paused) => End::Paused(Box::new(PausedDocument {
                        paused,
                        servers: self.servers.clone(),
                        approvals,
                        response: serde_json::to_value(self.encoder.response()).unwrap_or_default(),
                    })),
                    None => End::Status(RunStatus::Completed, None),
                };
                (out, Some(end))
            }
            AgentEvent::ResponseDone {
                usage, stop_reason, ..
            } => {
                self.log.usage(&usage);
                let finish = match stop_reason {
                    StopReason::MaxTokens => FinishReason::Length,
                    _ => FinishReason::Stop,
                };
                let status = if finish == FinishReason::Length {
                    RunStatus::Incomplete
                } else {
                    RunStatus::Completed
                };
                let mut out = self.encoder.encode(StreamEvent::Usage(usage));
                out.extend(self.encoder.encode(StreamEvent::Done { finish }));
                (out, Some(End::Status(status, None)))
            }
            AgentEvent::ResponseError { error, .. } => {
                let message = error.to_string();
                let out = self.encoder.fail(
                    ResponseState::Failed,
                    crate::api::openai::responses::encode::ResponseFailure {
                        code: "server_error".into(),
                        message: message.clone(),
                    },
                );
                (out, Some(End::Status(RunStatus::Failed, Some(message))))
            }
            AgentEvent::ResponseCancelled { .. } => (
                self.encoder
                    .fail(ResponseState::Cancelled, handlers::cancelled()),
                Some(End::Status(RunStatus::Cancelled, None)),
            ),
            _ => (Vec::new(), None),
        }
    }

    /// The server and the tool on it of the tool the model calls `name`.
    fn split(&self, name: &str) -> (String, String) {
        self.servers
            .iter()
            .find_map(|server| {
                let tool = on_server(&server.server_label, name)?;
                Some((server.server_label.clone(), tool.to_owned()))
            })
            .unwrap_or_else(|| (self.own_label.clone(), name.to_owned()))
    }

    /// Records how the run ended (or that it paused).
    async fn end(&mut self, end: End) {
        let Some(worker) = self.worker.take() else {
            return;
        };
        let result = match end {
            End::Paused(document) => match serde_json::to_value(&*document) {
                Ok(document) => worker.pause(document).await.map(|_| ()),
                Err(error) => worker
                    .finish(
                        RunStatus::Failed,
                        Some(format!("the pause could not be stored: {error}")),
                    )
                    .await
                    .map(|_| ()),
            },
            End::Status(status, error) => worker.finish(status, error).await.map(|_| ()),
        };
        if let Err(error) = result {
            tracing::warn!(%error, "could not record how the response ended");
        }
    }
}

/// How a run ends.
enum End {
    Status(RunStatus, Option<String>),
    Paused(Box<PausedDocument>),
}

/// Sends `events` to the client while it listens; one that left is not waited for.
async fn send(client: &mut mpsc::Sender<ResponseEvent>, events: Vec<ResponseEvent>) {
    for event in events {
        if client.send(event).await.is_err() {
            return;
        }
    }
}

/// What a request's `mcp` tools and `mcp_approval_response` items ask this server to run, or
/// `None` when it has neither; the first problem refused with its field.
pub(crate) fn plan(
    declared: Vec<(usize, McpDeclaration)>,
    approvals: Vec<Approval>,
    previous: Option<&str>,
    alias: bool,
    request: &providers::ChatRequest,
) -> Result<Option<McpRun>, OpenAiError> {
    let messages = &request.messages;
    if declared.is_empty() && approvals.is_empty() {
        return Ok(None);
    }
    if !request.tools.is_empty()
        && let Some((index, _)) = declared.first()
    {
        return Err(OpenAiError::invalid(
            format!("tools[{index}]"),
            format!(
                "`tools[{index}]`: `mcp` tools run here and `function` tools run by the client \
                 are not served in one response yet; send them in separate requests"
            ),
        ));
    }
    if alias && let Some((index, _)) = declared.first() {
        return Err(OpenAiError::invalid(
            format!("tools[{index}]"),
            format!(
                "`tools[{index}]`: an agent alias runs the tools its operator gave it; declare \
                 `mcp` tools with a model instead"
            ),
        ));
    }
    if let Some(first) = approvals.first() {
        if previous.is_none() {
            return Err(OpenAiError::invalid(
                format!("{}.approval_request_id", first.field),
                "an `mcp_approval_response` answers a request of the response it continues: \
                 give that response's id as `previous_response_id`",
            ));
        }
        if messages
            .iter()
            .any(|message| message.role != messages::Role::System)
        {
            return Err(OpenAiError::invalid(
                "input",
                "a request that answers approval requests continues the paused response's run \
                 with those answers: send only `mcp_approval_response` items in `input`, and \
                 anything more in the request after it",
            ));
        }
    }
    Ok(Some(McpRun {
        servers: declared.into_iter().map(|(_, server)| server).collect(),
        approvals,
        alias: None,
    }))
}

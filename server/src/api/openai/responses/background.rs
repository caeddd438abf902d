//! Background responses (`background: true`): the run goes on with no client attached.
//!
//! `POST /v1/responses` creates the run's record (queued, leased to this replica) and answers
//! at once: the response, `queued`, or with `stream: true` the run's events as they are
//! stored (the stream a client follows is the stored one, so a client that leaves does not
//! stop the run, and one that comes back with `starting_after` gets the same bytes). A task
//! of this replica runs the model call, numbering each Responses event with the sequence
//! number it is stored under ([`RunWorker::push`]): every stored event is one SSE frame whose
//! `sequence_number` is its place in the run's stream.
//!
//! # Takeover
//!
//! When the replica running it dies (its lease expires) or stops (its lease is released),
//! another replica continues the run ([`ResumeResponses`]) with the same model, or agent
//! alias, and the same owner; its events go on after the stored ones, numbered on from the
//! last stored one.
//!
//! - **A model alone**: the stored request is planned again and the model call made again (a
//!   call that was in flight is made again; such a response is one model call, logged into
//!   the tree once it is whole): a `response.in_progress` with no output, then the new call's
//!   items, from `output_index` 0 again and with the same item ids. A client streaming across
//!   the takeover sees the first worker's partial items, then `response.in_progress`, then the
//!   whole answer; the final `response.completed` (and `GET`, and the tree) hold the new
//!   call's answer alone.
//! - **An agent alias** (server-side tools): the run goes on below the last round it logged
//!   in the tree ([`service::runs::continue_below`], as a Chat Shell run does): a model call
//!   in flight is made again; a tool call in flight is answered by the integrity rules (the
//!   model reads that it was not handled) and never run a second time. A
//!   `response.in_progress` carries the first worker's items, those it left open
//!   `incomplete` (each with its `response.output_item.done`), and the new items follow them
//!   (`output_index` and item ids go on after them): the final `response.completed` holds
//!   them all. `previous_response_id` continues from the run's last logged round.
//!
//! A worker that died after its final answer was logged whole, before it recorded the run's
//! end, left that answer in the tree: the run ends with it (its events after the stored
//! ones), and the model is not asked a second time.
//!
//! The run's record names its last node in the tree (`last_node`) once it ends: the node its
//! label (the response id) moved to with each answer it logged, read once.

use std::sync::{Arc, Weak};

use async_trait::async_trait;
use axum::body::Bytes;
use axum::response::Response;
use conversation_tree::{Node, NodeId, ResponseStatus};
use futures::StreamExt as _;
use providers::{FinishReason, StreamEvent};
use serde_json::{Value, json};
use service::config::AgentAlias;
use service::runs::{NewRun, Run, RunMode, RunProtocol, RunStatus};
use service::{
    Answer, GatewayError, Meter, Principal, Provenance, Resume, Resumed, RunWorker, answer_events,
};

use super::encode::{OutputItem, ResponseEncoder, ResponseEvent, ResponseFailure, ResponseState};
use super::handlers::{Prepared, cancelled, fail, failure, json, prepare};
use super::schema::CreateResponseRequest;
use crate::api::openai::error::OpenAiError;
use crate::api::openai::gateway::{gateway_error, parse};
use crate::api::sse::Frames;
use crate::api::state::App;
use service::Slot as Permit;

/// Refuses `background` without `store`, as OpenAI does: the response must be kept to be
/// read back.
pub(super) fn check(request: &CreateResponseRequest) -> Result<(), OpenAiError> {
    if request.store == Some(false) {
        return Err(OpenAiError::invalid(
            "background",
            "Background mode requires `store` to be true: a background response is read back \
             with `GET /v1/responses/{id}`, and `store: false` keeps nothing to read; leave \
             `store` out or set it to true",
        ));
    }
    Ok(())
}

/// Starts `prepared` as a background run of `caller` and answers at once: the response
/// `queued`, or (`stream`) its events as they are stored.
pub(super) async fn start(
    app: &Arc<App>,
    caller: Principal,
    prepared: Prepared,
    sent: Option<Bytes>,
    stream: bool,
    permit: Permit,
) -> Result<Response, OpenAiError> {
    let records = super::stored_run::records(app)?;
    let request: Value = sent
        .and_then(|sent| serde_json::from_slice(&sent).ok())
        .unwrap_or(Value::Null);
    let mut queued = prepared.begun.clone();
    queued.status = ResponseState::Queued;
    let spec = json!({"request": request, "response": queued});
    let run = NewRun::new(
        prepared.id.clone(),
        app.service.owner(caller),
        RunProtocol::Responses,
        RunMode::Background,
        spec,
    );
    let worker = records
        .start(run)
        .await
        .map_err(super::stored_run::run_store_failed)?;
    let id = prepared.id.clone();
    app.service.runs().spawn(drive(
        Arc::clone(app),
        caller,
        prepared,
        worker,
        Some(permit),
        Beginning::New,
    ));
    if stream {
        return Ok(super::stored_run::follow(records, caller, &id, None));
    }
    Ok(json(queued))
}

/// Whether the run begins here or goes on after another worker's events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Beginning {
    New,
    TakenOver,
}

/// Runs the model call of `prepared` and stores its events, then ends the run as the
/// response ended.
async fn drive(
    app: Arc<App>,
    caller: Principal,
    prepared: Prepared,
    worker: RunWorker,
    permit: Option<Permit>,
    beginning: Beginning,
) {
    let Prepared {
        mut call,
        agent,
        begun,
        ..
    } = prepared;
    // The run's events are the stream a client follows, whatever it asked for.
    call.stream = true;
    let mut encoder = ResponseEncoder::new(begun).starting_at(worker.next_seq());
    if let Err(error) = worker.in_progress().await {
        tracing::warn!(run = worker.id(), %error, "could not mark the run in progress");
    }
    let first = match beginning {
        Beginning::New => encoder.start(),
        Beginning::TakenOver => encoder.restart(),
    };
    push(&worker, first);
    let cancel = worker.cancel_token().clone();
    let answer = app.service.call(agent.as_ref(), call, caller, cancel).await;
    drop(permit);
    end(&app, worker, encoder, answer).await;
}

/// Stores the events of `answer` after those `encoder` numbered so far, then records the
/// run's last node and how it ended.
async fn end(
    app: &App,
    worker: RunWorker,
    mut encoder: ResponseEncoder,
    answer: Result<Answer, GatewayError>,
) {
    let last = match answer {
        Err(error) => encoder.fail(ResponseState::Failed, failure(&gateway_error(error))),
        Ok(Answer::Streamed { mut events, .. }) => loop {
            match events.next().await {
                Some(Ok(event)) => {
                    let done = matches!(event, StreamEvent::Done { .. });
                    push(&worker, encoder.encode(event));
                    if done {
                        break Vec::new();
                    }
                }
                Some(Err(stopped)) => break fail(&mut encoder, stopped),
                None => break encoder.fail(ResponseState::Cancelled, cancelled()),
            }
        },
        Ok(Answer::Whole { answer, .. }) => match answer {
            Ok(answer) => {
                for event in answer_events(&answer) {
                    push(&worker, encoder.encode(event));
                }
                Vec::new()
            }
            Err(stopped) => fail(&mut encoder, stopped),
        },
    };
    push(&worker, last);
    let response = encoder.response();
    let error = response.error.as_ref().map(|error| error.message.clone());
    let status = match response.status {
        ResponseState::Completed => RunStatus::Completed,
        ResponseState::Incomplete => RunStatus::Incomplete,
        ResponseState::Cancelled => RunStatus::Cancelled,
        ResponseState::Failed | ResponseState::Queued | ResponseState::InProgress => {
            RunStatus::Failed
        }
    };
    finish(app, worker, status, error).await;
}

/// Records how the run ended, with its last node (where its label ended in the tree).
async fn finish(app: &App, worker: RunWorker, status: RunStatus, error: Option<String>) {
    let id = worker.id().to_owned();
    let last = match app.service.chat().store().node_by_label(&id).await {
        Ok(node) => node,
        Err(error) => {
            tracing::warn!(run = %id, %error, "could not read the run's last node");
            None
        }
    };
    let last = last.map(|node| node.id());
    if let Err(error) = worker.finish_at(last, status, error).await {
        tracing::warn!(run = %id, %error, "could not record how the run ended");
    }
}

/// Queues `events` for storing, each as the SSE frame a live client gets.
fn push(worker: &RunWorker, events: Vec<ResponseEvent>) {
    for event in events {
        let mut frames = Frames::default();
        frames.event(event.name(), &event);
        let seq = worker.push(frames.take());
        debug_assert_eq!(seq, event.sequence_number, "an event's number is its place");
    }
}

/// Continues the background Responses runs this replica takes over from one that stopped.
#[derive(Debug)]
pub(crate) struct ResumeResponses {
    app: Weak<App>,
}

impl ResumeResponses {
    /// The continuation of `app`'s background responses.
    pub(crate) fn new(app: &Arc<App>) -> Self {
        ResumeResponses {
            app: Arc::downgrade(app),
        }
    }
}

#[async_trait]
impl Resume for ResumeResponses {
    /// A response that waited for approvals past `approval.timeout`: its answer was whole
    /// (it ended `completed` with its approval requests), so nothing more is sent; its
    /// record ends, and a later `mcp_approval_response` is told the requests expired and
    /// their calls never ran.
    async fn expired(&self, run: Run, worker: RunWorker) {
        let reason = format!(
            "its approval requests expired: {}; their calls did not run",
            service::runs::TIMED_OUT_REASON
        );
        if let Err(error) = worker.finish(RunStatus::Completed, Some(reason)).await {
            tracing::warn!(run = %run.id, %error, "could not end an expired response");
        }
    }

    async fn resume(&self, run: Run, worker: RunWorker) {
        // A server going away: the run's lease expires, and another replica continues it.
        let Some(app) = self.app.upgrade() else {
            return;
        };
        let planned = match plan_again(&app, &run).await {
            Ok((caller, mut prepared)) if prepared.agent.is_some() => {
                if let Some(agent) = prepared.agent.take() {
                    continue_agent(&app, caller, &agent, prepared, worker, &run).await;
                }
                return;
            }
            Ok((caller, prepared)) => answered(&app, caller, &run.id)
                .await
                .map(|answer| (caller, prepared, answer)),
            Err(reason) => Err(reason),
        };
        match planned {
            Ok((_, prepared, Some(answer))) => {
                complete_from_tree(&app, prepared, worker, answer).await;
            }
            Ok((caller, prepared, None)) => {
                drive(app, caller, prepared, worker, None, Beginning::TakenOver).await;
            }
            Err(reason) => {
                tracing::warn!(run = %run.id, %reason, "a background response taken over cannot go on");
                let frame = failed_frame(&run, worker.next_seq(), &reason);
                worker.push(frame);
                if let Err(error) = worker.finish(RunStatus::Failed, Some(reason)).await {
                    tracing::warn!(run = %run.id, %error, "could not record how the run ended");
                }
            }
        }
    }
}

/// Continues the agent run `run` of `caller` below the last round it logged, its new items
/// after those its first worker sent.
async fn continue_agent(
    app: &App,
    caller: Principal,
    agent: &AgentAlias,
    prepared: Prepared,
    worker: RunWorker,
    run: &Run,
) {
    let Prepared {
        mut call, begun, ..
    } = prepared;
    call.stream = true;
    // What the first worker sent stays the response's first output; unread, the new items
    // follow none (a client still has the stored events).
    let stored = match super::stored_run::object_of(app, run).await {
        Ok(object) => object["output"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(OutputItem::from_stored)
            .collect(),
        Err(error) => {
            let reason = &error.body().error.message;
            tracing::warn!(run = %run.id, %reason, "could not read the output a background response taken over had sent");
            Vec::new()
        }
    };
    let mut encoder = ResponseEncoder::new(begun)
        .starting_at(worker.next_seq())
        .after_output(stored);
    push(&worker, encoder.resume());
    let cancel = worker.cancel_token().clone();
    let resumed = app
        .service
        .resume_agent(agent, call, caller, cancel, run.last_node)
        .await;
    let answer = match resumed {
        Ok(Resumed::Streamed(events)) => Ok(Answer::Streamed {
            events,
            provenance: Provenance::default(),
            meter: Meter::default(),
        }),
        Ok(Resumed::Answered(node)) => match logged_answer(app, node).await {
            Ok(answer) => {
                end_with(app, worker, encoder, answer).await;
                return;
            }
            Err(reason) => {
                let events = encoder.fail(
                    ResponseState::Failed,
                    ResponseFailure {
                        code: "server_error".into(),
                        message: reason.clone(),
                    },
                );
                push(&worker, events);
                finish(app, worker, RunStatus::Failed, Some(reason)).await;
                return;
            }
        },
        Err(error) => Err(error),
    };
    end(app, worker, encoder, answer).await;
}

/// The answer logged whole at `node`.
async fn logged_answer(app: &App, node: NodeId) -> Result<StoredAnswer, String> {
    let read = |message: String| format!("cannot read its answer: {message}");
    let node = app
        .service
        .chat()
        .store()
        .node(node)
        .await
        .map_err(|error| read(error.to_string()))?
        .ok_or_else(|| read("its node is gone".to_owned()))?;
    answer_of(app, &node).await
}

/// The answer `node` holds, as events; an answer stored without its end ends as a stop.
async fn answer_of(app: &App, node: &Node) -> Result<StoredAnswer, String> {
    let (events, done) = super::handlers::stored_events(app, node)
        .await
        .map_err(|error| format!("cannot read its answer: {}", error.body().error.message))?;
    let done = done.unwrap_or(StreamEvent::Done {
        finish: FinishReason::Stop,
    });
    Ok(StoredAnswer { events, done })
}

/// The final answer of response `id` in the tree, when its last worker logged it whole before
/// it stopped (it died between logging the answer and recording the run's end): its events,
/// so the run ends with it instead of asking the model again.
async fn answered(app: &App, caller: Principal, id: &str) -> Result<Option<StoredAnswer>, String> {
    let node = super::handlers::stored(app, caller, id)
        .await
        .map_err(|error| {
            format!(
                "cannot read its conversation: {}",
                error.body().error.message
            )
        })?;
    let Some(node) = node.filter(|node| node.status() == ResponseStatus::Completed) else {
        return Ok(None);
    };
    let answer = answer_of(app, &node).await?;
    // An agent's round that called tools is not its final answer.
    let called_tools = matches!(
        answer.done,
        StreamEvent::Done {
            finish: FinishReason::ToolCalls
        }
    );
    Ok((!called_tools).then_some(answer))
}

/// A response's whole answer as the tree holds it.
struct StoredAnswer {
    events: Vec<StreamEvent>,
    done: StreamEvent,
}

/// Ends a run taken over whose answer the tree already holds: its events after the stored
/// ones, then `completed`.
async fn complete_from_tree(
    app: &App,
    prepared: Prepared,
    worker: RunWorker,
    answer: StoredAnswer,
) {
    let mut encoder = ResponseEncoder::new(prepared.begun).starting_at(worker.next_seq());
    push(&worker, encoder.restart());
    end_with(app, worker, encoder, answer).await;
}

/// Ends the run with `answer`, which the tree holds whole: its events after those `encoder`
/// numbered so far, then `completed`.
async fn end_with(
    app: &App,
    worker: RunWorker,
    mut encoder: ResponseEncoder,
    answer: StoredAnswer,
) {
    for event in answer.events {
        push(&worker, encoder.encode(event));
    }
    push(&worker, encoder.encode(answer.done));
    finish(app, worker, RunStatus::Completed, None).await;
}

/// The stored request of `run`, planned again for its owner.
async fn plan_again(app: &App, run: &Run) -> Result<(Principal, Prepared), String> {
    let caller = app.service.principal_of(&run.owner).ok_or_else(|| {
        "the token that started it is no longer one of this server's tokens".to_owned()
    })?;
    let sent = serde_json::to_vec(&run.spec["request"]).unwrap_or_default();
    let request: CreateResponseRequest = parse(&sent).map_err(|error| {
        format!(
            "its stored request cannot be read again: {}",
            error.body().error.message
        )
    })?;
    let mut prepared = prepare(app, caller, request, run.id.clone(), None)
        .await
        .map_err(|error| {
            format!(
                "its request cannot be planned again: {}",
                error.body().error.message
            )
        })?;
    // As it began on its first worker: the same creation time.
    if let Some(created) = run.spec["response"]["created_at"].as_u64() {
        prepared.begun.created_at = created;
    }
    Ok((caller, prepared))
}

/// A `response.failed` frame numbered `seq` for a run that cannot go on: its stored response
/// as it began, failed with `reason`.
fn failed_frame(run: &Run, seq: u64, reason: &str) -> Vec<u8> {
    let mut response = run.spec["response"].clone();
    response["status"] = json!("failed");
    response["error"] = json!({"code": "server_error", "message": reason});
    let event = json!({"type": "response.failed", "response": response, "sequence_number": seq});
    let mut frames = Frames::default();
    frames.event("response.failed", &event);
    frames.take().to_vec()
}

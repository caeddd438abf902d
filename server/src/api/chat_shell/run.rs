//! A Chat Shell run as it goes out: each agent event encoded once into its SSE frame,
//! numbered (its `id:` line), stored with the run's record when the server stores runs, then
//! handed to the client, if one is attached. What a client that comes back later is replayed
//! (`GET /v1/response/{id}/events`) is therefore what a live client was sent, byte for byte.

use std::pin::Pin;
use std::task::{Context, Poll};

use agent_loop::{AgentEvent, AgentOutcome, AgentStream, Giver, StopReason, Taker};
use axum::body::Bytes;
use conversation_tree::runs::{Run, RunStatus};
use conversation_tree::{NodeId, ResponseStatus};
use futures::{Stream, StreamExt as _};
use service::{Attached, Registration, RunWorker};
use tokio::sync::mpsc;
use tokio_util::sync::DropGuard;
use tracing::Instrument as _;

use crate::api::chat_shell::approval::PausedDocument;
use crate::api::chat_shell::encode::{ChatShellEncoder, ChatShellEvent};
use crate::api::chat_shell::record::StoredRequest;
use crate::api::request_log::RequestLog;
use crate::api::sse::Frames;

/// Numbers, encodes and stores a run's frames.
pub(crate) struct Outgoing {
    encoder: ChatShellEncoder,
    /// The conversation as the client names it (never the stored, namespaced id).
    client_conversation: String,
    /// The number of the next frame.
    next: u64,
    /// The run's record, when the server stores runs.
    worker: Option<RunWorker>,
    /// A run continued after a takeover: its stream began on another replica, so its
    /// `response.start` was sent already.
    continued: bool,
    /// The last node the run logged, as its end told: recorded on its record when it ends.
    last_node: Option<NodeId>,
    /// The frames being written.
    frames: Frames,
}

impl std::fmt::Debug for Outgoing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Outgoing")
            .field("next", &self.next)
            .field("stored", &self.worker.is_some())
            .field("continued", &self.continued)
            .finish_non_exhaustive()
    }
}

impl Outgoing {
    /// The frames of a new run, numbered from 0, stored through `worker` when there is one.
    pub(crate) fn new(worker: Option<RunWorker>, client_conversation: String) -> Self {
        Outgoing {
            encoder: ChatShellEncoder::default(),
            client_conversation,
            next: 0,
            worker,
            continued: false,
            last_node: None,
            frames: Frames::default(),
        }
    }

    /// The frames of `run`, taken over from another replica: numbered after its stored
    /// events, without a second `response.start`.
    pub(crate) fn continuing(worker: RunWorker, client_conversation: String, run: &Run) -> Self {
        Outgoing {
            encoder: ChatShellEncoder::default(),
            client_conversation,
            next: run.last_seq.map_or(0, |last| last + 1),
            worker: Some(worker),
            continued: run.last_seq.is_some(),
            last_node: None,
            frames: Frames::default(),
        }
    }

    /// The frames of `event`, numbered and stored (two for a pause: `tool.approval` and
    /// `response.done`); empty for an event the stream already holds (the `response.start`
    /// of a continued run); `None` for every event once this replica
    /// left the run to another (the server stops, or its lease was lost): the stream the
    /// client reads then ends without them, and a client that reconnects with its last id is
    /// given the continuing replica's events under the same numbers, as if no replica changed.
    pub(crate) fn frame(&mut self, event: &AgentEvent) -> Option<Bytes> {
        if self.worker.as_ref().is_some_and(RunWorker::is_abandoned) {
            return None;
        }
        if let AgentEvent::ResponseDone { outcome, .. }
        | AgentEvent::ResponseCancelled { outcome, .. }
        | AgentEvent::ApprovalRequired { outcome, .. } = event
            && let Some(&node) = outcome.node_ids.last()
        {
            self.last_node = Some(node);
        }
        let seq = self.next;
        self.frames.make_room();
        if self.encoder.write_text_delta(seq, event, &mut self.frames) {
            self.next += 1;
            return Some(self.store(seq));
        }
        let mut written: Option<Bytes> = None;
        for mut frame in self.encoder.encode_all(event) {
            if self.continued && matches!(frame, ChatShellEvent::Start(_)) {
                // Nothing to send, but the event still reaches a client that folds the
                // events into one answer (its id and model).
                return Some(Bytes::new());
            }
            frame.set_conversation_id(&self.client_conversation);
            let bytes = self.push(&frame);
            written = Some(match written {
                None => bytes,
                // A pause's `tool.approval` and `response.done`, sent as one chunk.
                Some(before) => [before, bytes].concat().into(),
            });
        }
        Some(written.unwrap_or_default())
    }

    /// Numbers, writes and stores `frame`, and returns its bytes.
    pub(crate) fn push(&mut self, frame: &ChatShellEvent) -> Bytes {
        let seq = self.next;
        self.next += 1;
        self.frames.make_room();
        self.frames.numbered_event(seq, frame.name(), frame);
        self.store(seq)
    }

    /// Takes frame `seq`, the bytes written since the last take, and stores it: the record
    /// keeps the very bytes sent (shared, not copied). Every frame is written into one buffer,
    /// whose room is reused once no one holds the bytes taken from it.
    fn store(&mut self, seq: u64) -> Bytes {
        let frame = self.frames.take();
        if let Some(worker) = &self.worker {
            let stored = worker.push(frame.clone());
            debug_assert_eq!(stored, seq, "the run's frames are numbered by one writer");
        }
        frame
    }

    /// The run's record, until it is finished.
    pub(crate) fn worker(&self) -> Option<&RunWorker> {
        self.worker.as_ref()
    }

    /// Marks the run as started on its record; the worker writes nothing for a run whose
    /// record is in progress already (created so, or taken over).
    pub(crate) async fn started(&self) {
        if let Some(worker) = &self.worker
            && let Err(error) = worker.in_progress().await
        {
            tracing::warn!(%error, "could not mark the run in progress");
        }
    }

    /// Notes `node` as the last one the run logged (a run taken over whose answer was whole).
    pub(crate) fn logged(&mut self, node: NodeId) {
        self.last_node = Some(node);
    }

    /// Writes the frames still queued and the run's last node, and pauses the run on its
    /// record until a person decides about its calls, with what resuming it takes: the
    /// request (`request`) and the paused run `outcome` holds.
    pub(crate) async fn pause(&mut self, request: Option<&StoredRequest>, outcome: &AgentOutcome) {
        let (Some(request), Some(paused)) = (request, &outcome.approval) else {
            // Refused up front (a run that can pause has both): never reached.
            let error = "the run paused for approval, but it keeps nothing to resume it from";
            self.finish(RunStatus::Failed, Some(error.to_owned())).await;
            return;
        };
        let Some(worker) = self.worker.take() else {
            tracing::warn!("a run paused for approval on a server that stores no runs");
            return;
        };
        if let Some(node) = self.last_node
            && let Err(error) = worker.recorded(node).await
        {
            tracing::warn!(%error, "could not record the run's last node");
        }
        let document = PausedDocument {
            request: request.clone(),
            paused: paused.clone(),
            grants: outcome.grants.clone(),
        };
        let document = match serde_json::to_value(&document) {
            Ok(document) => document,
            Err(error) => {
                let error = format!("the paused run cannot be written down: {error}");
                if let Err(error) = worker.finish(RunStatus::Failed, Some(error)).await {
                    tracing::warn!(%error, "could not record how the run ended");
                }
                return;
            }
        };
        if let Err(error) = worker.pause(document).await {
            tracing::warn!(%error, "could not record the run's pause");
        }
    }

    /// Writes the frames still queued, then the run's last node and its end on its record, in
    /// one write.
    pub(crate) async fn finish(&mut self, status: RunStatus, error: Option<String>) {
        let Some(worker) = self.worker.take() else {
            return;
        };
        if let Err(error) = worker.finish_at(self.last_node, status, error).await {
            tracing::warn!(%error, %status, "could not record how the run ended");
        }
    }
}

/// Where a run hands its events: a streaming reader takes their frames, a reader that folds
/// them into one answer takes the events themselves.
pub(crate) enum Client {
    /// A streaming reader in a task of its own (a background run's client), which the run
    /// waits for when it falls the channel's capacity behind.
    Task(mpsc::Sender<Bytes>),
    /// The streaming reader that polls the run itself ([`AttachedRun`]): it takes every
    /// frame handed over before it polls the run again, so no more pile up than one poll
    /// makes.
    Frames(Giver<Bytes>),
    /// The reader that polls the run itself and folds its events into one JSON answer.
    Events(Giver<AgentEvent>),
    /// Nobody: the events are only stored (a background run whose client did not stream, a
    /// run continued after a takeover or an expired approval).
    Nobody,
}

/// A foreground run's frames or events, the run polled by whoever reads them: the connection
/// of its client ([`service::Runs::attach`]).
pub(crate) struct AttachedRun<T> {
    run: Attached,
    handed: Taker<T>,
}

impl<T> AttachedRun<T> {
    /// `run`, polled here, and what it hands to the [`Client`] whose [`Giver`] goes with
    /// `handed`.
    pub(crate) fn new(run: Attached, handed: Taker<T>) -> Self {
        AttachedRun { run, handed }
    }
}

impl<T> Stream for AttachedRun<T> {
    type Item = T;

    /// The run hands its frames (or events) over inside `poll_run`, in this very call, and
    /// they are taken right after (an [`agent_loop::handoff`]: no waker, which each would only
    /// wake to poll the connection once more for nothing).
    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let this = self.get_mut();
        this.handed.poll_take(cx, |cx| this.run.poll_run(cx))
    }
}

/// A prepared run and where its events go.
pub(crate) struct Drive {
    /// The agent's events.
    pub(crate) events: AgentStream,
    /// How they are written and stored.
    pub(crate) outgoing: Outgoing,
    /// The run's place among the runs in flight (for cancels and shutdown).
    pub(crate) registration: Registration,
    /// The request's log line (none for a run continued after a takeover).
    pub(crate) log: Option<RequestLog>,
    /// Ends, when dropped with the run, the watch that cancels it when its record is
    /// cancelled.
    pub(crate) watch: Option<DropGuard>,
    /// The request as its record keeps it, body included: what a pause for approval stores
    /// to resume the run (`None` when no call of the run can wait).
    pub(crate) request: Option<StoredRequest>,
    /// The run's span (the request's and the response's ids), current where `events` was
    /// made and so the parent of the agent's span, which every poll of the run enters (what
    /// the model call and the tools log carries both). Entered here only where the run logs
    /// itself: its record's writes.
    pub(crate) span: tracing::Span,
}

impl Drive {
    /// Runs to the end, handing each event to `client`. A client that went away stops
    /// nothing here: a foreground run is cancelled by its answer being dropped, a background
    /// one goes on; either is driven to its end so that what it did is logged and stored.
    pub(crate) async fn run(mut self, mut client: Client) {
        self.outgoing.started().instrument(self.span.clone()).await;
        let mut output_seen = false;
        let mut ended = false;
        while let Some(event) = self.events.next().await {
            if let Some(log) = &self.log {
                note(log, &event, &mut output_seen);
            }
            let frame = self.outgoing.frame(&event);
            if let AgentEvent::ApprovalRequired { outcome, .. } = &event {
                // As an end: the pause is on the record before the client reads it, so the
                // decisions it sends at once find the run paused. The paused answer is logged
                // whole.
                self.registration.settle(ResponseStatus::Completed);
                self.outgoing
                    .pause(self.request.as_ref(), outcome)
                    .instrument(self.span.clone())
                    .await;
                ended = true;
            } else if let Some((logged, status, error)) = end_of(&event) {
                // The run logs its end before its last event: a cancel racing it is told how
                // it really ended, and a client that comes back as soon as it has the last
                // event finds every event stored.
                self.registration.settle(logged);
                self.outgoing
                    .finish(status, error)
                    .instrument(self.span.clone())
                    .await;
                ended = true;
            }
            // An event with no frame is one this replica no longer sends (see `frame`).
            let Some(frame) = frame else { continue };
            match &mut client {
                Client::Task(sender) => {
                    // A reader that left is no error: the run goes on without it.
                    let _ = sender.send(frame).await;
                }
                Client::Frames(giver) => {
                    giver.give(frame);
                }
                Client::Events(giver) => {
                    giver.give(event);
                }
                Client::Nobody => {}
            }
        }
        if !ended {
            self.outgoing
                .finish(
                    RunStatus::Failed,
                    Some("the run ended without a final event".to_owned()),
                )
                .instrument(self.span.clone())
                .await;
        }
        // The run is over: nothing is left to cancel.
        drop(self.watch.take());
    }
}

/// What `event` tells the request's log line: when the run's first output came (one flag test
/// per event), and the tokens of the whole run.
fn note(log: &RequestLog, event: &AgentEvent, output_seen: &mut bool) {
    match event {
        AgentEvent::ContentDelta { .. }
        | AgentEvent::ReasoningDelta { .. }
        | AgentEvent::ToolStart { .. }
            if !*output_seen =>
        {
            *output_seen = true;
            log.first_output();
        }
        AgentEvent::ResponseDone { usage, .. } | AgentEvent::ApprovalRequired { usage, .. } => {
            log.usage(usage);
        }
        _ => {}
    }
}

/// How the run ended, when `event` is its last: as the tree logs it, as its record says it,
/// and the error of a failed run.
fn end_of(event: &AgentEvent) -> Option<(ResponseStatus, RunStatus, Option<String>)> {
    match event {
        AgentEvent::ResponseDone { stop_reason, .. } => {
            // An answer cut at the output limit is a partial one.
            let status = if *stop_reason == StopReason::MaxTokens {
                RunStatus::Incomplete
            } else {
                RunStatus::Completed
            };
            Some((ResponseStatus::Completed, status, None))
        }
        AgentEvent::ResponseCancelled { .. } => {
            Some((ResponseStatus::Cancelled, RunStatus::Cancelled, None))
        }
        AgentEvent::ResponseError { error, .. } => Some((
            ResponseStatus::Failed,
            RunStatus::Failed,
            Some(error.to_string()),
        )),
        _ => None,
    }
}

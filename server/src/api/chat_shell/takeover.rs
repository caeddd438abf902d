//! Continuing a background Chat Shell run that another replica (or this one, before a restart)
//! left unfinished.
//!
//! The run goes on from the last answer it logged in the conversation tree
//! ([`service::runs::continue_below`], as a Responses run does): the model call that was in
//! flight is made again, and a tool call that was in flight is answered by the chain's
//! integrity rules (the model reads that the call was not handled), never run again behind
//! the model's back. Its events continue the
//! stored stream, numbered after the last stored one, without a second `response.start`, so a
//! client following it sees one stream. A run whose answer was already whole ends `completed`
//! without another model call. The continued part's text blocks are numbered from `text-1`
//! again, and its `blocks` lists hold what this replica produced.

use std::sync::{Arc, Weak};

use conversation_tree::runs::{Run, RunMode, RunStatus};
use conversation_tree::{ConversationId, NodeId};
use service::runs::{self, Continuing};
use service::{CancellationToken, Principal, Registration, Resume, RunWorker};
use tokio_util::sync::DropGuard;
use tracing::Instrument as _;

use crate::api::chat_shell::approval;
use crate::api::chat_shell::encode::{
    ChatShellEvent, ErrorCode, ErrorDetails, ResponseDoneEvent, ResponseErrorEvent, StopReasonName,
    UsagePayload,
};
use crate::api::chat_shell::handlers::follow_cancels;
use crate::api::chat_shell::plan::{Planned, plan};
use crate::api::chat_shell::record::StoredRequest;
use crate::api::chat_shell::run::{Client, Drive, Outgoing};
use crate::api::chat_shell::schema::ResponseRequest;
use crate::api::state::App;

/// The label a background run's answers carry in the tree (the label moves to each answer it
/// logs): where a replica that takes the run over finds its last answer.
pub(crate) fn label(response_id: &str) -> String {
    format!("chat-shell:{response_id}")
}

/// What comes next for a run taken over.
enum Next {
    /// Its run, prepared to go on.
    Run(Box<approval::Prepared>),
    /// Its answer was whole: the node that holds it.
    Answered(NodeId),
}

/// Continues Chat Shell runs this replica takes over.
#[derive(Debug)]
pub(crate) struct ChatShellResume {
    /// The server (weak: the server holds the run records, which hold this).
    app: Weak<App>,
}

impl ChatShellResume {
    pub(crate) fn new(app: &Arc<App>) -> Self {
        ChatShellResume {
            app: Arc::downgrade(app),
        }
    }
}

#[async_trait::async_trait]
impl Resume for ChatShellResume {
    /// Continues `run`, held through `worker`, to its end.
    async fn resume(&self, run: Run, worker: RunWorker) {
        let Some(app) = self.app.upgrade() else {
            // The server is gone: dropping the worker leaves the run to the next replica.
            return;
        };
        let span = tracing::info_span!("response", response_id = %run.id, resumed = true);
        continue_run(app, run, worker).instrument(span).await;
    }

    /// Continues `run`, paused for approval past `approval.timeout`, with every pending call
    /// rejected, to its end, with no client attached.
    async fn expired(&self, run: Run, worker: RunWorker) {
        let Some(app) = self.app.upgrade() else {
            return;
        };
        let span = tracing::info_span!("response", response_id = %run.id, expired = true);
        approval::expired(app, run, worker).instrument(span).await;
    }
}

/// Continues `run` to its end on this replica.
async fn continue_run(app: Arc<App>, run: Run, worker: RunWorker) {
    let stored: Option<StoredRequest> = serde_json::from_value(run.spec.clone()).ok();
    let client_conversation = stored
        .as_ref()
        .map(|stored| stored.client_conversation.clone())
        .unwrap_or_default();
    // Only background runs come here: the replica's takeover ends a foreground one (its client
    // left with the replica that stopped) without continuing it.
    let mut outgoing = Outgoing::continuing(worker, client_conversation, &run);
    let Some(stored) = stored else {
        fail(
            outgoing,
            &run.id,
            "the run's record does not hold a Chat Shell request".to_owned(),
        )
        .await;
        return;
    };
    outgoing.started().await;
    match next(&app, &run, &stored).await {
        Ok(Next::Run(prepared)) => {
            let (cancel, registration, watch) =
                register_continued(&app, &run, &stored.request_id, &outgoing);
            let drive = Drive {
                events: prepared.run.stream(cancel),
                outgoing,
                registration,
                log: None,
                watch,
                request: prepared.pausable.then_some(stored),
                span: tracing::Span::current(),
            };
            // No client: the events are stored, and read with `GET /v1/response/{id}/events`.
            drive.run(Client::Nobody).await;
        }
        Ok(Next::Answered(node)) => {
            outgoing.push(&ChatShellEvent::Done(ResponseDoneEvent {
                id: run.id.clone(),
                usage: UsagePayload::default(),
                stop_reason: StopReasonName::EndTurn,
                sources: Some(Vec::new()),
                blocks: Vec::new(),
                ttft_ms: None,
                model_calls: Vec::new(),
                silent_exit: false,
                silent_exit_reason: None,
                rounds: 0,
                conversation_id: Some(stored.client_conversation.clone()),
                node_ids: vec![node.get()],
                compression: None,
            }));
            outgoing.logged(node);
            outgoing.finish(RunStatus::Completed, None).await;
        }
        Err(reason) => fail(outgoing, &run.id, reason).await,
    }
}

/// Ends the run `failed` for `reason`, with a `response.error` its followers read.
pub(crate) async fn fail(mut outgoing: Outgoing, id: &str, reason: String) {
    tracing::warn!(%reason, "a taken-over run cannot be continued");
    outgoing.push(&ChatShellEvent::Error(ResponseErrorEvent {
        id: id.to_owned(),
        code: ErrorCode::InternalError,
        message: reason.clone(),
        details: ErrorDetails {
            kind: "takeover".to_owned(),
            retryable: true,
            status: None,
        },
    }));
    outgoing.finish(RunStatus::Failed, Some(reason)).await;
}

/// The run `run` continues as, from its last logged answer; why it cannot, for people.
async fn next(app: &App, run: &Run, stored: &StoredRequest) -> Result<Next, String> {
    let mut planned = replan(app, run, stored)?;
    let store = app.service.chat().store();
    let read =
        |error: conversation_tree::StoreError| format!("cannot read the conversation: {error}");
    let last = runs::last_answer(store.as_ref(), &label(&run.id), run.last_node)
        .await
        .map_err(read)?;
    match runs::continue_below(store.as_ref(), &mut planned.spec, last)
        .await
        .map_err(read)?
    {
        Continuing::Answered(node) => return Ok(Next::Answered(node)),
        Continuing::Run => {}
    }
    Ok(Next::Run(Box::new(approval::prepare(app, planned).await?)))
}

/// The request `stored` of run `run` planned again as it was first: in its conversation, for
/// its owner, under its response id; why it cannot be, for people.
pub(crate) fn replan(app: &App, run: &Run, stored: &StoredRequest) -> Result<Planned, String> {
    if !stored.withheld.is_empty() {
        return Err(format!(
            "response `{}` was sent with {}, which the server never stores, so no other replica \
             can continue it; send the request again",
            run.id,
            stored.withheld.join(" and ")
        ));
    }
    let request: ResponseRequest = serde_json::from_value(stored.request.clone())
        .map_err(|error| format!("the stored request no longer parses: {error}"))?;
    let mut planned = plan(
        request,
        &app.config.service,
        &stored.offered_bases,
        Some(&stored.request_id),
    )
    .map_err(|error| {
        format!(
            "the stored request is refused now: {}",
            error.body().message
        )
    })?;
    let conversation = ConversationId::new(&stored.conversation)
        .map_err(|error| format!("the stored conversation id is unusable: {error}"))?;
    planned.spec.conversation = Some(conversation);
    planned.spec.owner.clone_from(&stored.owner);
    planned.spec.response_id = Some(run.id.clone());
    if run.mode == RunMode::Background {
        planned.spec.label = Some(label(&run.id));
    }
    Ok(planned)
}

/// Registers `run`, continued here (taken over, or decided), among the runs in flight under
/// its request id and its id, and has a cancel of its record reach it: its token, its
/// registration, and the watch that ends with it.
pub(crate) fn register_continued(
    app: &App,
    run: &Run,
    request_id: &str,
    outgoing: &Outgoing,
) -> (CancellationToken, Registration, Option<DropGuard>) {
    // A run whose token is no longer configured goes on as the shared principal: its
    // conversation keeps the stored owner (`spec.owner`) all the same.
    let owner = app
        .service
        .principal_of(&run.owner)
        .unwrap_or(Principal::SHARED);
    let (cancel, registration) = app.service.runs().register(&[request_id, &run.id], owner);
    let watch = outgoing
        .worker()
        .map(|worker| follow_cancels(worker.cancel_token().clone(), cancel.clone()));
    (cancel, registration, watch)
}

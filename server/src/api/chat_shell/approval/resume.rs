//! A paused run rebuilt from its record and driven on: by a person's decisions (`decide`), or
//! with every call rejected once nobody decided within `approval.timeout` ([`expired`]).
//!
//! The run goes on as the same response: its events are numbered after the stored ones
//! (without a second `response.start`), so `GET /v1/response/{id}/events` reads one stream
//! from the first request to the end, pauses and all.

use std::sync::Arc;

use agent_loop::approval::{ApprovalGrants, Decisions};
use conversation_tree::runs::Run;
use service::runs::TIMED_OUT_REASON;
use service::{CancellationToken, PreparedRun, RunWorker};

use super::PausedDocument;
use crate::api::chat_shell::plan::Planned;
use crate::api::chat_shell::run::{Client, Drive, Outgoing};
use crate::api::chat_shell::takeover::{fail, register_continued, replan};
use crate::api::request_log::RequestLog;
use crate::api::state::App;

/// A run prepared, under the approval policy it follows.
pub(crate) struct Prepared {
    /// The run.
    pub(crate) run: PreparedRun,
    /// Whether some call of it can wait for approval (its record must then keep its request).
    pub(crate) pausable: bool,
}

/// `planned` prepared under its approval policy (the operator's, with its request's); why it
/// cannot be, for people.
pub(crate) async fn prepare(app: &App, planned: Planned) -> Result<Prepared, String> {
    let policy = super::policy(app, &planned);
    let run = app
        .service
        .chat()
        .prepare(planned.spec)
        .await
        .map_err(|error| format!("the run cannot be prepared again: {error}"))?;
    let Some(policy) = policy else {
        return Ok(Prepared {
            run,
            pausable: false,
        });
    };
    let run = run
        .with_approval(policy, ApprovalGrants::new())
        .map_err(|error| format!("the run cannot be prepared again: {error}"))?;
    Ok(Prepared {
        run,
        pausable: true,
    })
}

/// A paused run, rebuilt from its record: ready to go on once taken.
pub(crate) struct Paused {
    /// Its record.
    pub(crate) run: Run,
    /// What its record keeps of the pause.
    pub(crate) document: PausedDocument,
    /// Its agent and policy, rebuilt from the stored request.
    prepared: Prepared,
}

impl std::fmt::Debug for Paused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Paused")
            .field("run", &self.run.id)
            .finish_non_exhaustive()
    }
}

/// What the record of paused run `run` keeps; why it cannot be read, for people.
pub(crate) fn document(run: &Run) -> Result<PausedDocument, String> {
    let value = run
        .paused
        .clone()
        .ok_or_else(|| format!("run `{}` keeps no paused state to resume from", run.id))?;
    serde_json::from_value(value).map_err(|error| {
        format!(
            "the paused state of run `{}` is unreadable: {error}",
            run.id
        )
    })
}

impl Paused {
    /// The paused run `run` rebuilt from its record; why it cannot be, for people.
    pub(crate) async fn rebuild(app: &App, run: Run) -> Result<Self, String> {
        let document = document(&run)?;
        let planned = replan(app, &run, &document.request)?;
        let prepared = prepare(app, planned).await?;
        Ok(Paused {
            run,
            document,
            prepared,
        })
    }

    /// This pause as `taken` (the record as it was taken) holds it: the same request, and the
    /// pause it holds now.
    pub(crate) fn taken(mut self, taken: Run) -> Result<Self, String> {
        self.document = document(&taken)?;
        self.run = taken;
        Ok(self)
    }

    /// The run going on with `decisions`, held through `worker`: its drive and its cancel
    /// token. `log` is the request's log line, when a request resumed it. Made in the run's
    /// span, the current one here.
    pub(crate) fn drive(
        self,
        app: &App,
        worker: RunWorker,
        decisions: Decisions,
        log: Option<RequestLog>,
    ) -> (Drive, CancellationToken) {
        let Paused {
            run,
            document,
            prepared,
        } = self;
        if let Some(log) = &log {
            log.model(prepared.run.model_id(), prepared.run.model_config());
        }
        let request = document.request;
        let outgoing = Outgoing::continuing(worker, request.client_conversation.clone(), &run);
        let (cancel, registration, watch) =
            register_continued(app, &run, &request.request_id, &outgoing);
        let events = prepared.run.agent().resume_stream(
            document.paused,
            decisions,
            Some(run.id.clone()),
            cancel.clone(),
        );
        let drive = Drive {
            events,
            outgoing,
            registration,
            log,
            watch,
            // It may pause again: the record keeps the request for that pause too.
            request: Some(request),
            span: tracing::Span::current(),
        };
        (drive, cancel)
    }
}

/// Continues `run`, a pause nobody decided about in time (taken, held through `worker`),
/// with every pending call rejected for [`TIMED_OUT_REASON`], to its end, with no client.
pub(crate) async fn expired(app: Arc<App>, run: Run, worker: RunWorker) {
    let paused = match Paused::rebuild(&app, run.clone()).await {
        Ok(paused) => paused,
        Err(reason) => {
            let client_conversation = document(&run)
                .map(|document| document.request.client_conversation)
                .unwrap_or_default();
            let outgoing = Outgoing::continuing(worker, client_conversation, &run);
            fail(outgoing, &run.id, reason).await;
            return;
        }
    };
    let decisions = Decisions::reject_all(&paused.document.paused.pending, TIMED_OUT_REASON);
    let (drive, _cancel) = paused.drive(&app, worker, decisions, None);
    // No client: the events are stored, and read with `GET /v1/response/{id}/events`.
    drive.run(Client::Nobody).await;
}

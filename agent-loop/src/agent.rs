//! [`Agent`]: `run` and `stream`, and the [`AgentStream`] of events.

use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::Stream;
use providers::ChatModel;
use tokio_util::sync::CancellationToken;
use toolchain::ToolSet;
use tracing::Instrument;

use crate::approval::{Decisions, PausedRun};
use crate::builder::AgentBuilder;
use crate::compress::TokenCounter;
use crate::emit::Emitter;
use crate::gate::WakeGated;
use crate::handoff::{Taker, handoff};
use crate::react::TextProtocol;
use crate::{
    AgentError, AgentEvent, AgentInput, AgentOutcome, ChatOptions, ContextPolicy, StopReason,
    ToolProvider,
};

#[cfg(feature = "store")]
use conversation_tree::{Reuse, Store};

/// An LLM agent: a model, tools, and the loop that lets the model call them round after round
/// until it answers.
///
/// Build one with [`Agent::builder`]; it is cheap to clone (an `Arc`) and to build, and
/// runs any number of conversations, concurrently. [`run`](Agent::run) returns the
/// [`AgentOutcome`]; [`stream`](Agent::stream) yields [`AgentEvent`]s as they happen.
#[derive(Clone)]
pub struct Agent {
    pub(crate) inner: Arc<Inner>,
}

/// What an agent is made of.
#[derive(Clone)]
pub(crate) struct Inner {
    pub(crate) model: Arc<dyn ChatModel>,
    pub(crate) tools: ToolSet,
    pub(crate) providers: Vec<Arc<dyn ToolProvider>>,
    pub(crate) modifiers: Vec<Arc<dyn crate::tools::PromptModifier>>,
    pub(crate) text: Option<Arc<TextProtocol>>,
    pub(crate) max_rounds: usize,
    pub(crate) system: Option<String>,
    pub(crate) policy: ContextPolicy,
    pub(crate) options: ChatOptions,
    pub(crate) tool_timeout: Option<Duration>,
    /// Removes secrets from every tool result and error.
    pub(crate) redactor: Option<Arc<messages::Redactor>>,
    /// Which calls wait for a person's approval.
    pub(crate) approval: crate::approval::ApprovalPolicy,
    pub(crate) counter: TokenCounter,
    #[cfg(feature = "store")]
    pub(crate) store: Option<Arc<dyn Store>>,
    #[cfg(feature = "store")]
    pub(crate) reuse: Reuse,
}

impl Inner {
    /// The span a run is recorded in; tool calls are its children.
    fn span(&self) -> tracing::Span {
        tracing::info_span!("agent_run", model = %self.model.info().id)
    }
}

impl fmt::Debug for Agent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Agent")
            .field("model", &self.inner.model.info().id)
            .field("tools", &self.inner.tools)
            .field("text_protocol", &self.inner.text.is_some())
            .field("max_rounds", &self.inner.max_rounds)
            .finish_non_exhaustive()
    }
}

impl Agent {
    /// A builder; only the model is required.
    pub fn builder() -> AgentBuilder {
        AgentBuilder::default()
    }

    /// Runs the agent on `input` until it answers.
    ///
    /// # Errors
    ///
    /// [`AgentError`] when the input is not a valid conversation, a model call fails, or the
    /// store fails. Failing tools are not errors: the model is told and goes on.
    pub async fn run(&self, input: impl Into<AgentInput>) -> Result<AgentOutcome, AgentError> {
        self.run_until_cancelled(input, CancellationToken::new())
            .await
    }

    /// [`run`](Agent::run), stopped when `cancel` is cancelled: the model stream is closed and
    /// running tools are told to stop at once.
    ///
    /// # Errors
    ///
    /// As [`run`](Agent::run), and [`AgentError::Cancelled`] (holding the conversation so far,
    /// a valid chain) on cancellation.
    pub async fn run_until_cancelled(
        &self,
        input: impl Into<AgentInput>,
        cancel: CancellationToken,
    ) -> Result<AgentOutcome, AgentError> {
        let emitter = Arc::new(Emitter::new(None));
        self.inner
            .drive(input.into(), &cancel, &emitter)
            .instrument(self.inner.span())
            .await
    }

    /// Runs the agent on `input`, yielding its events: `ResponseStart` first, then content,
    /// reasoning and tool events, then exactly one of `ResponseDone`, `ResponseCancelled` and
    /// `ResponseError`.
    ///
    /// Cancelling `cancel` or dropping the stream stops the run at once: the model stream is
    /// closed and running tools are cancelled (they run on the stream's task; nothing is
    /// spawned). After a cancellation the stream ends with `ResponseCancelled`, whose outcome
    /// holds a valid chain: calls cut short are answered.
    ///
    /// The run's `agent_run` span is made here, a child of the span current at this call, and
    /// entered whenever the stream polls the run: a caller that streams inside a span of its
    /// own makes the stream in it, rather than entering it around every poll too.
    pub fn stream(&self, input: impl Into<AgentInput>, cancel: CancellationToken) -> AgentStream {
        let input = input.into();
        let id = input
            .response_id()
            .map_or_else(new_response_id, str::to_owned);
        self.stream_job(id, Job::Input(input), cancel)
    }

    /// Resumes a run paused for approval ([`AgentOutcome::approval`]) with one decision per
    /// pending call: approved calls run (with the round's calls that needed no approval),
    /// rejected ones are answered to the model with the reason, and the run goes on until it
    /// answers — or pauses again. The paused run may come from another process: it is plain
    /// data.
    ///
    /// # Errors
    ///
    /// As [`run`](Agent::run), and [`AgentError::Decisions`] when `decisions` leave a pending
    /// call undecided or decide a call that is not pending (nothing runs then).
    pub async fn resume(
        &self,
        paused: PausedRun,
        decisions: Decisions,
    ) -> Result<AgentOutcome, AgentError> {
        self.resume_until_cancelled(paused, decisions, CancellationToken::new())
            .await
    }

    /// [`resume`](Agent::resume), stopped when `cancel` is cancelled.
    ///
    /// # Errors
    ///
    /// As [`resume`](Agent::resume), and [`AgentError::Cancelled`].
    pub async fn resume_until_cancelled(
        &self,
        paused: PausedRun,
        decisions: Decisions,
        cancel: CancellationToken,
    ) -> Result<AgentOutcome, AgentError> {
        let emitter = Arc::new(Emitter::new(None));
        self.inner
            .resume(paused, decisions, &cancel, &emitter)
            .instrument(self.inner.span())
            .await
    }

    /// [`resume`](Agent::resume), yielding events as [`stream`](Agent::stream) does, under
    /// the response id `id` (a new one when `None`).
    pub fn resume_stream(
        &self,
        paused: PausedRun,
        decisions: Decisions,
        id: Option<String>,
        cancel: CancellationToken,
    ) -> AgentStream {
        let id = id.unwrap_or_else(new_response_id);
        self.stream_job(id, Job::Resume(Box::new(paused), decisions), cancel)
    }

    fn stream_job(&self, id: String, job: Job, cancel: CancellationToken) -> AgentStream {
        let inner = Arc::clone(&self.inner);
        let (tx, rx) = handoff();
        let emitter = Arc::new(Emitter::new(Some(tx)));
        let run_cancel = cancel.child_token();
        let token = run_cancel.clone();
        let span = inner.span();
        #[cfg(feature = "store")]
        let finish_on_drop = inner.store.is_some();
        #[cfg(not(feature = "store"))]
        let finish_on_drop = false;
        let driver = async move {
            emitter.send(AgentEvent::ResponseStart {
                id: id.clone(),
                model: inner.model.info().id.clone(),
                created: SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map_or(0, |since| since.as_secs()),
            });
            // Cancelled when this future is dropped, so that work a tool started elsewhere on
            // the run's token stops too.
            let _guard = run_cancel.clone().drop_guard();
            let work: Pin<Box<dyn Future<Output = Result<AgentOutcome, AgentError>> + Send + '_>> =
                match job {
                    Job::Input(input) => Box::pin(inner.drive(input, &run_cancel, &emitter)),
                    Job::Resume(paused, decisions) => {
                        Box::pin(inner.resume(*paused, decisions, &run_cancel, &emitter))
                    }
                };
            let result = work.instrument(span).await;
            emitter.send(terminal(id, result));
        };
        AgentStream {
            driver: Some(WakeGated::new(Box::pin(driver))),
            events: rx,
            cancel: token,
            finish_on_drop,
        }
    }

    /// Checks `input` as a run would before its first model call (a valid chain with
    /// something to answer; a conversation only with a store), so a server can refuse a bad
    /// request before it starts streaming.
    ///
    /// # Errors
    ///
    /// The [`AgentError`] the run would end with.
    pub fn check(&self, input: &AgentInput) -> Result<(), AgentError> {
        #[cfg(feature = "store")]
        if let (None, Some(conversation)) = (&self.inner.store, input.conversation()) {
            return Err(AgentError::NoStore {
                conversation: conversation.to_string(),
            });
        }
        let system = self
            .inner
            .text
            .is_none()
            .then_some(self.inner.system.as_deref())
            .flatten();
        crate::ConversationContext::start(
            system,
            input.history().to_vec(),
            input.human_parts().to_vec(),
            self.inner.max_rounds,
            &self.inner.counter,
        )
        .map(drop)
    }

    /// This agent with `policy` deciding which calls wait for approval (as
    /// [`AgentBuilder::approval`]), for a caller handed a built agent (a service's prepared
    /// run) that adds its own policy. Cheap: the agent's parts are shared.
    ///
    /// # Errors
    ///
    /// [`AgentError::ApprovalNeedsNativeTools`] for a policy that can ask, on a text-protocol
    /// agent.
    pub fn with_approval(
        &self,
        policy: crate::approval::ApprovalPolicy,
    ) -> Result<Agent, AgentError> {
        if self.inner.text.is_some() && !policy.is_never() {
            return Err(AgentError::ApprovalNeedsNativeTools);
        }
        let mut inner = (*self.inner).clone();
        inner.approval = policy;
        Ok(Agent {
            inner: Arc::new(inner),
        })
    }

    /// The model's id.
    pub fn model_id(&self) -> &str {
        &self.inner.model.info().id
    }
}

/// A run's [`AgentEvent`]s: what [`Agent::stream`] returns. The run makes progress only while
/// the stream is polled; dropping it cancels the run.
///
/// An agent with a store finishes a dropped run in the background on the current tokio
/// runtime, cancelled: the model stream and the tools stop at once as for any cancellation,
/// and what had arrived is logged as a `cancelled` node, so a client that goes away loses
/// nothing it was shown and leaves a conversation that continues.
pub struct AgentStream {
    driver: Option<WakeGated<Pin<Box<dyn Future<Output = ()> + Send>>>>,
    events: Taker<AgentEvent>,
    /// The run's own token: cancelled when the stream is dropped mid-run.
    cancel: CancellationToken,
    /// Whether a dropped run is finished in the background to log its end.
    finish_on_drop: bool,
}

impl Drop for AgentStream {
    fn drop(&mut self) {
        let Some(driver) = self.driver.take() else {
            return;
        };
        self.cancel.cancel();
        if !self.finish_on_drop {
            return;
        }
        // Outside a runtime (or while it shuts down) the run is dropped as it stands; history
        // loading repairs whatever it left unanswered.
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            drop(handle.spawn(driver.into_inner()));
        }
    }
}

impl fmt::Debug for AgentStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentStream")
            .field("running", &self.driver.is_some())
            .finish_non_exhaustive()
    }
}

impl Stream for AgentStream {
    type Item = AgentEvent;

    /// The run's events are handed over inside the driver's poll, in this very call, and
    /// taken right after (a [`handoff`]: no waker, which each event would only wake to poll
    /// the caller's task once more for nothing). The driver itself is polled only when
    /// something woke it: asked for the next event right after one, it is still waiting on
    /// the provider.
    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<AgentEvent>> {
        let this = self.get_mut();
        this.events
            .poll_take(cx, |cx| WakeGated::poll_slot(&mut this.driver, cx))
    }
}

/// What a stream runs: a new input, or a paused run with its decisions.
enum Job {
    Input(AgentInput),
    Resume(Box<PausedRun>, Decisions),
}

/// `resp-` and 12 random hex digits, as Chat Shell's ids.
fn new_response_id() -> String {
    let uuid = uuid::Uuid::new_v4().simple().to_string();
    format!("resp-{}", &uuid[..12])
}

/// The event that ends the stream of `result`.
fn terminal(id: String, result: Result<AgentOutcome, AgentError>) -> AgentEvent {
    match result {
        Ok(outcome) if outcome.approval.is_some() => AgentEvent::ApprovalRequired {
            id,
            calls: outcome
                .approval
                .as_ref()
                .map(|paused| paused.pending.clone())
                .unwrap_or_default(),
            usage: outcome.usage,
            outcome: Arc::new(outcome),
        },
        Ok(outcome) => AgentEvent::ResponseDone {
            id,
            usage: outcome.usage,
            stop_reason: outcome.stop_reason.unwrap_or(StopReason::EndTurn),
            silent_exit: outcome.silent_exit.is_some(),
            silent_exit_reason: outcome.silent_exit.clone(),
            rounds: outcome.rounds,
            #[cfg(feature = "store")]
            conversation_id: outcome.conversation_id.as_ref().map(ToString::to_string),
            #[cfg(not(feature = "store"))]
            conversation_id: None,
            #[cfg(feature = "store")]
            node_ids: outcome.node_ids.iter().map(|node| node.get()).collect(),
            #[cfg(not(feature = "store"))]
            node_ids: Vec::new(),
            outcome: Arc::new(outcome),
        },
        Err(AgentError::Cancelled { outcome }) => AgentEvent::ResponseCancelled {
            id,
            partial_content: outcome.text.clone(),
            outcome: Arc::from(outcome),
        },
        Err(error) => AgentEvent::ResponseError {
            id,
            error: Arc::new(error),
        },
    }
}

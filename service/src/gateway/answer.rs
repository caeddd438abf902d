//! The answer to a [`GatewayCall`]: from the model, from the tree, or from an agent alias's
//! run, logged as it passes. [`Service::call`] is the one way down: the HTTP layer hands it a
//! planned call and gets the answer's events (or the whole answer) back up.

use std::sync::Arc;

use agent_loop::approval::{ApprovalGrants, Decisions};
use agent_loop::{AgentError, AgentEvent, CancellationToken, StopReason};
use conversation_tree::{NodeId, ResponseStatus, Reuse};
use futures::StreamExt as _;
use futures::stream::BoxStream;
use messages::{ContentPart, Message};
use providers::{
    ChatModel, ChatRequest, ChatResponse, FinishReason, ProviderError, ResponseBuilder, StreamEvent,
};
use tokio::sync::oneshot;

use super::Meter;
use super::logged::logged;
use super::replay::replay_events;
use super::{CallLog, GatewayCall, GatewayError, Logging, Source};
use crate::config::AgentAlias;
use crate::runs::{Continuing, Runs};
use crate::spec::{DEFAULT_TOOL_ROUNDS, ModelRequest, RunInput, RunSpec};
use crate::{Principal, Service};

/// The events of an answer, in the order a model streams them. Its last item ends it: `Done`,
/// or why it stopped; when the exchange is logged, that item comes only once the log holds how
/// the answer ended, so a client told that an answer ended can rely on it being kept.
pub type Events = BoxStream<'static, Result<StreamEvent, Stopped>>;

/// What failed when an answer stopped before its end.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    /// The model call failed (or its stream broke off).
    #[error(transparent)]
    Provider(ProviderError),
    /// An agent alias's run failed.
    #[error(transparent)]
    Agent(Arc<AgentError>),
}

/// Why an answer stopped before its `Done`.
#[derive(Debug)]
pub enum Stopped {
    /// The provider (or the agent) failed; this is what the client is told.
    Failed(Failure),
    /// The answer was cancelled (a cancel request, or the service shutting down); what it had
    /// produced is kept.
    Cancelled,
}

impl Stopped {
    /// How the log records an answer that stopped this way.
    pub fn status(&self) -> ResponseStatus {
        match self {
            Stopped::Failed(_) => ResponseStatus::Failed,
            Stopped::Cancelled => ResponseStatus::Cancelled,
        }
    }
}

/// Whether the conversation tree answered, when the operator lets it answer deterministic
/// repeats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cache {
    /// The tree held the answer to this very request; no model was called.
    Hit,
    /// The model was called.
    Miss,
}

impl Cache {
    /// `hit` or `miss`.
    pub fn as_str(self) -> &'static str {
        match self {
            Cache::Hit => "hit",
            Cache::Miss => "miss",
        }
    }
}

/// How an answer came about, whatever its form.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Provenance {
    /// Chain faults repaired in the client's conversation.
    pub repairs: usize,
    /// Request fields left out because the provider cannot honour them and the operator lets
    /// them be dropped (`drop_unsupported_params`), by their names in the client's request.
    pub dropped: Vec<&'static str>,
    /// Whether the tree answered (only when the operator lets it answer deterministic
    /// repeats, and the exchange is logged).
    pub cache: Option<Cache>,
}

/// The answer to a call, as the call asked for it.
pub enum Answer {
    /// A streamed answer: its events, logged as they pass.
    Streamed {
        /// The events.
        events: Events,
        /// How it came about.
        provenance: Provenance,
        /// When the first output passed and the usage reported, once `events` has ended.
        meter: Meter,
    },
    /// A whole answer, already logged.
    Whole {
        /// The answer, or why it stopped.
        answer: Result<Arc<ChatResponse>, Stopped>,
        /// How it came about.
        provenance: Provenance,
        /// The node it was logged as (`None` when it is not logged, or the store failed).
        node: Option<NodeId>,
    },
}

/// An answer on its way, before the caller's form is chosen.
enum Opened {
    /// Events to pass on (a model's stream, a stored answer replayed, an agent's run), logged
    /// as they pass; the node once logged.
    Events {
        events: Events,
        meter: Meter,
        node: Option<oneshot::Receiver<NodeId>>,
    },
    /// A model asked for its whole answer at once (its non-streamed API).
    Whole {
        model: Arc<dyn ChatModel>,
        request: Box<ChatRequest>,
        pending: Box<PendingLog>,
    },
}

impl Service {
    /// Answers `call` of `principal`: an agent's run for an agent alias (`agent`, from
    /// [`Service::agent_for`]), else the model's answer or the one the tree holds for this
    /// very request; streamed or whole as the call asks. The exchange is logged before its
    /// end reaches the caller. Cancelling `cancel` stops the answer (the agent's run, or the
    /// model's call), which then ends with [`Stopped::Cancelled`].
    pub async fn call(
        &self,
        agent: Option<&AgentAlias>,
        call: GatewayCall,
        principal: Principal,
        cancel: CancellationToken,
    ) -> Result<Answer, GatewayError> {
        let stream = call.stream;
        let (opened, provenance) = self.begin(agent, call, principal, cancel.clone()).await?;
        Ok(match opened {
            Opened::Events { events, meter, .. } if stream => Answer::Streamed {
                events,
                provenance,
                meter,
            },
            Opened::Events { events, node, .. } => {
                let answer = collect(events).await.map(Arc::new);
                let node = match node {
                    Some(node) => node.await.ok(),
                    None => None,
                };
                Answer::Whole {
                    answer,
                    provenance,
                    node,
                }
            }
            Opened::Whole {
                model,
                request,
                pending,
            } => {
                let (answer, node) = complete(model, *request, *pending, cancel).await;
                Answer::Whole {
                    answer,
                    provenance,
                    node,
                }
            }
        })
    }

    async fn begin(
        &self,
        agent: Option<&AgentAlias>,
        call: GatewayCall,
        principal: Principal,
        cancel: CancellationToken,
    ) -> Result<(Opened, Provenance), GatewayError> {
        if let Some(agent) = agent {
            let meter = Meter::default();
            let (events, dropped) = self
                .agent_run(agent, call, principal, cancel, meter.clone())
                .await?;
            let opened = Opened::Events {
                events,
                meter,
                node: None,
            };
            let provenance = Provenance {
                dropped,
                ..Provenance::default()
            };
            return Ok((opened, provenance));
        }
        let reuse = if self.config().reuse_deterministic_answers {
            Reuse::Deterministic
        } else {
            Reuse::Never
        };
        let stream = call.stream;
        let policy = self
            .config()
            .unsupported_params(&call.model.config.model_id);
        let mut prepared = self
            .chat()
            .prepare_call(call, self.owner(principal), reuse, policy)
            .await?;
        let cache = match (&prepared.source, reuse) {
            _ if prepared.log.is_none() => None,
            (_, Reuse::Never) => None,
            (Source::Stored(_), _) => Some(Cache::Hit),
            (Source::Model { .. }, _) => Some(Cache::Miss),
        };
        let provenance = Provenance {
            repairs: prepared.repairs,
            dropped: std::mem::take(&mut prepared.dropped),
            cache,
        };
        let meter = prepared
            .log
            .as_ref()
            .map(|log| log.meter().clone())
            .unwrap_or_default();
        let pending = PendingLog {
            log: prepared.log,
            answer: ResponseBuilder::default(),
            runs: Arc::clone(self.runs()),
        };
        let events = match prepared.source {
            Source::Model { model, request } if stream => match model.stream(*request).await {
                Ok(events) => events,
                // Nothing was answered, so nothing is logged.
                Err(error) => return Err(GatewayError::Provider(pending.discard(error))),
            },
            // A whole answer is asked for as one: the provider's non-streamed API, and the
            // answer it gives is the one logged and returned.
            Source::Model { model, request } => {
                let opened = Opened::Whole {
                    model,
                    request,
                    pending: Box::new(pending),
                };
                return Ok((opened, provenance));
            }
            Source::Stored(message) => {
                futures::stream::iter(replay_events(&message).into_iter().map(Ok)).boxed()
            }
        };
        let (told, node) = oneshot::channel();
        let events = logged(events, pending, meter.clone(), told, cancel);
        Ok((
            Opened::Events {
                events,
                meter,
                node: Some(node),
            },
            provenance,
        ))
    }

    /// An agent alias's run on the client's messages and options (but its tool choice), as
    /// the events of its answer (the service's own tool activity is not the client's to see),
    /// `meter` noting them, and the request fields left out under the operator's policy for
    /// the alias's model
    /// ([`ServiceConfig::agent_unsupported_params`](crate::ServiceConfig::agent_unsupported_params)).
    async fn agent_run(
        &self,
        agent: &AgentAlias,
        call: GatewayCall,
        principal: Principal,
        cancel: CancellationToken,
        meter: Meter,
    ) -> Result<(Events, Vec<&'static str>), GatewayError> {
        let name = call.model.config.model_id.clone();
        let (spec, dropped) = self.agent_spec(agent, call, principal)?;
        let events = self.agent_stream(&name, spec, cancel, meter).await?;
        Ok((events, dropped))
    }

    /// Continues an agent alias's run of `call` (its label names the answers it logged) that
    /// another worker left unfinished, below the last answer it logged
    /// ([`runs::continue_below`](crate::runs::continue_below)): a model call in flight is
    /// made again, a tool call in flight is answered by the integrity rules and never run
    /// again. `last_node` is the node the run's record names, when its label names none.
    ///
    /// # Errors
    ///
    /// As [`Service::call`]'s, and [`GatewayError::Store`] when the tree cannot be read.
    pub async fn resume_agent(
        &self,
        agent: &AgentAlias,
        call: GatewayCall,
        principal: Principal,
        cancel: CancellationToken,
        last_node: Option<NodeId>,
    ) -> Result<Resumed, GatewayError> {
        let name = call.model.config.model_id.clone();
        let label = call.label.clone().unwrap_or_default();
        let (mut spec, _) = self.agent_spec(agent, call, principal)?;
        let store = self.chat().store().as_ref();
        let read = |error| GatewayError::Store(Box::new(AgentError::Store(error)));
        let last = crate::runs::last_answer(store, &label, last_node)
            .await
            .map_err(read)?;
        match crate::runs::continue_below(store, &mut spec, last)
            .await
            .map_err(read)?
        {
            Continuing::Answered(node) => Ok(Resumed::Answered(node)),
            Continuing::Run => {
                let events = self
                    .agent_stream(&name, spec, cancel, Meter::default())
                    .await?;
                Ok(Resumed::Streamed(events))
            }
        }
    }

    /// The run spec of an agent alias answering `call`, and the request fields left out: what
    /// a front end runs itself when it shows the alias's tool activity.
    ///
    /// # Errors
    ///
    /// As [`Service::call`]'s, for a model or option the run cannot use.
    pub fn agent_spec(
        &self,
        agent: &AgentAlias,
        call: GatewayCall,
        principal: Principal,
    ) -> Result<(RunSpec, Vec<&'static str>), GatewayError> {
        let model = ModelRequest::new(agent.model.clone());
        let (mut spec, dropped) = self.run_spec_of(call, model, &agent.model, principal)?;
        spec.system.clone_from(&agent.system);
        spec.tools = agent.builtin_tools().map(str::to_owned).collect();
        if agent.searches_knowledge() {
            spec.knowledge_bases = self.knowledge_bases(principal).to_vec();
        }
        spec.max_rounds = agent.max_rounds.unwrap_or(DEFAULT_TOOL_ROUNDS);
        Ok((spec, dropped))
    }

    /// The run spec of `call` answered by the service with its own model and the tools of
    /// the operator's MCP servers `servers` (each with only the tools its list names, by
    /// their names on the server, or all of them), and the request fields left out: what a
    /// Responses request declaring `mcp` tools runs. The client's own tools are not offered.
    ///
    /// # Errors
    ///
    /// As [`Service::call`]'s, for a model or option the run cannot use.
    pub fn mcp_run_spec(
        &self,
        call: GatewayCall,
        principal: Principal,
        servers: &[(String, Option<Vec<String>>)],
    ) -> Result<(RunSpec, Vec<&'static str>), GatewayError> {
        let model = call.model.clone();
        let name = call.model.config.model_id.clone();
        let (mut spec, dropped) = self.run_spec_of(call, model, &name, principal)?;
        spec.mcp_servers = servers.iter().map(|(name, _)| name.clone()).collect();
        spec.mcp_allowed = servers
            .iter()
            .filter_map(|(name, allowed)| Some((name.clone(), allowed.clone()?)))
            .collect();
        spec.max_rounds = DEFAULT_TOOL_ROUNDS;
        Ok((spec, dropped))
    }

    /// The run spec of `call` answered by `model` (named `model_name` in the operator's
    /// per-model settings), its options screened, without tools.
    fn run_spec_of(
        &self,
        call: GatewayCall,
        model: ModelRequest,
        model_name: &str,
        principal: Principal,
    ) -> Result<(RunSpec, Vec<&'static str>), GatewayError> {
        let name = call.model.config.model_id.clone();
        let mut options = call.request.options;
        let policy = self.config().agent_unsupported_params(&name, model_name);
        let dropped =
            self.chat()
                .screen_for_agent(&name, &model, &mut options, call.unsupported, policy)?;
        // The client's tool choice names the client's tools, which an alias does not offer:
        // its own tools are the agent's to choose.
        options.tool_choice = None;
        let mut spec = RunSpec::new(model, RunInput::Messages(call.request.messages));
        spec.temperature = options.temperature;
        spec.max_tokens = options.max_tokens;
        spec.metadata = options.metadata.clone();
        spec.options = options;
        spec.label = call.label;
        spec.owner = Some(self.owner(principal).to_owned());
        spec.log = call.logging == Logging::On;
        Ok((spec, dropped))
    }

    /// The answer events of the agent run `spec` of the alias `name`.
    async fn agent_stream(
        &self,
        name: &str,
        spec: RunSpec,
        cancel: CancellationToken,
        meter: Meter,
    ) -> Result<Events, GatewayError> {
        let agent_error = |error| GatewayError::Agent {
            name: name.to_owned(),
            error: Box::new(error),
        };
        let prepared = self.chat().prepare(spec).await.map_err(agent_error)?;
        // These answers have no way to ask the client about a call: the operator's policy
        // still holds, and a call it asks about is declined, saying where it can be asked.
        let policy = self.approval_policy();
        let events = if policy.is_never() {
            // No call can pause: the events pass as they come, with no watch for a pause.
            prepared.stream(cancel).boxed()
        } else {
            let prepared = prepared
                .with_approval(policy.clone(), ApprovalGrants::new())
                .map_err(agent_error)?;
            let agent = prepared.agent().clone();
            declining(agent, prepared.stream(cancel.clone()), cancel).boxed()
        };
        Ok(events
            .flat_map(move |event| futures::stream::iter(agent_events(event, &meter)))
            .boxed())
    }
}

/// What the model reads of a call declined because its answer cannot ask anyone.
pub(crate) const CANNOT_ASK: &str = "this call needs a person's approval, which this API cannot ask \
     for; it was not run (the OpenAI Responses API and the Chat Shell API ask the client)";

/// The events of `events`, a run of `agent`, with each pause for approval answered at once
/// with every waiting call declined ([`CANNOT_ASK`]) and the run going on, until it ends.
fn declining(
    agent: agent_loop::Agent,
    events: agent_loop::AgentStream,
    cancel: CancellationToken,
) -> impl futures::Stream<Item = AgentEvent> + Send + 'static {
    // The usage of the rounds before each pause, which the resumed run does not count.
    let start = (events.boxed(), providers::Usage::default());
    futures::stream::unfold(Some(start), move |state| {
        let agent = agent.clone();
        let cancel = cancel.clone();
        async move {
            let (mut current, mut before) = state?;
            loop {
                match current.next().await? {
                    AgentEvent::ApprovalRequired {
                        id,
                        calls,
                        usage,
                        outcome,
                    } => {
                        let paused = outcome.approval.clone()?;
                        before += usage;
                        let decisions = Decisions::reject_all(&calls, CANNOT_ASK);
                        current = agent
                            .resume_stream(paused, decisions, Some(id), cancel.clone())
                            // The resumed run says it began again: this answer began once.
                            .filter(|event| {
                                std::future::ready(!matches!(
                                    event,
                                    AgentEvent::ResponseStart { .. }
                                ))
                            })
                            .boxed();
                    }
                    mut event => {
                        if let AgentEvent::ResponseDone { usage, .. } = &mut event {
                            *usage += before;
                        }
                        return Some((event, Some((current, before))));
                    }
                }
            }
        }
    })
}

/// How an agent alias's run taken over goes on ([`Service::resume_agent`]).
pub enum Resumed {
    /// The answer's events from where the run goes on, ending as [`Answer::Streamed`]'s do.
    Streamed(Events),
    /// Its last logged answer was whole: the node that holds it (no model was asked again).
    Answered(NodeId),
}

/// A model's whole answer, logged before it is returned with the node it was logged as. A
/// cancel before the answer arrives stops the call, and what it had (nothing) is logged as
/// cancelled.
async fn complete(
    model: Arc<dyn ChatModel>,
    request: ChatRequest,
    mut pending: PendingLog,
    cancel: CancellationToken,
) -> (Result<Arc<ChatResponse>, Stopped>, Option<NodeId>) {
    let answer = tokio::select! {
        biased;
        () = cancel.cancelled() => Err(Stopped::Cancelled),
        answer = model.complete(request) => answer.map_err(|error| {
            Stopped::Failed(Failure::Provider(error))
        }),
    };
    match answer {
        Ok(answer) => {
            let answer = Arc::new(answer);
            if let Some(log) = &pending.log
                && has_output(&answer.message)
            {
                log.meter().saw_output();
            }
            let node = pending
                .commit(ResponseStatus::Completed, Some(Arc::clone(&answer)))
                .await;
            (Ok(answer), node)
        }
        // A call that failed answered nothing, so nothing is logged (as when a stream cannot
        // start).
        Err(Stopped::Failed(failure)) => {
            pending.log = None;
            (Err(Stopped::Failed(failure)), None)
        }
        Err(Stopped::Cancelled) => {
            let node = pending.commit(ResponseStatus::Cancelled, None).await;
            (Err(Stopped::Cancelled), node)
        }
    }
}

/// Whether `message` holds any output (text, reasoning, a tool call): what a stream of it
/// would have passed as its first token.
fn has_output(message: &Message) -> bool {
    message.parts.iter().any(|part| match part {
        ContentPart::Reasoning(_) | ContentPart::ToolCall(_) => true,
        ContentPart::Text { text, reasoning } => !text.is_empty() || reasoning.is_some(),
        _ => false,
    })
}

/// The answer events an agent event stands for (at most two): its answer text and reasoning,
/// its end, or its failure, each noted by `meter`. The event is taken whole, so a delta's text
/// moves on uncopied.
fn agent_events(
    event: AgentEvent,
    meter: &Meter,
) -> impl Iterator<Item = Result<StreamEvent, Stopped>> + use<> {
    let events = match event {
        AgentEvent::ContentDelta { text, .. } => [Some(Ok(StreamEvent::TextDelta(text))), None],
        AgentEvent::ReasoningDelta { text } => {
            [Some(Ok(StreamEvent::ReasoningDelta { text })), None]
        }
        AgentEvent::ResponseDone {
            usage, stop_reason, ..
        } => {
            let finish = match stop_reason {
                StopReason::MaxTokens => FinishReason::Length,
                _ => FinishReason::Stop,
            };
            [
                Some(Ok(StreamEvent::Usage(usage))),
                Some(Ok(StreamEvent::Done { finish })),
            ]
        }
        AgentEvent::ResponseError { error, .. } => {
            [Some(Err(Stopped::Failed(Failure::Agent(error)))), None]
        }
        AgentEvent::ResponseCancelled { .. } => [Some(Err(Stopped::Cancelled)), None],
        _ => [None, None],
    };
    for event in events.iter().flatten().flatten() {
        meter.see(event);
    }
    events.into_iter().flatten()
}

/// A whole answer from its events, or why it stopped.
async fn collect(mut events: Events) -> Result<ChatResponse, Stopped> {
    let mut answer = ResponseBuilder::default();
    while let Some(event) = events.next().await {
        answer.push(event?);
    }
    answer
        .finish()
        .map_err(|error| Stopped::Failed(Failure::Provider(error)))
}

/// The log of an answer: written when the answer ends (whole, failed or cancelled), or, when
/// the client goes away first, with what was streamed as cancelled, so that no exchange is
/// missing from the tree.
pub(super) struct PendingLog {
    pub(super) log: Option<CallLog>,
    /// What streamed so far (a whole answer is logged as it is instead).
    pub(super) answer: ResponseBuilder,
    runs: Arc<Runs>,
}

impl PendingLog {
    /// Drops the log unwritten, for a call that answered nothing; gives `error` back.
    fn discard<E>(mut self, error: E) -> E {
        self.log = None;
        error
    }

    /// Logs the answer as ended with `status` (`whole`, or what streamed so far) and waits
    /// until the log is written: the node it is (`None` when nothing is logged, or the store
    /// failed).
    async fn commit(
        &mut self,
        status: ResponseStatus,
        whole: Option<Arc<ChatResponse>>,
    ) -> Option<NodeId> {
        self.write(status, whole)?.await.ok().flatten()
    }

    /// Starts writing the answer, ended with `status`, as a task of its own: a client that
    /// goes away while it is written does not cut the write short, and a graceful shutdown
    /// waits for it. The receiver is told the node (`None` when the store failed).
    pub(super) fn write(
        &mut self,
        status: ResponseStatus,
        whole: Option<Arc<ChatResponse>>,
    ) -> Option<oneshot::Receiver<Option<NodeId>>> {
        let log = self.log.take()?;
        let answer =
            whole.unwrap_or_else(|| Arc::new(std::mem::take(&mut self.answer).into_partial()));
        let (written, node) = oneshot::channel();
        self.runs.spawn(async move {
            let _ = written.send(record(log, &answer, status).await);
        });
        Some(node)
    }
}

impl Drop for PendingLog {
    fn drop(&mut self) {
        drop(self.write(ResponseStatus::Cancelled, None));
    }
}

/// Logs `answer` as ended with `status`: the node it is. A store that fails is reported, never
/// the client's problem (the answer was delivered).
async fn record(log: CallLog, answer: &ChatResponse, status: ResponseStatus) -> Option<NodeId> {
    let conversation = log.conversation().to_string();
    match log.record(answer, status).await {
        Ok(node) => Some(node),
        Err(error) => {
            tracing::warn!(%conversation, %error, "cannot log the exchange");
            None
        }
    }
}

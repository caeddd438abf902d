//! The loop: rounds over a [`ConversationContext`] until the model answers.
//!
//! A round: compress the chain if needed → build the request from the context → stream the
//! model's answer (or take a stored one) → run the tools it called → the next context. The
//! loop ends on a plain answer, after the final answer forced by the tool limit, on a silent
//! exit, on an error, or on cancellation.

use std::sync::Arc;
use std::time::Instant;

use chain_ast::FALLBACK_RESPONSE_CONTENT;
use messages::{Message, Role, ToolCall};
use providers::{ChatResponse, FinishReason, Usage};
use tokio_util::sync::CancellationToken;
use toolchain::{ExecutionContext, ToolSet};

use crate::agent::Inner;
use crate::call::{Asked, ask};
use crate::compress::Compressor;
use crate::context::{Answer, Round};
use crate::emit::Emitter;
use crate::notice::answer_all;
use crate::tools::offered;
use crate::{AgentError, AgentInput, AgentOutcome, ConversationContext, StopReason};

#[cfg(feature = "store")]
use crate::store::StoreLog;
#[cfg(feature = "store")]
use conversation_tree::ResponseStatus as Status;

mod approve;
mod step;

pub(crate) use approve::Resumed;

/// What a round leads to.
enum Next {
    Continue(ConversationContext),
    Done(AgentOutcome),
    /// Calls wait for approval: the outcome holds the paused run.
    Paused(AgentOutcome),
}

/// Where a run starts: a new input's context, or a paused run's.
pub(crate) struct Start {
    pub(crate) context: ConversationContext,
    /// The caller's system prompt, inside a text protocol's own.
    pub(crate) behavior: Option<String>,
    pub(crate) grants: crate::approval::ApprovalGrants,
    pub(crate) resumed: Option<Resumed>,
    #[cfg(feature = "store")]
    pub(crate) log: Option<StoreLog>,
}

/// One run's settings and the little state that is not the conversation's.
struct Run<'a> {
    agent: &'a Inner,
    cancel: &'a CancellationToken,
    emitter: &'a Arc<Emitter>,
    exec: ExecutionContext,
    /// The caller's system prompt, inside a text protocol's own.
    behavior: Option<String>,
    /// The tool-limit notice was sent: the next answer is the last.
    forced: bool,
    /// Answers in a row whose tool calls were cut off.
    truncations: usize,
    /// A silent-exit marker returned by a tool.
    marker: Option<String>,
    /// Tools approved "always" in this conversation.
    grants: crate::approval::ApprovalGrants,
    /// The paused answer and the decisions about it, for a resumed run's first round.
    resumed: Option<Resumed>,
    #[cfg(feature = "store")]
    log: Option<StoreLog>,
    /// Where the next request sits in the tree, walked before compression.
    #[cfg(feature = "store")]
    lookup: Option<crate::store::Lookup>,
    #[cfg(feature = "store")]
    nodes: Vec<conversation_tree::NodeId>,
}

impl Inner {
    /// Runs `input` to its end, sending events to `emitter`.
    pub(crate) async fn drive(
        &self,
        input: AgentInput,
        cancel: &CancellationToken,
        emitter: &Arc<Emitter>,
    ) -> Result<AgentOutcome, AgentError> {
        let input = input.into_parts();
        #[cfg(feature = "store")]
        let log = match (&self.store, input.conversation) {
            (Some(store), conversation) => {
                let mut log = StoreLog::new(
                    Arc::clone(store),
                    conversation.unwrap_or_else(conversation_tree::ConversationId::random),
                    self.reuse,
                    input
                        .anchor
                        .map(|anchor| (anchor.node, anchor.len, input.history.first().cloned())),
                );
                if let Some(label) = input.label {
                    log = log.label(label);
                }
                if let Some(owner) = input.owner {
                    log = log.owner(owner);
                }
                Some(log)
            }
            (None, Some(conversation)) => {
                return Err(AgentError::NoStore {
                    conversation: conversation.to_string(),
                });
            }
            (None, None) => None,
        };
        let history_system = input
            .history
            .first()
            .filter(|message| message.role == Role::System)
            .map(Message::text);
        // A text protocol writes its own system prompt around the caller's, every round.
        let system = self
            .text
            .is_none()
            .then_some(self.system.as_deref())
            .flatten();
        let context = ConversationContext::start(
            system,
            input.history,
            input.human,
            self.max_rounds,
            &self.counter,
        )?;
        let start = Start {
            context,
            behavior: self.system.clone().or(history_system),
            grants: input.grants,
            resumed: None,
            #[cfg(feature = "store")]
            log,
        };
        self.launch(start, cancel, emitter).await
    }

    /// Runs from `start` to the run's end.
    pub(crate) async fn launch(
        &self,
        start: Start,
        cancel: &CancellationToken,
        emitter: &Arc<Emitter>,
    ) -> Result<AgentOutcome, AgentError> {
        let mut exec = ExecutionContext::new().with_cancellation(cancel.clone());
        if let Some(timeout) = self.tool_timeout {
            exec = exec.with_call_timeout(timeout);
        }
        if let Some(redactor) = &self.redactor {
            exec = exec.with_redactor(Arc::clone(redactor));
        }
        let run = Run {
            agent: self,
            cancel,
            emitter,
            exec,
            behavior: start.behavior,
            forced: false,
            truncations: 0,
            marker: None,
            grants: start.grants,
            resumed: start.resumed,
            #[cfg(feature = "store")]
            log: start.log,
            #[cfg(feature = "store")]
            lookup: None,
            #[cfg(feature = "store")]
            nodes: Vec::new(),
        };
        run.go(start.context).await
    }
}

impl Run<'_> {
    async fn go(mut self, mut context: ConversationContext) -> Result<AgentOutcome, AgentError> {
        let agent = self.agent;
        loop {
            if self.cancel.is_cancelled() {
                return Err(self.cancelled_between_rounds(context).await);
            }
            let tools = if self.forced {
                ToolSet::new()
            } else {
                offered(&agent.tools, &agent.providers, &context)
            };
            if let Some(resumed) = self.resumed.take() {
                let (answer, decisions) = resumed.into_answer(&context);
                let next = self.native(context, answer, tools, Some(decisions)).await?;
                context = match self.settle(next).await {
                    Ok(context) => context,
                    Err(end) => return end,
                };
                continue;
            }
            let behavior =
                crate::tools::system_prompt(self.behavior.as_deref(), &agent.modifiers, &context);
            let text_chain = agent.text.as_ref().map(|protocol| {
                let chain = protocol.chain(tools.clone());
                let system = protocol.system_prompt(behavior.as_deref(), chain.as_ref());
                (protocol, chain, system)
            });
            match (&text_chain, &behavior) {
                (Some((_, _, system)), _) => {
                    context = context.with_system(system, &agent.counter);
                }
                // Without modifiers the system prompt is the one the run started with.
                (None, Some(system)) if !agent.modifiers.is_empty() => {
                    context = context.with_system(system, &agent.counter);
                }
                _ => {}
            }
            let specs = if text_chain.is_some() {
                Vec::new()
            } else {
                tools.specs()
            };
            // Where the request sits in the tree, before compression: a summary stored on
            // that path stands in for the opening it summarised.
            #[cfg(feature = "store")]
            self.look_up(&context, &specs).await?;
            context = self.compress(context).await;
            if self.cancel.is_cancelled() {
                return Err(self.cancelled_between_rounds(context).await);
            }
            let answer = match self.answer(&mut context, specs).await {
                Ok(answer) => answer,
                Err(Stop::Cancelled(partial)) => {
                    return Err(self.cancelled_during_answer(context, partial));
                }
                Err(Stop::Failed(error)) => return Err(error),
            };
            let next = match &text_chain {
                None => self.native(context, answer, tools, None).await?,
                Some((protocol, chain, _)) => {
                    self.text(context, answer, protocol, chain.as_ref(), &tools)
                        .await?
                }
            };
            context = match self.settle(next).await {
                Ok(context) => context,
                Err(end) => return end,
            };
        }
    }

    /// The context a round leads to, or the run's end.
    async fn settle(
        &mut self,
        next: Next,
    ) -> Result<ConversationContext, Result<AgentOutcome, AgentError>> {
        match next {
            Next::Continue(context) => Ok(context),
            Next::Done(outcome) => {
                // A silent exit ends the run after its tools: their results are kept.
                #[cfg(feature = "store")]
                self.log_tail(&outcome.messages, Status::Completed).await;
                Err(Ok(outcome))
            }
            Next::Paused(outcome) => Err(Ok(outcome)),
        }
    }

    /// Compresses the chain before a request, when it is over the trigger: from the summary
    /// stored on the conversation's path when there is one, so only what came after it is
    /// summarised; a summary written now is stored with the answer.
    async fn compress(&mut self, mut context: ConversationContext) -> ConversationContext {
        let agent = self.agent;
        let compressor = Compressor {
            policy: &agent.policy,
            model: agent.model.as_ref(),
            counter: agent.counter,
            max_tokens: agent.options.max_tokens,
            headers: &agent.options.extra_headers,
            cancel: self.cancel,
        };
        let limits = compressor.limits();
        let before = context.tokens();
        #[cfg(feature = "store")]
        let reused = {
            let (reusing, reused) = self.reuse_summary(context, limits.trigger).await;
            context = reusing;
            reused
        };
        #[cfg(not(feature = "store"))]
        let reused = false;
        let tokens = context.tokens();
        let chain = context.take_chain();
        let context = match compressor.run(chain, tokens).await {
            (chain, tokens, Some(mut report)) => {
                report.summary_reused = reused;
                report.tokens_before = before;
                context.with_compressed(chain, tokens, report)
            }
            (chain, tokens, None) if reused => {
                let report = crate::CompressionReport {
                    tokens_before: before,
                    tokens_after: tokens,
                    limits: Some(limits),
                    summary_reused: true,
                    ..crate::CompressionReport::default()
                };
                context.with_compressed(chain, tokens, report)
            }
            (chain, tokens, None) => context.with_chain(chain, tokens),
        };
        #[cfg(feature = "store")]
        self.keep_summary(&context);
        context
    }

    /// Where the next request sits in the tree (walked now, before compression reads the
    /// summary stored there; the answer is looked up and logged there too).
    #[cfg(feature = "store")]
    async fn look_up(
        &mut self,
        context: &ConversationContext,
        specs: &[messages::ToolSpec],
    ) -> Result<(), AgentError> {
        let agent = self.agent;
        self.lookup = match &mut self.log {
            Some(log) => Some(
                log.lookup(
                    context.messages(),
                    &agent.model.info().id,
                    specs,
                    &agent.options,
                )
                .await?,
            ),
            None => None,
        };
        Ok(())
    }

    /// The run's first chain read from the summary stored on its path, when it is over
    /// `trigger` (a history that fits is sent whole) and the summary stands for its opening;
    /// whether it was. Later rounds keep the chain compression left.
    #[cfg(feature = "store")]
    async fn reuse_summary(
        &self,
        context: ConversationContext,
        trigger: usize,
    ) -> (ConversationContext, bool) {
        if context.rounds() > 0 || !self.agent.policy.is_enabled() || context.tokens() <= trigger {
            return (context, false);
        }
        let (Some(log), Some(lookup)) = (&self.log, &self.lookup) else {
            return (context, false);
        };
        match log.stored_summary(lookup).await {
            Some(summary) => context.with_stored_summary(&summary, &self.agent.counter),
            None => (context, false),
        }
    }

    /// Stores the summary compression just wrote with the next answer logged.
    #[cfg(feature = "store")]
    fn keep_summary(&mut self, context: &ConversationContext) {
        let summarized = context
            .compression()
            .is_some_and(|report| report.pairs_summarized > 0);
        if let (true, Some(log)) = (summarized, &mut self.log)
            && let Some(summary) =
                crate::compress::stored::to_store(context.chain(), context.messages())
        {
            log.attach_summary(summary);
        }
    }

    /// The answer to the context's request: from the store when it holds a reusable one, else
    /// from the model (logged to the store).
    async fn answer(
        &mut self,
        context: &mut ConversationContext,
        specs: Vec<messages::ToolSpec>,
    ) -> Result<Answer, Stop> {
        let agent = self.agent;
        let round = context.rounds() + 1;
        let request_tokens = context.tokens();
        #[cfg(feature = "store")]
        let lookup = match (&mut self.log, self.lookup.take()) {
            (Some(log), Some(lookup)) => {
                if let Some((message, node)) = log.cached(&lookup).await.map_err(Stop::Failed)? {
                    self.nodes.push(node);
                    self.replay(&message);
                    let finish = if message.tool_calls().next().is_some() {
                        FinishReason::ToolCalls
                    } else {
                        FinishReason::Stop
                    };
                    return Ok(Answer {
                        message,
                        usage: Usage::default(),
                        finish,
                        request_tokens,
                        cached: true,
                        timing: crate::CallTiming::default(),
                        node: Some(node),
                    });
                }
                Some(lookup)
            }
            _ => None,
        };
        let request = context.request(specs, &agent.options);
        let started = Instant::now();
        let stream_text = agent.text.is_none();
        let (asked, ttft) = ask(
            agent.model.as_ref(),
            request,
            self.cancel,
            self.emitter,
            stream_text,
        )
        .await;
        let timing = crate::CallTiming::new(ttft, started.elapsed());
        log_call(&agent.model.info().id, round, &asked, timing);
        let response = match asked {
            Asked::Answer(response) => response,
            Asked::Cancelled(partial) => {
                #[cfg(feature = "store")]
                self.log_stopped(
                    lookup.as_ref(),
                    context.messages(),
                    partial.as_ref(),
                    Status::Cancelled,
                    timing,
                )
                .await;
                return Err(Stop::Cancelled(partial));
            }
            Asked::Failed(source, _partial) => {
                #[cfg(feature = "store")]
                self.log_stopped(
                    lookup.as_ref(),
                    context.messages(),
                    _partial.as_ref(),
                    Status::Failed,
                    timing,
                )
                .await;
                return Err(Stop::Failed(AgentError::Provider {
                    round,
                    source: Box::new(source),
                }));
            }
        };
        let ChatResponse {
            message,
            usage,
            finish_reason,
            ..
        } = response;
        #[cfg(feature = "store")]
        let node = match (&mut self.log, &lookup) {
            (Some(log), Some(lookup)) => {
                let node = log
                    .log(
                        lookup,
                        context.messages(),
                        &message,
                        usage,
                        timing,
                        Status::Completed,
                    )
                    .await
                    .map_err(Stop::Failed)?;
                self.nodes.push(node);
                Some(node)
            }
            _ => None,
        };
        Ok(Answer {
            message,
            usage,
            finish: finish_reason,
            request_tokens,
            cached: false,
            timing,
            #[cfg(feature = "store")]
            node,
        })
    }

    /// Streams a stored answer's text and reasoning as if the model had sent them.
    #[cfg(feature = "store")]
    fn replay(&self, message: &Message) {
        use messages::ContentPart;

        self.emitter.next_answer();
        for part in &message.parts {
            match part {
                ContentPart::Reasoning(reasoning) => self.emitter.reasoning(&reasoning.text),
                ContentPart::Text { text, .. } if self.agent.text.is_none() => {
                    self.emitter.content(text);
                }
                _ => {}
            }
        }
    }

    /// The outcome of a finished run.
    fn finish(
        &mut self,
        context: ConversationContext,
        text: String,
        stop: StopReason,
        silent: Option<String>,
    ) -> AgentOutcome {
        let silent = silent.or_else(|| self.marker.take());
        let stop = if silent.is_some() {
            StopReason::SilentExit
        } else {
            stop
        };
        self.outcome(context, text, Some(stop), silent)
    }

    fn outcome(
        &mut self,
        context: ConversationContext,
        text: String,
        stop: Option<StopReason>,
        silent: Option<String>,
    ) -> AgentOutcome {
        let mut outcome = context.into_outcome(text, stop, silent);
        outcome.grants = self.grants.clone();
        #[cfg(feature = "store")]
        {
            outcome.conversation_id = self.log.as_ref().map(|log| log.conversation().clone());
            outcome.node_ids = std::mem::take(&mut self.nodes);
        }
        outcome
    }

    /// The error of a run cancelled between rounds, after what its tools returned is logged.
    pub(super) async fn cancelled_between_rounds(
        &mut self,
        context: ConversationContext,
    ) -> AgentError {
        #[cfg(feature = "store")]
        self.log_tail(context.messages(), Status::Cancelled).await;
        self.cancelled(context)
    }

    /// Logs the messages after the last logged answer (tool results, a question not asked
    /// yet) with an empty answer of `status`, so that what the tools returned is kept and the
    /// conversation continues after them.
    #[cfg(feature = "store")]
    async fn log_tail(&mut self, transcript: &[Message], status: Status) {
        let Some(log) = &mut self.log else { return };
        if transcript
            .last()
            .is_none_or(|message| message.role == Role::Ai)
        {
            return;
        }
        let lookup = match log
            .lookup(
                transcript,
                &self.agent.model.info().id,
                &[],
                &self.agent.options,
            )
            .await
        {
            Ok(lookup) => lookup,
            Err(error) => {
                tracing::warn!(%error, "could not log the end of a stopped run");
                return;
            }
        };
        self.log_stopped(
            Some(&lookup),
            transcript,
            None,
            status,
            crate::CallTiming::default(),
        )
        .await;
    }

    /// Logs what had arrived of an answer that did not end (possibly nothing) with its
    /// status. A failure to log is reported in the trace and does not hide why the run stopped.
    #[cfg(feature = "store")]
    async fn log_stopped(
        &mut self,
        lookup: Option<&crate::store::Lookup>,
        transcript: &[Message],
        partial: Option<&Message>,
        status: Status,
        timing: crate::CallTiming,
    ) {
        let (Some(log), Some(lookup)) = (&mut self.log, lookup) else {
            return;
        };
        let empty = Message::new(Role::Ai, Vec::new());
        let answer = partial.unwrap_or(&empty);
        match log
            .log(lookup, transcript, answer, Usage::default(), timing, status)
            .await
        {
            Ok(node) => self.nodes.push(node),
            Err(error) => tracing::warn!(%error, %status, "could not log a stopped answer"),
        }
    }

    /// The error of a run cancelled between steps; the chain is valid as it is. Its text is
    /// what was streamed: the text of this run's answers (a text protocol streams only its
    /// final answer, which ends the run, so a cancelled one has streamed none).
    fn cancelled(&mut self, context: ConversationContext) -> AgentError {
        let text = if self.agent.text.is_none() {
            context.answers_text()
        } else {
            String::new()
        };
        AgentError::Cancelled {
            outcome: Box::new(self.outcome(context, text, None, None)),
        }
    }

    /// The error of a run cancelled while the model answered: what had arrived is kept, and
    /// its tool calls are answered as chain-ast's repair answers them.
    fn cancelled_during_answer(
        &mut self,
        context: ConversationContext,
        partial: Option<Message>,
    ) -> AgentError {
        let context = match partial {
            Some(message) => {
                let calls: Vec<ToolCall> = message.tool_calls().cloned().collect();
                let tools = answer_all(&calls, FALLBACK_RESPONSE_CONTENT);
                let answer = Answer {
                    message,
                    usage: Usage::default(),
                    finish: FinishReason::Other("cancelled".into()),
                    request_tokens: context.tokens(),
                    cached: false,
                    timing: crate::CallTiming::default(),
                    #[cfg(feature = "store")]
                    node: None,
                };
                context.with_round(Round::unexecuted(answer, calls, tools), &self.agent.counter)
            }
            None => context,
        };
        self.cancelled(context)
    }
}

/// One line per model call in the trace: which model, how it ended, how long it took to send
/// its first output and to finish, so slow starts can be told from slow answers.
fn log_call(model: &str, round: usize, asked: &Asked, timing: crate::CallTiming) {
    let ttft_ms = timing.ttft.map(|ttft| ttft.as_millis());
    let duration_ms = timing.duration.as_millis();
    match asked {
        Asked::Answer(response) => tracing::info!(
            model,
            round,
            ttft_ms,
            duration_ms,
            input_tokens = response.usage.input_tokens,
            output_tokens = response.usage.output_tokens,
            "model call answered"
        ),
        Asked::Cancelled(_) => {
            tracing::info!(model, round, ttft_ms, duration_ms, "model call cancelled");
        }
        Asked::Failed(error, _) => tracing::info!(
            model,
            round,
            ttft_ms,
            duration_ms,
            %error,
            "model call failed"
        ),
    }
}

/// Why a round stopped before its answer was complete.
enum Stop {
    Cancelled(Option<Message>),
    Failed(AgentError),
}

//! What a round's answer leads to: tools run, the tool limit, truncated calls, the text
//! protocol's sections.

use messages::{ContentPart, ToolCall};
use providers::FinishReason;
use toolchain::{NativeToolChain, ToolSet};

use super::approve::{Gate, declined_messages, in_call_order};
use super::{Next, Run};
use crate::approval::Decisions;
use crate::context::{Answer, Round};
use crate::emit::ToolEvents;
use crate::notice::{
    MAX_TRUNCATION_RETRIES, TOOL_CALL_NOT_EXECUTED, TOOL_LIMIT_REACHED_MESSAGE, answer_all,
    truncated_call_notice,
};
use crate::react::{Reply, TextProtocol};
use crate::tools::silent_exit_marker;
use crate::{AgentError, ConversationContext, StopReason};

impl Run<'_> {
    /// A round of a function-calling model.
    pub(super) async fn native(
        &mut self,
        context: ConversationContext,
        answer: Answer,
        tools: ToolSet,
        decisions: Option<Decisions>,
    ) -> Result<Next, AgentError> {
        let counter = &self.agent.counter;
        let calls: Vec<ToolCall> = answer.message.tool_calls().cloned().collect();
        let text = answer.message.text();
        if calls.is_empty() {
            let stop = self.stop_reason(&answer.finish);
            let context = context.with_last_round(Round::plain(answer));
            return Ok(Next::Done(self.finish(context, text, stop, None)));
        }
        if answer.finish == FinishReason::Length {
            return self.truncated(context, answer, calls);
        }
        self.truncations = 0;
        if self.forced || context.rounds_remaining() == 0 {
            let tools = answer_all(&calls, TOOL_CALL_NOT_EXECUTED);
            let context = context.with_round(Round::unexecuted(answer, calls, tools), counter);
            return Ok(self.limit_reached(context, text));
        }
        let (run, declined) = match self.gate(&calls, decisions) {
            Gate::Pause(pending) => {
                return Ok(Next::Paused(self.pause(context, answer, calls, pending)));
            }
            Gate::Run { run, declined } => (run, declined),
        };
        let chain = NativeToolChain::new(tools);
        self.announce_declined(&declined, chain.tools());
        let observer = ToolEvents {
            emitter: self.emitter,
            tools: chain.tools(),
            id_prefix: None,
        };
        let result = chain.execute_observed(&self.exec, &run, &observer).await;
        let exit = result.silent_exit().map(str::to_owned);
        self.marker = self
            .marker
            .take()
            .or_else(|| silent_exit_marker(&result.raw));
        let mut messages = result.messages;
        messages.extend(declined_messages(&declined));
        let round = Round {
            answer,
            tools: in_call_order(&calls, messages),
            errors: result.raw.error_count(),
            calls,
            tool_round: true,
        };
        let context = context.with_round(round, counter);
        if self.cancel.is_cancelled() {
            return Err(self.cancelled_between_rounds(context).await);
        }
        Ok(match exit {
            Some(reason) => {
                Next::Done(self.finish(context, text, StopReason::SilentExit, Some(reason)))
            }
            None => Next::Continue(context),
        })
    }

    /// A round of a text-protocol model.
    pub(super) async fn text(
        &mut self,
        context: ConversationContext,
        answer: Answer,
        protocol: &TextProtocol,
        chain: &dyn toolchain::ToolChain,
        tools: &ToolSet,
    ) -> Result<Next, AgentError> {
        let counter = &self.agent.counter;
        let raw = answer.message.text();
        let (reply, thinking) = protocol.read(&raw);
        thinking
            .iter()
            .for_each(|thought| self.emitter.reasoning(thought));
        let actions = match reply {
            Reply::Answer(text) => {
                self.emitter.content(&text);
                let stop = self.stop_reason(&answer.finish);
                let context = context.with_last_round(Round::plain(answer));
                return Ok(Next::Done(self.finish(context, text, stop, None)));
            }
            // The last answer the limit allows, but not in the answer section: take it whole.
            _ if self.forced => {
                self.emitter.content(&raw);
                let context = context.with_last_round(Round::plain(answer));
                return Ok(Next::Done(self.finish(
                    context,
                    raw,
                    StopReason::ToolLimit,
                    None,
                )));
            }
            _ if context.rounds_remaining() == 0 => {
                let context = context.with_round(Round::plain(answer), counter);
                return Ok(self.limit_reached(context, raw));
            }
            Reply::Invalid(observation) => {
                // Counted as a tool round, so a model that never follows the format still
                // reaches the limit.
                let round = Round {
                    tool_round: true,
                    ..Round::plain(answer)
                };
                let context = context
                    .with_round(round, counter)
                    .with_human(vec![ContentPart::text(observation)], counter);
                return Ok(Next::Continue(context));
            }
            Reply::Actions(actions) => actions,
        };
        let observer = ToolEvents {
            emitter: self.emitter,
            tools,
            id_prefix: Some(format!("r{}.", context.rounds() + 1)),
        };
        let (mut texts, mut media, mut calls, mut errors, mut exit) =
            (Vec::new(), Vec::new(), Vec::new(), 0, None);
        for action in &actions {
            match chain
                .execute_observed(&self.exec, action, protocol.format(), &observer)
                .await
            {
                Ok(result) => {
                    errors += result.raw.error_count();
                    exit = exit.or_else(|| result.silent_exit().map(str::to_owned));
                    self.marker = self
                        .marker
                        .take()
                        .or_else(|| silent_exit_marker(&result.raw));
                    texts.extend((!result.text.is_empty()).then_some(result.text));
                    media.extend(result.media);
                    calls.extend(result.raw.calls);
                }
                Err(error) => {
                    errors += 1;
                    texts.push(error.observation(protocol.format()));
                }
            }
        }
        let mut observation = vec![ContentPart::text(texts.join("\n"))];
        observation.extend(media);
        let round = Round {
            answer,
            tools: Vec::new(),
            calls,
            errors,
            tool_round: true,
        };
        let context = context
            .with_round(round, counter)
            .with_human(observation, counter);
        if self.cancel.is_cancelled() {
            return Err(self.cancelled_between_rounds(context).await);
        }
        Ok(match exit {
            Some(reason) => Next::Done(self.finish(
                context,
                String::new(),
                StopReason::SilentExit,
                Some(reason),
            )),
            None => Next::Continue(context),
        })
    }

    /// Tool calls cut off at the output limit: each is answered with the truncation notice.
    fn truncated(
        &mut self,
        context: ConversationContext,
        answer: Answer,
        calls: Vec<ToolCall>,
    ) -> Result<Next, AgentError> {
        self.truncations += 1;
        let tools = answer_all(&calls, &truncated_call_notice(self.truncations));
        let context =
            context.with_round(Round::unexecuted(answer, calls, tools), &self.agent.counter);
        if self.truncations >= MAX_TRUNCATION_RETRIES {
            return Err(AgentError::OutputTruncated {
                attempts: self.truncations,
            });
        }
        Ok(Next::Continue(context))
    }

    /// The tool rounds are spent: the notice goes in and the next answer is the last, or this
    /// was already the last.
    fn limit_reached(&mut self, context: ConversationContext, text: String) -> Next {
        if self.forced {
            return Next::Done(self.finish(context, text, StopReason::ToolLimit, None));
        }
        self.forced = true;
        let notice = vec![ContentPart::text(TOOL_LIMIT_REACHED_MESSAGE)];
        Next::Continue(context.with_human(notice, &self.agent.counter))
    }

    fn stop_reason(&self, finish: &FinishReason) -> StopReason {
        match finish {
            FinishReason::Length => StopReason::MaxTokens,
            _ if self.forced => StopReason::ToolLimit,
            _ => StopReason::EndTurn,
        }
    }
}

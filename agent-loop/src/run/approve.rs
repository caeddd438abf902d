//! The approval gate of a round's calls: pause before any runs, or run the approved ones and
//! answer the rejected ones.

use std::sync::Arc;

use messages::{ContentPart, Message, Role, ToolCall, ToolResponse};
use providers::{FinishReason, Usage};
use tokio_util::sync::CancellationToken;

use super::{Run, Start};
use crate::agent::Inner;
use crate::approval::{Decision, Decisions, PausedRun, PendingCall, declined_notice};
use crate::context::Answer;
use crate::emit::Emitter;
use crate::{AgentError, AgentEvent, AgentOutcome, ConversationContext};

/// A paused run's answer and the decisions about its calls: the first round of a resumed run.
pub(crate) struct Resumed {
    answer: Message,
    decisions: Decisions,
    #[cfg(feature = "store")]
    node: Option<conversation_tree::NodeId>,
}

impl Resumed {
    /// The paused answer as this round's answer, and the decisions the gate will read. Its
    /// model call was counted by the run that paused, so it comes with no usage.
    pub(super) fn into_answer(self, context: &ConversationContext) -> (Answer, Decisions) {
        let answer = Answer {
            message: self.answer,
            usage: Usage::default(),
            finish: FinishReason::ToolCalls,
            request_tokens: context.tokens(),
            cached: false,
            timing: crate::CallTiming::default(),
            #[cfg(feature = "store")]
            node: self.node,
        };
        (answer, self.decisions)
    }
}

/// What the gate lets happen to a round's calls.
pub(super) enum Gate {
    /// Some calls need a decision: none runs.
    Pause(Vec<PendingCall>),
    /// These calls run; these are answered as declined, with the notice.
    Run {
        run: Vec<ToolCall>,
        declined: Vec<(ToolCall, String)>,
    },
}

impl Inner {
    /// Resumes `paused` with `decisions`, sending events to `emitter`.
    pub(crate) async fn resume(
        &self,
        paused: PausedRun,
        decisions: Decisions,
        cancel: &CancellationToken,
        emitter: &Arc<Emitter>,
    ) -> Result<AgentOutcome, AgentError> {
        paused.check(&decisions)?;
        if !paused.answer.tool_calls().any(|_| true) {
            return Err(AgentError::Decisions(crate::approval::DecisionError {
                problems: vec!["the paused answer calls no tool".to_owned()],
            }));
        }
        let behavior = self.system.clone().or_else(|| {
            paused
                .messages
                .first()
                .filter(|message| message.role == Role::System)
                .map(Message::text)
        });
        let system = self
            .text
            .is_none()
            .then_some(self.system.as_deref())
            .flatten();
        #[cfg(feature = "store")]
        let log = match (&self.store, &paused.conversation_id) {
            (Some(store), Some(conversation)) => Some(super::StoreLog::new(
                Arc::clone(store),
                conversation.clone(),
                self.reuse,
                paused.node.map(|node| {
                    (
                        node,
                        paused.messages.len() + 1,
                        paused.messages.first().cloned(),
                    )
                }),
            )),
            (Some(store), None) => Some(super::StoreLog::new(
                Arc::clone(store),
                conversation_tree::ConversationId::random(),
                self.reuse,
                None,
            )),
            (None, _) => None,
        };
        #[cfg(feature = "store")]
        let log = log.map(|mut log| {
            if let Some(label) = paused.label.clone() {
                log = log.label(label);
            }
            if let Some(owner) = paused.owner.clone() {
                log = log.owner(owner);
            }
            log
        });
        let context = ConversationContext::start(
            system,
            paused.messages,
            Vec::new(),
            self.max_rounds,
            &self.counter,
        )?
        .with_tool_rounds(paused.tool_rounds);
        let start = Start {
            context,
            behavior,
            grants: paused.grants,
            resumed: Some(Resumed {
                answer: paused.answer,
                decisions,
                #[cfg(feature = "store")]
                node: paused.node,
            }),
            #[cfg(feature = "store")]
            log,
        };
        self.launch(start, cancel, emitter).await
    }
}

impl Run<'_> {
    /// Which of `calls` run now. With `decisions` (a resumed round) the approved ones and those
    /// that needed no approval run; otherwise all run unless one needs approval, which pauses
    /// the round.
    pub(super) fn gate(&mut self, calls: &[ToolCall], decisions: Option<Decisions>) -> Gate {
        let Some(decisions) = decisions else {
            let pending: Vec<PendingCall> = calls
                .iter()
                .filter(|call| !self.grants.allows(&call.name))
                .filter(|call| self.agent.approval.requires(call))
                .map(PendingCall::from)
                .collect();
            return if pending.is_empty() {
                Gate::Run {
                    run: calls.to_vec(),
                    declined: Vec::new(),
                }
            } else {
                Gate::Pause(pending)
            };
        };
        let (mut run, mut declined) = (Vec::new(), Vec::new());
        for call in calls {
            match decisions.get(&call.id) {
                // Calls without a decision are the ones that needed none when the run paused.
                None | Some(Decision::Approve) => run.push(call.clone()),
                Some(Decision::ApproveAlways) => {
                    self.grants.grant(call.name.clone());
                    run.push(call.clone());
                }
                Some(Decision::Reject { reason }) => {
                    declined.push((call.clone(), declined_notice(reason)));
                }
            }
        }
        Gate::Run { run, declined }
    }

    /// The run paused before `answer`'s calls ran: the outcome holds it as data.
    pub(super) fn pause(
        &mut self,
        context: ConversationContext,
        answer: Answer,
        calls: Vec<ToolCall>,
        pending: Vec<PendingCall>,
    ) -> AgentOutcome {
        let tool_rounds = context.tool_rounds();
        let context = context.with_paused_answer(&answer, calls);
        let text = if self.agent.text.is_none() {
            context.answers_text() + &answer.message.text()
        } else {
            String::new()
        };
        let mut outcome = self.outcome(context, text, None, None);
        tracing::info!(pending = pending.len(), "run paused for approval");
        outcome.approval = Some(PausedRun {
            messages: outcome.messages.clone(),
            answer: answer.message,
            pending,
            grants: self.grants.clone(),
            tool_rounds,
            #[cfg(feature = "store")]
            conversation_id: outcome.conversation_id.clone(),
            #[cfg(feature = "store")]
            node: answer.node,
            #[cfg(feature = "store")]
            label: self.log.as_ref().and_then(|log| log.label.clone()),
            #[cfg(feature = "store")]
            owner: self.log.as_ref().and_then(|log| log.owner.clone()),
        });
        outcome
    }

    /// Tells the stream that declined calls were not run, as tool events with the notice.
    pub(super) fn announce_declined(
        &self,
        declined: &[(ToolCall, String)],
        tools: &toolchain::ToolSet,
    ) {
        for (call, notice) in declined {
            let input = serde_json::from_str(&call.arguments)
                .unwrap_or_else(|_| serde_json::Value::String(call.arguments.clone()));
            self.emitter.send(AgentEvent::ToolStart {
                id: call.id.clone(),
                name: call.name.clone(),
                display_name: tools.display_name(&call.name),
                input,
            });
            self.emitter.send(AgentEvent::ToolDone {
                id: call.id.clone(),
                name: call.name.clone(),
                display_name: tools.display_name(&call.name),
                output: notice.clone(),
                duration_ms: 0,
                error: Some(notice.clone()),
                value: None,
                sources: Vec::new(),
            });
        }
    }
}

/// The tool messages answering declined calls.
pub(super) fn declined_messages(declined: &[(ToolCall, String)]) -> Vec<Message> {
    declined
        .iter()
        .map(|(call, notice)| {
            Message::new(
                Role::Tool,
                vec![ContentPart::ToolResponse(ToolResponse::new(
                    call.id.clone(),
                    call.name.clone(),
                    notice.as_str(),
                ))],
            )
        })
        .collect()
}

/// `messages` in the order of the `calls` they answer (each led by its `ToolResponse`), so the
/// tool results follow the answer's calls as an unpaused round's would.
pub(super) fn in_call_order(calls: &[ToolCall], mut messages: Vec<Message>) -> Vec<Message> {
    let position = |message: &Message| {
        message
            .parts
            .iter()
            .find_map(|part| match part {
                ContentPart::ToolResponse(response) => calls
                    .iter()
                    .position(|call| call.id == response.tool_call_id),
                _ => None,
            })
            .unwrap_or(usize::MAX)
    };
    messages.sort_by_key(position);
    messages
}

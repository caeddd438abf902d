//! [`ConversationContext`]: the state of a run between two rounds, changed only by steps that
//! consume it and return the next one.

use chain_ast::ChainAst;
use messages::{ContentPart, Message, Role, ToolCall, ToolSpec};
use providers::{ChatRequest, FinishReason, Usage};

use crate::compress::{CompressionReport, TokenCounter, chain_tokens};
use crate::conversation::Conversation;
use crate::{AgentError, AgentOutcome, ChatOptions, RoundRecord, StopReason};

/// The state of a run between rounds, immutable.
///
/// It holds the conversation as a [`ChainAst`] (what is sent, compressed when needed), the
/// uncompressed transcript, the rounds made and left, and the usage so far. It is never changed
/// in place: each step of the loop takes the context by value and returns the next one
/// (`context -> request -> response -> next context`), so a round is a function of its input and
/// every request is built from a chain that passes the seven rules. Steps move the chain rather
/// than copy it, and each request is lent rather than built from a copy of the chain, so a step
/// costs what it adds, not the size of the conversation.
///
/// Read it through the accessors, e.g. in a [`ToolProvider`](crate::ToolProvider).
#[derive(Clone, Debug)]
pub struct ConversationContext {
    conversation: Conversation,
    input_len: usize,
    tokens: usize,
    tool_rounds: usize,
    max_rounds: usize,
    usage: Usage,
    records: Vec<RoundRecord>,
    compression: Option<CompressionReport>,
}

/// A round to add: the answer, the tool messages answering its calls, the calls (native or
/// written as text) and whether it counts as a tool round.
pub(crate) struct Round {
    pub(crate) answer: Answer,
    pub(crate) tools: Vec<Message>,
    pub(crate) calls: Vec<ToolCall>,
    pub(crate) errors: usize,
    pub(crate) tool_round: bool,
}

impl Round {
    /// An answer without tool calls.
    pub(crate) fn plain(answer: Answer) -> Round {
        Round {
            answer,
            tools: Vec::new(),
            calls: Vec::new(),
            errors: 0,
            tool_round: false,
        }
    }

    /// An answer whose calls were answered without running (`tools` says why).
    pub(crate) fn unexecuted(answer: Answer, calls: Vec<ToolCall>, tools: Vec<Message>) -> Round {
        Round {
            answer,
            tools,
            calls,
            errors: 0,
            tool_round: false,
        }
    }
}

/// What a round's answer came with, besides the message.
pub(crate) struct Answer {
    pub(crate) message: Message,
    pub(crate) usage: Usage,
    pub(crate) finish: FinishReason,
    pub(crate) request_tokens: usize,
    pub(crate) cached: bool,
    pub(crate) timing: crate::CallTiming,
    #[cfg(feature = "store")]
    pub(crate) node: Option<conversation_tree::NodeId>,
}

impl ConversationContext {
    /// The context of a new run: `history` (with `system` put first when given) followed by
    /// the new human input.
    pub(crate) fn start(
        system: Option<&str>,
        mut history: Vec<Message>,
        human: Vec<ContentPart>,
        max_rounds: usize,
        counter: &TokenCounter,
    ) -> Result<ConversationContext, AgentError> {
        if let Some(system) = system {
            match history.first_mut() {
                Some(first) if first.role == Role::System => *first = Message::system(system),
                _ => history.insert(0, Message::system(system)),
            }
        }
        let conversation = Conversation::new(history).map_err(AgentError::InvalidHistory)?;
        let mut context = ConversationContext {
            tokens: chain_tokens(conversation.chain(), counter),
            conversation,
            input_len: 0,
            tool_rounds: 0,
            max_rounds,
            usage: Usage::default(),
            records: Vec::new(),
            compression: None,
        };
        if !human.is_empty() {
            context = context.with_human(human, counter);
        }
        match context.messages().last() {
            Some(last) if last.role != Role::Ai && last.role != Role::System => {}
            _ => return Err(AgentError::NothingToAnswer),
        }
        context.input_len = context.messages().len();
        Ok(context)
    }

    /// The chain sent to the model (compressed when it had to be).
    pub fn chain(&self) -> &ChainAst {
        self.conversation.chain()
    }

    /// The whole conversation, uncompressed.
    pub fn messages(&self) -> &[Message] {
        self.conversation.transcript()
    }

    /// The text of this run's answers (the AI messages after its input), joined without
    /// separators as it was streamed.
    pub(crate) fn answers_text(&self) -> String {
        let answers = self
            .messages()
            .get(self.input_len..)
            .unwrap_or_default()
            .iter()
            .filter(|message| message.role == Role::Ai);
        let mut text = String::new();
        for message in answers {
            for part in &message.parts {
                if let ContentPart::Text { text: more, .. } = part {
                    text.push_str(more);
                }
            }
        }
        text
    }

    /// Tool rounds executed so far.
    pub fn tool_rounds(&self) -> usize {
        self.tool_rounds
    }

    /// Tool rounds still allowed before the tool-limit notice.
    pub fn rounds_remaining(&self) -> usize {
        self.max_rounds.saturating_sub(self.tool_rounds)
    }

    /// Model calls made so far.
    pub fn rounds(&self) -> usize {
        self.records.len()
    }

    /// Tokens used so far.
    pub fn usage(&self) -> Usage {
        self.usage
    }

    /// The rounds so far.
    pub fn records(&self) -> &[RoundRecord] {
        &self.records
    }

    /// What compression did before the request being prepared, until its round is added.
    #[cfg(feature = "store")]
    pub(crate) fn compression(&self) -> Option<&CompressionReport> {
        self.compression.as_ref()
    }

    /// Tokens of the chain, by the model's [`TokenCounter`].
    pub fn tokens(&self) -> usize {
        self.tokens
    }

    /// The next request, lent: the chain, the tools on offer and the agent's options. A tool
    /// choice goes only with tools: providers reject a `tool_choice` without tools, and the
    /// last request after the tool limit offers none on purpose.
    ///
    /// The chain is not copied: the request is kept with it from round to round (see
    /// [`Conversation`]) and lent to [`ChatModel::stream_borrowed`](providers::ChatModel).
    pub(crate) fn request(&mut self, tools: Vec<ToolSpec>, options: &ChatOptions) -> &ChatRequest {
        self.conversation.request(tools, options)
    }

    /// The chain's system prompt replaced by `system` (text protocols rebuild it when the
    /// tools on offer change). The system message stays the first message.
    pub(crate) fn with_system(mut self, system: &str, counter: &TokenCounter) -> Self {
        let current = self
            .chain()
            .sections()
            .first()
            .and_then(|s| s.header().system());
        if current.is_some_and(|message| message.text() == system) {
            return self;
        }
        let added = self
            .messages()
            .first()
            .is_none_or(|first| first.role != Role::System);
        if added {
            // The system prompt counts as input.
            self.input_len += 1;
        }
        self.conversation.set_system(Message::system(system));
        self.tokens = chain_tokens(self.chain(), counter);
        self
    }

    /// The chain replaced by its compressed form.
    pub(crate) fn with_compressed(
        mut self,
        chain: ChainAst,
        tokens: usize,
        report: CompressionReport,
    ) -> Self {
        self.conversation.replace(chain);
        self.tokens = tokens;
        self.usage += report.summary_usage;
        self.compression = Some(report);
        self
    }

    /// The chain read with `summary` (stored in the conversation tree by an earlier run) in
    /// place of the opening it stands for, the transcript unchanged; whether it was. A
    /// summary that does not stand for this transcript's opening, or would not make a valid
    /// chain, is not used.
    #[cfg(feature = "store")]
    pub(crate) fn with_stored_summary(
        mut self,
        summary: &conversation_tree::PathSummary,
        counter: &TokenCounter,
    ) -> (Self, bool) {
        let Some(messages) = summary.apply(self.messages()) else {
            return (self, false);
        };
        match ChainAst::new(&messages, false) {
            Ok(chain) => {
                self.tokens = chain_tokens(&chain, counter);
                self.conversation.replace(chain);
                (self, true)
            }
            Err(error) => {
                tracing::warn!(%error, "a stored summary does not make a valid chain; not used");
                (self, false)
            }
        }
    }

    /// The chain unchanged by compression (it had nothing to do).
    pub(crate) fn with_chain(mut self, chain: ChainAst, tokens: usize) -> Self {
        self.conversation.put_back(chain);
        self.tokens = tokens;
        self
    }

    /// The chain, taken out for compression (the context keeps an empty one until
    /// [`with_chain`](Self::with_chain) or [`with_compressed`](Self::with_compressed)).
    pub(crate) fn take_chain(&mut self) -> ChainAst {
        self.conversation.take()
    }

    /// One round: the model's answer, the tool messages answering its calls and what the
    /// calls were.
    pub(crate) fn with_round(self, round: Round, counter: &TokenCounter) -> Self {
        let tokens = counter.count(&round.answer.message)
            + round
                .tools
                .iter()
                .map(|tool| counter.count(tool))
                .sum::<usize>();
        self.add_round(round, tokens)
    }

    /// The round whose answer ends the run, as [`with_round`](Self::with_round) but without
    /// counting its tokens: only a next request would read the count, and tokenising a long
    /// answer costs about as much as relaying it. The context's [`tokens`](Self::tokens)
    /// leave this round out.
    pub(crate) fn with_last_round(self, round: Round) -> Self {
        self.add_round(round, 0)
    }

    fn add_round(mut self, round: Round, tokens: usize) -> Self {
        let Round {
            answer,
            tools,
            calls,
            errors,
            tool_round,
        } = round;
        self.tokens += tokens;
        let executed = tool_round && !calls.is_empty();
        self.record(&answer, calls, executed, errors);
        self.conversation.add_round(answer.message, tools);
        if tool_round {
            self.tool_rounds += 1;
        }
        self
    }

    /// Records `answer`'s model call (its usage and timing) as the next round, with the calls
    /// it made, whether they ran, and how many failed.
    fn record(&mut self, answer: &Answer, calls: Vec<ToolCall>, executed: bool, errors: usize) {
        self.usage += answer.usage;
        self.records.push(RoundRecord {
            round: self.records.len() + 1,
            usage: answer.usage,
            finish_reason: answer.finish.clone(),
            tools_executed: executed,
            tool_calls: calls,
            tool_errors: errors,
            request_tokens: answer.request_tokens,
            compression: self.compression.take(),
            cached: answer.cached,
            timing: answer.timing,
            #[cfg(feature = "store")]
            node_id: answer.node,
        });
    }

    /// The context of a resumed run, which had made `tool_rounds` tool rounds before it
    /// paused: the tool limit goes on counting from there.
    pub(crate) fn with_tool_rounds(mut self, tool_rounds: usize) -> Self {
        self.tool_rounds = tool_rounds;
        self
    }

    /// An answer whose calls wait for approval: its model call is recorded (usage, timing)
    /// but the answer stays out of the chain, which remains valid without it.
    pub(crate) fn with_paused_answer(mut self, answer: &Answer, calls: Vec<ToolCall>) -> Self {
        self.record(answer, calls, false, 0);
        self
    }

    /// A human message (or more parts of the trailing one): text-protocol observations and
    /// the tool-limit notice.
    pub(crate) fn with_human(mut self, parts: Vec<ContentPart>, counter: &TokenCounter) -> Self {
        let extends = self
            .messages()
            .last()
            .is_some_and(|last| last.role == Role::Human);
        self.tokens += counter.parts(&parts);
        if !extends {
            self.tokens += crate::compress::MESSAGE_OVERHEAD_TOKENS;
        }
        self.conversation.append_human(parts);
        self
    }

    /// The run's result.
    pub(crate) fn into_outcome(
        self,
        text: String,
        stop_reason: Option<StopReason>,
        silent_exit: Option<String>,
    ) -> AgentOutcome {
        let (chain, messages) = self.conversation.into_parts();
        AgentOutcome {
            text,
            rounds: self.records.len(),
            usage: self.usage,
            records: self.records,
            stop_reason,
            silent_exit,
            chain,
            input_len: self.input_len,
            messages,
            ..AgentOutcome::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use providers::FinishReason;

    use super::*;

    /// A step makes a new context and leaves a copy of the old one as it was.
    #[test]
    fn steps_make_new_contexts() {
        let counter = TokenCounter::estimate();
        let start = ConversationContext::start(
            Some("system"),
            Vec::new(),
            vec![ContentPart::text("question")],
            2,
            &counter,
        )
        .expect("a valid start");
        let before = start.clone();
        let answer = Answer {
            message: Message::ai_tool_calls(None, vec![ToolCall::new("c1", "tool", "{}")]),
            usage: Usage {
                input_tokens: 5,
                ..Usage::default()
            },
            finish: FinishReason::ToolCalls,
            request_tokens: start.tokens(),
            cached: false,
            timing: crate::CallTiming::default(),
            #[cfg(feature = "store")]
            node: None,
        };
        let round = Round {
            answer,
            tools: vec![Message::tool_response("c1", "tool", "result")],
            calls: vec![ToolCall::new("c1", "tool", "{}")],
            errors: 0,
            tool_round: true,
        };
        let next = start.with_round(round, &counter);
        assert_eq!(next.tool_rounds(), 1);
        assert_eq!(next.rounds_remaining(), 1);
        assert_eq!(next.messages().len(), 4);
        assert_eq!(next.usage().input_tokens, 5);
        assert_eq!(next.tokens(), chain_tokens(next.chain(), &counter));
        assert!(next.chain().validate().is_ok());
        // The copy taken before the step is untouched.
        assert_eq!(before.tool_rounds(), 0);
        assert_eq!(before.messages().len(), 2);
        assert_eq!(before.records().len(), 0);
        assert_eq!(before.chain().messages(), before.messages());
    }
}

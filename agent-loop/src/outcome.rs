//! [`AgentOutcome`] and [`RoundRecord`]: what a run did.

use chain_ast::ChainAst;
use messages::{Message, ToolCall};
use providers::{FinishReason, Usage};

use crate::{CompressionReport, StopReason};

#[cfg(feature = "store")]
use conversation_tree::{ConversationId, NodeId};

/// What a finished run produced.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct AgentOutcome {
    /// The final answer's text (for a text-protocol agent, its `answer` section).
    pub text: String,
    /// The whole conversation, uncompressed: the input history, the new human input and every
    /// message of this run (AI answers with their reasoning, tool results). A valid chain;
    /// pass it back as history to continue.
    pub messages: Vec<Message>,
    /// Tokens of every model call of the run, summed (summarizer calls included).
    pub usage: Usage,
    /// Model calls made (summarizer calls excluded).
    pub rounds: usize,
    /// One record per model call, in order.
    pub records: Vec<RoundRecord>,
    /// Why the run ended (`None` when it was cancelled).
    pub stop_reason: Option<StopReason>,
    /// The reason given by a tool that asked for a silent exit.
    pub silent_exit: Option<String>,
    /// The chain as last sent to the model: equal to `messages` unless compression summarised
    /// or pruned it.
    pub chain: ChainAst,
    /// How many of `messages` came in with the input (history and new human input).
    pub input_len: usize,
    /// The conversation the responses were logged under (agents with a store).
    #[cfg(feature = "store")]
    pub conversation_id: Option<ConversationId>,
    /// The stored node of each response of this run, in order (cache hits included).
    #[cfg(feature = "store")]
    pub node_ids: Vec<NodeId>,
}

impl AgentOutcome {
    /// The messages this run added after the input.
    pub fn new_messages(&self) -> &[Message] {
        self.messages.get(self.input_len..).unwrap_or_default()
    }

    /// Whether a tool ended the run silently.
    pub fn is_silent_exit(&self) -> bool {
        self.silent_exit.is_some()
    }
}

/// One model call of a run.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct RoundRecord {
    /// 1-based number of the call.
    pub round: usize,
    /// Its token counts (zero for a stored answer).
    pub usage: Usage,
    /// Why the model stopped.
    pub finish_reason: FinishReason,
    /// The tool calls it made, in order.
    pub tool_calls: Vec<ToolCall>,
    /// How many of them failed (the model was told why).
    pub tool_errors: usize,
    /// Whether the calls were executed (`false` past the tool limit or when cut off).
    pub tools_executed: bool,
    /// Estimated tokens of the request sent.
    pub request_tokens: usize,
    /// What compression did before the request, if it ran.
    pub compression: Option<CompressionReport>,
    /// Whether the answer came from the store instead of the model.
    pub cached: bool,
    /// The stored node of the answer.
    #[cfg(feature = "store")]
    pub node_id: Option<NodeId>,
}

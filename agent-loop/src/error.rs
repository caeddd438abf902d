//! [`AgentError`]: why an agent could not be built or a run did not finish.

use chain_ast::ChainError;
use providers::ProviderError;

use crate::AgentOutcome;

/// Why an [`Agent`](crate::Agent) could not be built, or why a run ended without an answer.
///
/// Tool failures are not errors: the model reads them (`Tool execution failed: …`) and the run
/// goes on. A run ends in an error only when the model cannot be asked again.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// [`AgentBuilder::build`](crate::AgentBuilder::build) was called without a model.
    #[error("the agent has no model; call `Agent::builder().model(..)` before `build()`")]
    MissingModel,

    /// An approval policy was set on an agent with a text protocol, whose calls cannot be
    /// paused.
    #[error(
        "tool approval needs native tool calling: use `ToolMode::Native` with \
         `AgentBuilder::approval`, or no approval policy with a text protocol"
    )]
    ApprovalNeedsNativeTools,

    /// The decisions given to [`Agent::resume`](crate::Agent::resume) do not fit the paused
    /// run (a pending call without a decision, a decision about no pending call).
    #[error(transparent)]
    Decisions(#[from] crate::approval::DecisionError),

    /// A [`ContextPolicy`](crate::ContextPolicy) setting is out of range.
    #[error("invalid context policy: {reason}")]
    InvalidPolicy {
        /// What is wrong and what is allowed.
        reason: String,
    },

    /// The input history breaks a chain rule, so no valid request can be made from it.
    #[error(
        "the input conversation is not a valid chain: {0}; send the conversation as stored, or \
         repair it with `chain_ast::ChainAst::repair` first"
    )]
    InvalidHistory(#[source] ChainError),

    /// The input ends with an AI message and adds no new human input: there is nothing for the
    /// model to answer.
    #[error(
        "the input ends with an AI message and has no new human input, so there is nothing to \
         answer; add a human message (or tool results) after it"
    )]
    NothingToAnswer,

    /// The model call of round `round` (1-based) failed.
    #[error("model call {round} failed: {source}")]
    Provider {
        /// Which model call failed, counting from 1 (summarizer calls excluded).
        round: usize,
        /// The provider's error (boxed: it is large, and errors travel in `Result`s).
        #[source]
        source: Box<ProviderError>,
    },

    /// The model cut its tool calls off at the output token limit again and again.
    #[error(
        "the model's tool calls were cut off at the output token limit {attempts} times in a row; \
         raise `max_tokens` or ask for smaller steps"
    )]
    OutputTruncated {
        /// How many truncated answers there were.
        attempts: usize,
    },

    /// A conversation id was given, but the agent has no store to log into.
    #[cfg(feature = "store")]
    #[error(
        "the input names conversation `{conversation}` but the agent has no store; set one with \
         `Agent::builder().store(..)`"
    )]
    NoStore {
        /// The conversation named.
        conversation: String,
    },

    /// Reading from or writing to the conversation store failed.
    #[cfg(feature = "store")]
    #[error("the conversation store failed: {0}")]
    Store(#[source] conversation_tree::StoreError),

    /// A typed run's final answer is not valid for the type asked for: after one correction,
    /// or at once from a model that enforces the schema itself
    /// ([`Agent::run_typed`](crate::Agent::run_typed)).
    #[error(
        "the model's final answer is not a valid `{type_name}` after {attempts} attempt(s): \
         {error}. The answer is kept in this error's `text`. Try a model with native \
         structured output, or loosen the type"
    )]
    InvalidOutput {
        /// The Rust type asked for.
        type_name: String,
        /// The answer's text, as the model wrote it.
        text: String,
        /// Everything that is wrong with it: not JSON, each schema violation with its path, or
        /// serde's message.
        error: String,
        /// How many answers were asked for (2 when the model was told what was wrong once).
        attempts: usize,
    },

    /// The run was cancelled. The outcome holds the conversation up to that point, as a valid
    /// chain: tool calls that were cut short are answered.
    #[error("the run was cancelled after {} model call(s)", outcome.rounds)]
    Cancelled {
        /// What the run had done when it was cancelled.
        outcome: Box<AgentOutcome>,
    },
}

impl AgentError {
    /// Whether sending the same input again later may succeed (a retryable provider error).
    pub fn is_retryable(&self) -> bool {
        matches!(self, AgentError::Provider { source, .. } if source.is_retryable())
    }
}

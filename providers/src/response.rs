//! [`ChatResponse`], [`Usage`] and [`FinishReason`].

use std::ops::AddAssign;

use messages::Message;
use serde::{Deserialize, Serialize};

use crate::TokenLogprob;

/// A complete answer of a model.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ChatResponse {
    /// The AI message: its parts in the order the model produced them (reasoning blocks,
    /// text, tool calls).
    pub message: Message,
    /// Token counts.
    pub usage: Usage,
    /// Why the model stopped.
    pub finish_reason: FinishReason,
    /// The provider's response id (`chatcmpl-…`, `resp_…`, `msg_…`), when it sent one.
    pub id: Option<String>,
    /// The model that answered as the provider names it (often a dated snapshot of the id
    /// asked for), when it said.
    pub model: Option<String>,
    /// The log probabilities of the answer's text tokens, in order, when
    /// [`ChatOptions::logprobs`](crate::ChatOptions::logprobs) asked for them and the provider
    /// has them (OpenAI, Gemini); `None` otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logprobs: Option<Vec<TokenLogprob>>,
}

/// Token counts of one response, the same meaning for every provider.
///
/// `input_tokens` counts the whole prompt, including the cached and cache-writing parts
/// (Anthropic reports those separately; its adapter adds them up). `output_tokens` counts
/// everything generated, including `reasoning_tokens` (Gemini reports thoughts separately;
/// its adapter adds them up).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Usage {
    /// All prompt tokens.
    pub input_tokens: u64,
    /// All generated tokens, reasoning included.
    pub output_tokens: u64,
    /// Prompt tokens read from the provider's cache.
    pub cached_input_tokens: u64,
    /// Prompt tokens written to the provider's cache.
    pub cache_creation_tokens: u64,
    /// Generated tokens spent on reasoning.
    pub reasoning_tokens: u64,
}

impl Usage {
    /// Input plus output tokens (saturating: counts come from providers).
    pub fn total_tokens(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }
}

/// Adds field by field, saturating at `u64::MAX`: the counts come from providers, and a sum
/// over many rounds must never panic or wrap whatever they report.
impl AddAssign for Usage {
    fn add_assign(&mut self, other: Usage) {
        for (sum, add) in [
            (&mut self.input_tokens, other.input_tokens),
            (&mut self.output_tokens, other.output_tokens),
            (&mut self.cached_input_tokens, other.cached_input_tokens),
            (&mut self.cache_creation_tokens, other.cache_creation_tokens),
            (&mut self.reasoning_tokens, other.reasoning_tokens),
        ] {
            *sum = sum.saturating_add(add);
        }
    }
}

/// Why a model stopped generating.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// A natural end of the answer (or a stop sequence).
    #[default]
    Stop,
    /// The output token limit was reached.
    Length,
    /// The model asked for tool calls.
    ToolCalls,
    /// A safety filter stopped it.
    ContentFilter,
    /// Another provider-specific reason, as the provider named it.
    Other(String),
}

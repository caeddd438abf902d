//! [`ChatRequest`]: what is sent to a model, provider-neutral.

use std::collections::BTreeMap;
use std::time::Duration;

use messages::{Message, ToolSpec};
use serde::{Deserialize, Serialize};

/// One request to a chat model.
///
/// Fields left at their default are not sent, so the provider's own default applies.
///
/// ```
/// use providers::{ChatRequest, Message, ToolChoice};
///
/// let request = ChatRequest {
///     temperature: Some(0.0),
///     tool_choice: Some(ToolChoice::Auto),
///     ..ChatRequest::new(vec![Message::human("Hi")])
/// };
/// assert_eq!(request.messages.len(), 1);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    /// The conversation so far, oldest first.
    pub messages: Vec<Message>,
    /// Tools the model may call.
    pub tools: Vec<ToolSpec>,
    /// Whether and which tool the model must call.
    pub tool_choice: Option<ToolChoice>,
    /// Sampling temperature.
    pub temperature: Option<f32>,
    /// Maximum output tokens; falls back to [`ModelConfig::max_tokens`](crate::ModelConfig),
    /// then to the provider's default (Anthropic requires one: the model's maximum is used).
    pub max_tokens: Option<u32>,
    /// Stop sequences.
    pub stop: Vec<String>,
    /// Reasoning effort for reasoning models (OpenAI `reasoning_effort`, Anthropic
    /// `output_config.effort`, Gemini `thinkingLevel`).
    pub reasoning_effort: Option<ReasoningEffort>,
    /// Thinking budget in tokens (Anthropic `thinking.budget_tokens`, Gemini `thinkingBudget`).
    pub thinking_budget: Option<u32>,
    /// Prompt-cache hints.
    pub cache: PromptCache,
    /// Extra HTTP headers for this request only (added after the configured default headers).
    pub extra_headers: BTreeMap<String, String>,
}

impl ChatRequest {
    /// A request for these messages with every option at its default.
    pub fn new(messages: Vec<Message>) -> Self {
        ChatRequest {
            messages,
            ..Default::default()
        }
    }
}

/// Whether and which tool the model must call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides.
    Auto,
    /// The model must not call a tool.
    None,
    /// The model must call some tool.
    Required,
    /// The model must call this tool.
    Tool(String),
}

/// How hard a reasoning model thinks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReasoningEffort {
    /// As little reasoning as the model allows.
    Minimal,
    /// Light reasoning.
    Low,
    /// The usual default.
    Medium,
    /// Thorough reasoning.
    High,
}

impl ReasoningEffort {
    /// The lowercase wire name (`minimal`, `low`, `medium`, `high`).
    pub const fn as_str(self) -> &'static str {
        match self {
            ReasoningEffort::Minimal => "minimal",
            ReasoningEffort::Low => "low",
            ReasoningEffort::Medium => "medium",
            ReasoningEffort::High => "high",
        }
    }
}

/// Prompt-cache hints. Providers with explicit caching (Anthropic) place `cache_control`
/// breakpoints; OpenAI caches automatically and uses `key` to route similar prompts together;
/// providers without the concept ignore the hints (caching never changes an answer).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptCache {
    /// Where cached prefixes end, in the order tools → system → messages.
    pub breakpoints: Vec<CacheBreakpoint>,
    /// How long a cached prefix should live (Anthropic supports 5 minutes and 1 hour).
    pub ttl: Option<Duration>,
    /// A routing key for providers that take one (OpenAI `prompt_cache_key`).
    pub key: Option<String>,
}

/// The end of a prefix to cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CacheBreakpoint {
    /// After the tool definitions.
    Tools,
    /// After the system prompt.
    System,
    /// After the message at this index of [`ChatRequest::messages`].
    Message(usize),
    /// After the last message.
    LastMessage,
}

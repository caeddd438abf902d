//! [`ChatRequest`]: what is sent to a model, provider-neutral.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use messages::{Message, ToolSpec};
use serde::{Deserialize, Serialize};

use crate::ResponseFormat;

/// One request to a chat model: the conversation, the tools on offer and the [`ChatOptions`].
///
/// ```
/// use providers::{ChatOptions, ChatRequest, Message, ToolChoice};
///
/// let request = ChatRequest::new(vec![Message::human("Hi")]).with_options(ChatOptions {
///     temperature: Some(0.0),
///     tool_choice: Some(ToolChoice::Auto),
///     ..ChatOptions::default()
/// });
/// assert_eq!(request.messages.len(), 1);
/// assert_eq!(request.options.temperature, Some(0.0));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    /// The conversation so far, oldest first.
    pub messages: Vec<Message>,
    /// Tools the model may call (none when left out of a serialised request).
    #[serde(default)]
    pub tools: Vec<ToolSpec>,
    /// Sampling, limits, tool choice, reasoning, caching and headers. Serialised flat, beside
    /// `messages` and `tools`.
    #[serde(flatten)]
    pub options: ChatOptions,
}

impl ChatRequest {
    /// A request for these messages with every option at its default.
    pub fn new(messages: Vec<Message>) -> Self {
        ChatRequest {
            messages,
            ..Default::default()
        }
    }

    /// The same request offering `tools`.
    #[must_use]
    pub fn with_tools(mut self, tools: Vec<ToolSpec>) -> Self {
        self.tools = tools;
        self
    }

    /// The same request with `options`.
    #[must_use]
    pub fn with_options(mut self, options: ChatOptions) -> Self {
        self.options = options;
        self
    }

    /// The tool choice to send: [`ChatOptions::tool_choice`] when the request offers tools,
    /// else none, since every API refuses a tool choice without tools (and the last request
    /// after an agent's tool limit offers none on purpose).
    ///
    /// ```
    /// use providers::{ChatOptions, ChatRequest, Message, ToolChoice};
    ///
    /// let request = ChatRequest::new(vec![Message::human("Hi")]).with_options(ChatOptions {
    ///     tool_choice: Some(ToolChoice::Required),
    ///     ..ChatOptions::default()
    /// });
    /// assert_eq!(request.tool_choice(), None);
    /// ```
    pub fn tool_choice(&self) -> Option<&ToolChoice> {
        self.options
            .tool_choice
            .as_ref()
            .filter(|_| !self.tools.is_empty())
    }
}

/// How a model is asked to answer, whatever the conversation: the one set of request options
/// every layer uses (a [`ChatRequest`] carries it; the agent builder takes one for every call
/// of a run).
///
/// Fields left at their default are not sent, so the provider's own default applies. `Debug`
/// never shows the values of `extra_headers` whose name looks like a credential
/// (`authorization`, `*key*`, `*token*`, `*secret*`, `*cookie*`), as for
/// [`ModelConfig`](crate::ModelConfig).
///
/// ```
/// use providers::{ChatOptions, ReasoningEffort};
///
/// let options = ChatOptions {
///     temperature: Some(0.7),
///     max_tokens: Some(1024),
///     reasoning_effort: Some(ReasoningEffort::Low),
///     ..ChatOptions::default()
/// };
/// // The decimal the caller gave is the one sent and stored.
/// assert_eq!(serde_json::to_string(&options.temperature).unwrap(), "0.7");
/// ```
#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ChatOptions {
    /// Sampling temperature, sent as the decimal given (`0.7`, never `0.699999988079071`). A
    /// NaN or infinite one, which JSON cannot carry, is refused with
    /// [`ProviderError::Config`](crate::ProviderError::Config) before anything is sent.
    pub temperature: Option<f64>,
    /// Maximum output tokens; falls back to [`ModelConfig::max_tokens`](crate::ModelConfig),
    /// then to the provider's default (Anthropic requires one: the model's maximum is used).
    pub max_tokens: Option<u32>,
    /// Stop sequences.
    pub stop: Vec<String>,
    /// Whether and which tool the model must call. Sent only with requests that offer tools.
    pub tool_choice: Option<ToolChoice>,
    /// The shape the answer must take: free text (the default), a JSON object, or JSON valid
    /// for a schema. Sent with or without tools.
    pub response_format: Option<ResponseFormat>,
    /// Reasoning effort for reasoning models (OpenAI `reasoning_effort`, Anthropic
    /// `output_config.effort`, Gemini 3 `thinkingLevel`, the nearest level the model takes;
    /// Gemini 2.x a thinking budget).
    pub reasoning_effort: Option<ReasoningEffort>,
    /// Thinking budget in tokens (Anthropic `thinking.budget_tokens`, Gemini `thinkingBudget`).
    pub thinking_budget: Option<u32>,
    /// Prompt-cache hints.
    pub cache: PromptCache,
    /// Extra HTTP headers for this request only (added after the configured default headers).
    pub extra_headers: BTreeMap<String, String>,
}

impl fmt::Debug for ChatOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let headers: BTreeMap<&str, &str> = self
            .extra_headers
            .iter()
            .map(|(name, value)| {
                let shown = if crate::config::looks_secret(name) {
                    "<redacted>"
                } else {
                    value.as_str()
                };
                (name.as_str(), shown)
            })
            .collect();
        f.debug_struct("ChatOptions")
            .field("temperature", &self.temperature)
            .field("max_tokens", &self.max_tokens)
            .field("stop", &self.stop)
            .field("tool_choice", &self.tool_choice)
            .field("response_format", &self.response_format)
            .field("reasoning_effort", &self.reasoning_effort)
            .field("thinking_budget", &self.thinking_budget)
            .field("cache", &self.cache)
            .field("extra_headers", &headers)
            .finish()
    }
}

impl ChatOptions {
    /// Refuses options no JSON body can carry: a temperature that is NaN or infinite would go
    /// out as `null` (serde_json's rendering of a non-finite number), which a provider reads as
    /// no temperature at all or refuses without saying why.
    #[cfg(feature = "__http")]
    pub(crate) fn check_sendable(&self) -> Result<(), crate::ProviderError> {
        match self.temperature {
            Some(temperature) if !temperature.is_finite() => {
                Err(crate::ProviderError::config(format!(
                    "temperature {temperature} cannot be sent: JSON has no NaN or infinity; \
                     give a finite number or none"
                )))
            }
            _ => Ok(()),
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

/// Prompt-cache hints. Providers with explicit caching place `cache_control` breakpoints
/// (Anthropic on blocks and tools, OpenRouter on the text parts ending each prefix, for the
/// Anthropic and Gemini models it serves); OpenAI caches automatically and uses `key` to route
/// similar prompts together; providers without the concept ignore the hints (caching never
/// changes an answer).
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

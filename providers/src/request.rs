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
/// Fields left at their default are not sent, so the provider's own default applies. What
/// each provider does with each field (sent, translated, not sent, or refused through
/// [`ChatModel::unsupported_options`](crate::ChatModel::unsupported_options)) is tabulated in
/// `providers/COMPAT.md`. `Debug` never shows the values of `extra_headers` whose name looks
/// like a credential (`authorization`, `*key*`, `*token*`, `*secret*`, `*cookie*`), as for
/// [`ModelConfig`](crate::ModelConfig), nor the end-user ids and metadata values, which
/// identify people.
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
    /// Nucleus sampling: only the tokens making up this much probability mass are considered
    /// (OpenAI and Anthropic `top_p`, Gemini `topP`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    /// A seed for repeatable sampling (OpenAI Chat `seed`, Gemini `seed`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<i64>,
    /// Penalises tokens that appeared at all, -2.0 to 2.0 (OpenAI Chat `presence_penalty`,
    /// Gemini `presencePenalty`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub presence_penalty: Option<f64>,
    /// Penalises tokens by how often they appeared, -2.0 to 2.0 (OpenAI Chat
    /// `frequency_penalty`, Gemini `frequencyPenalty`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frequency_penalty: Option<f64>,
    /// Biases of token ids, -100 to 100 (OpenAI Chat `logit_bias`; token ids are the
    /// model's tokenizer's).
    #[serde(
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "crate::support::token_biases"
    )]
    pub logit_bias: BTreeMap<u32, i32>,
    /// Asks for the log probabilities of the output tokens (OpenAI Chat `logprobs`, Gemini
    /// `responseLogprobs`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub logprobs: bool,
    /// How many most likely tokens to report at each position, with
    /// [`logprobs`](Self::logprobs) (OpenAI `top_logprobs`, Gemini `logprobs`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_logprobs: Option<u32>,
    /// Whether the model may call several tools in one answer (`None`: the provider's default,
    /// which allows it). `Some(false)` is OpenAI's `parallel_tool_calls: false` and Anthropic's
    /// `tool_choice.disable_parallel_tool_use`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parallel_tool_calls: Option<bool>,
    /// How terse the answer is (OpenAI Chat `verbosity`, Responses `text.verbosity`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verbosity: Option<Verbosity>,
    /// The end user, for the provider's abuse monitoring (OpenAI `user`, Anthropic
    /// `metadata.user_id`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// A stable, hashed id of the end user for the provider's safety checks (OpenAI
    /// `safety_identifier`; Anthropic `metadata.user_id` when no [`user`](Self::user) is
    /// given).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub safety_identifier: Option<String>,
    /// The processing tier to serve the request (OpenAI `service_tier`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service_tier: Option<ServiceTier>,
    /// Up to 16 key–value pairs describing the request (OpenAI `metadata`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, String>,
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
            .field("top_p", &self.top_p)
            .field("seed", &self.seed)
            .field("presence_penalty", &self.presence_penalty)
            .field("frequency_penalty", &self.frequency_penalty)
            .field("logit_bias", &self.logit_bias)
            .field("logprobs", &self.logprobs)
            .field("top_logprobs", &self.top_logprobs)
            .field("parallel_tool_calls", &self.parallel_tool_calls)
            .field("verbosity", &self.verbosity)
            // End-user ids and the caller's metadata identify people: shown as present only.
            .field("user", &self.user.as_ref().map(|_| "<redacted>"))
            .field(
                "safety_identifier",
                &self.safety_identifier.as_ref().map(|_| "<redacted>"),
            )
            .field("service_tier", &self.service_tier)
            .field("metadata", &self.metadata.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl ChatOptions {
    /// Refuses options no JSON body can carry: a temperature that is NaN or infinite would go
    /// out as `null` (serde_json's rendering of a non-finite number), which a provider reads as
    /// no temperature at all or refuses without saying why.
    #[cfg(feature = "__http")]
    pub(crate) fn check_sendable(&self) -> Result<(), crate::ProviderError> {
        let numbers = [
            ("temperature", self.temperature),
            ("top_p", self.top_p),
            ("presence_penalty", self.presence_penalty),
            ("frequency_penalty", self.frequency_penalty),
        ];
        match numbers
            .into_iter()
            .find(|(_, value)| value.is_some_and(|value| !value.is_finite()))
        {
            Some((name, Some(value))) => Err(crate::ProviderError::config(format!(
                "{name} {value} cannot be sent: JSON has no NaN or infinity; give a finite \
                 number or none"
            ))),
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

/// How terse an answer is: OpenAI's `verbosity`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verbosity {
    /// Short answers.
    Low,
    /// The usual length.
    Medium,
    /// Thorough answers.
    High,
}

impl Verbosity {
    /// The lowercase wire name (`low`, `medium`, `high`).
    pub const fn as_str(self) -> &'static str {
        match self {
            Verbosity::Low => "low",
            Verbosity::Medium => "medium",
            Verbosity::High => "high",
        }
    }
}

/// The processing tier that serves a request: OpenAI's `service_tier`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ServiceTier {
    /// The project's setting.
    Auto,
    /// Standard pricing and performance.
    Default,
    /// Cheaper, slower processing.
    Flex,
    /// Scale-tier capacity.
    Scale,
    /// Faster, dearer processing.
    Priority,
    /// The fastest tier.
    Fast,
}

impl ServiceTier {
    /// The lowercase wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            ServiceTier::Auto => "auto",
            ServiceTier::Default => "default",
            ServiceTier::Flex => "flex",
            ServiceTier::Scale => "scale",
            ServiceTier::Priority => "priority",
            ServiceTier::Fast => "fast",
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

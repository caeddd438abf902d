//! [`AgentBuilder`] and the settings it takes: [`ToolMode`], [`TextSyntax`].

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use providers::{ChatModel, ChatOptions, ReasoningEffort, ResponseFormat, ToolChoice};
use text_format::TextFormat;
use toolchain::ToolSet;

use crate::agent::Inner;
use crate::approval::ApprovalPolicy;
use crate::compress::TokenCounter;
use crate::react::TextProtocol;
use crate::{Agent, AgentError, ContextPolicy, PromptModifier, ToolProvider};

#[cfg(feature = "store")]
use conversation_tree::{Reuse, Store};

/// The tool rounds a run may make when the builder is not told otherwise.
pub const DEFAULT_MAX_ROUNDS: usize = 2;

/// How the model calls tools.
pub enum ToolMode {
    /// Provider function calling: tools are offered as `ToolSpec`s and the model's `ToolCall`
    /// parts run through a `NativeToolChain`.
    Native,
    /// A text protocol (ReAct): the model writes `thinking`, `action` and `answer` sections in
    /// this format; tool calls in `action` run through a `JsonToolChain` or `YamlToolChain`
    /// ([`TextSyntax`]) and their results come back as an observation in the same format.
    ///
    /// The reply is parsed once it is complete, so its events come then: each `thinking`
    /// section as one `reasoning.delta`, the `answer` as one `content.delta` (the raw reply,
    /// sections and all, is never streamed to the client). Every reply that is not an answer
    /// (an action, or one the format cannot read) counts as a tool round, so a model that never
    /// follows the format still reaches the tool limit. Past the limit the system prompt lists
    /// no tools, and a final reply without an `answer` section is taken whole.
    Text(Box<dyn TextFormat>),
}

impl fmt::Debug for ToolMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ToolMode::Native => f.write_str("Native"),
            ToolMode::Text(_) => f.write_str("Text(..)"),
        }
    }
}

/// The syntax of tool calls in a text protocol's `action` section.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TextSyntax {
    /// `{"tool": "name", "args": {…}}` (a `JsonToolChain`).
    Json,
    /// `tool: name` / `args:` (a `YamlToolChain`), the default.
    #[default]
    Yaml,
}

/// Builds an [`Agent`]; start with [`Agent::builder`].
///
/// Only the model is required. Building is cheap (a few `Arc` clones and, for text protocols,
/// registering three sections), so a server can build an agent per request with that
/// request's model, system prompt, tools and limits.
pub struct AgentBuilder {
    model: Option<Arc<dyn ChatModel>>,
    tools: ToolSet,
    providers: Vec<Arc<dyn ToolProvider>>,
    modifiers: Vec<Arc<dyn PromptModifier>>,
    mode: ToolMode,
    syntax: TextSyntax,
    max_rounds: usize,
    system: Option<String>,
    policy: ContextPolicy,
    options: ChatOptions,
    tool_timeout: Option<Duration>,
    redactor: Option<Arc<messages::Redactor>>,
    approval: ApprovalPolicy,
    #[cfg(feature = "store")]
    store: Option<Arc<dyn Store>>,
    #[cfg(feature = "store")]
    reuse: Reuse,
}

impl Default for AgentBuilder {
    fn default() -> Self {
        AgentBuilder {
            model: None,
            tools: ToolSet::new(),
            providers: Vec::new(),
            modifiers: Vec::new(),
            mode: ToolMode::Native,
            syntax: TextSyntax::default(),
            max_rounds: DEFAULT_MAX_ROUNDS,
            system: None,
            policy: ContextPolicy::default(),
            options: ChatOptions::default(),
            tool_timeout: None,
            redactor: None,
            approval: ApprovalPolicy::new(),
            #[cfg(feature = "store")]
            store: None,
            #[cfg(feature = "store")]
            reuse: Reuse::default(),
        }
    }
}

impl fmt::Debug for AgentBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentBuilder")
            .field("model", &self.model.as_ref().map(|model| &model.info().id))
            .field("tools", &self.tools)
            .field("mode", &self.mode)
            .field("max_rounds", &self.max_rounds)
            .finish_non_exhaustive()
    }
}

impl AgentBuilder {
    /// The model to call (required).
    #[must_use]
    pub fn model(mut self, model: Arc<dyn ChatModel>) -> Self {
        self.model = Some(model);
        self
    }

    /// The tools always on offer.
    #[must_use]
    pub fn tools(mut self, tools: ToolSet) -> Self {
        self.tools = tools;
        self
    }

    /// Adds a provider of tools decided before each request.
    #[must_use]
    pub fn tool_provider(mut self, provider: impl ToolProvider + 'static) -> Self {
        self.providers.push(Arc::new(provider));
        self
    }

    /// Native function calling (the default) or a text protocol.
    #[must_use]
    pub fn tool_mode(mut self, mode: ToolMode) -> Self {
        self.mode = mode;
        self
    }

    /// The call syntax of a text protocol (default YAML).
    #[must_use]
    pub fn text_syntax(mut self, syntax: TextSyntax) -> Self {
        self.syntax = syntax;
        self
    }

    /// How many tool rounds a run may make before the model must answer (default
    /// [`DEFAULT_MAX_ROUNDS`]).
    #[must_use]
    pub fn max_rounds(mut self, rounds: usize) -> Self {
        self.max_rounds = rounds;
        self
    }

    /// The system prompt; it replaces a system message at the start of the input history.
    #[must_use]
    pub fn system(mut self, system: impl Into<String>) -> Self {
        self.system = Some(system.into());
        self
    }

    /// When and how the chain is compressed (default [`ContextPolicy::default`]).
    #[must_use]
    pub fn compression(mut self, policy: ContextPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// The [`ChatOptions`] of every model call of a run (the summarizer's calls take only the
    /// headers). `temperature` 0 makes calls deterministic, which also lets a store hand back a
    /// stored answer instead of calling the model; `tool_choice` goes only with requests that
    /// offer tools (the last, tool-less request after the tool limit has none).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use agent_loop::Agent;
    /// use providers::{ChatOptions, ToolChoice, testing::ScriptedModel};
    ///
    /// let agent = Agent::builder()
    ///     .model(Arc::new(ScriptedModel::new(Vec::new())))
    ///     .options(ChatOptions {
    ///         temperature: Some(0.0),
    ///         tool_choice: Some(ToolChoice::Required),
    ///         ..ChatOptions::default()
    ///     })
    ///     .build()?;
    /// # Ok::<(), agent_loop::AgentError>(())
    /// ```
    #[must_use]
    pub fn options(mut self, options: ChatOptions) -> Self {
        self.options = options;
        self
    }

    /// Adds a [`PromptModifier`]: text it returns is appended to the system prompt of each
    /// request, so what a run learns (a loaded skill's instructions) steers the next rounds.
    #[must_use]
    pub fn prompt_modifier(mut self, modifier: impl PromptModifier + 'static) -> Self {
        self.modifiers.push(Arc::new(modifier));
        self
    }

    /// Marks the prefixes a provider may cache on every request (Anthropic cache
    /// breakpoints; OpenAI caches by itself and routes by `cache.key`). Caching never changes
    /// an answer, only what repeating a long prefix costs.
    #[must_use]
    pub fn prompt_cache(mut self, cache: providers::PromptCache) -> Self {
        self.options.cache = cache;
        self
    }

    /// Whether and which tool the model must call, on every request that offers tools.
    #[must_use]
    pub fn tool_choice(mut self, choice: ToolChoice) -> Self {
        self.options.tool_choice = Some(choice);
        self
    }

    /// The shape of every answer: free text, a JSON object, or JSON valid for a schema (see
    /// also [`Agent::run_typed`](crate::Agent::run_typed), which sets it from a Rust type).
    #[must_use]
    pub fn response_format(mut self, format: ResponseFormat) -> Self {
        self.options.response_format = Some(format);
        self
    }

    /// Reasoning effort for every request ("deep thinking").
    #[must_use]
    pub fn reasoning_effort(mut self, effort: ReasoningEffort) -> Self {
        self.options.reasoning_effort = Some(effort);
        self
    }

    /// Thinking budget in tokens for every request.
    #[must_use]
    pub fn thinking_budget(mut self, tokens: u32) -> Self {
        self.options.thinking_budget = Some(tokens);
        self
    }

    /// Sampling temperature for every request.
    #[must_use]
    pub fn temperature(mut self, temperature: f64) -> Self {
        self.options.temperature = Some(temperature);
        self
    }

    /// Output token limit for every request.
    #[must_use]
    pub fn max_tokens(mut self, tokens: u32) -> Self {
        self.options.max_tokens = Some(tokens);
        self
    }

    /// Key–value pairs describing the run (OpenAI's `metadata`): sent with every request to
    /// providers that take them, and, with a [`store`](Self::store), kept with every answer
    /// logged.
    #[must_use]
    pub fn metadata(mut self, metadata: std::collections::BTreeMap<String, String>) -> Self {
        self.options.metadata = metadata;
        self
    }

    /// Each tool call ends with a timeout error after `timeout`.
    #[must_use]
    pub fn tool_timeout(mut self, timeout: Duration) -> Self {
        self.tool_timeout = Some(timeout);
        self
    }

    /// Removes the secrets `redactor` knows from every tool result and tool error before the
    /// model, the events or the store see them (a tool that echoes its credential).
    #[must_use]
    pub fn redactor(mut self, redactor: Arc<messages::Redactor>) -> Self {
        self.redactor = Some(redactor);
        self
    }

    /// Which tool calls wait for a person's approval (default: none): a round calling any of
    /// them ends the run paused, and [`Agent::resume`] goes on from the decisions. See
    /// [`approval`](crate::approval). Needs [`ToolMode::Native`]: text-protocol calls cannot be
    /// paused yet, so [`build`](Self::build) refuses a policy that can ask with a text protocol.
    #[must_use]
    pub fn approval(mut self, policy: ApprovalPolicy) -> Self {
        self.approval = policy;
        self
    }

    /// Logs every response into `store` (and reuses stored answers as its reuse policy
    /// allows; see [`cache_reuse`](Self::cache_reuse)).
    #[cfg(feature = "store")]
    #[must_use]
    pub fn store(mut self, store: Arc<dyn Store>) -> Self {
        self.store = Some(store);
        self
    }

    /// When a stored answer may stand in for a model call (default: deterministic requests
    /// only, i.e. temperature 0).
    #[cfg(feature = "store")]
    #[must_use]
    pub fn cache_reuse(mut self, reuse: Reuse) -> Self {
        self.reuse = reuse;
        self
    }

    /// The agent.
    ///
    /// # Errors
    ///
    /// [`AgentError::MissingModel`] without a model; [`AgentError::ApprovalNeedsNativeTools`]
    /// for an approval policy with a text protocol.
    pub fn build(self) -> Result<Agent, AgentError> {
        let model = self.model.ok_or(AgentError::MissingModel)?;
        let counter = TokenCounter::for_model(model.info());
        if matches!(self.mode, ToolMode::Text(_)) && !self.approval.is_never() {
            return Err(AgentError::ApprovalNeedsNativeTools);
        }
        let text = match self.mode {
            ToolMode::Native => None,
            ToolMode::Text(format) => Some(Arc::new(TextProtocol::new(format, self.syntax))),
        };
        Ok(Agent {
            inner: Arc::new(Inner {
                model,
                tools: self.tools,
                providers: self.providers,
                modifiers: self.modifiers,
                text,
                max_rounds: self.max_rounds,
                system: self.system,
                policy: self.policy,
                options: self.options,
                tool_timeout: self.tool_timeout,
                redactor: self.redactor,
                approval: self.approval,
                counter,
                #[cfg(feature = "store")]
                store: self.store,
                #[cfg(feature = "store")]
                reuse: self.reuse,
            }),
        })
    }
}

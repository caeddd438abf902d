//! [`RunSpec`]: one run, resolved and checked: what `POST /v1/response` and `skein run` both
//! hand to the [`ChatService`](crate::ChatService).

use std::collections::BTreeMap;
use std::time::Duration;

use conversation_tree::{ConversationId, NodeId};
use messages::{ContentPart, Message};
use providers::{ChatOptions, ModelConfig, ResponseFormat, ToolChoice};

/// How the model calls tools.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ToolProtocol {
    /// The provider's function calling.
    #[default]
    Native,
    /// A text protocol: the model writes `thinking`, `action` and `answer` sections in
    /// `format`, its tool calls in `syntax`; observations come back in the same format.
    Text {
        /// How tool calls are written in the `action` section.
        syntax: agent_loop::TextSyntax,
        /// How the sections are written.
        format: SectionFormat,
    },
}

impl ToolProtocol {
    /// The protocol of a text `syntax` (`None`: native function calling) and a section
    /// `format` (only with a text syntax; Markdown by default).
    ///
    /// # Errors
    ///
    /// A format without a text syntax: it would be ignored.
    pub fn of(
        syntax: Option<agent_loop::TextSyntax>,
        format: Option<SectionFormat>,
    ) -> Result<Self, &'static str> {
        match (syntax, format) {
            (None, None) => Ok(ToolProtocol::Native),
            (None, Some(_)) => Err(
                "a section format applies to a text protocol only; choose json or yaml tool calls",
            ),
            (Some(syntax), format) => Ok(ToolProtocol::Text {
                syntax,
                format: format.unwrap_or_default(),
            }),
        }
    }
}

/// The section format of a text tool protocol.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SectionFormat {
    /// `## Thinking` / `## Action` / `## Answer` headings.
    #[default]
    Markdown,
    /// `<thinking>` / `<action>` / `<answer>` elements.
    Xml,
}

/// Tool rounds a run may make when nothing says otherwise (no `tools.max_tool_calls`).
pub const DEFAULT_TOOL_ROUNDS: usize = 10;
/// What the model is asked: the new human input, or a whole conversation.
#[derive(Clone, Debug, PartialEq)]
pub enum RunInput {
    /// A new human message (text, images, files), after the stored history.
    Parts(Vec<ContentPart>),
    /// A whole conversation whose last message is the one to answer; replaces the history.
    Messages(Vec<Message>),
}

/// The model of a run.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelRequest {
    /// How to reach it. A missing key is filled from the process's keys, unless
    /// `custom_endpoint` is set.
    pub config: ModelConfig,
    /// Whether `config.base_url` was chosen by whoever asked (a request or `--base-url`)
    /// rather than by the server's configuration. The server's keys never go to such an
    /// endpoint.
    pub custom_endpoint: bool,
    /// The context window to assume instead of the registry's.
    pub context_window: Option<u32>,
}

impl ModelRequest {
    /// The model `model_id`, reached the default way.
    pub fn new(model_id: impl Into<String>) -> Self {
        ModelRequest {
            config: ModelConfig::new(model_id),
            custom_endpoint: false,
            context_window: None,
        }
    }
}

/// One run, every choice made.
#[derive(Clone, Debug, PartialEq)]
pub struct RunSpec {
    /// The model.
    pub model: ModelRequest,
    /// The system prompt.
    pub system: Option<String>,
    /// What to answer.
    pub input: RunInput,
    /// Built-in tools to offer, by name.
    pub tools: Vec<String>,
    /// Whether to offer `silent_exit` (subscription runs).
    pub silent_exit_tool: bool,
    /// Whether and which tool the model must call (when tools are offered).
    pub tool_choice: Option<ToolChoice>,
    /// How the model calls tools.
    pub tool_protocol: ToolProtocol,
    /// Skills the model may load (by name, from the service's skills), with `load_skill`.
    pub skills: Vec<String>,
    /// Of those, the ones loaded from the start.
    pub preload_skills: Vec<String>,
    /// MCP servers whose tools are offered (by name, from the service's servers).
    pub mcp_servers: Vec<String>,
    /// For a server of `mcp_servers` listed here, only the tools named (by their names on
    /// the server); a server not listed offers all its tools.
    pub mcp_allowed: std::collections::BTreeMap<String, Vec<String>>,
    /// Knowledge bases `knowledge_base_search` searches (none: the tool is not offered).
    pub knowledge_bases: Vec<String>,
    /// Mark the prefixes the provider may cache (Anthropic cache breakpoints).
    pub prompt_cache: bool,
    /// Tool rounds before the model must answer.
    pub max_rounds: usize,
    /// Time limit of one tool call.
    pub tool_timeout: Option<Duration>,
    /// Sampling temperature; `None` leaves the provider's default.
    pub temperature: Option<f64>,
    /// Output token limit; `None` leaves the provider's default.
    pub max_tokens: Option<u32>,
    /// The answer's shape (JSON, or JSON valid for a schema); `None` is free text.
    pub response_format: Option<ResponseFormat>,
    /// Further options sent with every model call of the run (`seed`, `top_p`, `stop`,
    /// penalties, …, as an OpenAI client asked an agent alias for them); the fields above
    /// are set over them.
    pub options: ChatOptions,
    /// Ask the model to reason first.
    pub deep_thinking: bool,
    /// Compress the context near the model's window.
    pub compression: bool,
    /// The conversation to continue and log into (`None`: a new one when logging).
    pub conversation: Option<ConversationId>,
    /// Whether the conversation's stored history comes before the input.
    pub include_history: bool,
    /// Continue after this node of `conversation` instead of its latest one (a branch when
    /// the conversation already went on from there).
    pub after: Option<NodeId>,
    /// Keep only the last this many turns of the history.
    pub history_limit: Option<usize>,
    /// The id of the response events (default: a new `resp-…`).
    pub response_id: Option<String>,
    /// Whether the run is logged into the store.
    pub log: bool,
    /// The label of the run's last answer in the store (a Responses id), by which a later
    /// request finds it.
    pub label: Option<String>,
    /// The caller the conversation belongs to when the run's first answer creates it.
    pub owner: Option<String>,
    /// Key–value pairs the client tagged the run with (OpenAI's `metadata`): sent with each
    /// request to providers that take them, and kept with every answer the run logs.
    pub metadata: BTreeMap<String, String>,
}

impl RunSpec {
    /// A run of `model` on a new human message, with every option at its default.
    pub fn new(model: ModelRequest, input: RunInput) -> Self {
        RunSpec {
            model,
            system: None,
            input,
            tools: Vec::new(),
            silent_exit_tool: false,
            tool_choice: None,
            tool_protocol: ToolProtocol::Native,
            skills: Vec::new(),
            preload_skills: Vec::new(),
            mcp_servers: Vec::new(),
            mcp_allowed: std::collections::BTreeMap::new(),
            knowledge_bases: Vec::new(),
            prompt_cache: false,
            max_rounds: DEFAULT_TOOL_ROUNDS,
            tool_timeout: None,
            temperature: None,
            max_tokens: None,
            response_format: None,
            options: ChatOptions::default(),
            deep_thinking: false,
            compression: true,
            conversation: None,
            include_history: true,
            after: None,
            history_limit: None,
            response_id: None,
            log: true,
            metadata: BTreeMap::new(),
            label: None,
            owner: None,
        }
    }
}

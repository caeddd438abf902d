//! [`ServerConfig`]: what a server allows and where it keeps things.
//!
//! Deserialisable (the CLI reads it from a YAML file), with every field defaulted. Provider
//! keys are never part of it: they come from the environment ([`ProviderKeys::from_env`]).

use std::time::Duration;

use serde::Deserialize;

use crate::api::schema::Secret;
use crate::service::keys::ProviderKeys;
use tools::ToolsConfig;

/// Default largest request body, in bytes (base64 images make requests big).
pub const DEFAULT_BODY_LIMIT: usize = 8 * 1024 * 1024;
/// Default number of responses one caller may stream at once.
pub const DEFAULT_CONCURRENCY_PER_CALLER: usize = 8;
/// Default highest `tools.max_tool_calls` a request may ask for.
pub const DEFAULT_MAX_TOOL_ROUNDS: u32 = 50;
/// Default time a client has to send a request's headers, in seconds.
pub const DEFAULT_HEADER_READ_TIMEOUT_SECS: u64 = 10;
/// Default time a client has to send a request's body once its headers are in, in seconds.
pub const DEFAULT_BODY_READ_TIMEOUT_SECS: u64 = 30;
/// Default longest stall of a write to a client that stopped reading, in seconds.
pub const DEFAULT_IDLE_TIMEOUT_SECS: u64 = 60;
/// Default number of client connections served at once.
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;

/// How a server runs. `ServerConfig::default()` is a loopback-only server on an in-memory
/// store with the calculator as its only tool.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerConfig {
    /// Bearer tokens clients must send (`Authorization: Bearer …`). None: only loopback
    /// clients are served.
    pub tokens: Vec<Secret>,
    /// Largest request body in bytes; larger ones get 413.
    pub body_limit: usize,
    /// Responses one caller (one token, or all loopback clients together when there are no
    /// tokens) may stream at once; more get 429 with `Retry-After`.
    pub concurrency_per_caller: usize,
    /// The `Retry-After` of a 429, in seconds.
    pub retry_after_secs: u64,
    /// On shutdown, how long in-flight responses may run before they are cancelled, in
    /// seconds.
    pub shutdown_grace_secs: u64,
    /// Where conversations are logged: a SQLite file path, a `postgres://` URL (feature
    /// `postgres`), or `:memory:` (the default; nothing survives a restart).
    pub store: String,
    /// Endpoints used with the server's own keys, per provider (`openai`, `anthropic`,
    /// `google`); absent: the provider's public endpoint.
    pub base_urls: ProviderBaseUrls,
    /// Whether a request may set `model_config.base_url`. Off by default: a client could
    /// otherwise make the server call any host. The server's keys are never sent to a
    /// request's base URL either way.
    pub allow_request_base_url: bool,
    /// The highest `tools.max_tool_calls` (tool rounds) a request may ask for.
    pub max_tool_rounds: u32,
    /// The built-in tools and their limits.
    pub tools: ToolsConfig,
    /// Seconds a client has to send a request's headers, counted from when the server waits
    /// for them: a new connection, or a kept-alive one after its last answer (so it is also how
    /// long an idle kept-alive connection stays open). The connection is closed after it.
    pub header_read_timeout_secs: u64,
    /// Seconds a client has to send a request's whole body once its headers are in; later
    /// bodies are answered 408.
    pub body_read_timeout_secs: u64,
    /// Seconds a write to a client may stall (a client that stopped reading its answer)
    /// before the connection is closed and its run cancelled.
    pub idle_timeout_secs: u64,
    /// Client connections served at once; more are answered 503 and closed.
    pub max_connections: usize,
    /// Extra `Host` names (with or without a port) a server without tokens accepts, besides
    /// loopback addresses (`127.0.0.0/8`, `[::1]`) and `localhost` (and its subdomains), which
    /// is where a tokenless server listens. A request naming any other host is refused (a
    /// DNS-rebinding web page).
    pub allowed_hosts: Vec<String>,
    /// Web origins (`https://app.example.com`) allowed to call the API from a browser (CORS).
    /// None by default: a request with an `Origin` header is refused unless it names one of
    /// these (`*` allows every origin).
    pub cors_origins: Vec<String>,
    /// How much a provider may make the server buffer (one SSE event, an error body, a
    /// non-streamed answer): a provider, or a client's `base_url` where allowed, that sends
    /// more gets its answer ended with an error naming the cap.
    pub provider_limits: providers::Limits,
    /// Whether a deterministic repeat on the OpenAI-compatible endpoints (temperature 0, the
    /// same model, options and tools, a history already in the tree) is answered from the
    /// conversation tree instead of calling the model. Off by default: the operator opts in,
    /// and such answers say so in the `skein-cache: hit` header.
    pub reuse_deterministic_answers: bool,
    /// Model names that run Skein's agent loop with server-side tools on the OpenAI-compatible
    /// endpoints (`skein/agent: {model: gpt-4o-mini, tools: [calculator]}`). None by
    /// default: a Chat Completions request is one model call unless the operator names an
    /// agent here.
    pub agents: std::collections::BTreeMap<String, AgentAlias>,
    /// Built-in tools that one bearer token's requests run with on the OpenAI-compatible
    /// endpoints, whatever model they name (`- {token: …, tools: [calculator]}`; the token
    /// must be one of `tokens`). None by default.
    pub token_tools: Vec<TokenTools>,
    /// MCP servers started (stdio) or connected (streamable HTTP) when the server starts;
    /// requests use their tools by server name (`tools.mcp_servers: [{name}]`), never by
    /// command or URL. None by default.
    #[cfg(feature = "mcp")]
    pub mcp_servers: Vec<mcp::McpServerConfig>,
    /// Directories of skills (folders holding a `SKILL.md`) that requests may offer with
    /// `tools.skills`. None by default.
    pub skills_dirs: Vec<std::path::PathBuf>,
    /// The knowledge bases (`skein kb add NAME FILES…`, in the store's database) every caller
    /// may search: a request's `kb_ids` may name only these (and its token's
    /// `token_knowledge_bases`), and `knowledge_base_search` searches all of them when a
    /// request enables it without naming any (`tools.builtin.knowledge_base_search: {enabled:
    /// true}`), or when an agent alias or a token's tools list `knowledge_base_search`. Each
    /// must exist when the server starts. None by default: the store's other bases are never
    /// offered.
    pub knowledge_bases: Vec<String>,
    /// Knowledge bases offered to one bearer token only, besides `knowledge_bases`
    /// (`- {token: …, knowledge_bases: [hr-private]}`; the token must be one of `tokens`).
    /// None by default.
    pub token_knowledge_bases: Vec<TokenKnowledgeBases>,
    /// Provider keys, from the environment; never deserialised from a file.
    #[serde(skip)]
    pub keys: ProviderKeys,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            tokens: Vec::new(),
            body_limit: DEFAULT_BODY_LIMIT,
            concurrency_per_caller: DEFAULT_CONCURRENCY_PER_CALLER,
            retry_after_secs: 1,
            shutdown_grace_secs: 30,
            store: ":memory:".to_owned(),
            base_urls: ProviderBaseUrls::default(),
            reuse_deterministic_answers: false,
            agents: std::collections::BTreeMap::new(),
            token_tools: Vec::new(),
            #[cfg(feature = "mcp")]
            mcp_servers: Vec::new(),
            skills_dirs: Vec::new(),
            knowledge_bases: Vec::new(),
            token_knowledge_bases: Vec::new(),
            allow_request_base_url: false,
            max_tool_rounds: DEFAULT_MAX_TOOL_ROUNDS,
            tools: ToolsConfig::default(),
            header_read_timeout_secs: DEFAULT_HEADER_READ_TIMEOUT_SECS,
            body_read_timeout_secs: DEFAULT_BODY_READ_TIMEOUT_SECS,
            idle_timeout_secs: DEFAULT_IDLE_TIMEOUT_SECS,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            allowed_hosts: Vec::new(),
            cors_origins: Vec::new(),
            provider_limits: providers::Limits::default(),
            keys: ProviderKeys::default(),
        }
    }
}

impl ServerConfig {
    /// The shutdown grace period.
    pub fn shutdown_grace(&self) -> Duration {
        Duration::from_secs(self.shutdown_grace_secs)
    }

    /// The header read timeout ([`header_read_timeout_secs`](Self::header_read_timeout_secs)).
    pub fn header_read_timeout(&self) -> Duration {
        Duration::from_secs(self.header_read_timeout_secs)
    }

    /// The body read timeout ([`body_read_timeout_secs`](Self::body_read_timeout_secs)).
    pub fn body_read_timeout(&self) -> Duration {
        Duration::from_secs(self.body_read_timeout_secs)
    }

    /// A redactor that knows every secret this configuration gives the server: the provider
    /// keys, the bearer tokens, the MCP servers' tokens and credential-like environment
    /// values, and the built-in tools' keys (the web search key, read from the environment).
    /// Log lines and tool results go through it, so none of these is shown to anyone.
    pub fn redactor(&self) -> messages::Redactor {
        let mut redactor = self.keys.redactor();
        for token in &self.tokens {
            redactor.add(token.expose());
        }
        #[cfg(feature = "mcp")]
        for server in &self.mcp_servers {
            redactor.extend(&server.redactor());
        }
        redactor.extend(&self.tools.redactor());
        redactor
    }

    /// The write stall timeout ([`idle_timeout_secs`](Self::idle_timeout_secs)).
    pub fn idle_timeout(&self) -> Duration {
        Duration::from_secs(self.idle_timeout_secs)
    }

    /// The `Retry-After` delay of a 429.
    pub fn retry_after(&self) -> Duration {
        Duration::from_secs(self.retry_after_secs)
    }
}

/// The server's own endpoint per provider, used together with its keys.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderBaseUrls {
    /// OpenAI or any OpenAI-compatible server (`…/v1`).
    #[serde(default)]
    pub openai: Option<String>,
    /// Anthropic (the host, without `/v1`).
    #[serde(default)]
    pub anthropic: Option<String>,
    /// Gemini (`…/v1beta`).
    #[serde(default)]
    pub google: Option<String>,
    /// OpenRouter (`…/api/v1`).
    #[serde(default)]
    pub openrouter: Option<String>,
}

impl ProviderBaseUrls {
    /// The configured endpoint of `provider`.
    pub fn get(&self, provider: providers::Provider) -> Option<&str> {
        match provider {
            providers::Provider::OpenAi => self.openai.as_deref(),
            providers::Provider::Anthropic => self.anthropic.as_deref(),
            providers::Provider::Google => self.google.as_deref(),
            providers::Provider::OpenRouter => self.openrouter.as_deref(),
        }
    }
}

/// Built-in tools for the requests of one bearer token: they run Skein's agent loop on the
/// model each request names, as an [`AgentAlias`] would.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenTools {
    /// The token (one of the server's `tokens`).
    pub token: Secret,
    /// Built-in tools its requests may call, by name (each must be enabled in `tools`), and
    /// `knowledge_base_search` for the configured `knowledge_bases`.
    pub tools: Vec<String>,
    /// A system prompt put before the client's own.
    #[serde(default)]
    pub system: Option<String>,
    /// Tool rounds before the model must answer (default 10).
    #[serde(default)]
    pub max_rounds: Option<usize>,
}

/// Knowledge bases that one bearer token may search besides the server's `knowledge_bases`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenKnowledgeBases {
    /// The token (one of the server's `tokens`).
    pub token: Secret,
    /// The bases its requests may name in `kb_ids`, and that its `knowledge_base_search`
    /// searches when a request names none. Each must exist when the server starts.
    pub knowledge_bases: Vec<String>,
}

/// An agent the operator offers under a model name: the model it runs on, the built-in tools
/// it may call (from `tools`), and how many tool rounds it may take.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentAlias {
    /// The model the agent runs on.
    pub model: String,
    /// Built-in tools it may call, by name (each must be enabled in `tools`), and
    /// `knowledge_base_search` for the configured `knowledge_bases`.
    #[serde(default)]
    pub tools: Vec<String>,
    /// A system prompt put before the client's own.
    #[serde(default)]
    pub system: Option<String>,
    /// Tool rounds before it must answer (default 10).
    #[serde(default)]
    pub max_rounds: Option<usize>,
}

impl AgentAlias {
    /// The built-in tools it names: its `tools` but `knowledge_base_search`.
    pub fn builtin_tools(&self) -> impl Iterator<Item = &str> {
        builtin_tools(&self.tools)
    }

    /// Whether it searches the configured knowledge bases (`knowledge_base_search` is among
    /// its `tools`).
    pub fn searches_knowledge(&self) -> bool {
        searches_knowledge(&self.tools)
    }
}

/// Whether `tools` lists `knowledge_base_search`.
pub(crate) fn searches_knowledge(tools: &[String]) -> bool {
    tools.iter().any(|tool| tool == knowledge_base::TOOL_NAME)
}

/// `tools` but `knowledge_base_search`, which is not a built-in tool: it searches the
/// configured knowledge bases.
pub(crate) fn builtin_tools(tools: &[String]) -> impl Iterator<Item = &str> {
    tools
        .iter()
        .map(String::as_str)
        .filter(|tool| *tool != knowledge_base::TOOL_NAME)
}

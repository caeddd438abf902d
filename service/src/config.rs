//! [`ServiceConfig`]: what the service offers and where it keeps things: the store, the
//! models' endpoints, the built-in tools, agents, MCP servers, skills and knowledge bases.
//!
//! Deserialisable (a server reads it from its YAML file, flattened into its own settings),
//! with every field defaulted. Provider keys are never part of it: they come from the
//! environment ([`ProviderKeys::from_env`]).

use std::collections::BTreeMap;

use providers::Provider;
use serde::Deserialize;
use tools::ToolsConfig;

use crate::Secret;
use crate::keys::ProviderKeys;

/// Default highest `tools.max_tool_calls` a request may ask for.
pub const DEFAULT_MAX_TOOL_ROUNDS: u32 = 50;

/// What a service offers. `ServiceConfig::default()` is an in-memory store with the
/// calculator as its only tool.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServiceConfig {
    /// Where conversations are logged: a SQLite file path, a `postgres://` URL (feature
    /// `postgres`), or `:memory:` (the default; nothing survives a restart).
    pub store: String,
    /// Endpoints used with the service's own keys, per provider (`openai`, `anthropic`,
    /// `google`); absent: the provider's public endpoint.
    pub base_urls: ProviderBaseUrls,
    /// Whether a request may set `model_config.base_url`. Off by default: a client could
    /// otherwise make the service call any host. The service's keys are never sent to a
    /// request's base URL either way.
    pub allow_request_base_url: bool,
    /// The highest `tools.max_tool_calls` (tool rounds) a request may ask for.
    pub max_tool_rounds: u32,
    /// The built-in tools and their limits.
    pub tools: ToolsConfig,
    /// How much a provider may make the service buffer (one SSE event, an error body, a
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
    /// must be one of the server's `tokens`). None by default.
    pub token_tools: Vec<TokenTools>,
    /// MCP servers started (stdio) or connected (streamable HTTP) when the service starts;
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
    /// must exist when the service starts. None by default: the store's other bases are never
    /// offered.
    pub knowledge_bases: Vec<String>,
    /// Knowledge bases offered to one bearer token only, besides `knowledge_bases`
    /// (`- {token: …, knowledge_bases: [hr-private]}`; the token must be one of the server's
    /// `tokens`). None by default.
    pub token_knowledge_bases: Vec<TokenKnowledgeBases>,
    /// What the OpenAI-compatible endpoints do with a request field the model's provider can
    /// neither honour nor translate (a `seed` for Anthropic, `logit_bias` for Gemini, …):
    /// `false` (the default) refuses the request with a 400 naming the fields and the
    /// provider; `true` drops them and names them in the `x-skein-dropped-params` header.
    /// `models` overrides it per model; for an agent alias, the alias's entry in `models`
    /// counts first, then that of the model it runs on.
    pub drop_unsupported_params: bool,
    /// Settings of single models, by the model id clients send
    /// (`claude-sonnet-4-5: {drop_unsupported_params: true}`). None by default.
    pub models: BTreeMap<String, ModelSettings>,
    /// How media a provider cannot read by URL is fetched for it (Gemini takes no web URL:
    /// an image or file a client names by one is fetched and sent inline), on every endpoint
    /// and in agent runs: public addresses only unless `allow_private` names a host
    /// (`media.internal`, `10.0.0.5:8080`), at most `max_bytes` (20 MiB) within
    /// `timeout_secs` (30).
    ///
    /// ```
    /// let config: service::ServiceConfig = serde_json::from_str(
    ///     r#"{"media_fetch": {"allow_private": ["media.internal"], "max_bytes": 1048576}}"#,
    /// )?;
    /// assert_eq!(config.media_fetch.max_bytes, 1_048_576);
    /// assert_eq!(config.media_fetch.timeout_secs, 30);
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub media_fetch: tools::MediaFetchPolicy,
    /// Runs kept in the store: how long a replica's hold on a run lasts (`lease_ttl`, 10 s:
    /// a dead replica's background runs are taken over within 15 s), how long finished runs
    /// and their events are kept (`retention`, 24 h), and how often events are written
    /// (`batch`, 20 ms).
    ///
    /// ```
    /// let config: service::ServiceConfig =
    ///     serde_json::from_str(r#"{"runs": {"lease_ttl": "5s", "retention": "2h"}}"#)?;
    /// assert_eq!(config.runs.lease_ttl.as_secs(), 5);
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub runs: crate::RunsConfig,
    /// Provider keys, from the environment; never deserialised from a file.
    #[serde(skip)]
    pub keys: ProviderKeys,
}

impl Default for ServiceConfig {
    fn default() -> Self {
        ServiceConfig {
            store: ":memory:".to_owned(),
            base_urls: ProviderBaseUrls::default(),
            allow_request_base_url: false,
            max_tool_rounds: DEFAULT_MAX_TOOL_ROUNDS,
            tools: ToolsConfig::default(),
            provider_limits: providers::Limits::default(),
            reuse_deterministic_answers: false,
            agents: std::collections::BTreeMap::new(),
            token_tools: Vec::new(),
            #[cfg(feature = "mcp")]
            mcp_servers: Vec::new(),
            skills_dirs: Vec::new(),
            knowledge_bases: Vec::new(),
            token_knowledge_bases: Vec::new(),
            drop_unsupported_params: false,
            models: BTreeMap::new(),
            runs: crate::RunsConfig::default(),
            media_fetch: tools::MediaFetchPolicy::default(),
            keys: ProviderKeys::default(),
        }
    }
}

impl ServiceConfig {
    /// What to do with the fields `model`'s provider cannot honour: its own
    /// `drop_unsupported_params` in [`models`](Self::models), else the global one.
    ///
    /// ```
    /// use service::ServiceConfig;
    /// use service::config::UnsupportedParams;
    ///
    /// let config: ServiceConfig = serde_json::from_str(
    ///     r#"{"models": {"claude-sonnet-4-5": {"drop_unsupported_params": true}}}"#,
    /// )?;
    /// assert_eq!(config.unsupported_params("claude-sonnet-4-5"), UnsupportedParams::Drop);
    /// assert_eq!(config.unsupported_params("gemini-2.5-flash"), UnsupportedParams::Refuse);
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn unsupported_params(&self, model: &str) -> UnsupportedParams {
        self.first_setting(&[model])
    }

    /// What to do with the fields an agent alias's model cannot honour: the alias's own
    /// `drop_unsupported_params` in [`models`](Self::models) (keyed by the name clients send),
    /// else that of the model it runs on, else the global one.
    ///
    /// ```
    /// use service::ServiceConfig;
    /// use service::config::UnsupportedParams;
    ///
    /// let config: ServiceConfig = serde_json::from_str(
    ///     r#"{"agents": {"skein/agent": {"model": "claude-sonnet-4-5"},
    ///                   "skein/strict": {"model": "claude-sonnet-4-5"}},
    ///         "models": {"claude-sonnet-4-5": {"drop_unsupported_params": true},
    ///                    "skein/strict": {"drop_unsupported_params": false}}}"#,
    /// )?;
    /// let drop = config.agent_unsupported_params("skein/agent", "claude-sonnet-4-5");
    /// assert_eq!(drop, UnsupportedParams::Drop);
    /// let refuse = config.agent_unsupported_params("skein/strict", "claude-sonnet-4-5");
    /// assert_eq!(refuse, UnsupportedParams::Refuse);
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn agent_unsupported_params(&self, alias: &str, model: &str) -> UnsupportedParams {
        self.first_setting(&[alias, model])
    }

    /// The `drop_unsupported_params` of the first of `names` that has one in `models`, else
    /// the global one.
    fn first_setting(&self, names: &[&str]) -> UnsupportedParams {
        let drop = names
            .iter()
            .find_map(|name| self.models.get(*name)?.drop_unsupported_params)
            .unwrap_or(self.drop_unsupported_params);
        if drop {
            UnsupportedParams::Drop
        } else {
            UnsupportedParams::Refuse
        }
    }

    /// A redactor that knows every secret this configuration gives the service: the provider
    /// keys, the MCP servers' tokens and credential-like environment values, and the built-in
    /// tools' keys (the web search key, read from the environment). Log lines and tool results
    /// go through it, so none of these is shown to anyone.
    pub fn redactor(&self) -> messages::Redactor {
        let mut redactor = self.keys.redactor();
        #[cfg(feature = "mcp")]
        for server in &self.mcp_servers {
            redactor.extend(&server.redactor());
        }
        redactor.extend(&self.tools.redactor());
        redactor
    }
}

/// The service's own endpoint per provider, used together with its keys. In configuration
/// files, a map keyed by provider name, each endpoint in the provider's convention:
/// `openai` (or any OpenAI-compatible server, `…/v1`), `anthropic` (the host, without `/v1`),
/// `google` (`…/v1beta`), `openrouter` (`…/api/v1`); a null value counts as unset.
///
/// ```
/// use providers::Provider;
/// use service::config::ProviderBaseUrls;
///
/// let urls: ProviderBaseUrls = serde_json::from_str(r#"{"openai": "http://127.0.0.1:8000/v1"}"#)?;
/// assert_eq!(urls.get(Provider::OpenAi), Some("http://127.0.0.1:8000/v1"));
/// assert_eq!(urls.get(Provider::Google), None);
/// assert!(serde_json::from_str::<ProviderBaseUrls>(r#"{"gpt": "http://x/v1"}"#).is_err());
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProviderBaseUrls(BTreeMap<Provider, String>);

impl ProviderBaseUrls {
    /// The configured endpoint of `provider`.
    pub fn get(&self, provider: Provider) -> Option<&str> {
        self.0.get(&provider).map(String::as_str)
    }

    /// Sets the endpoint of `provider`.
    pub fn set(&mut self, provider: Provider, url: impl Into<String>) {
        self.0.insert(provider, url.into());
    }
}

impl<'de> Deserialize<'de> for ProviderBaseUrls {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let urls = BTreeMap::<Provider, Option<String>>::deserialize(deserializer)?;
        Ok(urls
            .into_iter()
            .filter_map(|(provider, url)| Some((provider, url?)))
            .collect())
    }
}

impl FromIterator<(Provider, String)> for ProviderBaseUrls {
    fn from_iter<I: IntoIterator<Item = (Provider, String)>>(urls: I) -> Self {
        ProviderBaseUrls(urls.into_iter().collect())
    }
}

impl<const N: usize> From<[(Provider, String); N]> for ProviderBaseUrls {
    fn from(urls: [(Provider, String); N]) -> Self {
        urls.into_iter().collect()
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

/// The operator's settings for one model ([`ServiceConfig::models`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSettings {
    /// [`ServiceConfig::drop_unsupported_params`] for this model; unset: the global one.
    #[serde(default)]
    pub drop_unsupported_params: Option<bool>,
}

/// What happens to a request field the model's provider can neither honour nor translate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnsupportedParams {
    /// The request is refused, naming the fields and the provider.
    Refuse,
    /// The fields are left out of the call and named in the answer's headers.
    Drop,
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

//! What several commands share: the log database, and the options of `run` and `chat`.

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use clap::builder::PossibleValuesParser;
use conversation_tree::{ConversationId, NodeId, Store};
use messages::Message;
use providers::{ECHO_MODEL_ID, ModelConfig, Provider, detect_provider};
use service::Secret;
use service::config::{DEFAULT_MAX_TOOL_ROUNDS, ProviderBaseUrls};
use service::keys::{ProviderKeys, key_variable};
use service::options::{RunOptions, check_run_options};
use service::{ChatService, ModelRequest, RunInput, RunSpec, SectionFormat, ToolProtocol};
use tools::{BuiltinTools, HttpGetPolicy, ToolsConfig, WEB_SEARCH, WebSearchConfig};

use crate::CliError;

/// The log database: `--db`, else `skein/logs.db` in the platform data directory.
pub(crate) fn db_location(db: Option<&str>) -> Result<String, CliError> {
    if let Some(db) = db {
        return Ok(db.to_owned());
    }
    let dir = dirs::data_dir().ok_or_else(|| {
        CliError::Usage(
            "this platform has no data directory; name the log database with --db PATH".into(),
        )
    })?;
    Ok(dir
        .join("skein")
        .join("logs.db")
        .to_string_lossy()
        .into_owned())
}

/// Opens the log database.
pub(crate) async fn open_store(db: Option<&str>) -> Result<Arc<dyn Store>, CliError> {
    Ok(service::store::open_store(&db_location(db)?).await?)
}

/// Opens the log database for reading only, for commands that never write (`skein logs`):
/// never created or written, so a read-only file works, and a writer's lock is waited for. A
/// store that does not exist yet reads as an empty one.
///
/// A log written by an older Skein is upgraded once, as any writing command would do, so that
/// the first `skein logs` after an upgrade does not send the user off to run something else;
/// where it cannot be upgraded (a read-only file), the error says so.
pub(crate) async fn open_store_read_only(db: Option<&str>) -> Result<Arc<dyn Store>, CliError> {
    let location = db_location(db)?;
    match service::store::open_store_read_only(&location).await {
        Ok(store) => Ok(store),
        Err(service::ServiceError::Store {
            source: conversation_tree::StoreError::NoStore { .. },
            ..
        }) => Ok(Arc::new(
            conversation_tree::SqliteStore::open_in_memory().await?,
        )),
        Err(
            err @ service::ServiceError::Store {
                source: conversation_tree::StoreError::OlderSchema { .. },
                ..
            },
        ) => match service::store::open_store(&location).await {
            Ok(_upgraded) => Ok(service::store::open_store_read_only(&location).await?),
            Err(_) => Err(err.into()),
        },
        Err(err) => Err(err.into()),
    }
}

/// The model and tool options of `skein run` and `skein chat`.
#[derive(Debug, Args)]
pub(crate) struct AgentArgs {
    /// The model: gpt-4o-mini, claude-sonnet-4-5, gemini-2.5-flash, echo, … [default: the
    /// continued conversation's model, else --provider's model when its key is set, else the
    /// first provider with a key, else echo].
    #[arg(short, long, env = "SKEIN_MODEL")]
    pub(crate) model: Option<String>,
    /// The protocol that reaches the model when its id does not tell (`gpt-*`, `claude-*` and
    /// `gemini-*` do; others default to openai, any OpenAI-compatible server). openrouter
    /// takes OpenRouter's `vendor/model` ids and reads OPENROUTER_API_KEY.
    #[arg(long, value_name = "PROVIDER",
          value_parser = PossibleValuesParser::new(Provider::ALL.map(Provider::as_str)))]
    pub(crate) provider: Option<String>,
    /// The system prompt.
    #[arg(short, long)]
    pub(crate) system: Option<String>,
    /// Offer a built-in tool: calculator, read_file, list_files (need --root), http_get (needs
    /// --allow-host), web_search (needs --web-search, which offers it too). Repeat for several.
    #[arg(long = "tool", value_name = "NAME")]
    pub(crate) tools: Vec<String>,
    /// Tool rounds before the model must answer.
    #[arg(long, default_value_t = service::DEFAULT_TOOL_ROUNDS)]
    pub(crate) max_rounds: usize,
    /// Continue the most recent conversation.
    #[arg(short = 'c', long = "continue", conflicts_with_all = ["cid", "from"])]
    pub(crate) continue_last: bool,
    /// Continue the conversation with this id (from its latest response).
    #[arg(long, value_name = "ID", conflicts_with = "from")]
    pub(crate) cid: Option<String>,
    /// Continue after this logged response (an id from `skein logs`): a new branch when the
    /// conversation already went on from there.
    #[arg(long, value_name = "NODE")]
    pub(crate) from: Option<String>,
    /// Do not log the conversation.
    #[arg(long)]
    pub(crate) no_log: bool,
    /// An OpenAI-compatible endpoint (e.g. http://localhost:11434/v1), or the endpoint of the
    /// model's provider in its own convention. The provider's environment key
    /// (OPENAI_API_KEY, …) is not sent there unless it is the provider's own host: give
    /// --api-key, or --send-env-key.
    #[arg(long, value_name = "URL")]
    pub(crate) base_url: Option<String>,
    /// The API key to send to the model's endpoint, instead of the provider's environment key
    /// (never shown).
    #[arg(long, env = "SKEIN_API_KEY", hide_env_values = true, value_name = "KEY",
          value_parser = secret)]
    pub(crate) api_key: Option<Secret>,
    /// Send the provider's environment key (OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY
    /// or OPENROUTER_API_KEY) to --base-url even though it is not the provider's own host (--api-key
    /// wins over it).
    #[arg(long, requires = "base_url")]
    pub(crate) send_env_key: bool,
    /// Sampling temperature (0 makes answers repeatable and lets logged answers be reused).
    #[arg(long)]
    pub(crate) temperature: Option<f64>,
    /// Output token limit.
    #[arg(long)]
    pub(crate) max_tokens: Option<u32>,
    /// Ask a reasoning model to think first.
    #[arg(long)]
    pub(crate) think: bool,
    /// A directory of skills (folders holding a SKILL.md), or one skill folder: the model may
    /// load them with the load_skill tool, which adds their instructions and tools. Repeat for
    /// several.
    #[arg(long = "skills", value_name = "DIR")]
    pub(crate) skills: Vec<PathBuf>,
    /// Offer web_search through a search backend: searxng=URL (a SearxNG instance), brave
    /// (key in BRAVE_API_KEY) or tavily (key in TAVILY_API_KEY); brave=URL and tavily=URL
    /// name another endpoint.
    #[arg(long, value_name = "BACKEND[=URL]")]
    pub(crate) web_search: Option<String>,
    /// A knowledge base the model may search with knowledge_base_search (add files with
    /// `skein kb add NAME FILES…`). Repeat for several.
    #[arg(long = "kb", value_name = "NAME")]
    pub(crate) knowledge_bases: Vec<String>,
    /// An MCP server whose tools the model may call: NAME=COMMAND [ARG…] (a program speaking
    /// MCP on stdio) or NAME=https://… (streamable HTTP). Its tools are named NAME__TOOL.
    /// Repeat for several. A server a skill names in its `mcp_servers` is offered only once
    /// the model loads that skill.
    #[arg(long = "mcp", value_name = "NAME=COMMAND|URL")]
    pub(crate) mcp: Vec<String>,
    /// How the model calls tools: native (function calling), or a text protocol for models
    /// without it, the model writing its calls as json or yaml in an action section.
    #[arg(long, value_enum, default_value_t = ToolMode::Native)]
    pub(crate) tool_mode: ToolMode,
    /// The sections of a text protocol: markdown (## Action) or xml (`<action>`) [default:
    /// markdown].
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub(crate) format: Option<SectionFormatArg>,
    /// Mark the tools, the system prompt and the conversation so far as cacheable (Anthropic
    /// cache breakpoints; OpenAI caches by itself).
    #[arg(long)]
    pub(crate) cache: bool,
    /// The directory read_file and list_files may read.
    #[arg(long, value_name = "DIR")]
    pub(crate) root: Option<PathBuf>,
    /// A host http_get may fetch from (repeat for several; *.example.com for subdomains).
    #[arg(long = "allow-host", value_name = "HOST")]
    pub(crate) allow_hosts: Vec<String>,
    /// Ask at the terminal before running calls of this tool: a name (http_get), mcp:SERVER,
    /// mcp:SERVER/TOOL, or a pattern ('*' for every tool, 'mcp:*/write*'). Answer y, n (a
    /// reason may follow, the model reads it) or a (always, for the rest of the
    /// conversation). Without a terminal such calls are declined. Repeat for several.
    #[arg(long = "ask", value_name = "TOOL")]
    pub(crate) ask: Vec<String>,
    /// Run every tool without asking, whatever --ask says (for scripts).
    #[arg(long)]
    pub(crate) yes_tools: bool,
}

/// The servers of `--mcp` (`skein run`, `skein chat`, `skein serve`), parsed.
#[cfg(feature = "mcp")]
pub(crate) fn mcp_configs(specs: &[String]) -> Result<Vec<mcp::McpServerConfig>, CliError> {
    specs
        .iter()
        .map(|spec| {
            mcp::McpServerConfig::parse(spec)
                .map_err(|error| CliError::Usage(format!("--mcp {spec}: {error}")))
        })
        .collect()
}

/// Without MCP support, `--mcp` is refused.
#[cfg(not(feature = "mcp"))]
pub(crate) fn refuse_mcp(specs: &[String]) -> Result<(), CliError> {
    match specs.first() {
        None => Ok(()),
        Some(_) => Err(CliError::Usage(
            "--mcp: this skein was built without MCP support (the `mcp` feature)".to_owned(),
        )),
    }
}

/// The servers of `--mcp`, connected.
#[cfg(feature = "mcp")]
pub(crate) async fn connect_mcp(specs: &[String]) -> Result<service::mcp::McpTools, CliError> {
    service::mcp::McpTools::connect(&mcp_configs(specs)?)
        .await
        .map_err(|error| CliError::Usage(error.to_string()))
}

/// Without MCP support, none: `--mcp` is refused.
#[cfg(not(feature = "mcp"))]
pub(crate) async fn connect_mcp(specs: &[String]) -> Result<service::mcp::McpTools, CliError> {
    refuse_mcp(specs).map(|()| service::mcp::McpTools::default())
}

/// `--tool-mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ToolMode {
    /// The provider's function calling.
    Native,
    /// JSON tool calls in a text protocol.
    Json,
    /// YAML tool calls in a text protocol.
    Yaml,
}

/// `--format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum SectionFormatArg {
    /// Markdown headings.
    Markdown,
    /// XML elements.
    Xml,
}

/// Where a run picks up.
#[derive(Debug, Default)]
pub(crate) struct Resume {
    /// The conversation to log into.
    pub(crate) conversation: Option<ConversationId>,
    /// With `--from`: the messages up to that response (else the latest response's history
    /// is loaded by the service).
    pub(crate) history: Option<Vec<Message>>,
    /// With `--from`: that response, which the service continues after.
    pub(crate) after: Option<NodeId>,
    /// The model of the response picked up from.
    pub(crate) model: Option<String>,
}

/// Whether a run without `-m` or `--provider` may pick `provider`'s default model: only when
/// detection routes that model back to it (OpenRouter's `vendor/model` ids would go to OpenAI).
fn picked_without_flag(provider: Provider) -> bool {
    detect_provider(None, provider.info().default_model) == provider
}

/// The key variables of `providers`, as a list for a sentence: `A, B or C`.
fn key_variables(providers: impl Iterator<Item = Provider>) -> String {
    let names: Vec<&str> = providers.map(key_variable).collect();
    match names.split_last() {
        Some((last, [])) => (*last).to_owned(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// The model a run uses when `-m` is not given, and a note for stderr when it is the echo
/// model for want of a key. With `--provider` (`provider`), that provider's default model
/// ([`ProviderInfo::default_model`](providers::ProviderInfo)) when its key is set; without it,
/// the default model of the first provider (in [`Provider::ALL`] order) that has a key and that
/// detection routes that model to.
pub(crate) fn default_model(
    keys: &ProviderKeys,
    provider: Option<Provider>,
) -> (String, Option<String>) {
    let echo = |why: String| {
        let note = format!("{why}: using the offline `echo` model (pick another with -m)");
        (ECHO_MODEL_ID.to_owned(), Some(note))
    };
    if let Some(provider) = provider {
        return if keys.get(provider).is_some() {
            (provider.info().default_model.to_owned(), None)
        } else {
            echo(format!(
                "no {} is set for --provider {provider}",
                key_variable(provider)
            ))
        };
    }
    let (pickable, flag_only): (Vec<Provider>, Vec<Provider>) = Provider::ALL
        .into_iter()
        .partition(|p| picked_without_flag(*p));
    if let Some(found) = pickable.iter().find(|p| keys.get(**p).is_some()) {
        return (found.info().default_model.to_owned(), None);
    }
    let unset = key_variables(pickable.into_iter());
    match flag_only.into_iter().find(|p| keys.get(*p).is_some()) {
        Some(other) => echo(format!(
            "no {unset} is set ({} is: add --provider {other} to use it)",
            key_variable(other)
        )),
        None => echo(format!(
            "no {} is set",
            key_variables(Provider::ALL.into_iter())
        )),
    }
}

impl AgentArgs {
    /// The service runs go through, logging into `store`, with the `--mcp` servers connected.
    pub(crate) async fn service(
        &self,
        store: Arc<dyn Store>,
        db: Option<&str>,
    ) -> Result<ChatService, CliError> {
        let http_get =
            (!self.allow_hosts.is_empty()).then(|| HttpGetPolicy::allow(self.allow_hosts.clone()));
        let web_search = self
            .web_search
            .as_deref()
            .map(str::parse::<WebSearchConfig>)
            .transpose()
            .map_err(|error| CliError::Usage(format!("--web-search: {error}")))?;
        let tools = BuiltinTools::new(&ToolsConfig {
            files_root: self.root.clone(),
            http_get,
            web_search,
            ..ToolsConfig::default()
        })
        .map_err(service::ServiceError::from)?;
        let skills = service::skills::SkillSet::load(&self.skills)?;
        let mcp = connect_mcp(&self.mcp).await?;
        let service = ChatService::new(
            store,
            tools,
            ProviderKeys::from_env(),
            ProviderBaseUrls::default(),
        )
        .with_skills(skills)
        .with_mcp(mcp);
        Ok(if self.knowledge_bases.is_empty() {
            service
        } else {
            service.with_knowledge(knowledge_base::KnowledgeStore::open(&db_location(db)?).await?)
        })
    }

    /// Where the run picks up: the conversation `-c`, `--cid` or `--from` names (checked to
    /// exist) and, for `--from`, the messages up to that response.
    pub(crate) async fn resume(&self, store: &dyn Store) -> Result<Resume, CliError> {
        if let Some(from) = &self.from {
            let id: NodeId = from.parse()?;
            let node = store.node(id).await?.ok_or_else(|| {
                CliError::Usage(format!(
                    "no response #{from} in the log; `skein logs show` lists them"
                ))
            })?;
            let history = agent_loop::history::continuation(store, id).await?.messages;
            return Ok(Resume {
                conversation: Some(node.conversation_id().clone()),
                history: Some(history),
                after: Some(id),
                model: node.model().map(str::to_owned),
            });
        }
        let conversation = if let Some(cid) = &self.cid {
            let id = ConversationId::new(cid.clone())?;
            if store.conversation(&id).await?.is_none() {
                return Err(CliError::Usage(format!(
                    "no conversation `{cid}` in the log; `skein logs` lists them"
                )));
            }
            Some(id)
        } else if self.continue_last {
            let latest = store.conversations(1).await?;
            match latest.into_iter().next() {
                Some(summary) => Some(summary.id),
                None => {
                    return Err(CliError::Usage(
                        "there is no conversation to continue yet; run one first".into(),
                    ));
                }
            }
        } else {
            None
        };
        let latest = match &conversation {
            Some(conversation) => store.latest_node(conversation).await?,
            None => None,
        };
        Ok(Resume {
            conversation,
            history: None,
            after: None,
            model: latest
                .as_ref()
                .and_then(|node| node.model().map(str::to_owned)),
        })
    }

    /// Refuses option values no run can take (`--temperature NaN`, `--max-tokens 0`, …) with
    /// the reasons `POST /v1/response` gives for them: one rule, `service::options`'s. Tool rounds
    /// are bounded as a server's are by default ([`DEFAULT_MAX_TOOL_ROUNDS`]).
    pub(crate) fn check(&self) -> Result<(), CliError> {
        let options = RunOptions {
            temperature: self.temperature,
            max_tokens: self.max_tokens,
            max_rounds: self.max_rounds,
        };
        let problems = check_run_options(&options, DEFAULT_MAX_TOOL_ROUNDS);
        if problems.is_empty() {
            Ok(())
        } else {
            Err(CliError::Options(problems))
        }
    }

    /// The model to use: `-m`, else the continued conversation's, else [`default_model`]. Says
    /// on stderr when it is the echo model for want of a key, and when the provider's
    /// environment key is held back from `--base-url` ([`AgentArgs::held_back_key`]).
    pub(crate) fn model(&self, resume: &Resume) -> String {
        let keys = ProviderKeys::from_env();
        let model = match self.model.clone().or_else(|| resume.model.clone()) {
            Some(model) => model,
            None => {
                let provider = self
                    .provider
                    .as_deref()
                    .map(|alias| providers::detect_provider(Some(alias), ECHO_MODEL_ID));
                let (model, note) = default_model(&keys, provider);
                if let Some(note) = note {
                    eprintln!("skein: {note}");
                }
                model
            }
        };
        if let Some(note) = self.held_back_key(&model, &keys) {
            eprintln!("skein: {note}");
        }
        model
    }

    /// How `model_id` is reached: the `--base-url` endpoint, with the `--api-key` key, else the
    /// provider's environment key when the endpoint is the provider's own host (or none is
    /// given), or `--send-env-key` says to send it anyway. Another endpoint gets no key from
    /// the environment: the provider adapters then send a dummy key, as local
    /// OpenAI-compatible servers expect.
    pub(crate) fn model_request(&self, model_id: String) -> ModelRequest {
        let mut config = ModelConfig::new(model_id);
        config.model.clone_from(&self.provider);
        config.base_url.clone_from(&self.base_url);
        let provider = config.provider();
        let custom_endpoint = self
            .base_url
            .as_deref()
            .is_some_and(|url| !is_own_endpoint(url, provider));
        if let Some(key) = &self.api_key {
            config.api_key = Some(key.expose().to_owned());
        } else if custom_endpoint && self.send_env_key {
            config.api_key = ProviderKeys::from_env()
                .get(provider)
                .map(|key| key.expose().to_owned());
        }
        ModelRequest {
            config,
            // The service fills in no environment key for a custom endpoint.
            custom_endpoint,
            context_window: None,
        }
    }

    /// Why the provider's environment key, which is set, is not sent to `--base-url` and how to
    /// send a key there; `None` when no key is held back.
    fn held_back_key(&self, model_id: &str, keys: &ProviderKeys) -> Option<String> {
        if model_id == ECHO_MODEL_ID || self.api_key.is_some() || self.send_env_key {
            return None;
        }
        let request = self.model_request(model_id.to_owned());
        let provider = request.config.provider();
        if !request.custom_endpoint || keys.get(provider).is_none() {
            return None;
        }
        let variable = key_variable(provider);
        Some(format!(
            "note: {variable} is not sent to --base-url, which is not {} (a dummy key is sent \
             instead); give that endpoint's key with --api-key (or SKEIN_API_KEY), or send \
             {variable} there with --send-env-key",
            own_host(provider)
        ))
    }

    /// The tool protocol `--tool-mode` and `--format` ask for.
    pub(crate) fn tool_protocol(&self) -> Result<ToolProtocol, CliError> {
        let syntax = match self.tool_mode {
            ToolMode::Native => None,
            ToolMode::Json => Some(agent_loop::TextSyntax::Json),
            ToolMode::Yaml => Some(agent_loop::TextSyntax::Yaml),
        };
        let format = self.format.map(|format| match format {
            SectionFormatArg::Markdown => SectionFormat::Markdown,
            SectionFormatArg::Xml => SectionFormat::Xml,
        });
        ToolProtocol::of(syntax, format)
            .map_err(|reason| CliError::Usage(format!("--format: {reason} (--tool-mode)")))
    }

    /// Which calls are asked about at the terminal (`--ask`, `--yes-tools`).
    pub(crate) fn approval(&self) -> Result<crate::approve::Approval, CliError> {
        crate::approve::Approval::from_args(&self.ask, self.yes_tools)
    }

    /// The run of `input` with these options on `service`, picking up at `resume`.
    pub(crate) fn spec(
        &self,
        service: &ChatService,
        model: String,
        input: RunInput,
        resume: &Resume,
    ) -> Result<RunSpec, CliError> {
        let tool_protocol = self.tool_protocol()?;
        let model = self.model_request(model);
        let mut tools = self.tools.clone();
        if self.web_search.is_some() && !tools.iter().any(|tool| tool == WEB_SEARCH) {
            tools.push(WEB_SEARCH.to_owned());
        }
        Ok(RunSpec {
            tool_protocol,
            // Every skill of `--skills` is offered, and every server of `--mcp` but those a
            // skill brings: their tools wait until the model loads that skill.
            skills: service.skills().names().map(str::to_owned).collect(),
            mcp_servers: service
                .mcp()
                .names()
                .filter(|server| {
                    !service
                        .skills()
                        .iter()
                        .any(|skill| skill.mcp_servers.iter().any(|name| name == server))
                })
                .map(str::to_owned)
                .collect(),
            knowledge_bases: self.knowledge_bases.clone(),
            prompt_cache: self.cache,
            system: self.system.clone(),
            tools,
            max_rounds: self.max_rounds,
            temperature: self.temperature,
            max_tokens: self.max_tokens,
            deep_thinking: self.think,
            conversation: resume.conversation.clone(),
            after: resume.after,
            log: !self.no_log,
            ..RunSpec::new(model, input)
        })
    }
}

/// `--api-key`'s value, kept out of `Debug` output.
fn secret(value: &str) -> Result<Secret, std::convert::Infallible> {
    Ok(Secret::new(value.trim()))
}

/// The host of `provider`'s own API (that of the adapter's default base URL): the only host its
/// environment key is sent to unless the user says otherwise.
pub(crate) fn own_host(provider: Provider) -> &'static str {
    provider.info().own_host
}

/// Whether `base_url` is `https://` on [`own_host`] of `provider` (on the default port, with no
/// user name or password). Anything unusual counts as another endpoint: the cost of a wrong
/// "no" is a note and a dummy key, of a wrong "yes" a leaked key.
fn is_own_endpoint(base_url: &str, provider: Provider) -> bool {
    let Some(rest) = base_url
        .get(..8)
        .filter(|scheme| scheme.eq_ignore_ascii_case("https://"))
        .map(|_| &base_url[8..])
    else {
        return false;
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host = authority.strip_suffix(":443").unwrap_or(authority);
    let host = host.strip_suffix('.').unwrap_or(host);
    host.eq_ignore_ascii_case(own_host(provider))
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        agent: AgentArgs,
    }

    fn args(list: &[&str]) -> AgentArgs {
        Cli::try_parse_from(std::iter::once("skein").chain(list.iter().copied()))
            .unwrap()
            .agent
    }

    #[test]
    fn environment_keys_go_only_to_their_providers_hosts() {
        for (url, provider, own) in [
            ("https://api.openai.com/v1", Provider::OpenAi, true),
            ("https://API.OpenAI.com:443/v1/", Provider::OpenAi, true),
            ("https://api.openai.com", Provider::OpenAi, true),
            ("http://api.openai.com/v1", Provider::OpenAi, false),
            (
                "https://api.openai.com.evil.example/v1",
                Provider::OpenAi,
                false,
            ),
            ("https://api.openai.com:8443/v1", Provider::OpenAi, false),
            ("https://user@api.openai.com/v1", Provider::OpenAi, false),
            (
                "https://api.openai.com@evil.example/v1",
                Provider::OpenAi,
                false,
            ),
            (
                "https://evil.example/api.openai.com",
                Provider::OpenAi,
                false,
            ),
            ("https://api.anthropic.com", Provider::Anthropic, true),
            ("https://api.anthropic.com", Provider::OpenAi, false),
            (
                "https://generativelanguage.googleapis.com/v1beta",
                Provider::Google,
                true,
            ),
            ("http://127.0.0.1:11434/v1", Provider::OpenAi, false),
            ("", Provider::OpenAi, false),
            ("https:/", Provider::OpenAi, false),
        ] {
            assert_eq!(is_own_endpoint(url, provider), own, "{url}");
        }
    }

    #[test]
    fn a_custom_endpoint_gets_only_the_key_it_is_given() {
        let custom = args(&["--base-url", "http://127.0.0.1:9/v1"]).model_request("gpt-4o".into());
        assert!(custom.custom_endpoint);
        assert_eq!(custom.config.api_key, None);

        let own = args(&["--base-url", "https://api.openai.com/v1"]).model_request("gpt-4o".into());
        assert!(!own.custom_endpoint);

        let given = args(&[
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--api-key",
            "sk-given",
        ])
        .model_request("gpt-4o".into());
        assert!(given.custom_endpoint);
        assert_eq!(given.config.api_key.as_deref(), Some("sk-given"));
        let shown = format!("{:?}", args(&["--api-key", "sk-given"]));
        assert!(!shown.contains("sk-given"), "{shown}");

        let mut keys = ProviderKeys::default();
        keys.set(Provider::OpenAi, Secret::new("sk-env"));
        let note = args(&["--base-url", "http://127.0.0.1:9/v1"])
            .held_back_key("gpt-4o", &keys)
            .unwrap();
        assert!(note.contains("OPENAI_API_KEY is not sent"), "{note}");
        assert!(
            note.contains("--api-key") && note.contains("--send-env-key"),
            "{note}"
        );
        assert!(!note.contains("sk-env"));
        assert_eq!(
            args(&["--base-url", "https://api.openai.com/v1"]).held_back_key("gpt-4o", &keys),
            None
        );
        assert_eq!(args(&[]).held_back_key("gpt-4o", &keys), None);
        assert_eq!(
            args(&["--base-url", "http://127.0.0.1:9/v1"]).held_back_key("echo", &keys),
            None
        );
    }

    /// `--provider` without `-m` picks that provider's model, never another provider's id
    /// spoken over its protocol (`gpt-4o-mini` sent to OpenRouter or to Anthropic).
    #[test]
    fn the_default_model_follows_the_provider_flag() {
        let mut keys = ProviderKeys::default();
        keys.set(Provider::OpenRouter, Secret::new("sk-or"));
        let (model, note) = default_model(&keys, Some(Provider::OpenRouter));
        assert_eq!((model.as_str(), note), ("openai/gpt-4o-mini", None));
        // An OpenRouter key alone does not pick OpenRouter (a `vendor/model` id would go to
        // OpenAI without the flag): echo, and the note says how to use the key.
        let (model, note) = default_model(&keys, None);
        assert_eq!(model, ECHO_MODEL_ID);
        let note = note.unwrap();
        assert!(
            note.contains("OPENROUTER_API_KEY") && note.contains("--provider openrouter"),
            "{note}"
        );

        keys.set(Provider::OpenAi, Secret::new("sk-openai"));
        assert_eq!(default_model(&keys, None).0, "gpt-4o-mini");
        assert_eq!(
            default_model(&keys, Some(Provider::OpenRouter)).0,
            "openai/gpt-4o-mini"
        );
        // The flag names a provider without a key: echo, naming the variable to set.
        let (model, note) = default_model(&keys, Some(Provider::Anthropic));
        assert_eq!(model, ECHO_MODEL_ID);
        let note = note.unwrap();
        assert!(note.contains("ANTHROPIC_API_KEY"), "{note}");
        assert!(!note.contains("sk-"), "{note}");
    }

    #[test]
    fn options_are_checked_by_the_servers_rule() {
        assert!(args(&[]).check().is_ok());
        let refused = args(&["--temperature", "NaN", "--max-tokens", "0"])
            .check()
            .unwrap_err()
            .to_string();
        assert_eq!(
            refused,
            "--temperature: must be between 0 and 2; --max-tokens: must be at least 1"
        );
    }
}

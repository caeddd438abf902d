//! [`ChatService`]: turns a [`RunSpec`] into a running agent — resolves the model, loads the
//! stored history in front of the input and builds the tools, the same way for the HTTP API
//! and the CLI.

use std::sync::Arc;

use agent_loop::history::{Anchor, Continuation};
use agent_loop::{Agent, AgentError, AgentInput, AgentStream, ContextPolicy, ReasoningEffort};
use conversation_tree::{ConversationId, Store, StoreError};
use messages::{Message, Role};
use providers::{Limits, ModelConfig, ModelInfo, Provider, ProviderError, ReasoningStyle};
use tokio_util::sync::CancellationToken;

use crate::config::ProviderBaseUrls;
use crate::gateway::media;
use crate::keys::ProviderKeys;
use crate::mcp::McpTools;
use crate::model::{ModelCache, resolve_model_config};
use crate::skills::SkillSet;
use crate::skills::run::SkillRun;
use crate::spec::{RunInput, RunSpec, SectionFormat, ToolProtocol};
use tools::{BuiltinTools, ToolSelectError};

/// Largest thinking budget deep thinking asks of Anthropic and Gemini models, in tokens.
const MAX_THINKING_BUDGET: u32 = 16_384;
/// Smallest budget Anthropic accepts.
const MIN_THINKING_BUDGET: u32 = 1_024;

/// Why a run could not be started. Each is the caller's to fix, except `Store`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// The model could not be built (no key, a provider feature off, a bad header).
    #[error("{0}")]
    Model(Box<ProviderError>),
    /// A requested tool is not available.
    #[error("{0}")]
    Tool(#[from] ToolSelectError),
    /// Deep thinking was asked of a model that does not reason.
    #[error(
        "model `{model}` does not reason, so deep thinking cannot be turned on; pick a reasoning \
         model (e.g. o3, claude-sonnet-4-5, gemini-2.5-flash) or turn deep thinking off"
    )]
    NotReasoning {
        /// The model.
        model: String,
    },
    /// The agent could not be built.
    #[error("{0}")]
    Agent(Box<AgentError>),
    /// The model's provider has neither a key nor an endpoint on this server.
    #[error("{0}")]
    NoKey(#[from] crate::model::NoKey),
    /// A requested skill is not among the configured ones.
    #[error(transparent)]
    Skill(#[from] crate::skills::run::SkillRunError),
    /// Knowledge bases were asked for, but this service has no knowledge store.
    #[error("knowledge bases are not available here (no knowledge store is configured)")]
    NoKnowledge,
    /// A knowledge base cannot be searched (an unknown name lists the known ones).
    #[error("{0}")]
    Knowledge(Box<knowledge_base::KbError>),
    /// The `knowledge_base_search` tool could not be built.
    #[error("cannot offer knowledge_base_search: {0}")]
    KnowledgeTool(Box<toolchain::ToolError>),
    /// A requested MCP server is not among the connected ones.
    #[error("unknown MCP server `{name}`; the servers are: {}", if known.is_empty() { "none (the operator configures them)" } else { known.as_str() })]
    UnknownMcpServer {
        /// The name asked for.
        name: String,
        /// The connected servers, comma-separated.
        known: String,
    },
    /// Reading the stored conversation failed.
    #[error("cannot read the stored conversation: {0}")]
    Store(#[from] StoreError),
    /// Media the model's provider cannot read by URL could not be fetched for it (the
    /// message names the URL and why).
    #[error("{0}")]
    Media(#[from] tools::MediaFetchError),
}

impl From<ProviderError> for RunError {
    fn from(error: ProviderError) -> Self {
        RunError::Model(Box::new(error))
    }
}

impl From<AgentError> for RunError {
    fn from(error: AgentError) -> Self {
        RunError::Agent(Box::new(error))
    }
}

/// Everything runs share: the store, the built-in tools, the process's keys and endpoints.
#[derive(Clone)]
pub struct ChatService {
    store: Arc<dyn Store>,
    tools: BuiltinTools,
    pub(crate) keys: ProviderKeys,
    pub(crate) base_urls: ProviderBaseUrls,
    pub(crate) models: Arc<ModelCache>,
    pub(crate) limits: Limits,
    skills: Arc<SkillSet>,
    mcp: Arc<McpTools>,
    knowledge: Option<knowledge_base::KnowledgeStore>,
    /// Fetches media a provider cannot read by URL.
    media: Arc<tools::MediaFetcher>,
    /// Every secret the service holds; each tool result and error goes through it.
    redactor: Arc<messages::Redactor>,
}

impl std::fmt::Debug for ChatService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatService")
            .field("tools", &self.tools)
            .field("keys", &self.keys)
            .field("base_urls", &self.base_urls)
            .field("models", &self.models)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

/// A run ready to stream: its agent and its input (history included).
#[derive(Debug)]
pub struct PreparedRun {
    agent: Agent,
    input: AgentInput,
    config: ModelConfig,
}

impl PreparedRun {
    /// The model id.
    pub fn model_id(&self) -> &str {
        self.agent.model_id()
    }

    /// The model's configuration, with the key it will send. Its `Debug` hides the key.
    pub fn model_config(&self) -> &ModelConfig {
        &self.config
    }

    /// The run with `policy` deciding which tool calls wait for a person's approval, and
    /// `grants` (tools approved "always" earlier in the conversation) running without asking.
    ///
    /// # Errors
    ///
    /// [`RunError::Agent`] when the run uses a text protocol, whose calls cannot be paused.
    pub fn with_approval(
        mut self,
        policy: agent_loop::approval::ApprovalPolicy,
        grants: agent_loop::approval::ApprovalGrants,
    ) -> Result<Self, RunError> {
        self.agent = self.agent.with_approval(policy)?;
        self.input = self.input.with_grants(grants);
        Ok(self)
    }

    /// The agent the run uses: what resumes it when it pauses for approval
    /// ([`Agent::resume_stream`]).
    pub fn agent(&self) -> &Agent {
        &self.agent
    }

    /// Starts the run. Cancelling `cancel` (or dropping the stream) stops the model call and
    /// the tools.
    pub fn stream(self, cancel: CancellationToken) -> AgentStream {
        self.agent.stream(self.input, cancel)
    }
}

impl ChatService {
    /// A service logging into `store`, offering `tools`, calling models with `keys` at
    /// `base_urls`.
    pub fn new(
        store: Arc<dyn Store>,
        tools: BuiltinTools,
        keys: ProviderKeys,
        base_urls: ProviderBaseUrls,
    ) -> Self {
        let mut redactor = keys.redactor();
        redactor.extend(tools.redactor());
        ChatService {
            store,
            tools,
            keys,
            base_urls,
            models: Arc::default(),
            limits: Limits::default(),
            skills: Arc::default(),
            mcp: Arc::default(),
            knowledge: None,
            media: Arc::new(
                tools::MediaFetcher::new(&tools::MediaFetchPolicy::default())
                    .expect("the default media fetch policy is valid"),
            ),
            redactor: Arc::new(redactor),
        }
    }

    /// Media URLs a provider cannot read itself (Gemini takes no web URL) are fetched under
    /// `policy` (by default: public addresses only, 20 MiB, 30 s).
    ///
    /// # Errors
    ///
    /// The policy's [`MediaFetchError`](tools::MediaFetchError): an `allow_private` entry that
    /// is not a host.
    pub fn with_media_fetch(
        mut self,
        policy: &tools::MediaFetchPolicy,
    ) -> Result<Self, tools::MediaFetchError> {
        self.media = Arc::new(tools::MediaFetcher::new(policy)?);
        Ok(self)
    }

    /// The fetcher of media a provider cannot read by URL.
    pub fn media_fetcher(&self) -> &tools::MediaFetcher {
        &self.media
    }

    /// How much any model of this service may make it buffer (one SSE event, an error body, a
    /// non-streamed answer), whatever endpoint a run's configuration names.
    #[must_use]
    pub fn with_provider_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// The skills runs may be offered (by name, in [`RunSpec::skills`]).
    #[must_use]
    pub fn with_skills(mut self, skills: SkillSet) -> Self {
        self.skills = Arc::new(skills);
        self
    }

    /// The skills runs may be offered.
    pub fn skills(&self) -> &SkillSet {
        &self.skills
    }

    /// The MCP servers whose tools runs may be offered (by name, in [`RunSpec::mcp_servers`]).
    #[must_use]
    pub fn with_mcp(mut self, mcp: McpTools) -> Self {
        let secrets = mcp.redactor();
        self.mcp = Arc::new(mcp);
        self.with_secrets(&secrets)
    }

    /// Adds the secrets `secrets` knows to those removed from every tool result and error (the
    /// service already knows its provider keys, its tools' keys and its MCP servers' tokens).
    #[must_use]
    pub fn with_secrets(mut self, secrets: &messages::Redactor) -> Self {
        Arc::make_mut(&mut self.redactor).extend(secrets);
        self
    }

    /// The redactor that knows every secret of the service.
    pub fn redactor(&self) -> &Arc<messages::Redactor> {
        &self.redactor
    }

    /// The MCP servers runs may use.
    pub fn mcp(&self) -> &McpTools {
        &self.mcp
    }

    /// The knowledge bases runs may search (by name, in [`RunSpec::knowledge_bases`]).
    #[must_use]
    pub fn with_knowledge(mut self, knowledge: knowledge_base::KnowledgeStore) -> Self {
        self.knowledge = Some(knowledge);
        self
    }

    /// The conversation store.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// The built-in tools.
    pub fn tools(&self) -> &BuiltinTools {
        &self.tools
    }

    /// Whether this service has a key or an endpoint of its own for `provider`, so that its
    /// models answer without a client's key.
    pub fn reaches(&self, provider: Provider) -> bool {
        self.keys.get(provider).is_some() || self.base_urls.get(provider).is_some()
    }

    /// Builds the run `spec` describes: the model, its tools, the agent, and the input with
    /// the stored history in front.
    pub async fn prepare(&self, spec: RunSpec) -> Result<PreparedRun, RunError> {
        let mut config = resolve_model_config(&spec.model, &self.keys, &self.base_urls);
        config.limits = self.limits.clone();
        crate::model::require_reachable(&config)?;
        let model = self.models.model(&config)?;
        let info = model.info().clone();

        let mut tools = self.tools.select(spec.tools.iter().map(String::as_str))?;
        // The MCP servers this run may call, its skills' included: one that stopped since an
        // earlier run is connected again first.
        let mut servers: Vec<&str> = spec.mcp_servers.iter().map(String::as_str).collect();
        for skill in spec.skills.iter().filter_map(|name| self.skills.get(name)) {
            servers.extend(skill.mcp_servers.iter().map(String::as_str));
        }
        self.mcp.revive(&servers).await;
        if !spec.knowledge_bases.is_empty() {
            let store = self.knowledge.clone().ok_or(RunError::NoKnowledge)?;
            let search =
                knowledge_base::KnowledgeBaseSearch::new(store, spec.knowledge_bases.clone())
                    .await
                    .map_err(|error| RunError::Knowledge(Box::new(error)))?;
            let tool = search
                .into_dyn()
                .map_err(|error| RunError::KnowledgeTool(Box::new(error)))?;
            // `knowledge_base_search` is not a built-in name, so it cannot clash.
            let _ = tools.add_dyn(tool);
        }
        for name in &spec.mcp_servers {
            let server = self
                .mcp
                .tools(name)
                .ok_or_else(|| RunError::UnknownMcpServer {
                    name: name.clone(),
                    known: self.mcp.names().collect::<Vec<_>>().join(", "),
                })?;
            let server = match spec.mcp_allowed.get(name) {
                // Model-facing names are `{server}__{tool}`.
                Some(allowed) => server.filtered(|tool| {
                    tool.name()
                        .strip_prefix(name.as_str())
                        .and_then(|rest| rest.strip_prefix("__"))
                        .is_some_and(|tool| allowed.iter().any(|allowed| allowed == tool))
                }),
                None => server,
            };
            // Server names are unique and prefix their tools' names, so nothing clashes.
            let _ = tools.extend(&server);
        }
        if spec.silent_exit_tool {
            // `silent_exit` is not a built-in name, so it cannot clash.
            let _ = tools.add_dyn(self.tools.silent_exit());
        }

        // The run's own settings below go over the further options, never under them.
        let mut builder = Agent::builder()
            .options(spec.options.clone())
            .tools(tools)
            .redactor(Arc::clone(&self.redactor))
            .max_rounds(spec.max_rounds)
            .compression(policy(&spec));
        if let Some(system) = &spec.system {
            builder = builder.system(system.clone());
        }
        if let Some(choice) = spec.tool_choice.clone() {
            builder = builder.tool_choice(choice);
        }
        if let ToolProtocol::Text { syntax, format } = spec.tool_protocol {
            let format: Box<dyn agent_loop::TextFormat> = match format {
                SectionFormat::Markdown => Box::new(agent_loop::MarkdownFormat::new()),
                SectionFormat::Xml => Box::new(agent_loop::XmlFormat::new()),
            };
            builder = builder
                .tool_mode(agent_loop::ToolMode::Text(format))
                .text_syntax(syntax);
        }
        if spec.prompt_cache {
            // The tools, the system prompt and the conversation so far: each request then
            // reads the previous one's prefix from the cache.
            builder = builder.prompt_cache(providers::PromptCache {
                breakpoints: vec![
                    providers::CacheBreakpoint::Tools,
                    providers::CacheBreakpoint::System,
                    providers::CacheBreakpoint::LastMessage,
                ],
                ..providers::PromptCache::default()
            });
        }
        if let Some(temperature) = spec.temperature {
            builder = builder.temperature(temperature);
        }
        if let Some(max_tokens) = spec.max_tokens {
            builder = builder.max_tokens(max_tokens);
        }
        if let Some(format) = spec.response_format.clone() {
            builder = builder.response_format(format);
        }
        if !spec.metadata.is_empty() {
            builder = builder.metadata(spec.metadata.clone());
        }
        if let Some(timeout) = spec.tool_timeout {
            builder = builder.tool_timeout(timeout);
        }
        if spec.deep_thinking {
            builder = match thinking(&info, spec.max_tokens)? {
                Thinking::Effort(effort) => builder.reasoning_effort(effort),
                Thinking::Budget(tokens) => builder.thinking_budget(tokens),
            };
        }
        if spec.log {
            builder = builder.store(Arc::clone(&self.store));
        }
        // Media the provider cannot read by URL (a web image for Gemini) is fetched for it:
        // the input's before the run begins, so that a URL that cannot be fetched fails the
        // request, not a round; a later round's by the model, each URL once.
        let provider = info.provider;
        let mut fetched = media::Fetched::default();
        let mut input = match spec.input {
            RunInput::Messages(messages) => {
                if !media::reads_every_url(provider) {
                    let parts: Vec<_> = messages.iter().flat_map(|m| &m.parts).collect();
                    media::fetch_for(&self.media, provider, &parts, &mut fetched).await?;
                }
                AgentInput::messages(messages)
            }
            RunInput::Parts(parts) => {
                let history = match (&spec.conversation, spec.include_history, spec.after) {
                    (Some(_), true, Some(node)) => {
                        Some(agent_loop::history::continuation(self.store.as_ref(), node).await?)
                    }
                    (Some(conversation), true, None) => {
                        self.continuation(conversation, spec.history_limit).await?
                    }
                    _ => None,
                };
                if !media::reads_every_url(provider) {
                    let all: Vec<_> = history
                        .iter()
                        .flat_map(|history| &history.messages)
                        .flat_map(|message| &message.parts)
                        .chain(&parts)
                        .collect();
                    media::fetch_for(&self.media, provider, &all, &mut fetched).await?;
                }
                match history {
                    Some(history) => AgentInput::parts(parts).with_continuation(history),
                    None => AgentInput::parts(parts),
                }
            }
        };
        builder = builder.model(if media::reads_every_url(provider) {
            model
        } else {
            Arc::new(media::InlinedMedia::new(
                model,
                Arc::clone(&self.media),
                fetched,
            ))
        });
        if let Some(id) = spec.response_id {
            input = input.with_response_id(id);
        }
        if let (true, Some(conversation)) = (spec.log, spec.conversation) {
            input = input.in_conversation(conversation);
        }
        if let Some(label) = spec.label {
            input = input.labelled(label);
        }
        if let Some(owner) = spec.owner {
            input = input.owned_by(owner);
        }
        if !spec.skills.is_empty() {
            let skills = SkillRun::new(
                &self.skills,
                &spec.skills,
                &spec.preload_skills,
                &self.tools,
                &self.mcp,
                input.history(),
            )?;
            let mut tools = toolchain::ToolSet::new();
            let load = skills
                .load_tool()
                .map_err(crate::skills::run::SkillRunError::from)?;
            // One tool in an empty set: adding it cannot clash.
            let _ = tools.add_dyn(load);
            builder = builder
                .tool_provider(move |_: &agent_loop::ConversationContext| tools.clone())
                .tool_provider(skills.provider())
                .prompt_modifier(skills.modifier());
        }
        let agent = builder.build()?;
        Ok(PreparedRun {
            agent,
            input,
            config,
        })
    }

    /// The messages of `conversation` up to its most recent answer, cut to the last `limit`
    /// turns (the system message kept); empty for a conversation the store does not know.
    ///
    /// The most recent answer may be one a run was still working on, or one whose run was
    /// cancelled or killed: its open tool calls are answered with the fallback response
    /// ([`agent_loop::history::continuation`]), so the new run branches from there and a
    /// stored conversation always continues.
    pub async fn history(
        &self,
        conversation: &ConversationId,
        limit: Option<usize>,
    ) -> Result<Vec<Message>, StoreError> {
        Ok(self
            .continuation(conversation, limit)
            .await?
            .map(|continuation| continuation.messages)
            .unwrap_or_default())
    }

    /// [`ChatService::history`] with the node it ends at, for
    /// [`AgentInput::with_continuation`]; `None` for a conversation the store does not know.
    pub async fn continuation(
        &self,
        conversation: &ConversationId,
        limit: Option<usize>,
    ) -> Result<Option<Continuation>, StoreError> {
        let Some(node) = self.store.latest_node(conversation).await? else {
            return Ok(None);
        };
        let continuation =
            agent_loop::history::continuation(self.store.as_ref(), node.id()).await?;
        Ok(Some(match limit {
            Some(turns) => last_turns(continuation, turns),
            None => continuation,
        }))
    }
}

fn policy(spec: &RunSpec) -> ContextPolicy {
    if !spec.compression {
        return ContextPolicy::disabled();
    }
    match spec.model.context_window {
        Some(window) => ContextPolicy::default().with_context_window(window),
        None => ContextPolicy::default(),
    }
}

enum Thinking {
    Effort(ReasoningEffort),
    Budget(u32),
}

/// How deep thinking is asked of this model: OpenAI's reasoning effort, or a thinking budget
/// of half the output limit (1 024 … 16 384 tokens) for Anthropic and Gemini.
fn thinking(info: &ModelInfo, max_tokens: Option<u32>) -> Result<Thinking, RunError> {
    if info.known && !info.supports_reasoning {
        return Err(RunError::NotReasoning {
            model: info.id.clone(),
        });
    }
    Ok(match info.provider.info().reasoning {
        ReasoningStyle::Effort => Thinking::Effort(ReasoningEffort::High),
        ReasoningStyle::Budget => {
            let output = max_tokens.unwrap_or(info.max_output_tokens);
            Thinking::Budget((output / 2).clamp(MIN_THINKING_BUDGET, MAX_THINKING_BUDGET))
        }
    })
}

/// The system message (if the chain starts with one) and the last `turns` turns, a turn
/// starting at a human message. Cutting there keeps the chain valid: tool calls and their
/// responses are never separated. The anchor moves with the messages it counts.
fn last_turns(continuation: Continuation, turns: usize) -> Continuation {
    let Continuation {
        messages, anchor, ..
    } = continuation;
    // The repair report is not kept: the repairs were logged when loading.
    let kept = |messages: Vec<Message>, anchor: Option<Anchor>| Continuation {
        messages,
        anchor,
        repaired: Vec::new(),
        unanswered: 0,
    };
    let starts: Vec<usize> = messages
        .iter()
        .enumerate()
        .filter(|(_, message)| message.role == Role::Human)
        .map(|(i, _)| i)
        .collect();
    let Some(cut) = starts
        .len()
        .checked_sub(turns)
        .map(|skip| starts.get(skip).copied().unwrap_or(messages.len()))
    else {
        return kept(messages, anchor);
    };
    let system = messages
        .first()
        .filter(|message| message.role == Role::System)
        .cloned();
    let kept_system = usize::from(system.is_some());
    // Messages before `cut` go, except a leading system message.
    let removed = cut.saturating_sub(kept_system);
    let anchor = anchor
        .filter(|anchor| anchor.len > cut)
        .map(|anchor| Anchor {
            len: anchor.len - removed,
            ..anchor
        });
    let messages = system
        .into_iter()
        .chain(messages.into_iter().skip(cut))
        .collect();
    kept(messages, anchor)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(messages: &[Message]) -> Vec<String> {
        messages.iter().map(Message::text).collect()
    }

    fn cut(messages: Vec<Message>, turns: usize) -> Vec<Message> {
        last_turns(agent_loop::history::repair(messages), turns).messages
    }

    #[test]
    fn history_limits_cut_at_turns() {
        let chain = vec![
            Message::system("sys"),
            Message::human("h1"),
            Message::ai("a1"),
            Message::human("h2"),
            Message::ai("a2"),
            Message::human("h3"),
            Message::ai("a3"),
        ];
        assert_eq!(
            texts(&cut(chain.clone(), 2)),
            ["sys", "h2", "a2", "h3", "a3"]
        );
        assert_eq!(texts(&cut(chain.clone(), 0)), ["sys"]);
        assert_eq!(texts(&cut(chain.clone(), 5)), texts(&chain));
        let no_system = chain[1..].to_vec();
        assert_eq!(texts(&cut(no_system, 1)), ["h3", "a3"]);
    }

    #[test]
    fn a_cut_moves_the_anchor_with_its_messages() {
        let node = |id: &str| id.parse::<agent_loop::NodeId>().expect("a node id");
        let anchored = |len| Continuation {
            anchor: Some(Anchor {
                node: node("3"),
                len,
            }),
            ..agent_loop::history::repair(vec![
                Message::system("sys"),
                Message::human("h1"),
                Message::ai("a1"),
                Message::human("h2"),
                Message::ai("a2"),
            ])
        };
        // sys h1 a1 | h2 a2: the cut drops h1 a1, the anchor after a2 moves from 5 to 3.
        let kept = last_turns(anchored(5), 1);
        assert_eq!(texts(&kept.messages), ["sys", "h2", "a2"]);
        assert_eq!(kept.anchor.map(|anchor| anchor.len), Some(3));
        // An anchor inside what was cut is dropped.
        assert_eq!(last_turns(anchored(3), 1).anchor, None);
    }

    #[test]
    fn deep_thinking_per_provider() {
        let gpt4o = ModelInfo::lookup(Provider::OpenAi, "gpt-4o");
        assert!(matches!(
            thinking(&gpt4o, None),
            Err(RunError::NotReasoning { .. })
        ));
        let o3 = ModelInfo::lookup(Provider::OpenAi, "o3");
        assert!(matches!(
            thinking(&o3, None),
            Ok(Thinking::Effort(ReasoningEffort::High))
        ));
        let claude = ModelInfo::lookup(Provider::Anthropic, "claude-sonnet-4-5");
        assert!(matches!(
            thinking(&claude, None),
            Ok(Thinking::Budget(16_384))
        ));
        assert!(matches!(
            thinking(&claude, Some(4_000)),
            Ok(Thinking::Budget(2_000))
        ));
        assert!(matches!(
            thinking(&claude, Some(100)),
            Ok(Thinking::Budget(1_024))
        ));
        // Unknown models may reason: the request goes out and the provider decides.
        let local = ModelInfo::unknown(Provider::OpenAi, "my-llama");
        assert!(thinking(&local, None).is_ok());
    }
}

//! [`App`]: what every handler shares, built and checked once from a [`ServerConfig`].

use std::sync::Arc;
use std::time::Instant;

use conversation_tree::Store;

use crate::api::auth::Auth;
use crate::api::error::ServerError;
use crate::api::guard::Guard;
use crate::api::limit::ConcurrencyLimit;
use crate::config::ServerConfig;
use crate::service::chat::ChatService;
use crate::service::runs::Runs;
use crate::service::store::StoreKind;
use tools::BuiltinTools;

/// What every handler shares.
#[derive(Debug)]
pub(crate) struct App {
    pub(crate) config: ServerConfig,
    pub(crate) chat: ChatService,
    pub(crate) auth: Auth,
    pub(crate) limit: ConcurrencyLimit,
    pub(crate) runs: Arc<Runs>,
    /// The Responses being produced, for `GET /v1/responses/{id}`.
    pub(crate) responses: crate::api::routes::responses::InFlight,
    /// The tools of each token that has some, by the token's position in `tokens`.
    token_agents: std::collections::HashMap<usize, crate::config::TokenTools>,
    /// The knowledge bases each token may search, `knowledge_bases` included, by the token's
    /// position in `tokens`; a caller not in it may search `knowledge_bases` only.
    token_bases: std::collections::HashMap<usize, Vec<String>>,
    pub(crate) started: Instant,
    pub(crate) store_kind: StoreKind,
    pub(crate) guard: Arc<Guard>,
    /// CORS for the configured origins (`None`: no cross-origin callers).
    pub(crate) cors: Option<tower_http::cors::CorsLayer>,
}

impl App {
    /// The state for `config`, logging into `store` (of `kind`, for `/health`); refuses
    /// settings under which no request could be served.
    pub(crate) fn new(
        config: ServerConfig,
        store: Arc<dyn Store>,
        kind: StoreKind,
        mcp: crate::service::mcp::McpTools,
        knowledge: Option<knowledge_base::KnowledgeStore>,
    ) -> Result<Self, ServerError> {
        if config.concurrency_per_caller == 0 {
            return Err(ServerError::Config(
                "`concurrency_per_caller` is 0, so no request could ever be served".to_owned(),
            ));
        }
        for (field, value) in [
            ("header_read_timeout_secs", config.header_read_timeout_secs),
            ("body_read_timeout_secs", config.body_read_timeout_secs),
            ("idle_timeout_secs", config.idle_timeout_secs),
        ] {
            if value == 0 {
                return Err(ServerError::Config(format!(
                    "`{field}` is 0, so every client would time out at once; give a number of \
                     seconds of at least 1"
                )));
            }
        }
        if config.max_connections == 0 {
            return Err(ServerError::Config(
                "`max_connections` is 0, so no client could ever connect".to_owned(),
            ));
        }
        let cors = crate::api::guard::cors(&config)?;
        let tools = BuiltinTools::new(&config.tools)?;
        if (!config.knowledge_bases.is_empty() || !config.token_knowledge_bases.is_empty())
            && knowledge.is_none()
        {
            return Err(ServerError::Config(
                "`knowledge_bases` and `token_knowledge_bases` are searched in the store \
                 `Server::new` opens; use it"
                    .to_owned(),
            ));
        }
        // An agent alias naming a tool that is not enabled would fail every request it gets.
        let check = |tool_list: &[String], bases: &[String]| -> Result<(), String> {
            tools
                .select(crate::config::builtin_tools(tool_list))
                .map_err(|err| err.to_string())?;
            if crate::config::searches_knowledge(tool_list) && bases.is_empty() {
                return Err(format!(
                    "`{}` searches the configured `knowledge_bases`, and none is configured",
                    knowledge_base::TOOL_NAME
                ));
            }
            Ok(())
        };
        for (name, agent) in &config.agents {
            check(&agent.tools, &config.knowledge_bases)
                .map_err(|err| ServerError::Config(format!("agent `{name}`: {err}")))?;
        }
        let token_bases = token_bases(&config)?;
        let mut token_agents = std::collections::HashMap::new();
        for (index, entry) in config.token_tools.iter().enumerate() {
            let caller = token_position(&config, &entry.token).ok_or_else(|| {
                ServerError::Config(format!(
                    "`token_tools[{index}].token` is not one of `tokens`, so no request could \
                     use its tools; add it to `tokens`"
                ))
            })?;
            // The token's own bases count: its tools search them too.
            let bases = token_bases.get(&caller).unwrap_or(&config.knowledge_bases);
            check(&entry.tools, bases)
                .map_err(|err| ServerError::Config(format!("`token_tools[{index}]`: {err}")))?;
            token_agents.insert(caller, entry.clone());
        }
        let skills = crate::service::skills::SkillSet::load(&config.skills_dirs)
            .map_err(|err| ServerError::Config(format!("`skills_dirs`: {err}")))?;
        let chat = ChatService::new(store, tools, config.keys.clone(), config.base_urls.clone())
            .with_provider_limits(config.provider_limits.clone())
            .with_skills(skills)
            .with_mcp(mcp)
            .with_secrets(&config.redactor());
        let chat = match knowledge {
            Some(knowledge) => chat.with_knowledge(knowledge),
            None => chat,
        };
        Ok(App {
            auth: Auth::new(&config.tokens),
            limit: ConcurrencyLimit::new(config.concurrency_per_caller, config.retry_after()),
            runs: Arc::new(Runs::default()),
            responses: crate::api::routes::responses::InFlight::default(),
            token_agents,
            token_bases,
            started: Instant::now(),
            store_kind: kind,
            guard: Arc::new(Guard::new(&config)),
            cors,
            chat,
            config,
        })
    }
}

/// Where `token` is in `config.tokens`.
fn token_position(config: &ServerConfig, token: &crate::api::schema::Secret) -> Option<usize> {
    config
        .tokens
        .iter()
        .position(|known| known.expose() == token.expose())
}

/// The knowledge bases of each token of `token_knowledge_bases`, the server's own
/// `knowledge_bases` included; refuses an entry whose token is not one of `tokens`.
fn token_bases(
    config: &ServerConfig,
) -> Result<std::collections::HashMap<usize, Vec<String>>, ServerError> {
    let mut bases: std::collections::HashMap<usize, Vec<String>> = std::collections::HashMap::new();
    for (index, entry) in config.token_knowledge_bases.iter().enumerate() {
        let caller = token_position(config, &entry.token).ok_or_else(|| {
            ServerError::Config(format!(
                "`token_knowledge_bases[{index}].token` is not one of `tokens`, so no request \
                 could search its bases; add it to `tokens`"
            ))
        })?;
        let offered = bases
            .entry(caller)
            .or_insert_with(|| config.knowledge_bases.clone());
        for base in &entry.knowledge_bases {
            if !offered.contains(base) {
                offered.push(base.clone());
            }
        }
    }
    Ok(bases)
}

impl App {
    /// The knowledge bases `caller` may search: the server's `knowledge_bases`, and its
    /// token's `token_knowledge_bases`. Any other base in the store is not offered to it.
    pub(crate) fn knowledge_bases(&self, caller: crate::api::auth::Caller) -> &[String] {
        match caller {
            crate::api::auth::Caller::Token(index) => self
                .token_bases
                .get(&index)
                .unwrap_or(&self.config.knowledge_bases),
            crate::api::auth::Caller::Loopback => &self.config.knowledge_bases,
        }
    }

    /// The agent a request of `caller` for `model` runs: the operator's alias of that name,
    /// else the caller's token tools on that model, else none (one model call).
    pub(crate) fn agent_for(
        &self,
        caller: crate::api::auth::Caller,
        model: &str,
    ) -> Option<crate::config::AgentAlias> {
        if let Some(alias) = self.config.agents.get(model) {
            return Some(alias.clone());
        }
        let crate::api::auth::Caller::Token(index) = caller else {
            return None;
        };
        self.token_agents
            .get(&index)
            .map(|entry| crate::config::AgentAlias {
                model: model.to_owned(),
                tools: entry.tools.clone(),
                system: entry.system.clone(),
                max_rounds: entry.max_rounds,
            })
    }
}

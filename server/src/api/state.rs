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
use crate::service::tools::BuiltinTools;

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
        if !config.knowledge_bases.is_empty() && knowledge.is_none() {
            return Err(ServerError::Config(
                "`knowledge_bases` are searched in the store `Server::new` opens; use it"
                    .to_owned(),
            ));
        }
        // An agent alias naming a tool that is not enabled would fail every request it gets.
        let check = |tool_list: &[String]| -> Result<(), String> {
            tools
                .select(crate::config::builtin_tools(tool_list))
                .map_err(|err| err.to_string())?;
            if crate::config::searches_knowledge(tool_list) && config.knowledge_bases.is_empty() {
                return Err(format!(
                    "`{}` searches the configured `knowledge_bases`, and none is configured",
                    knowledge_base::TOOL_NAME
                ));
            }
            Ok(())
        };
        for (name, agent) in &config.agents {
            check(&agent.tools)
                .map_err(|err| ServerError::Config(format!("agent `{name}`: {err}")))?;
        }
        let mut token_agents = std::collections::HashMap::new();
        for (index, entry) in config.token_tools.iter().enumerate() {
            let Some(caller) = config
                .tokens
                .iter()
                .position(|token| token.expose() == entry.token.expose())
            else {
                return Err(ServerError::Config(format!(
                    "`token_tools[{index}].token` is not one of `tokens`, so no request could \
                     use its tools; add it to `tokens`"
                )));
            };
            check(&entry.tools)
                .map_err(|err| ServerError::Config(format!("`token_tools[{index}]`: {err}")))?;
            token_agents.insert(caller, entry.clone());
        }
        let skills = crate::service::skills::SkillSet::load(&config.skills_dirs)
            .map_err(|err| ServerError::Config(format!("`skills_dirs`: {err}")))?;
        let chat = ChatService::new(store, tools, config.keys.clone(), config.base_urls.clone())
            .with_provider_limits(config.provider_limits.clone())
            .with_skills(skills)
            .with_mcp(mcp);
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
            started: Instant::now(),
            store_kind: kind,
            guard: Arc::new(Guard::new(&config)),
            cors,
            chat,
            config,
        })
    }
}

impl App {
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

//! [`Service`]: everything a served run needs, built and checked once from a
//! [`ServiceConfig`]: the chat service, the run registry, and what each principal is offered.

use std::collections::HashMap;
use std::sync::Arc;

use agent_loop::approval::ApprovalPolicy;

use conversation_tree::{ConversationId, Store};
use tools::BuiltinTools;

use crate::chat::ChatService;
use crate::config::{AgentAlias, ServiceConfig, TokenTools, builtin_tools, searches_knowledge};
use crate::limit::ConcurrencyLimit;
use crate::mcp::McpTools;
use crate::owner::{self, OwnedConversation, OwnerError};
use crate::principal::{owner_names, owner_of};
use crate::runs::{RunRecords, Runs};
use crate::skills::SkillSet;
use crate::store::{StoreKind, open_store};
use crate::{Principal, Secret, ServiceError};

/// Everything a served run needs: the [`ChatService`], the one registry of runs in flight
/// ([`Runs`], whatever protocol started them), and what each principal is offered (a token's
/// tools and knowledge bases, its conversations' owner name).
///
/// Cloning is not offered: share it behind an `Arc`, as a server does.
#[derive(Debug)]
pub struct Service {
    config: ServiceConfig,
    chat: ChatService,
    runs: Arc<Runs>,
    /// The stored runs, shared with other replicas of the same store.
    records: RunRecords,
    /// Each token's conversation owner name, in token order.
    owners: Vec<String>,
    /// The tools of each token that has some, by the token's position in the tokens.
    token_agents: HashMap<usize, TokenTools>,
    /// The knowledge bases each token may search, `knowledge_bases` included, by the token's
    /// position; a principal not in it may search `knowledge_bases` only.
    token_bases: HashMap<usize, Vec<String>>,
    store_kind: StoreKind,
    /// The operator's approval policy (`approval`), read once at start.
    approval: ApprovalPolicy,
}

impl Service {
    /// The service `config` describes for the holders of `tokens` (none: one shared
    /// principal), opening the store it names, connecting its MCP servers and checking that
    /// its knowledge bases exist.
    pub async fn open(config: ServiceConfig, tokens: &[Secret]) -> Result<Self, ServiceError> {
        let store = open_store(&config.store).await?;
        let kind = StoreKind::of(&config.store);
        #[cfg(feature = "mcp")]
        let mcp = McpTools::connect(&config.mcp_servers)
            .await
            .map_err(|err| ServiceError::Config(format!("`mcp_servers`: {err}")))?;
        #[cfg(not(feature = "mcp"))]
        let mcp = McpTools::default();
        // Knowledge bases live in the conversation store's own database.
        let knowledge = knowledge_base::KnowledgeStore::open(&config.store)
            .await
            .map_err(|err| ServiceError::Config(format!("the knowledge store: {err}")))?;
        // A missing base would otherwise fail every request that searches it.
        if !config.knowledge_bases.is_empty() {
            knowledge_base::KnowledgeBaseSearch::new(knowledge.clone(), &config.knowledge_bases)
                .await
                .map_err(|err| ServiceError::Config(format!("`knowledge_bases`: {err}")))?;
        }
        for (index, entry) in config.token_knowledge_bases.iter().enumerate() {
            knowledge_base::KnowledgeBaseSearch::new(knowledge.clone(), &entry.knowledge_bases)
                .await
                .map_err(|err| {
                    ServiceError::Config(format!("`token_knowledge_bases[{index}]`: {err}"))
                })?;
        }
        Self::new(config, tokens, store, kind, mcp, Some(knowledge))
    }

    /// The service `config` describes, logging into `store` (of `kind`) instead of the one
    /// `config.store` names. MCP servers are connected, and knowledge bases searched, by
    /// [`Service::open`] only: a config naming some is refused here.
    pub fn with_store(
        config: ServiceConfig,
        tokens: &[Secret],
        store: Arc<dyn Store>,
        kind: StoreKind,
    ) -> Result<Self, ServiceError> {
        #[cfg(feature = "mcp")]
        if !config.mcp_servers.is_empty() {
            return Err(ServiceError::Config(
                "`mcp_servers` are connected by `Server::new`; use it, or connect them with \
                 `McpTools::connect` and build the service yourself"
                    .to_owned(),
            ));
        }
        Self::new(config, tokens, store, kind, McpTools::default(), None)
    }

    /// Checks `config` and builds the service: refuses settings under which some request
    /// would always fail (an agent or a token naming a tool that is off, a token that is not
    /// one of `tokens`, knowledge bases without a knowledge store, unreadable skills).
    fn new(
        config: ServiceConfig,
        tokens: &[Secret],
        store: Arc<dyn Store>,
        kind: StoreKind,
        mcp: McpTools,
        knowledge: Option<knowledge_base::KnowledgeStore>,
    ) -> Result<Self, ServiceError> {
        let tools = BuiltinTools::new(&config.tools)?;
        if (!config.knowledge_bases.is_empty() || !config.token_knowledge_bases.is_empty())
            && knowledge.is_none()
        {
            return Err(ServiceError::Config(
                "`knowledge_bases` and `token_knowledge_bases` are searched in the store \
                 `Server::new` opens; use it"
                    .to_owned(),
            ));
        }
        // An agent alias naming a tool that is not enabled would fail every request it gets.
        let check = |tool_list: &[String], bases: &[String]| -> Result<(), String> {
            tools
                .select(builtin_tools(tool_list))
                .map_err(|err| err.to_string())?;
            if searches_knowledge(tool_list) && bases.is_empty() {
                return Err(format!(
                    "`{}` searches the configured `knowledge_bases`, and none is configured",
                    knowledge_base::TOOL_NAME
                ));
            }
            Ok(())
        };
        for (name, agent) in &config.agents {
            check(&agent.tools, &config.knowledge_bases)
                .map_err(|err| ServiceError::Config(format!("agent `{name}`: {err}")))?;
        }
        let token_bases = token_bases(&config, tokens)?;
        let mut token_agents = HashMap::new();
        for (index, entry) in config.token_tools.iter().enumerate() {
            let principal = token_position(tokens, &entry.token).ok_or_else(|| {
                ServiceError::Config(format!(
                    "`token_tools[{index}].token` is not one of `tokens`, so no request could \
                     use its tools; add it to `tokens`"
                ))
            })?;
            // The token's own bases count: its tools search them too.
            let bases = token_bases
                .get(&principal)
                .unwrap_or(&config.knowledge_bases);
            check(&entry.tools, bases)
                .map_err(|err| ServiceError::Config(format!("`token_tools[{index}]`: {err}")))?;
            token_agents.insert(principal, entry.clone());
        }
        let skills = SkillSet::load(&config.skills_dirs)
            .map_err(|err| ServiceError::Config(format!("`skills_dirs`: {err}")))?;
        #[cfg(feature = "mcp")]
        let mcp_names: Vec<&str> = config.mcp_servers.iter().map(|s| s.name.as_str()).collect();
        #[cfg(not(feature = "mcp"))]
        let mcp_names: Vec<&str> = Vec::new();
        // Checked now, so a bad entry stops the start instead of a later run.
        let approval = config
            .approval
            .policy(&skills, &mcp_names)
            .map_err(|err| ServiceError::Config(err.to_string()))?;
        let mut secrets = config.redactor();
        for token in tokens {
            secrets.add(token.expose());
        }
        let problems = config.runs.problems();
        if !problems.is_empty() {
            return Err(ServiceError::Config(problems.join("; ")));
        }
        let runs = Arc::new(Runs::default());
        let records = RunRecords::new(
            Arc::clone(&store),
            config.runs.clone(),
            config.approval.timeout,
            owner_names(tokens),
            Arc::clone(&runs),
        );
        let chat = ChatService::new(store, tools, config.keys.clone(), config.base_urls.clone())
            .with_provider_limits(config.provider_limits.clone())
            .with_skills(skills)
            .with_mcp(mcp)
            .with_secrets(&secrets)
            .with_media_fetch(&config.media_fetch)
            .map_err(|err| ServiceError::Config(format!("`media_fetch`: {err}")))?;
        let chat = match knowledge {
            Some(knowledge) => chat.with_knowledge(knowledge),
            None => chat,
        };
        Ok(Service {
            approval,
            owners: owner_names(tokens),
            runs,
            records,
            token_agents,
            token_bases,
            store_kind: kind,
            chat,
            config,
        })
    }

    /// The configuration it was built from.
    pub fn config(&self) -> &ServiceConfig {
        &self.config
    }

    /// The chat service runs are prepared by.
    pub fn chat(&self) -> &ChatService {
        &self.chat
    }

    /// The runs in flight, of every protocol.
    pub fn runs(&self) -> &Arc<Runs> {
        &self.runs
    }

    /// The operator's tool-approval policy (`approval` in the configuration): which calls
    /// wait for a person before they run. A request may add to it
    /// ([`ApprovalPolicy::with_request`]), never take from it.
    pub fn approval_policy(&self) -> &ApprovalPolicy {
        &self.approval
    }

    /// The stored runs: background runs, their events and leases, shared by every replica on
    /// the same store. Always `Some` today (every service logs into a store); `None` is kept
    /// for a service that logs nothing.
    pub fn run_records(&self) -> Option<&RunRecords> {
        Some(&self.records)
    }

    /// Which kind of store it logs into.
    pub fn store_kind(&self) -> StoreKind {
        self.store_kind
    }

    /// The limit of `per_caller` answers in flight per caller: counted across every replica
    /// on the database with a PostgreSQL store (this replica's slots free themselves `ttl`
    /// after it stops, see [`limit`](crate::limit); a server passes `runs.lease_ttl`), in this
    /// process otherwise, as one process is all a SQLite store serves.
    pub fn concurrency_limit(
        &self,
        per_caller: usize,
        ttl: std::time::Duration,
    ) -> ConcurrencyLimit {
        if self.store_kind != StoreKind::Postgres {
            return ConcurrencyLimit::in_process(per_caller);
        }
        let owners = self.owners.clone();
        let owner = move |principal: Principal| owner_of(&owners, principal).to_owned();
        // The name its run leases are held under: one name per replica in the store.
        let replica = self.records.replica().to_owned();
        ConcurrencyLimit::shared(
            per_caller,
            Arc::clone(self.chat.store()),
            owner,
            replica,
            ttl,
        )
    }

    /// Whether it has one shared principal (no tokens): client conversation ids are stored as
    /// given, and conversations without an owner may be continued.
    pub fn is_shared(&self) -> bool {
        self.owners.is_empty()
    }

    /// The name `principal`'s conversations are stored under: stable across restarts and
    /// token reordering (it derives from the token itself), never the token.
    pub fn owner(&self, principal: Principal) -> &str {
        owner_of(&self.owners, principal)
    }

    /// The principal whose conversations and runs are stored under `owner` ([`Service::owner`]
    /// read back): what a replica that continues another's run acts as. `None` when no
    /// principal of this service has that name (a token since removed).
    pub fn principal_of(&self, owner: &str) -> Option<Principal> {
        if self.is_shared() {
            return Some(Principal::SHARED);
        }
        (0..self.owners.len())
            .map(Principal::token)
            .find(|principal| self.owner(*principal) == owner)
    }

    /// The knowledge bases `principal` may search: the service's `knowledge_bases`, and its
    /// token's `token_knowledge_bases`. Any other base in the store is not offered to it.
    pub fn knowledge_bases(&self, principal: Principal) -> &[String] {
        principal
            .token_index()
            .and_then(|index| self.token_bases.get(&index))
            .unwrap_or(&self.config.knowledge_bases)
    }

    /// The agent a call of `principal` for `model` runs: the operator's alias of that name,
    /// else the principal's token tools on that model, else none (one model call).
    pub fn agent_for(&self, principal: Principal, model: &str) -> Option<AgentAlias> {
        if let Some(alias) = self.config.agents.get(model) {
            return Some(alias.clone());
        }
        let entry = self.token_agents.get(&principal.token_index()?)?;
        Some(AgentAlias {
            model: model.to_owned(),
            tools: entry.tools.clone(),
            system: entry.system.clone(),
            max_rounds: entry.max_rounds,
        })
    }

    /// The conversation a request of `principal` continues, claimed for it before anything
    /// reads it ([`OwnerError::NotYours`] for another's); or, when it names none, a new one
    /// minted here, with the owner its first logged answer records (`Some(owner)`).
    ///
    /// A minted id is 122 random bits no other request can hold yet, so it needs no claim
    /// before the run starts: its first answer creates the conversation with its owner in the
    /// same write, and until then there is nothing of it to read.
    pub async fn own_conversation(
        &self,
        principal: Principal,
        named: Option<ConversationId>,
    ) -> Result<(OwnedConversation, Option<String>), OwnerError> {
        let shared = self.is_shared();
        let owner = self.owner(principal);
        let Some(client) = named else {
            let minted = ConversationId::new(owner::mint()).map_err(|source| OwnerError::Id {
                what: "mint",
                source,
            })?;
            let conversation = OwnedConversation {
                stored: owner::stored_id(owner, shared, &minted)?,
                client: minted.to_string(),
            };
            return Ok((conversation, Some(owner.to_owned())));
        };
        let conversation = OwnedConversation {
            stored: owner::stored_id(owner, shared, &client)?,
            client: client.to_string(),
        };
        owner::claim(self.chat.store().as_ref(), &conversation, owner, shared).await?;
        Ok((conversation, None))
    }
}

/// Where `token` is in `tokens`.
fn token_position(tokens: &[Secret], token: &Secret) -> Option<usize> {
    tokens
        .iter()
        .position(|known| known.expose() == token.expose())
}

/// The knowledge bases of each token of `token_knowledge_bases`, the service's own
/// `knowledge_bases` included; refuses an entry whose token is not one of `tokens`.
fn token_bases(
    config: &ServiceConfig,
    tokens: &[Secret],
) -> Result<HashMap<usize, Vec<String>>, ServiceError> {
    let mut bases: HashMap<usize, Vec<String>> = HashMap::new();
    for (index, entry) in config.token_knowledge_bases.iter().enumerate() {
        let principal = token_position(tokens, &entry.token).ok_or_else(|| {
            ServiceError::Config(format!(
                "`token_knowledge_bases[{index}].token` is not one of `tokens`, so no request \
                 could search its bases; add it to `tokens`"
            ))
        })?;
        let offered = bases
            .entry(principal)
            .or_insert_with(|| config.knowledge_bases.clone());
        for base in &entry.knowledge_bases {
            if !offered.contains(base) {
                offered.push(base.clone());
            }
        }
    }
    Ok(bases)
}

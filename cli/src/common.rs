//! What several commands share: the log database, and the options of `run` and `chat`.

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use conversation_tree::{ConversationId, NodeId, Store};
use messages::Message;
use providers::{ECHO_MODEL_ID, ModelConfig, Provider};
use server::config::ProviderBaseUrls;
use server::keys::ProviderKeys;
use server::tools::{BuiltinTools, HttpGetPolicy, ToolsConfig};
use server::{ChatService, ModelRequest, RunInput, RunSpec};

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
    Ok(server::store::open_store(&db_location(db)?).await?)
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
    match server::store::open_store_read_only(&location).await {
        Ok(store) => Ok(store),
        Err(server::ServerError::Store {
            source: conversation_tree::StoreError::NoStore { .. },
            ..
        }) => Ok(Arc::new(
            conversation_tree::SqliteStore::open_in_memory().await?,
        )),
        Err(
            err @ server::ServerError::Store {
                source: conversation_tree::StoreError::OlderSchema { .. },
                ..
            },
        ) => match server::store::open_store(&location).await {
            Ok(_upgraded) => Ok(server::store::open_store_read_only(&location).await?),
            Err(_) => Err(err.into()),
        },
        Err(err) => Err(err.into()),
    }
}

/// The model and tool options of `skein run` and `skein chat`.
#[derive(Debug, Args)]
pub(crate) struct AgentArgs {
    /// The model: gpt-4o-mini, claude-sonnet-4-5, gemini-2.5-flash, echo, … [default: the
    /// continued conversation's model, else the first provider with a key, else echo].
    #[arg(short, long, env = "SKEIN_MODEL")]
    pub(crate) model: Option<String>,
    /// The system prompt.
    #[arg(short, long)]
    pub(crate) system: Option<String>,
    /// Offer a built-in tool: calculator, read_file, list_files (need --root), http_get (needs
    /// --allow-host). Repeat for several.
    #[arg(long = "tool", value_name = "NAME")]
    pub(crate) tools: Vec<String>,
    /// Tool rounds before the model must answer.
    #[arg(long, default_value_t = server::DEFAULT_TOOL_ROUNDS)]
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
    /// model's provider in its own convention.
    #[arg(long, value_name = "URL")]
    pub(crate) base_url: Option<String>,
    /// Sampling temperature (0 makes answers repeatable and lets logged answers be reused).
    #[arg(long)]
    pub(crate) temperature: Option<f32>,
    /// Output token limit.
    #[arg(long)]
    pub(crate) max_tokens: Option<u32>,
    /// Ask a reasoning model to think first.
    #[arg(long)]
    pub(crate) think: bool,
    /// The directory read_file and list_files may read.
    #[arg(long, value_name = "DIR")]
    pub(crate) root: Option<PathBuf>,
    /// A host http_get may fetch from (repeat for several; *.example.com for subdomains).
    #[arg(long = "allow-host", value_name = "HOST")]
    pub(crate) allow_hosts: Vec<String>,
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

/// The model a run uses when `-m` is not given, and a note for stderr when it is the echo
/// model for want of a key.
pub(crate) fn default_model(keys: &ProviderKeys) -> (String, Option<&'static str>) {
    let choices = [
        (Provider::OpenAi, "gpt-4o-mini"),
        (Provider::Anthropic, "claude-haiku-4-5"),
        (Provider::Google, "gemini-2.5-flash"),
    ];
    match choices
        .iter()
        .find(|(provider, _)| keys.get(*provider).is_some())
    {
        Some((_, model)) => ((*model).to_owned(), None),
        None => (
            ECHO_MODEL_ID.to_owned(),
            Some(
                "no OPENAI_API_KEY, ANTHROPIC_API_KEY or GEMINI_API_KEY is set: using the offline \
                 `echo` model (pick another with -m)",
            ),
        ),
    }
}

impl AgentArgs {
    /// The service runs go through, logging into `store`.
    pub(crate) fn service(&self, store: Arc<dyn Store>) -> Result<ChatService, CliError> {
        let http_get =
            (!self.allow_hosts.is_empty()).then(|| HttpGetPolicy::allow(self.allow_hosts.clone()));
        let tools = BuiltinTools::new(&ToolsConfig {
            files_root: self.root.clone(),
            http_get,
            ..ToolsConfig::default()
        })
        .map_err(server::ServerError::from)?;
        Ok(ChatService::new(
            store,
            tools,
            ProviderKeys::from_env(),
            ProviderBaseUrls::default(),
        ))
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

    /// The model to use: `-m`, else the continued conversation's, else [`default_model`].
    pub(crate) fn model(&self, resume: &Resume) -> String {
        if let Some(model) = self.model.clone().or_else(|| resume.model.clone()) {
            return model;
        }
        let (model, note) = default_model(&ProviderKeys::from_env());
        if let Some(note) = note {
            eprintln!("skein: {note}");
        }
        model
    }

    /// The run of `input` with these options, picking up at `resume`.
    pub(crate) fn spec(&self, model: String, input: RunInput, resume: &Resume) -> RunSpec {
        let mut config = ModelConfig::new(model);
        config.base_url.clone_from(&self.base_url);
        let model = ModelRequest {
            config,
            custom_endpoint: false,
            context_window: None,
        };
        RunSpec {
            system: self.system.clone(),
            tools: self.tools.clone(),
            max_rounds: self.max_rounds,
            temperature: self.temperature,
            max_tokens: self.max_tokens,
            deep_thinking: self.think,
            conversation: resume.conversation.clone(),
            after: resume.after,
            log: !self.no_log,
            ..RunSpec::new(model, input)
        }
    }
}

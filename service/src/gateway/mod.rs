//! [`GatewayCall`]: one model call on the client's own messages and tools, for the
//! OpenAI-compatible endpoints. The client runs its tools: their calls come back to it, and no
//! agent loop runs here. Every exchange is logged into the conversation tree like an agent's:
//! a client that resends its history finds that history's path instead of writing it again.
//!
//! [`Service::call`](crate::Service::call) answers a call (`answer.rs`); whole answers become
//! the events a model would have streamed in `replay.rs`; a resent history gets the reasoning
//! its client dropped back from the tree in `restore.rs`.

use std::sync::Arc;
use std::time::Instant;

use agent_loop::{AgentError, StoreLog};
use chain_ast::ChainAst;
use conversation_tree::{ConversationId, NodeId, ResponseStatus, Reuse, StoreError};
use messages::{Message, Role};
use providers::{ChatModel, ChatOptions, ChatRequest, ChatResponse, Provider, ProviderError};

use crate::chat::{ChatService, RunError};
use crate::config::UnsupportedParams;
use crate::model::{NoKey, require_reachable, resolve_model_config};
use crate::owner::sha256_hex;
use crate::spec::ModelRequest;

mod answer;
mod logged;
pub(crate) mod media;
mod meter;
mod replay;
mod restore;

pub use answer::{Answer, Cache, Events, Failure, Provenance, Resumed, Stopped};
pub use meter::Meter;
pub use replay::{answer_events, replay_events};

/// One call, every choice made.
#[derive(Clone, Debug)]
pub struct GatewayCall {
    /// The model.
    pub model: ModelRequest,
    /// The messages, the client's tools and the options.
    pub request: ChatRequest,
    /// Whether the answer streams.
    pub stream: bool,
    /// Whether a streamed answer ends with a usage chunk.
    pub include_usage: bool,
    /// Whether the exchange goes into the conversation tree.
    pub logging: Logging,
    /// Where the exchange goes in the tree.
    pub thread: Thread,
    /// The label of the answer's node (a Responses id), by which a later request finds it.
    pub label: Option<String>,
    /// Request fields the client set that the gateway carries to no provider (audio output,
    /// OpenAI's stored prompts, …), by their names in the client's request. The operator's
    /// policy ([`UnsupportedParams`]) treats them as the options the model's provider cannot
    /// honour: the request is refused naming them, or they are dropped and named.
    pub unsupported: Vec<&'static str>,
}

/// Where an exchange goes in the conversation tree.
#[derive(Clone, Debug)]
pub enum Thread {
    /// A whole history in the request (Chat Completions): the conversation its opening turn
    /// started, found by walking the history from the roots.
    Opening,
    /// After a stored answer (a Responses `previous_response_id`), continued below that very
    /// node.
    After(Anchor),
}

/// A stored answer a request continues, as [`ChatService::previous`] read it.
#[derive(Clone, Debug)]
pub struct Anchor {
    conversation: ConversationId,
    /// The node, and how many of the history's messages lead up to and include its answer.
    node: Option<(NodeId, usize)>,
    /// The history's first message: a request that replaced it (other instructions) reads
    /// another path than the stored one, which the log then walks from the roots.
    first: Option<Message>,
}

/// Whether an exchange is kept in the conversation tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Logging {
    /// Logged, and a deterministic repeat may be answered from the tree.
    On,
    /// Neither read nor written: the client asked that nothing be kept.
    Off,
}

/// Why a call cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    /// No key for the model's provider, so the server cannot reach it.
    #[error(transparent)]
    NoKey(#[from] NoKey),
    /// The model's configuration is refused.
    #[error("{0}")]
    Model(#[from] ProviderError),
    /// The model refused the call before answering anything (its stream could not start).
    #[error("{0}")]
    Provider(ProviderError),
    /// An agent alias cannot run (a tool it names is off, its model has no key, …).
    #[error("the agent `{name}` cannot run: {error}")]
    Agent {
        /// The model name the client asked for: the alias.
        name: String,
        /// Why.
        error: Box<RunError>,
    },
    /// The conversation store failed.
    #[error("{0}")]
    Store(Box<AgentError>),
    /// Request fields that cannot be honoured, under the operator's policy of refusing them:
    /// some the model's provider can neither honour nor translate, some Skein serves for no
    /// model (`conversation`, `background`, …).
    #[error("{}", unsupported_message(fields, unserved, model, provider))]
    Unsupported {
        /// Every such field, by its name in the client's request.
        fields: Vec<&'static str>,
        /// Those of `fields` that Skein serves for no model, whatever its provider.
        unserved: Vec<&'static str>,
        /// The model asked for.
        model: String,
        /// Its provider's name (`anthropic`, `google`, …).
        provider: &'static str,
    },
    /// An image or file the client named by URL could not be fetched for a provider that
    /// needs its bytes.
    #[error("{0}")]
    Media(#[from] tools::MediaFetchError),
}

/// Where the answer comes from.
pub(crate) enum Source {
    /// A call to the model.
    Model {
        /// The model.
        model: Arc<dyn ChatModel>,
        /// The request, its chain repaired.
        request: Box<ChatRequest>,
    },
    /// An answer stored for this very request (a deterministic repeat the operator lets the
    /// tree answer).
    Stored(Message),
}

/// A call ready to answer, and its place in the tree.
pub(crate) struct PreparedCall {
    /// Where the answer comes from.
    pub(crate) source: Source,
    /// How many chain faults were repaired (tool calls left unanswered, answers without a call).
    pub(crate) repairs: usize,
    /// Fields left out under the operator's policy.
    pub(crate) dropped: Vec<&'static str>,
    /// Logs the answer once it is whole (`None` when the client asked for no logging).
    pub(crate) log: Option<CallLog>,
}

/// The logging half of a call.
pub(crate) struct CallLog {
    log: StoreLog,
    lookup: agent_loop::Lookup,
    transcript: Vec<Message>,
    started: Instant,
    /// When the model's first output arrived: the call's time to first token, logged with
    /// its node.
    meter: Meter,
    stored: Option<NodeId>,
}

impl CallLog {
    /// The conversation the exchange is logged under.
    pub(crate) fn conversation(&self) -> &ConversationId {
        self.log.conversation()
    }

    /// What notes the answer's first output (and its usage) as it passes.
    pub(crate) fn meter(&self) -> &Meter {
        &self.meter
    }

    /// Logs `answer` (nothing to do for an answer that came from the tree): the node it is.
    pub(crate) async fn record(
        mut self,
        answer: &ChatResponse,
        status: ResponseStatus,
    ) -> Result<NodeId, AgentError> {
        if let Some(node) = self.stored {
            return Ok(node);
        }
        let first_output = self
            .meter
            .first_output()
            .map(|at| at.saturating_duration_since(self.started));
        self.log
            .log(
                &self.lookup,
                &self.transcript,
                &answer.message,
                answer.usage,
                agent_loop::CallTiming::new(first_output, self.started.elapsed()),
                status,
            )
            .await
    }
}

/// The message of [`GatewayError::Unsupported`]: the fields the provider lacks, then those Skein
/// serves for no model (the provider is not to blame for those), then what the client can do.
fn unsupported_message(
    fields: &[&'static str],
    unserved: &[&'static str],
    model: &str,
    provider: &str,
) -> String {
    let named = |fields: &[&str]| {
        fields
            .iter()
            .map(|field| format!("`{field}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let lacking: Vec<&str> = fields
        .iter()
        .copied()
        .filter(|field| !unserved.contains(field))
        .collect();
    let mut reasons = Vec::new();
    if !lacking.is_empty() {
        reasons.push(format!(
            "{} cannot be honoured for `{model}` ({provider}): the provider has no equivalent",
            named(&lacking)
        ));
    }
    if !unserved.is_empty() {
        let is = if unserved.len() == 1 { "is" } else { "are" };
        reasons.push(format!(
            "{} {is} served by Skein for no model",
            named(unserved)
        ));
    }
    let them = if fields.len() == 1 { "it" } else { "them" };
    format!(
        "{}; leave {them} out, or ask the operator to set `drop_unsupported_params: true` (for \
         all models or this one) to have {them} dropped",
        reasons.join(", and ")
    )
}

impl ChatService {
    /// The model of `call`, its messages as a valid chain (a client that lost a tool result
    /// or resent a half conversation still gets an answer instead of a provider's 400), and
    /// its path in `owner`'s conversation of these messages.
    pub(crate) async fn prepare_call(
        &self,
        call: GatewayCall,
        owner: &str,
        reuse: Reuse,
        policy: UnsupportedParams,
    ) -> Result<PreparedCall, GatewayError> {
        let mut config = resolve_model_config(&call.model, &self.keys, &self.base_urls);
        config.limits = self.limits.clone();
        require_reachable(&config)?;
        let model = self.models.model(&config)?;
        let mut request = call.request;
        let unserved = call.unsupported;
        let mut unsupported = unserved.clone();
        unsupported.extend(model.unsupported_options(&request.options));
        let dropped = screen(
            &mut request.options,
            unserved,
            unsupported,
            policy,
            &config.model_id,
            model.info().provider,
        )?;
        let (chain, faults) = ChainAst::repair(&request.messages);
        if !faults.is_empty() {
            tracing::debug!(repairs = faults.len(), "repaired the client's conversation");
            request.messages = chain.into_messages();
        }

        let repairs = faults.len();
        if call.logging == Logging::Off {
            media::inline_for(
                self.media_fetcher(),
                config.provider(),
                &mut request.messages,
                &mut media::Fetched::default(),
            )
            .await?;
            return Ok(PreparedCall {
                source: Source::Model {
                    model,
                    request: Box::new(request),
                },
                repairs,
                dropped,
                log: None,
            });
        }
        let store_error = |error| GatewayError::Store(Box::new(error));
        let (conversation, anchor) = match call.thread {
            Thread::Opening => {
                let conversation = conversation_of(owner, &request.messages)?;
                // A history with answers the store lacks is written as a branch by the walk,
                // which may create the conversation: claim it first, or it would be no one's.
                // A first question alone is owned by the write of its answer instead, which
                // spares the stream a write before its first token.
                if request
                    .messages
                    .iter()
                    .any(|message| message.role == Role::Ai)
                {
                    self.store()
                        .claim_conversation(&conversation, owner)
                        .await
                        .map_err(|error| store_error(AgentError::Store(error)))?;
                }
                (conversation, None)
            }
            Thread::After(anchor) => (
                anchor.conversation,
                anchor.node.map(|(node, len)| (node, len, anchor.first)),
            ),
        };
        let mut log =
            StoreLog::new(Arc::clone(self.store()), conversation, reuse, anchor).owner(owner);
        if let Some(label) = call.label {
            log = log.label(label);
        }
        let lookup = log
            .lookup(
                &request.messages,
                &config.model_id,
                &request.tools,
                &request.options,
            )
            .await
            .map_err(store_error)?;
        let matched = lookup.matched_answers(&request.messages);
        let restored = restore::restore_reasoning(
            self.store().as_ref(),
            &config.model_id,
            &mut request.messages,
            &matched,
        )
        .await
        .map_err(|error| store_error(AgentError::Store(error)))?;
        if restored > 0 {
            tracing::debug!(restored, "gave resent answers their stored reasoning back");
        }
        let stored = log.cached(&lookup).await.map_err(store_error)?;
        let transcript = request.messages.clone();
        let (source, stored) = match stored {
            Some((message, node)) => (Source::Stored(message), Some(node)),
            None => {
                // The tree keeps the URL the client sent; only the provider gets the bytes.
                media::inline_for(
                    self.media_fetcher(),
                    config.provider(),
                    &mut request.messages,
                    &mut media::Fetched::default(),
                )
                .await?;
                (
                    Source::Model {
                        model,
                        request: Box::new(request),
                    },
                    None,
                )
            }
        };
        Ok(PreparedCall {
            source,
            repairs,
            dropped,
            log: Some(CallLog {
                log,
                lookup,
                transcript,
                started: Instant::now(),
                meter: Meter::default(),
                stored,
            }),
        })
    }
}

impl ChatService {
    /// The fields of `options` an agent alias named `alias` cannot honour on its `model`
    /// (with `unsupported`, the fields the gateway carries to no provider), under `policy`:
    /// refused, or cleared from `options` and returned to be named in the answer's headers.
    /// A model that cannot be built here (no key) is checked only for `unsupported`: its run
    /// then fails on its own, with the agent's error.
    pub(crate) fn screen_for_agent(
        &self,
        alias: &str,
        model: &ModelRequest,
        options: &mut ChatOptions,
        unserved: Vec<&'static str>,
        policy: UnsupportedParams,
    ) -> Result<Vec<&'static str>, GatewayError> {
        let mut unsupported = unserved.clone();
        let mut config = resolve_model_config(model, &self.keys, &self.base_urls);
        config.limits = self.limits.clone();
        let provider = match require_reachable(&config)
            .ok()
            .map(|()| self.models.model(&config))
        {
            Some(Ok(model)) => {
                unsupported.extend(model.unsupported_options(options));
                model.info().provider
            }
            _ => config.provider(),
        };
        screen(options, unserved, unsupported, policy, alias, provider)
    }
}

/// `unsupported` (fields of `options` or of the request that `provider` cannot honour for the
/// model the client asked for as `asked`; of them, `unserved` are served for no model) under
/// `policy`: a refusal naming them all, or the fields cleared from `options` and returned, for
/// the answer's headers.
fn screen(
    options: &mut ChatOptions,
    unserved: Vec<&'static str>,
    unsupported: Vec<&'static str>,
    policy: UnsupportedParams,
    asked: &str,
    provider: Provider,
) -> Result<Vec<&'static str>, GatewayError> {
    if unsupported.is_empty() {
        return Ok(unsupported);
    }
    if policy == UnsupportedParams::Refuse {
        return Err(GatewayError::Unsupported {
            fields: unsupported,
            unserved,
            model: asked.to_owned(),
            provider: provider.as_str(),
        });
    }
    for field in &unsupported {
        options.clear_option(field);
    }
    tracing::debug!(dropped = ?unsupported, "dropped request fields the provider cannot honour");
    Ok(unsupported)
}

impl ChatService {
    /// The stored answer labelled `label` when it is `owner`'s: another caller's answer is as
    /// unknown as a missing one, and so is a string that could never be a label (too long,
    /// control characters).
    pub async fn owned_answer(
        &self,
        label: &str,
        owner: &str,
    ) -> Result<Option<conversation_tree::Node>, StoreError> {
        let node = match self.store().node_by_label(label).await {
            Ok(Some(node)) => node,
            Ok(None) | Err(StoreError::InvalidLabel { .. }) => return Ok(None),
            Err(error) => return Err(error),
        };
        let claim = self
            .store()
            .claim_conversation(node.conversation_id(), owner)
            .await?;
        Ok(claim.is_own().then_some(node))
    }

    /// The stored conversation up to the answer labelled `label`, ready to continue, when
    /// that answer is `owner`'s: another caller's answer is as unknown as a missing one.
    pub async fn previous(
        &self,
        label: &str,
        owner: &str,
    ) -> Result<Option<(Vec<Message>, Anchor)>, GatewayError> {
        let store_error = |error| GatewayError::Store(Box::new(AgentError::Store(error)));
        let Some(node) = self.owned_answer(label, owner).await.map_err(store_error)? else {
            return Ok(None);
        };
        let conversation = node.conversation_id().clone();
        let continued = agent_loop::history::continuation(self.store().as_ref(), node.id())
            .await
            .map_err(store_error)?;
        let anchor = Anchor {
            conversation,
            node: continued.anchor.map(|anchor| (anchor.node, anchor.len)),
            first: continued.messages.first().cloned(),
        };
        Ok(Some((continued.messages, anchor)))
    }
}

/// The conversation of a message list: one per caller and opening turn (the system prompt
/// and the first user message), so that every request that resends a history lands in the
/// conversation its first request started.
fn conversation_of(owner: &str, messages: &[Message]) -> Result<ConversationId, GatewayError> {
    let opening = messages
        .iter()
        .position(|message| message.role == Role::Human)
        .map_or(messages, |first| &messages[..=first]);
    let opening = serde_json::to_vec(opening).unwrap_or_default();
    let hex = sha256_hex(&[
        b"skein gateway conversation v1\0",
        owner.as_bytes(),
        b"\0",
        &opening,
    ]);
    ConversationId::new(format!("chat-{hex}")).map_err(|err| {
        GatewayError::Model(ProviderError::config(format!(
            "cannot name the conversation: {err}"
        )))
    })
}

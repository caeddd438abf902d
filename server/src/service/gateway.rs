//! [`GatewayCall`]: one model call on the client's own messages and tools, for the
//! OpenAI-compatible endpoints. The client runs its tools: their calls come back to it, and no
//! agent loop runs here.

use std::sync::Arc;

use chain_ast::ChainAst;
use providers::{ChatModel, ChatRequest, ProviderError};

use crate::service::chat::ChatService;
use crate::service::model::{NoKey, require_reachable, resolve_model_config};
use crate::service::spec::ModelRequest;

/// One call, every choice made.
#[derive(Clone, Debug)]
pub(crate) struct GatewayCall {
    /// The model.
    pub(crate) model: ModelRequest,
    /// The messages, the client's tools and the options.
    pub(crate) request: ChatRequest,
    /// Whether the answer streams.
    pub(crate) stream: bool,
    /// Whether a streamed answer ends with a usage chunk.
    pub(crate) include_usage: bool,
}

/// Why a call cannot be made.
#[derive(Debug, thiserror::Error)]
pub(crate) enum GatewayError {
    /// No key for the model's provider, so the server cannot reach it.
    #[error(transparent)]
    NoKey(#[from] NoKey),
    /// The model's configuration is refused.
    #[error("{0}")]
    Model(#[from] ProviderError),
}

/// A call ready to send: the model, and the request with its chain repaired.
pub(crate) struct PreparedCall {
    pub(crate) model: Arc<dyn ChatModel>,
    pub(crate) request: ChatRequest,
    /// How many chain faults were repaired (tool calls left unanswered, answers without a call).
    pub(crate) repairs: usize,
}

impl ChatService {
    /// The model of `call`, and its messages as a valid chain: a client that lost a tool
    /// result or resent a half conversation still gets an answer instead of a provider's 400.
    pub(crate) fn prepare_call(&self, call: GatewayCall) -> Result<PreparedCall, GatewayError> {
        let mut config = resolve_model_config(&call.model, &self.keys, &self.base_urls);
        config.limits = self.limits.clone();
        require_reachable(&config)?;
        let model = self.models.model(&config)?;
        let mut request = call.request;
        let (chain, faults) = ChainAst::repair(&request.messages);
        if !faults.is_empty() {
            tracing::debug!(repairs = faults.len(), "repaired the client's conversation");
            request.messages = chain.into_messages();
        }
        Ok(PreparedCall {
            model,
            request,
            repairs: faults.len(),
        })
    }
}

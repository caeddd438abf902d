//! Embeddings: a model name to its [`EmbeddingModel`], with the service's keys and endpoints,
//! as the gateway's chat calls get theirs.

use providers::{
    EmbeddingModel, EmbeddingRequest, Embeddings, ProviderError, embedding_model_from_config,
};

use crate::chat::ChatService;
use crate::model::{NoKey, require_reachable, resolve_model_config};
use crate::spec::ModelRequest;

/// Why inputs could not be embedded.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// No key for the model's provider, so the server cannot reach it.
    #[error(transparent)]
    NoKey(#[from] NoKey),
    /// The model cannot embed (an Anthropic model), or its configuration is refused; nothing
    /// was sent.
    #[error("{0}")]
    Model(ProviderError),
    /// The provider refused or failed the call.
    #[error("{0}")]
    Provider(ProviderError),
}

impl ChatService {
    /// Embeds `request`'s inputs with `model`, reached with this service's key and endpoint
    /// for its provider (`echo` needs neither).
    pub async fn embed(
        &self,
        model: &str,
        request: &EmbeddingRequest,
    ) -> Result<Embeddings, EmbedError> {
        let mut config =
            resolve_model_config(&ModelRequest::new(model), &self.keys, &self.base_urls);
        config.limits = self.limits.clone();
        let model = embedding_model_from_config(&config);
        // A model that cannot embed at all is told so before any word about keys.
        if let Err(error @ ProviderError::Unsupported { .. }) = model {
            return Err(EmbedError::Model(error));
        }
        require_reachable(&config)?;
        let model: Box<dyn EmbeddingModel> = model.map_err(EmbedError::Model)?;
        model.embed(request).await.map_err(EmbedError::Provider)
    }
}

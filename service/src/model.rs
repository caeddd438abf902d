//! Building the model of a run: keys and endpoints filled in, one model per configuration.

use std::sync::{Arc, Mutex, PoisonError};

use providers::{ChatModel, ECHO_MODEL_ID, ModelConfig, ProviderError, model_from_config};

use crate::config::ProviderBaseUrls;
use crate::keys::ProviderKeys;
use crate::spec::ModelRequest;

/// The configuration to build `request`'s model from: a missing endpoint and key are taken
/// from the process's own (`base_urls`, `keys`), but the process's key never goes to an
/// endpoint the request chose.
pub fn resolve_model_config(
    request: &ModelRequest,
    keys: &ProviderKeys,
    base_urls: &ProviderBaseUrls,
) -> ModelConfig {
    let mut config = request.config.clone();
    if config.model_id == ECHO_MODEL_ID || request.custom_endpoint {
        return config;
    }
    let provider = config.provider();
    if config.base_url.is_none() {
        config.base_url = base_urls.get(provider).map(str::to_owned);
    }
    if config.api_key.is_none() {
        config.api_key = keys.get(provider).map(|key| key.expose().to_owned());
    }
    config
}

/// A model no one can reach: its provider has neither a key nor an endpoint on this server.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "the model `{model}` is served by {provider}, and this server has no key for it; the \
     operator sets {env_var} (or pick another model: GET /v1/models lists them)"
)]
pub struct NoKey {
    /// The model asked for.
    pub model: String,
    /// Its provider.
    pub provider: &'static str,
    /// Where the operator puts the key.
    pub env_var: &'static str,
}

/// Refuses `config` before any call when nothing could reach it: the call would only fail at
/// the provider with a missing key, after the client was told the answer had started.
pub(crate) fn require_reachable(config: &ModelConfig) -> Result<(), NoKey> {
    if config.model_id == ECHO_MODEL_ID || config.api_key.is_some() || config.base_url.is_some() {
        return Ok(());
    }
    let provider = config.provider();
    Err(NoKey {
        model: config.model_id.clone(),
        provider: provider.as_str(),
        env_var: provider.key_env_var(),
    })
}

/// Most models kept by a [`ModelCache`].
const MAX_CACHED_MODELS: usize = 64;

/// Models built once per distinct configuration and shared by the runs that use them. A model
/// holds an HTTP client and its connection pool: building one per request would pay for a
/// client and a new connection every time.
#[derive(Default)]
pub(crate) struct ModelCache {
    // Compared with `ModelConfig`'s own equality, so every field (those added later too)
    // tells models apart; a linear search over a few dozen entries is cheap.
    models: Mutex<Vec<(ModelConfig, Arc<dyn ChatModel>)>>,
}

impl ModelCache {
    /// The model of `config`, built on first use.
    pub(crate) fn model(&self, config: &ModelConfig) -> Result<Arc<dyn ChatModel>, ProviderError> {
        let mut models = self.models.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, model)) = models.iter().find(|(cached, _)| cached == config) {
            return Ok(Arc::clone(model));
        }
        let model: Arc<dyn ChatModel> = Arc::from(model_from_config(config)?);
        if models.len() == MAX_CACHED_MODELS {
            // The oldest goes; runs still holding it keep it alive until they end.
            models.remove(0);
        }
        models.push((config.clone(), Arc::clone(&model)));
        Ok(model)
    }
}

impl std::fmt::Debug for ModelCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let models = self.models.lock().unwrap_or_else(PoisonError::into_inner);
        write!(f, "ModelCache {{ models: {} }}", models.len())
    }
}

#[cfg(test)]
mod tests {
    use providers::Provider;

    use super::*;
    use messages::Secret;

    fn keys() -> ProviderKeys {
        let mut keys = ProviderKeys::default();
        keys.set(Provider::OpenAi, Secret::new("sk-server"));
        keys
    }

    #[test]
    fn server_keys_go_only_to_server_endpoints() {
        let urls = ProviderBaseUrls::from([(Provider::OpenAi, "http://127.0.0.1:9/v1".into())]);
        let plain = resolve_model_config(&ModelRequest::new("gpt-4o"), &keys(), &urls);
        assert_eq!(plain.api_key.as_deref(), Some("sk-server"));
        assert_eq!(plain.base_url.as_deref(), Some("http://127.0.0.1:9/v1"));

        let mut custom = ModelRequest::new("gpt-4o");
        custom.config.base_url = Some("http://elsewhere.example/v1".into());
        custom.custom_endpoint = true;
        let resolved = resolve_model_config(&custom, &keys(), &urls);
        assert_eq!(resolved.api_key, None);
        assert_eq!(
            resolved.base_url.as_deref(),
            Some("http://elsewhere.example/v1")
        );

        // A key of another provider is never used.
        let claude = resolve_model_config(&ModelRequest::new("claude-sonnet-4-5"), &keys(), &urls);
        assert_eq!(claude.api_key, None);
    }

    #[test]
    fn models_are_shared_per_configuration() {
        let cache = ModelCache::default();
        let config = ModelConfig {
            api_key: Some("sk-a".into()),
            ..ModelConfig::new("gpt-4o")
        };
        let first = cache.model(&config).unwrap();
        let again = cache.model(&config).unwrap();
        assert!(Arc::ptr_eq(&first, &again));
        let other_key = ModelConfig {
            api_key: Some("sk-b".into()),
            ..config.clone()
        };
        assert!(!Arc::ptr_eq(&first, &cache.model(&other_key).unwrap()));
        for i in 0..MAX_CACHED_MODELS {
            let keyed = ModelConfig {
                api_key: Some("sk-x".into()),
                ..ModelConfig::new(format!("gpt-4o-{i}"))
            };
            cache.model(&keyed).unwrap();
        }
        assert_eq!(cache.models.lock().unwrap().len(), MAX_CACHED_MODELS);
        assert!(!format!("{cache:?}").contains("sk-a"));
    }
}

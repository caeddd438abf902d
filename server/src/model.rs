//! Building the model of a run: keys and endpoints filled in, tool choice applied.

use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use providers::{
    ChatModel, ChatRequest, ChatResponse, ECHO_MODEL_ID, EventStream, ModelConfig, ModelInfo,
    ProviderError, ToolChoice, model_from_config,
};

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
    /// The model of `config`, forcing `tool_choice` on every request that offers tools.
    pub(crate) fn model(
        &self,
        config: &ModelConfig,
        tool_choice: Option<ToolChoice>,
    ) -> Result<Arc<dyn ChatModel>, ProviderError> {
        let model = self.shared(config)?;
        Ok(match tool_choice {
            None => model,
            Some(choice) => Arc::new(WithToolChoice {
                inner: model,
                choice,
            }),
        })
    }

    fn shared(&self, config: &ModelConfig) -> Result<Arc<dyn ChatModel>, ProviderError> {
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

/// A model whose requests get `choice` as their tool choice whenever they offer tools (the
/// agent's last, tool-less request after the tool limit is left alone).
struct WithToolChoice {
    inner: Arc<dyn ChatModel>,
    choice: ToolChoice,
}

impl WithToolChoice {
    fn apply(&self, mut request: ChatRequest) -> ChatRequest {
        if !request.tools.is_empty() && request.tool_choice.is_none() {
            request.tool_choice = Some(self.choice.clone());
        }
        request
    }
}

#[async_trait]
impl ChatModel for WithToolChoice {
    fn info(&self) -> &ModelInfo {
        self.inner.info()
    }

    async fn complete(&self, request: ChatRequest) -> Result<ChatResponse, ProviderError> {
        self.inner.complete(self.apply(request)).await
    }

    async fn stream(&self, request: ChatRequest) -> Result<EventStream, ProviderError> {
        self.inner.stream(self.apply(request)).await
    }
}

#[cfg(test)]
mod tests {
    use providers::{Message, Provider, ToolSpec};

    use super::*;
    use crate::schema::Secret;

    fn keys() -> ProviderKeys {
        let mut keys = ProviderKeys::default();
        keys.set(Provider::OpenAi, Secret::new("sk-server"));
        keys
    }

    #[test]
    fn server_keys_go_only_to_server_endpoints() {
        let urls = ProviderBaseUrls {
            openai: Some("http://127.0.0.1:9/v1".into()),
            ..Default::default()
        };
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
        let first = cache.model(&config, None).unwrap();
        let again = cache.model(&config, None).unwrap();
        assert!(Arc::ptr_eq(&first, &again));
        let other_key = ModelConfig {
            api_key: Some("sk-b".into()),
            ..config.clone()
        };
        assert!(!Arc::ptr_eq(
            &first,
            &cache.model(&other_key, None).unwrap()
        ));
        for i in 0..MAX_CACHED_MODELS {
            let keyed = ModelConfig {
                api_key: Some("sk-x".into()),
                ..ModelConfig::new(format!("gpt-4o-{i}"))
            };
            cache.model(&keyed, None).unwrap();
        }
        assert_eq!(cache.models.lock().unwrap().len(), MAX_CACHED_MODELS);
        assert!(!format!("{cache:?}").contains("sk-a"));
    }

    #[tokio::test]
    async fn tool_choice_applies_only_with_tools() {
        let cache = ModelCache::default();
        let model = cache
            .model(&ModelConfig::new("echo"), Some(ToolChoice::None))
            .unwrap();
        let with_tools = ChatRequest {
            tools: vec![ToolSpec {
                name: "calculator".into(),
                description: "math".into(),
                parameters: serde_json::json!({"type": "object", "properties": {}}),
            }],
            ..ChatRequest::new(vec![Message::human("hi")])
        };
        // The echo model calls every offered tool unless the tool choice is `none`.
        let answer = model.complete(with_tools).await.unwrap();
        assert_eq!(answer.message.tool_calls().count(), 0);
        let unforced = cache.model(&ModelConfig::new("echo"), None).unwrap();
        let tools_again = ChatRequest {
            tools: vec![ToolSpec {
                name: "calculator".into(),
                description: "math".into(),
                parameters: serde_json::json!({"type": "object", "properties": {}}),
            }],
            ..ChatRequest::new(vec![Message::human("hi")])
        };
        assert_eq!(
            unforced
                .complete(tools_again)
                .await
                .unwrap()
                .message
                .tool_calls()
                .count(),
            1
        );
    }
}

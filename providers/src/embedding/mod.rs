//! [`EmbeddingModel`]: text to vectors, beside [`ChatModel`](crate::ChatModel), under the same
//! HTTP core (retry policy, timeouts, body caps, redacted errors).
//!
//! Which providers embed: OpenAI and every OpenAI-compatible server (`POST {base}/embeddings`,
//! OpenRouter's too), Google Gemini (`batchEmbedContents`, with `outputDimensionality`), and
//! the offline `echo` model (feature `testing`). Anthropic has no embeddings API:
//! [`embedding_model_from_config`] refuses its models with
//! [`ProviderError::Unsupported`] saying which providers embed.
//!
//! ```
//! use providers::{EmbeddingRequest, ModelConfig, embedding_model_from_config};
//!
//! # #[cfg(feature = "testing")]
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let model = embedding_model_from_config(&ModelConfig::new("echo"))?;
//! let request = EmbeddingRequest {
//!     dimensions: Some(4),
//!     ..EmbeddingRequest::texts(["Hello!", "Hello!", "Goodbye."])
//! };
//! let embeddings = model.embed(&request).await?;
//! assert_eq!(embeddings.vectors.len(), 3);
//! assert_eq!(embeddings.vectors[0].len(), 4);
//! // The same text, the same vector; a unit vector.
//! assert_eq!(embeddings.vectors[0], embeddings.vectors[1]);
//! let norm: f32 = embeddings.vectors[2].iter().map(|x| x * x).sum();
//! assert!((norm - 1.0).abs() < 1e-5);
//! # Ok::<(), providers::ProviderError>(())
//! # }).unwrap();
//! ```

#[cfg(feature = "testing")]
mod echo;

use async_trait::async_trait;

use crate::{ECHO_MODEL_ID, ModelConfig, Provider, ProviderError};

#[cfg(feature = "testing")]
pub use echo::{ECHO_DEFAULT_DIMENSIONS, ECHO_MAX_DIMENSIONS, EchoEmbedding};

/// A model that turns inputs into vectors: one provider adapter bound to one model id and
/// configuration.
#[async_trait]
pub trait EmbeddingModel: Send + Sync {
    /// The model id sent to the provider.
    fn model_id(&self) -> &str;

    /// One vector per input, in the inputs' order, and the tokens the inputs took.
    async fn embed(&self, request: &EmbeddingRequest) -> Result<Embeddings, ProviderError>;
}

/// What to embed.
#[derive(Clone, Debug, PartialEq)]
pub struct EmbeddingRequest {
    /// The inputs, each embedded apart.
    pub input: EmbeddingInput,
    /// The vectors' length, for models that can shorten theirs (OpenAI's
    /// `text-embedding-3-*`, Gemini's `outputDimensionality`); `None` for the model's own.
    pub dimensions: Option<u32>,
    /// The end user, passed on where the provider takes it (OpenAI's `user`).
    pub user: Option<String>,
}

impl EmbeddingRequest {
    /// A request for `texts`, with the model's own dimensions.
    pub fn texts<S: Into<String>>(texts: impl IntoIterator<Item = S>) -> Self {
        EmbeddingRequest {
            input: EmbeddingInput::Texts(texts.into_iter().map(Into::into).collect()),
            dimensions: None,
            user: None,
        }
    }

    /// How many inputs there are.
    pub fn len(&self) -> usize {
        match &self.input {
            EmbeddingInput::Texts(texts) => texts.len(),
            EmbeddingInput::Tokens(tokens) => tokens.len(),
        }
    }

    /// Whether there is no input.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The inputs: texts, or texts already tokenised (OpenAI's token arrays, which only OpenAI's
/// own tokenizer gives meaning to).
#[derive(Clone, Debug, PartialEq)]
pub enum EmbeddingInput {
    /// Texts.
    Texts(Vec<String>),
    /// Token ids, one array per input.
    Tokens(Vec<Vec<u32>>),
}

/// The vectors of a request.
#[derive(Clone, Debug, PartialEq)]
pub struct Embeddings {
    /// One vector per input, in the inputs' order.
    pub vectors: Vec<Vec<f32>>,
    /// Tokens the inputs took, as the provider counted them (Gemini's API reports none: 0).
    pub input_tokens: u64,
}

/// Builds the embedding model a configuration describes, as
/// [`model_from_config`](crate::model_from_config) builds a chat model: `echo` is the offline
/// model (feature `testing`), OpenAI-protocol models post to `{base}/embeddings`, Gemini models
/// to `batchEmbedContents`. An Anthropic model is refused: Anthropic has no embeddings API.
pub fn embedding_model_from_config(
    config: &ModelConfig,
) -> Result<Box<dyn EmbeddingModel>, ProviderError> {
    config.check_headers()?;
    if config.model_id.trim().is_empty() {
        return Err(ProviderError::config(
            "`model_id` is empty: name the embedding model, e.g. `text-embedding-3-small` or `echo`",
        ));
    }
    if config.model_id == ECHO_MODEL_ID {
        return echo();
    }
    let provider = config.provider();
    let model = match provider {
        Provider::OpenAi | Provider::OpenRouter => openai(config),
        Provider::Google => gemini(config),
        Provider::Anthropic => Err(ProviderError::Unsupported {
            provider,
            what: format!(
                "`{}` cannot embed: Anthropic has no embeddings API; embedding models are \
                 OpenAI's (e.g. `text-embedding-3-small`), Gemini's (e.g. \
                 `gemini-embedding-001`) and the offline `echo`",
                config.model_id
            ),
        }),
    };
    redacting(config, model)
}

/// Errors leave through the model's redactor, as a chat model's do.
#[cfg(feature = "__http")]
fn redacting(
    config: &ModelConfig,
    model: Result<Box<dyn EmbeddingModel>, ProviderError>,
) -> Result<Box<dyn EmbeddingModel>, ProviderError> {
    let redactor = crate::redact::for_config(config);
    match model {
        Ok(inner) => Ok(Box::new(Redacting { inner, redactor })),
        Err(err) => Err(crate::redact::error(&redactor, err)),
    }
}

#[cfg(not(feature = "__http"))]
fn redacting(
    _config: &ModelConfig,
    model: Result<Box<dyn EmbeddingModel>, ProviderError>,
) -> Result<Box<dyn EmbeddingModel>, ProviderError> {
    model
}

/// An embedding model whose errors are cleaned of the configuration's secrets.
#[cfg(feature = "__http")]
struct Redacting {
    inner: Box<dyn EmbeddingModel>,
    redactor: messages::redact::Redactor,
}

#[cfg(feature = "__http")]
#[async_trait]
impl EmbeddingModel for Redacting {
    fn model_id(&self) -> &str {
        self.inner.model_id()
    }

    async fn embed(&self, request: &EmbeddingRequest) -> Result<Embeddings, ProviderError> {
        self.inner
            .embed(request)
            .await
            .map_err(|err| crate::redact::error(&self.redactor, err))
    }
}

#[cfg(feature = "openai")]
fn openai(config: &ModelConfig) -> Result<Box<dyn EmbeddingModel>, ProviderError> {
    Ok(Box::new(crate::openai::embed::OpenAiEmbedding::new(
        config,
    )?))
}

#[cfg(not(feature = "openai"))]
fn openai(config: &ModelConfig) -> Result<Box<dyn EmbeddingModel>, ProviderError> {
    Err(disabled(config, "openai"))
}

#[cfg(feature = "gemini")]
fn gemini(config: &ModelConfig) -> Result<Box<dyn EmbeddingModel>, ProviderError> {
    Ok(Box::new(crate::gemini::embed::GeminiEmbedding::new(
        config,
    )?))
}

#[cfg(not(feature = "gemini"))]
fn gemini(config: &ModelConfig) -> Result<Box<dyn EmbeddingModel>, ProviderError> {
    Err(disabled(config, "gemini"))
}

#[cfg(not(all(feature = "openai", feature = "gemini")))]
fn disabled(config: &ModelConfig, feature: &'static str) -> ProviderError {
    ProviderError::FeatureDisabled {
        provider: config.provider(),
        model_id: config.model_id.clone(),
        feature,
    }
}

#[cfg(feature = "testing")]
fn echo() -> Result<Box<dyn EmbeddingModel>, ProviderError> {
    Ok(Box::new(EchoEmbedding))
}

#[cfg(not(feature = "testing"))]
fn echo() -> Result<Box<dyn EmbeddingModel>, ProviderError> {
    Err(ProviderError::FeatureDisabled {
        provider: Provider::OpenAi,
        model_id: ECHO_MODEL_ID.into(),
        feature: "testing",
    })
}

/// The inputs as texts, or the error of a provider that takes no token arrays.
#[cfg_attr(not(feature = "gemini"), allow(dead_code))]
pub(crate) fn texts_only(
    request: &EmbeddingRequest,
    provider: Provider,
) -> Result<&[String], ProviderError> {
    match &request.input {
        EmbeddingInput::Texts(texts) => Ok(texts),
        EmbeddingInput::Tokens(_) => Err(ProviderError::Unsupported {
            provider,
            what: "token arrays as `input`: only OpenAI's tokenizer gives them meaning; send \
                   the texts"
                .into(),
        }),
    }
}

//! `batchEmbedContents`: Gemini's embeddings, all inputs in one call.
//!
//! ```json
//! POST {base}/models/gemini-embedding-001:batchEmbedContents
//! {"requests": [{"model": "models/gemini-embedding-001",
//!                "content": {"parts": [{"text": "a"}]}, "outputDimensionality": 256}, …]}
//! → {"embeddings": [{"values": [0.1, …]}, …]}
//! ```
//!
//! The answer holds the vectors in the requests' order and no token count.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::embedding::{EmbeddingModel, EmbeddingRequest, Embeddings, texts_only};
use crate::http::{HttpClient, WireRequest};
use crate::{ModelConfig, Provider, ProviderError};

/// A Gemini embedding model.
#[derive(Debug)]
pub(crate) struct GeminiEmbedding {
    model: String,
    /// `models/{name}`, as each request of the batch names it.
    resource: String,
    url: String,
    http: HttpClient,
}

impl GeminiEmbedding {
    /// The model of `config`.
    pub(crate) fn new(config: &ModelConfig) -> Result<Self, ProviderError> {
        let name = super::model_name(&config.model_id)?;
        let key = config.api_key_or_dummy()?;
        let base = config.base_url_or(Provider::Google.info().default_base_url);
        Ok(GeminiEmbedding {
            model: name.to_owned(),
            resource: format!("models/{name}"),
            url: format!("{base}/models/{name}:batchEmbedContents"),
            http: HttpClient::new(
                Provider::Google,
                config,
                &[("x-goog-api-key", key)],
                crate::http::retryable_status,
            )?,
        })
    }
}

#[derive(Serialize)]
struct Batch<'a> {
    requests: Vec<One<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct One<'a> {
    model: &'a str,
    content: Content<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_dimensionality: Option<u32>,
}

#[derive(Serialize)]
struct Content<'a> {
    parts: [Part<'a>; 1],
}

#[derive(Serialize)]
struct Part<'a> {
    text: &'a str,
}

#[derive(Deserialize)]
struct Answer {
    #[serde(default)]
    embeddings: Vec<Values>,
}

#[derive(Deserialize)]
struct Values {
    values: Vec<f32>,
}

#[async_trait]
impl EmbeddingModel for GeminiEmbedding {
    fn model_id(&self) -> &str {
        &self.model
    }

    async fn embed(&self, request: &EmbeddingRequest) -> Result<Embeddings, ProviderError> {
        let texts = texts_only(request, Provider::Google)?;
        let batch = Batch {
            requests: texts
                .iter()
                .map(|text| One {
                    model: &self.resource,
                    content: Content {
                        parts: [Part { text }],
                    },
                    output_dimensionality: request.dimensions,
                })
                .collect(),
        };
        let body = serde_json::to_vec(&batch)
            .map_err(|err| ProviderError::config(format!("cannot encode the request: {err}")))?;
        let wire = WireRequest {
            url: self.url.clone(),
            body: body.into(),
            headers: Default::default(),
        };
        let body = self.http.post_json(&wire, super::error::http_error).await?;
        let text = String::from_utf8_lossy(&body);
        let answer: Answer = serde_json::from_slice(&body).map_err(|err| {
            ProviderError::decode(
                Provider::Google,
                format!("a batchEmbedContents answer: {err}"),
                &text,
            )
        })?;
        if answer.embeddings.len() != texts.len() {
            return Err(ProviderError::decode(
                Provider::Google,
                format!(
                    "{} vectors for {} inputs in a batchEmbedContents answer",
                    answer.embeddings.len(),
                    texts.len()
                ),
                &text,
            ));
        }
        Ok(Embeddings {
            vectors: answer.embeddings.into_iter().map(|e| e.values).collect(),
            input_tokens: 0,
        })
    }
}

//! `POST {base}/embeddings`: OpenAI's embeddings API, for OpenAI and every OpenAI-compatible
//! server (OpenRouter's included).
//!
//! ```json
//! {"model": "text-embedding-3-small", "input": ["a", "b"], "encoding_format": "float",
//!  "dimensions": 256, "user": "u-1"}
//! → {"object": "list", "data": [{"object": "embedding", "index": 0, "embedding": [0.1, …]}, …],
//!    "model": "text-embedding-3-small", "usage": {"prompt_tokens": 2, "total_tokens": 2}}
//! ```
//!
//! Floats are asked for whatever the client wants: the server encodes base64 itself, and the
//! vectors are the same either way.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::embedding::{EmbeddingInput, EmbeddingModel, EmbeddingRequest, Embeddings};
use crate::http::{HttpClient, WireRequest};
use crate::{ModelConfig, ProviderError};

/// An OpenAI-protocol embedding model.
#[derive(Debug)]
pub(crate) struct OpenAiEmbedding {
    provider: crate::Provider,
    model: String,
    url: String,
    http: HttpClient,
}

impl OpenAiEmbedding {
    /// The model of `config`, at its provider's endpoint unless the configuration names one.
    pub(crate) fn new(config: &ModelConfig) -> Result<Self, ProviderError> {
        let provider = config.provider();
        let key = config.api_key_or_dummy()?;
        let auth = [("authorization", format!("Bearer {key}"))];
        let base = config.base_url_or(provider.info().default_base_url);
        Ok(OpenAiEmbedding {
            provider,
            model: config.model_id.trim().to_owned(),
            url: format!("{base}/embeddings"),
            http: HttpClient::new(provider, config, &auth, crate::http::retryable_status)?,
        })
    }
}

/// The request body.
#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    input: Input<'a>,
    encoding_format: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    dimensions: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    user: Option<&'a str>,
}

#[derive(Serialize)]
#[serde(untagged)]
enum Input<'a> {
    Texts(&'a [String]),
    Tokens(&'a [Vec<u32>]),
}

/// The answer.
#[derive(Deserialize)]
struct Answer {
    data: Vec<Datum>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct Datum {
    #[serde(default)]
    index: Option<usize>,
    embedding: Vec<f32>,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: u64,
}

#[async_trait]
impl EmbeddingModel for OpenAiEmbedding {
    fn model_id(&self) -> &str {
        &self.model
    }

    async fn embed(&self, request: &EmbeddingRequest) -> Result<Embeddings, ProviderError> {
        let body = Body {
            model: &self.model,
            input: match &request.input {
                EmbeddingInput::Texts(texts) => Input::Texts(texts),
                EmbeddingInput::Tokens(tokens) => Input::Tokens(tokens),
            },
            encoding_format: "float",
            dimensions: request.dimensions,
            user: request.user.as_deref(),
        };
        let body = serde_json::to_vec(&body)
            .map_err(|err| ProviderError::config(format!("cannot encode the request: {err}")))?;
        let wire = WireRequest {
            url: self.url.clone(),
            body: body.into(),
            headers: Default::default(),
        };
        let answer = self.http.post_json(&wire, super::error::http_error).await?;
        read_answer(self.provider, &answer, request.len())
    }
}

/// The vectors of an answer, put in the inputs' order by their `index`.
fn read_answer(
    provider: crate::Provider,
    body: &[u8],
    inputs: usize,
) -> Result<Embeddings, ProviderError> {
    let answer: Answer = serde_json::from_slice(body).map_err(|err| {
        ProviderError::decode(
            provider,
            format!("an embeddings answer: {err}"),
            &String::from_utf8_lossy(body),
        )
    })?;
    if answer.data.len() != inputs {
        return Err(ProviderError::decode(
            provider,
            format!(
                "{} vectors for {inputs} inputs in an embeddings answer",
                answer.data.len()
            ),
            &String::from_utf8_lossy(body),
        ));
    }
    let mut data = answer.data;
    data.sort_by_key(|datum| datum.index);
    Ok(Embeddings {
        vectors: data.into_iter().map(|datum| datum.embedding).collect(),
        input_tokens: answer.usage.map_or(0, |usage| usage.prompt_tokens),
    })
}

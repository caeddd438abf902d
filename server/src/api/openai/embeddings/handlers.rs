//! `POST /v1/embeddings`: OpenAI's embeddings in front of OpenAI, Gemini and the offline
//! `echo` model.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::{Extension, Json};
use base64::Engine as _;
use http::StatusCode;
use providers::{EmbeddingInput, EmbeddingRequest, ModelConfig, Provider, ProviderError};
use serde_json::Value;
use service::{EmbedError, Principal};

use super::schema::{
    EmbeddingList, EmbeddingObject, EmbeddingUsage, EmbeddingsRequest, EncodingFormat, MAX_INPUTS,
};
use crate::api::openai::error::OpenAiError;
use crate::api::openai::gateway::{provider_error, read_request};
use crate::api::request_log::RequestLog;
use crate::api::state::App;

/// Creates embeddings: one vector per input.
#[utoipa::path(
    post,
    path = "/v1/embeddings",
    tag = "openai",
    request_body = EmbeddingsRequest,
    responses(
        (status = 200, description = "One `embedding` per input, in order", body = EmbeddingList),
        (status = 400, description = "An input, `dimensions` or the model cannot be used (an Anthropic model: Anthropic has no embeddings); `error.param` names the field", body = crate::api::openai::error::OpenAiErrorBody),
        (status = 401, description = "Missing or invalid bearer token", body = crate::api::openai::error::OpenAiErrorBody),
        (status = 403, description = "No tokens configured and the client is not on loopback, a `Host` that is not this server's, or a cross-origin request", body = crate::api::openai::error::OpenAiErrorBody),
        (status = 404, description = "The model's provider has no key on this server, or the provider has no such model", body = crate::api::openai::error::OpenAiErrorBody),
        (status = 408, description = "The body did not arrive within the body read timeout", body = crate::api::openai::error::OpenAiErrorBody),
        (status = 413, description = "The body is larger than the server's limit", body = crate::api::openai::error::OpenAiErrorBody),
        (status = 415, description = "The body is not sent as `Content-Type: application/json`", body = crate::api::openai::error::OpenAiErrorBody),
        (status = 429, description = "The caller's concurrency limit is reached, or the provider's", body = crate::api::openai::error::OpenAiErrorBody),
        (status = 502, description = "The provider failed", body = crate::api::openai::error::OpenAiErrorBody),
        (status = 503, description = "The server is shutting down", body = crate::api::openai::error::OpenAiErrorBody),
    ),
    security(("bearer" = []))
)]
pub(crate) async fn create_embeddings(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Principal>,
    Extension(log): Extension<RequestLog>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<EmbeddingList>, OpenAiError> {
    let request: EmbeddingsRequest = read_request(&app, body)?;
    let model = request.model.trim().to_owned();
    let config = ModelConfig::new(model.as_str());
    log.model(&model, &config);
    let embedding = embedding_request(&request, config.provider())?;
    let _permit = crate::api::limit::admit(&app.limit, caller, app.config.retry_after()).await?;
    let embeddings = app
        .service
        .chat()
        .embed(&model, &embedding)
        .await
        .map_err(embed_error)?;
    log.tokens(embeddings.input_tokens, None);
    let format = request.encoding_format.unwrap_or_default();
    let data = embeddings
        .vectors
        .into_iter()
        .enumerate()
        .map(|(index, vector)| EmbeddingObject {
            object: "embedding",
            index,
            embedding: encode(vector, format),
        })
        .collect();
    Ok(Json(EmbeddingList {
        object: "list",
        data,
        model: request.model,
        usage: EmbeddingUsage {
            prompt_tokens: embeddings.input_tokens,
            total_tokens: embeddings.input_tokens,
        },
    }))
}

/// The provider-neutral request, or the 400 naming what is wrong with the inputs (every
/// wrong input at once) or `dimensions`.
fn embedding_request(
    request: &EmbeddingsRequest,
    provider: Provider,
) -> Result<EmbeddingRequest, OpenAiError> {
    let input = read_input(&request.input)?;
    let is_echo = request.model.trim() == providers::ECHO_MODEL_ID;
    if matches!(input, EmbeddingInput::Tokens(_)) && provider == Provider::Google && !is_echo {
        return Err(OpenAiError::invalid(
            "input",
            format!(
                "`input`: token arrays mean something to OpenAI's tokenizer only, and `{}` is a \
                 Gemini model; send the texts",
                request.model.trim()
            ),
        ));
    }
    match request.dimensions {
        Some(0) => {
            return Err(OpenAiError::invalid(
                "dimensions",
                "`dimensions` is 0: ask for at least 1, or leave it out for the model's own",
            ));
        }
        Some(asked) if is_echo && asked > providers::ECHO_MAX_DIMENSIONS => {
            return Err(OpenAiError::invalid(
                "dimensions",
                format!(
                    "`dimensions` is {asked}: `echo` makes vectors of 1 to {}",
                    providers::ECHO_MAX_DIMENSIONS
                ),
            ));
        }
        _ => {}
    }
    Ok(EmbeddingRequest {
        input,
        dimensions: request.dimensions,
        user: request.user.clone(),
    })
}

/// `input` as texts or token arrays, as OpenAI takes it.
fn read_input(input: &Value) -> Result<EmbeddingInput, OpenAiError> {
    const SHAPES: &str = "a string, an array of strings, an array of token ids, or an array \
                          of token-id arrays";
    let wrong = |what: String| OpenAiError::invalid("input", format!("`input`: {what}"));
    match input {
        Value::String(text) if text.is_empty() => {
            Err(wrong("is an empty string; send some text".into()))
        }
        Value::String(text) => Ok(EmbeddingInput::Texts(vec![text.clone()])),
        Value::Array(items) if items.is_empty() => {
            Err(wrong("is empty; send at least one input".into()))
        }
        Value::Array(items) if items.len() > MAX_INPUTS => Err(wrong(format!(
            "holds {} inputs, more than {MAX_INPUTS}; split the request",
            items.len()
        ))),
        Value::Array(items) => read_array(items).map_err(wrong),
        _ => Err(wrong(format!("must be {SHAPES}"))),
    }
}

/// An array `input`: strings, token ids (one input), or token arrays. The error names every
/// item at fault.
fn read_array(items: &[Value]) -> Result<EmbeddingInput, String> {
    let token = |value: &Value| value.as_u64().and_then(|id| u32::try_from(id).ok());
    if items.iter().all(Value::is_string) {
        let empty: Vec<String> = items
            .iter()
            .enumerate()
            .filter(|(_, item)| item.as_str() == Some(""))
            .map(|(index, _)| format!("`input[{index}]`"))
            .collect();
        if !empty.is_empty() {
            return Err(format!(
                "empty strings at {}; send some text",
                empty.join(", ")
            ));
        }
        let texts = items.iter().filter_map(Value::as_str).map(str::to_owned);
        return Ok(EmbeddingInput::Texts(texts.collect()));
    }
    if let Some(tokens) = items.iter().map(token).collect::<Option<Vec<u32>>>() {
        return Ok(EmbeddingInput::Tokens(vec![tokens]));
    }
    let arrays: Vec<Option<Vec<u32>>> = items
        .iter()
        .map(|item| {
            let array = item.as_array().filter(|array| !array.is_empty())?;
            array.iter().map(token).collect()
        })
        .collect();
    let wrong: Vec<String> = arrays
        .iter()
        .enumerate()
        .filter(|(_, array)| array.is_none())
        .map(|(index, _)| format!("`input[{index}]`"))
        .collect();
    if wrong.is_empty() {
        return Ok(EmbeddingInput::Tokens(
            arrays.into_iter().flatten().collect(),
        ));
    }
    Err(format!(
        "mixes kinds of input or holds something else at {}; send strings only, token ids \
         only (0 to 2^32-1), or non-empty token-id arrays only",
        wrong.join(", ")
    ))
}

/// A vector as JSON numbers, or as base64 of its little-endian 32-bit floats.
fn encode(vector: Vec<f32>, format: EncodingFormat) -> Value {
    match format {
        EncodingFormat::Float => Value::from(vector),
        EncodingFormat::Base64 => {
            let bytes: Vec<u8> = vector.iter().flat_map(|x| x.to_le_bytes()).collect();
            Value::String(base64::engine::general_purpose::STANDARD.encode(bytes))
        }
    }
}

/// The answer to an embedding call that failed.
fn embed_error(error: EmbedError) -> OpenAiError {
    match error {
        EmbedError::NoKey(_) => {
            OpenAiError::new(StatusCode::NOT_FOUND, "model_not_found", error.to_string())
                .with_param("model")
        }
        EmbedError::Model(ProviderError::Unsupported { what, .. }) => {
            OpenAiError::new(StatusCode::BAD_REQUEST, "model_not_supported", what)
                .with_param("model")
        }
        EmbedError::Model(_) => {
            OpenAiError::new(StatusCode::BAD_REQUEST, "invalid_model", error.to_string())
                .with_param("model")
        }
        EmbedError::Provider(error) => provider_error(error),
    }
}

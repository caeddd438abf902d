//! OpenAI adapter: Chat Completions and the Responses API, for OpenAI and every
//! OpenAI-compatible server (DeepSeek, vLLM, OpenRouter, …).
//!
//! This module is the pattern the other adapters follow. A provider adapter is a thin mapping
//! of its wire format onto the shared core:
//!
//! - a request body builder per API (`request`, `responses::request`): `ChatRequest` → JSON;
//! - a stream parser per API implementing `EventParser`
//!   (`stream::ChatStreamParser`, `responses::stream::ResponsesStreamParser`): one SSE
//!   event → `Chunk`s;
//! - a parser of the non-streamed JSON into the same chunks (`response_chunks`), so that
//!   `complete` and `collect(stream)` agree by construction;
//! - an error parser for the provider's error envelope (`error::http_error`);
//! - `from_config`, which builds the model on an `HttpClient` (retries, timeouts, SSE
//!   decoding and the delta assembler all live in the core).
//!
//! `decode_chat_stream` and `decode_responses_stream` decode a recorded stream body
//! without HTTP (replaying recordings, benchmarks, fuzzing).

mod error;
mod request;
mod responses;
mod stream;
mod wire;

use async_trait::async_trait;
use futures::Stream;
use messages::{ContentPart, Message, Role};
use serde_json::{Map, Value};

use crate::assemble::events_from_chunks;
use crate::collect::response_from_events;
use crate::http::sse;
use crate::http::{HttpClient, WireRequest};
use crate::{
    ApiFormat, ChatModel, ChatRequest, ChatResponse, EventStream, ModelConfig, ModelInfo, Provider,
    ProviderError,
};

/// The official endpoint; a `base_url` replaces it (`…/v1` convention).
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// A model reached over the OpenAI protocol.
#[derive(Debug)]
struct OpenAiModel {
    info: ModelInfo,
    http: HttpClient,
    base_url: String,
    format: ApiFormat,
    max_tokens: Option<u32>,
}

/// What request builders need to know about the model.
pub(crate) struct Target<'a> {
    model: &'a str,
    info: &'a ModelInfo,
    max_tokens: Option<u32>,
    /// Whether this is OpenAI's own endpoint (not an OpenAI-compatible server).
    official: bool,
}

impl Target<'_> {
    /// Whether assistant tool-call messages must carry `reasoning_content` back (DeepSeek
    /// thinking mode rejects tool-call turns without it). It is sent when the model is a
    /// DeepSeek model or the conversation holds Chat-style reasoning (text without an item id,
    /// signature or encrypted data, which only `reasoning_content` produces); OpenAI itself
    /// never sees the field.
    fn echo_reasoning_content(&self, messages: &[Message]) -> bool {
        self.model.to_ascii_lowercase().starts_with("deepseek")
            || messages.iter().filter(|m| m.role == Role::Ai).any(|m| {
                m.parts.iter().any(|part| {
                    matches!(part, ContentPart::Reasoning(r)
                        if !r.text.is_empty() && r.id.is_none() && r.signature.is_none() && r.encrypted.is_none())
                })
            })
    }
}

/// Options both APIs spell the same way (and the output limit under its API's name).
fn common_options(
    target: &Target<'_>,
    request: &ChatRequest,
    max_tokens_key: &str,
    body: &mut Map<String, Value>,
) {
    if let Some(temperature) = request.options.temperature {
        body.insert("temperature".into(), temperature.into());
    }
    if let Some(max) = request.options.max_tokens.or(target.max_tokens) {
        body.insert(max_tokens_key.into(), max.into());
    }
    if let Some(key) = &request.options.cache.key {
        body.insert("prompt_cache_key".into(), key.as_str().into());
    }
}

/// Builds the OpenAI-protocol model for `config`.
pub(crate) fn from_config(
    config: &ModelConfig,
    info: ModelInfo,
) -> Result<Box<dyn ChatModel>, ProviderError> {
    let format = config.api_format.unwrap_or_default();
    let key = config.api_key_or_dummy()?;
    let http = HttpClient::new(
        Provider::OpenAi,
        config,
        &[("authorization", format!("Bearer {key}"))],
    )?;
    Ok(Box::new(OpenAiModel {
        info,
        http,
        base_url: config.base_url_or(DEFAULT_BASE_URL),
        format,
        max_tokens: config.max_tokens,
    }))
}

impl OpenAiModel {
    fn wire_request(
        &self,
        request: &ChatRequest,
        stream: bool,
    ) -> Result<WireRequest, ProviderError> {
        let target = Target {
            model: &self.info.id,
            info: &self.info,
            max_tokens: self.max_tokens,
            official: self.base_url == DEFAULT_BASE_URL,
        };
        let (path, body) = match self.format {
            ApiFormat::Chat => ("chat/completions", request::body(&target, request, stream)?),
            ApiFormat::Responses => (
                "responses",
                responses::request::body(&target, request, stream)?,
            ),
        };
        let body = serde_json::to_vec(&body)
            .map_err(|err| ProviderError::config(format!("cannot encode the request: {err}")))?;
        Ok(WireRequest {
            url: format!("{}/{path}", self.base_url),
            body,
            headers: request.options.extra_headers.clone(),
        })
    }
}

#[async_trait]
impl ChatModel for OpenAiModel {
    fn info(&self) -> &ModelInfo {
        &self.info
    }

    async fn complete(&self, request: ChatRequest) -> Result<ChatResponse, ProviderError> {
        let wire = self.wire_request(&request, false)?;
        let body = self.http.post_json(&wire, error::http_error).await?;
        let body = String::from_utf8_lossy(&body);
        let chunks = match self.format {
            ApiFormat::Chat => stream::response_chunks(&body)?,
            ApiFormat::Responses => responses::stream::response_chunks(&body)?,
        };
        response_from_events(events_from_chunks(Provider::OpenAi, chunks)?)
    }

    async fn stream(&self, request: ChatRequest) -> Result<EventStream, ProviderError> {
        let wire = self.wire_request(&request, true)?;
        match self.format {
            ApiFormat::Chat => {
                self.http
                    .post_sse(
                        &wire,
                        error::http_error,
                        stream::ChatStreamParser::default(),
                    )
                    .await
            }
            ApiFormat::Responses => {
                self.http
                    .post_sse(
                        &wire,
                        error::http_error,
                        responses::stream::ResponsesStreamParser::default(),
                    )
                    .await
            }
        }
    }
}

/// Decodes a recorded Chat Completions SSE body (any chunking) into stream events.
pub fn decode_chat_stream<S, B>(body: S) -> EventStream
where
    S: Stream<Item = B> + Send + 'static,
    B: AsRef<[u8]> + Send + 'static,
{
    sse::decode_recorded(Provider::OpenAi, body, stream::ChatStreamParser::default())
}

/// Decodes a recorded Responses API SSE body (any chunking) into stream events.
pub fn decode_responses_stream<S, B>(body: S) -> EventStream
where
    S: Stream<Item = B> + Send + 'static,
    B: AsRef<[u8]> + Send + 'static,
{
    sse::decode_recorded(
        Provider::OpenAi,
        body,
        responses::stream::ResponsesStreamParser::default(),
    )
}

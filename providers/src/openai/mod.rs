//! OpenAI adapter: Chat Completions and the Responses API, for OpenAI and every
//! OpenAI-compatible server (DeepSeek, vLLM, OpenRouter, …).
//!
//! Each API is one [`WireProtocol`](crate::protocol::WireProtocol) under the shared HTTP
//! model, in the files every adapter has:
//!
//! - `request`: `ChatRequest` → request body (`responses/request` for the Responses API);
//! - `stream`: one SSE event → `Chunk`s, and the non-streamed JSON → the same chunks, so that
//!   `complete` and `collect(stream)` agree by construction (`responses/stream`);
//! - `error`: the error envelope, over HTTP and inside a stream (shared by both APIs);
//! - `mod.rs`: the endpoint, the protocol impls and `from_config`.
//!
//! `decode_chat_stream` and `decode_responses_stream` decode a recorded stream body
//! without HTTP (replaying recordings, benchmarks, fuzzing).

pub(crate) mod error;
pub(crate) mod request;
mod responses;
pub(crate) mod stream;
mod wire;

use futures::Stream;
use messages::{ContentPart, Message, Role};
use serde_json::{Map, Value};

use crate::assemble::Chunk;
use crate::http::HttpFailure;
use crate::protocol::{HttpModel, WireProtocol, decode_recorded};
use crate::{
    ApiFormat, ChatModel, ChatRequest, EventStream, ModelConfig, ModelInfo, Provider, ProviderError,
};

/// The official endpoint; a `base_url` replaces it (`…/v1` convention).
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

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

/// Builds the OpenAI-protocol model for `config`: Chat Completions, or the Responses API when
/// `api_format` says so.
pub(crate) fn from_config(
    config: &ModelConfig,
    info: ModelInfo,
) -> Result<Box<dyn ChatModel>, ProviderError> {
    let key = config.api_key_or_dummy()?;
    let auth = [("authorization", format!("Bearer {key}"))];
    let endpoint = Endpoint::new(config, &info, DEFAULT_BASE_URL);
    match config.api_format.unwrap_or_default() {
        ApiFormat::Chat => HttpModel::boxed(config, info, ChatCompletions(endpoint), &auth),
        ApiFormat::Responses => HttpModel::boxed(config, info, Responses(endpoint), &auth),
    }
}

/// What both OpenAI APIs need to build a request.
#[derive(Debug)]
pub(crate) struct Endpoint {
    base_url: String,
    info: ModelInfo,
    max_tokens: Option<u32>,
}

impl Endpoint {
    /// The endpoint of `config`, at `default_base_url` unless the configuration names one.
    pub(crate) fn new(config: &ModelConfig, info: &ModelInfo, default_base_url: &str) -> Self {
        Endpoint {
            base_url: config.base_url_or(default_base_url),
            info: info.clone(),
            max_tokens: config.max_tokens,
        }
    }

    /// The base URL, without a trailing slash.
    pub(crate) fn base_url(&self) -> &str {
        &self.base_url
    }

    /// What the request builders need to know.
    pub(crate) fn target(&self) -> Target<'_> {
        Target {
            model: &self.info.id,
            info: &self.info,
            max_tokens: self.max_tokens,
            official: self.base_url == DEFAULT_BASE_URL,
        }
    }
}

/// `POST {base}/chat/completions`: OpenAI's Chat Completions API and every compatible server.
#[derive(Debug)]
pub(crate) struct ChatCompletions(pub(crate) Endpoint);

impl WireProtocol for ChatCompletions {
    type Body<'a> = Value;
    type Parser = stream::ChatStreamParser;
    const PROVIDER: Provider = Provider::OpenAi;

    fn url(&self, _stream: bool) -> String {
        format!("{}/chat/completions", self.0.base_url)
    }

    fn body<'a>(&'a self, request: &'a ChatRequest, stream: bool) -> Result<Value, ProviderError> {
        request::body(&self.0.target(), request, stream)
    }

    fn response_chunks(body: &str) -> Result<Vec<Chunk>, ProviderError> {
        stream::response_chunks(body)
    }

    fn http_error(failure: &HttpFailure<'_>) -> ProviderError {
        error::http_error(failure)
    }
}

/// `POST {base}/responses`: OpenAI's Responses API.
#[derive(Debug)]
struct Responses(Endpoint);

impl WireProtocol for Responses {
    type Body<'a> = Value;
    type Parser = responses::stream::ResponsesStreamParser;
    const PROVIDER: Provider = Provider::OpenAi;

    fn url(&self, _stream: bool) -> String {
        format!("{}/responses", self.0.base_url)
    }

    fn body<'a>(&'a self, request: &'a ChatRequest, stream: bool) -> Result<Value, ProviderError> {
        responses::request::body(&self.0.target(), request, stream)
    }

    fn response_chunks(body: &str) -> Result<Vec<Chunk>, ProviderError> {
        responses::stream::response_chunks(body)
    }

    fn http_error(failure: &HttpFailure<'_>) -> ProviderError {
        error::http_error(failure)
    }
}

/// Decodes a recorded Chat Completions SSE body (any chunking) into stream events.
pub fn decode_chat_stream<S, B>(body: S) -> EventStream
where
    S: Stream<Item = B> + Send + 'static,
    B: AsRef<[u8]> + Send + 'static,
{
    decode_recorded::<ChatCompletions, _, _>(body)
}

/// Decodes a recorded Responses API SSE body (any chunking) into stream events.
pub fn decode_responses_stream<S, B>(body: S) -> EventStream
where
    S: Stream<Item = B> + Send + 'static,
    B: AsRef<[u8]> + Send + 'static,
{
    decode_recorded::<Responses, _, _>(body)
}

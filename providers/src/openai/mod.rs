//! OpenAI adapter: Chat Completions and the Responses API, for OpenAI and every
//! OpenAI-compatible server (DeepSeek, vLLM, Ollama, …), and the dialects of Chat Completions
//! that other providers speak (OpenRouter's is `openrouter/`).
//!
//! Each API is one `WireProtocol` (the crate-private trait in `protocol.rs`) under the shared HTTP
//! model, in the files every adapter has:
//!
//! - `request`: `ChatRequest` → request body (`responses/request` for the Responses API);
//! - `stream`: one SSE event → `Chunk`s, and the non-streamed JSON → the same chunks, so that
//!   `complete` and `collect(stream)` agree by construction (`responses/stream`);
//! - `error`: the error envelope, over HTTP and inside a stream (both APIs; `responses/error`
//!   reads `response.failed` into the same errors);
//! - `dialect`: the Chat protocol over any `Dialect`, the hooks a dialect of Chat Completions
//!   fills in (`Standard` is OpenAI's own);
//! - `mod.rs`: the endpoint, the Responses protocol and `from_config`.
//!
//! `decode_chat_stream` and `decode_responses_stream` decode a recorded stream body
//! without HTTP (replaying recordings, benchmarks, fuzzing).

pub(crate) mod dialect;
pub(crate) mod embed;
pub(crate) mod error;
pub(crate) mod request;
mod responses;
pub(crate) mod stream;
mod wire;

use futures::Stream;

use crate::assemble::Chunk;
use crate::http::HttpFailure;
use crate::protocol::{HttpModel, WireProtocol, decode_recorded};
use crate::registry::SystemRole;
use crate::{
    ApiFormat, ChatModel, ChatRequest, EventStream, ModelConfig, ModelInfo, Provider,
    ProviderError, ReasoningReplay,
};
use dialect::{Dialect, Standard};
use request::ReasoningField;

/// OpenAI's own endpoint, which takes some fields under other names than compatible servers.
const OFFICIAL_BASE_URL: &str = Provider::OpenAi.info().default_base_url;

/// What request builders need to know about the model and the server. Built by
/// [`Endpoint::target`].
pub(crate) struct Target<'a> {
    /// The model id sent.
    pub(crate) model: &'a str,
    /// What the registry knows about the model.
    pub(crate) info: &'a ModelInfo,
    /// The configured output limit, for requests that set none.
    pub(crate) max_tokens: Option<u32>,
    /// Whether this is OpenAI's own endpoint (not an OpenAI-compatible server).
    pub(crate) official: bool,
    /// Whether reasoning goes back: the configured policy, else the registry's.
    pub(crate) replay: ReasoningReplay,
    /// How a Chat assistant message carries its reasoning back.
    pub(crate) reasoning_field: request::ReasoningField,
    /// Which role carries the system prompt in a Chat request.
    pub(crate) system_role: SystemRole,
}

/// Options both APIs spell the same way, and the output limit (which each API names its own
/// way).
pub(crate) struct CommonOptions<'a> {
    /// The caller's temperature.
    pub(crate) temperature: Option<f64>,
    /// The request's output limit, else the configured one.
    pub(crate) max_tokens: Option<u32>,
    /// `prompt_cache_key`, OpenAI's routing key for prompt caching.
    pub(crate) prompt_cache_key: Option<&'a str>,
}

fn common_options<'a>(target: &Target<'_>, request: &'a ChatRequest) -> CommonOptions<'a> {
    CommonOptions {
        // The caller's `f64`, as given: a narrower type would send 0.7 as 0.699999988079071.
        temperature: request.options.temperature,
        max_tokens: request.options.max_tokens.or(target.max_tokens),
        prompt_cache_key: request.options.cache.key.as_deref(),
    }
}

/// Builds the OpenAI-protocol model for `config`: Chat Completions, or the Responses API when
/// `api_format` says so.
pub(crate) fn from_config(
    config: &ModelConfig,
    info: ModelInfo,
) -> Result<Box<dyn ChatModel>, ProviderError> {
    match config.api_format.unwrap_or_default() {
        ApiFormat::Chat => dialect::chat_model::<Standard>(config, info),
        ApiFormat::Responses => {
            let key = config.api_key_or_dummy()?;
            let auth = [("authorization", format!("Bearer {key}"))];
            let endpoint = Endpoint::new(config, &info, Provider::OpenAi);
            HttpModel::boxed(config, info, Responses(endpoint), &auth)
        }
    }
}

/// What both OpenAI APIs (and every dialect of Chat Completions) need to build a request.
#[derive(Debug)]
pub(crate) struct Endpoint {
    base_url: String,
    info: ModelInfo,
    max_tokens: Option<u32>,
    replay: ReasoningReplay,
}

impl Endpoint {
    /// The endpoint of `config`, at `provider`'s default endpoint unless the configuration
    /// names one.
    pub(crate) fn new(config: &ModelConfig, info: &ModelInfo, provider: Provider) -> Self {
        Endpoint {
            base_url: config.base_url_or(provider.info().default_base_url),
            info: info.clone(),
            max_tokens: config.max_tokens,
            replay: config
                .reasoning_replay
                .unwrap_or_else(|| info.reasoning_replay()),
        }
    }

    /// The base URL, without a trailing slash.
    pub(crate) fn base_url(&self) -> &str {
        &self.base_url
    }

    /// Whether `format` is a strict JSON schema sent to OpenAI's own endpoint, which enforces
    /// it while sampling. A compatible server may take `strict` and ignore it, so its answers
    /// are never taken as guaranteed.
    pub(crate) fn enforces(&self, format: &crate::ResponseFormat) -> bool {
        self.base_url == OFFICIAL_BASE_URL
            && matches!(
                format,
                crate::ResponseFormat::JsonSchema(schema) if schema.strict == Some(true)
            )
    }

    /// What the request builders need to know, for a server that reads reasoning back from
    /// `reasoning_field` (its dialect's).
    ///
    /// Reasoning goes back in a Chat request in the dialect's field, and not at all to OpenAI's
    /// own endpoint, which rejects every such field. The system prompt is a `developer` message
    /// for OpenAI's reasoning models on OpenAI's endpoint (compatible servers may not know the
    /// role), and user text for the models that refuse both roles, wherever they are served.
    pub(crate) fn target(&self, reasoning_field: ReasoningField) -> Target<'_> {
        let official = self.base_url == OFFICIAL_BASE_URL;
        let reasoning_field = if official {
            ReasoningField::None
        } else {
            reasoning_field
        };
        let system_role = match self.info.system_role() {
            SystemRole::Developer if !official => SystemRole::System,
            role => role,
        };
        Target {
            model: &self.info.id,
            info: &self.info,
            max_tokens: self.max_tokens,
            official,
            replay: self.replay,
            reasoning_field,
            system_role,
        }
    }
}

/// `POST {base}/responses`: OpenAI's Responses API.
#[derive(Debug)]
struct Responses(Endpoint);

impl WireProtocol for Responses {
    type Body<'a> = responses::request::ResponsesBody<'a>;
    type Parser = responses::stream::ResponsesStreamParser;
    const PROVIDER: Provider = Provider::OpenAi;

    fn url(&self, _stream: bool) -> String {
        format!("{}/responses", self.0.base_url)
    }

    fn body<'a>(
        &'a self,
        request: &'a ChatRequest,
        stream: bool,
    ) -> Result<responses::request::ResponsesBody<'a>, ProviderError> {
        // The Responses API has its own reasoning items; the Chat field plays no part.
        responses::request::body(&self.0.target(Standard::REASONING_FIELD), request, stream)
    }

    fn response_chunks(body: &str) -> Result<Vec<Chunk>, ProviderError> {
        responses::stream::response_chunks(body)
    }

    fn unsupported_options(options: &crate::ChatOptions) -> Vec<&'static str> {
        crate::support::unsupported(options, crate::support::OPENAI_RESPONSES)
    }

    fn guarantees_schema(&self, format: &crate::ResponseFormat) -> bool {
        self.0.enforces(format)
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
    dialect::decode_stream::<Standard, _, _>(body)
}

/// Decodes a recorded Responses API SSE body (any chunking) into stream events.
pub fn decode_responses_stream<S, B>(body: S) -> EventStream
where
    S: Stream<Item = B> + Send + 'static,
    B: AsRef<[u8]> + Send + 'static,
{
    decode_recorded::<Responses, _, _>(body)
}

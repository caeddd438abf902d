//! OpenRouter adapter (`model = "openrouter"`): OpenAI's Chat Completions protocol as
//! OpenRouter speaks it, one `Dialect` of the `openai` adapter's Chat protocol (which provides
//! the rest: the Chat body, the stream parser, retries).
//!
//! What differs from plain Chat Completions, and where it is handled:
//!
//! - `mod.rs`: the assistant messages' reasoning goes back as `reasoning_details` (the
//!   request's reasoning parts as typed entries, as the model registry's replay policy says),
//!   not as `reasoning_content`.
//! - `request`: reasoning is asked for with one `reasoning` object (`effort`, or `max_tokens`
//!   for a thinking budget) whatever model serves the request, instead of
//!   `reasoning_effort`.
//! - `cache`: [`PromptCache`](crate::PromptCache) breakpoints become `cache_control` markers on
//!   the text parts that end each cached prefix (Anthropic and Gemini models there cache only
//!   what is marked).
//! - `stream`: OpenRouter's in-stream errors carry the HTTP status of the upstream failure as a
//!   numeric `code` (a `502` mid-stream is worth a retry like an HTTP 502 is). Keep-alive
//!   comments (`: OPENROUTER PROCESSING`) are SSE comments and never reach the parser.
//! - `error`: the error envelope names the upstream provider in `metadata.provider_name`;
//!   402 (credits exhausted) is never retried.
//!
//! Its descriptor ([`Provider::OpenRouter`]`.info()`) holds its name, key variable, endpoint
//! and default model.
//!
//! Model ids name the vendor (`anthropic/claude-sonnet-4.5`, `openai/gpt-4o`); the registry
//! looks the part after the slash up among that vendor's models (OpenRouter's dotted Anthropic
//! versions, `claude-opus-4.5`, are Anthropic's `claude-opus-4-5`). Ids of other vendors, and
//! `openrouter/auto`, get the defaults of an unknown model.
//!
//! ```
//! use providers::{model_from_config, ModelConfig, Provider};
//!
//! let config = ModelConfig {
//!     model: Some("openrouter".into()),
//!     api_key: Some("sk-or-test".into()),
//!     ..ModelConfig::new("anthropic/claude-opus-4.5")
//! };
//! let model = model_from_config(&config)?;
//! assert_eq!(model.info().provider, Provider::OpenRouter);
//! // Anthropic's figures for claude-opus-4-5.
//! assert_eq!(model.info().context_window, 200_000);
//! assert_eq!(model.info().max_output_tokens, 64_000);
//! # Ok::<(), providers::ProviderError>(())
//! ```

mod cache;
mod error;
mod request;
mod stream;

use futures::Stream;

use crate::http::HttpFailure;
use crate::openai::dialect::{self, Dialect};
use crate::openai::request::{ChatBody, ReasoningField};
use crate::{ChatModel, ChatRequest, EventStream, ModelConfig, ModelInfo, Provider, ProviderError};

/// OpenRouter's dialect of Chat Completions.
#[derive(Debug)]
pub(crate) struct OpenRouter;

impl Dialect for OpenRouter {
    const PROVIDER: Provider = Provider::OpenRouter;
    const REASONING_FIELD: ReasoningField = ReasoningField::Details;
    type Body<'a> = request::Body<'a>;

    fn body<'a>(
        chat: ChatBody<'a>,
        request: &'a ChatRequest,
    ) -> Result<request::Body<'a>, ProviderError> {
        request::body(chat, request)
    }

    fn answer_error(error: ProviderError) -> ProviderError {
        stream::retryable_by_code(error)
    }

    fn http_error(failure: &HttpFailure<'_>) -> ProviderError {
        error::http_error(failure)
    }
}

/// Builds the OpenRouter model for `config`.
pub(crate) fn from_config(
    config: &ModelConfig,
    info: ModelInfo,
) -> Result<Box<dyn ChatModel>, ProviderError> {
    dialect::chat_model::<OpenRouter>(config, info)
}

/// Decodes a recorded OpenRouter SSE body (any chunking) into stream events, exactly as
/// [`ChatModel::stream`] would: keep-alive comments are skipped, and an upstream failure
/// reported in-band with a retryable HTTP status as its `code` is a retryable error.
///
/// ```
/// use futures::StreamExt;
/// use providers::{ProviderError, StreamEvent};
///
/// let body = ": OPENROUTER PROCESSING\n\n\
///     data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"The tallest\"}}]}\n\n\
///     data: {\"error\":{\"code\":502,\"message\":\"Provider returned error\"},\
///            \"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"error\"}]}\n\n";
/// let stream = providers::openrouter::decode_stream(futures::stream::iter([body]));
/// let runtime = tokio::runtime::Builder::new_current_thread().build()?;
/// let events: Vec<_> = runtime.block_on(stream.collect());
/// assert_eq!(events[0], Ok(StreamEvent::TextDelta("The tallest".into())));
/// let Some(Err(error)) = events.last() else { panic!("{events:?}") };
/// assert!(error.is_retryable(), "{error:?}");
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn decode_stream<S, B>(body: S) -> EventStream
where
    S: Stream<Item = B> + Send + 'static,
    B: AsRef<[u8]> + Send + 'static,
{
    dialect::decode_stream::<OpenRouter, _, _>(body)
}

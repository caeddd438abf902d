//! [`Dialect`]: what one OpenAI-compatible service does differently in Chat Completions, and
//! [`ChatCompletions`], the one Chat protocol that speaks any dialect.
//!
//! A dialect is a provider of its own (a [`Provider`] variant with its descriptor) whose API
//! is OpenAI's Chat Completions with changes: fields of its own beside the Chat body, the
//! field its servers read reasoning back from, what its in-stream and HTTP errors mean.
//! Everything else is this adapter's and every dialect gets it: the Chat body, the stream
//! parser with the quirks of the compatible servers, minted tool-call ids, usage, retries.
//! [`Standard`] is OpenAI's own dialect (and that of the servers that copy it);
//! `openrouter/` holds OpenRouter's.

use std::marker::PhantomData;

use futures::Stream;
use serde::Serialize;

use super::Endpoint;
use super::request::{ChatBody, ReasoningField};
use super::stream::ChatStreamParser;
use crate::assemble::Chunk;
use crate::http::HttpFailure;
use crate::http::sse::EventParser;
use crate::protocol::{HttpModel, WireProtocol, decode_recorded};
use crate::{ChatModel, ChatRequest, EventStream, ModelConfig, ModelInfo, Provider, ProviderError};

/// How a service's Chat Completions differ from OpenAI's: the hooks [`ChatCompletions`]
/// calls. Every hook but the provider and the body defaults to OpenAI's behaviour.
pub(crate) trait Dialect: std::fmt::Debug + Send + Sync + 'static {
    /// The provider (named in errors and events; its descriptor gives the default endpoint).
    const PROVIDER: Provider;

    /// Where the service reads an assistant message's reasoning back: by default
    /// `reasoning_content`, which DeepSeek and most compatible servers read. OpenAI's own
    /// endpoint takes none, whatever the dialect says.
    const REASONING_FIELD: ReasoningField = ReasoningField::Content;

    /// The request body: the Chat body, or a struct that flattens it beside the dialect's own
    /// fields.
    type Body<'a>: Serialize + Send;

    /// The body for `request`, from the Chat body built for it (which the dialect may change,
    /// e.g. to drop a field it replaces).
    fn body<'a>(
        chat: ChatBody<'a>,
        request: &'a ChatRequest,
    ) -> Result<Self::Body<'a>, ProviderError>;

    /// The options of `options` the service can neither send nor translate
    /// ([`ChatModel::unsupported_options`]): none by default, as Chat Completions has a field
    /// for each.
    fn unsupported_options(options: &crate::ChatOptions) -> Vec<&'static str> {
        let _ = options;
        Vec::new()
    }

    /// An error read from an answer (in-band in a stream, or a non-streamed body; already
    /// named for [`PROVIDER`](Self::PROVIDER)) as the service means it.
    fn answer_error(error: ProviderError) -> ProviderError {
        error
    }

    /// Reads an HTTP error: OpenAI's envelope unless the service adds to it.
    fn http_error(failure: &HttpFailure<'_>) -> ProviderError {
        super::error::http_error(failure)
    }
}

/// OpenAI's Chat Completions as OpenAI sends and reads it, and the compatible servers that copy
/// it (DeepSeek, vLLM, Ollama, …; their differences are read in `stream.rs`).
#[derive(Debug)]
pub(crate) struct Standard;

impl Dialect for Standard {
    const PROVIDER: Provider = Provider::OpenAi;
    type Body<'a> = ChatBody<'a>;

    fn body<'a>(chat: ChatBody<'a>, _: &'a ChatRequest) -> Result<ChatBody<'a>, ProviderError> {
        Ok(chat)
    }
}

/// `POST {base}/chat/completions` in dialect `D`.
#[derive(Debug)]
pub(crate) struct ChatCompletions<D> {
    endpoint: Endpoint,
    dialect: PhantomData<fn() -> D>,
}

impl<D: Dialect> ChatCompletions<D> {
    /// Chat Completions at `endpoint`.
    pub(crate) fn new(endpoint: Endpoint) -> Self {
        ChatCompletions {
            endpoint,
            dialect: PhantomData,
        }
    }
}

impl<D: Dialect> WireProtocol for ChatCompletions<D> {
    type Body<'a> = D::Body<'a>;
    type Parser = ChatParser<D>;
    const PROVIDER: Provider = D::PROVIDER;

    fn url(&self, _stream: bool) -> String {
        format!("{}/chat/completions", self.endpoint.base_url())
    }

    fn body<'a>(
        &'a self,
        request: &'a ChatRequest,
        stream: bool,
    ) -> Result<D::Body<'a>, ProviderError> {
        let target = self.endpoint.target(D::REASONING_FIELD);
        D::body(super::request::body(&target, request, stream)?, request)
    }

    fn response_chunks(body: &str) -> Result<Vec<Chunk>, ProviderError> {
        super::stream::response_chunks(body).map_err(answer_error::<D>)
    }

    fn unsupported_options(options: &crate::ChatOptions) -> Vec<&'static str> {
        D::unsupported_options(options)
    }

    fn guarantees_schema(&self, format: &crate::ResponseFormat) -> bool {
        self.endpoint.enforces(format)
    }

    fn http_error(failure: &HttpFailure<'_>) -> ProviderError {
        D::http_error(failure)
    }
}

/// The Chat stream parser, its in-band errors read by dialect `D`.
#[derive(Debug)]
pub(crate) struct ChatParser<D> {
    chat: ChatStreamParser,
    dialect: PhantomData<fn() -> D>,
}

impl<D> Default for ChatParser<D> {
    fn default() -> Self {
        ChatParser {
            chat: ChatStreamParser::default(),
            dialect: PhantomData,
        }
    }
}

impl<D: Dialect> EventParser for ChatParser<D> {
    const FINISH_REASON_COMPLETES: bool = ChatStreamParser::FINISH_REASON_COMPLETES;
    const MISSING_END: &'static str = ChatStreamParser::MISSING_END;

    fn parse(
        &mut self,
        event: &str,
        data: &str,
        out: &mut Vec<Chunk>,
    ) -> Result<(), ProviderError> {
        self.chat.parse(event, data, out).map_err(answer_error::<D>)
    }
}

/// An error of the shared Chat parser, named for dialect `D`'s provider (the parser names
/// OpenAI; errors of the SSE driver are named for `D` already) and read by `D`.
fn answer_error<D: Dialect>(mut error: ProviderError) -> ProviderError {
    if let ProviderError::Stream { provider, .. } | ProviderError::Decode { provider, .. } =
        &mut error
    {
        *provider = D::PROVIDER;
    }
    D::answer_error(error)
}

/// The Chat Completions model of dialect `D` for `config`, at the provider's default endpoint
/// unless the configuration names one, with the key as a bearer token.
pub(crate) fn chat_model<D: Dialect>(
    config: &ModelConfig,
    info: ModelInfo,
) -> Result<Box<dyn ChatModel>, ProviderError> {
    let key = config.api_key_or_dummy()?;
    let auth = [("authorization", format!("Bearer {key}"))];
    let endpoint = Endpoint::new(config, &info, D::PROVIDER);
    HttpModel::boxed(config, info, ChatCompletions::<D>::new(endpoint), &auth)
}

/// Decodes a recorded Chat Completions SSE body of dialect `D` (any chunking) into stream
/// events, exactly as [`ChatModel::stream`] would.
pub(crate) fn decode_stream<D, S, B>(body: S) -> EventStream
where
    D: Dialect,
    S: Stream<Item = B> + Send + 'static,
    B: AsRef<[u8]> + Send + 'static,
{
    decode_recorded::<ChatCompletions<D>, _, _>(body)
}

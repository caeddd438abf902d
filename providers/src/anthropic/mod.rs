//! Anthropic Messages adapter (`POST {base}/v1/messages`), built by
//! [`model_from_config`](crate::model_from_config) for a `claude-*` model id or
//! `model = "anthropic" | "claude"`.
//!
//! The pieces, as in the `openai` adapter:
//!
//! - `content` and `request`: [`ChatRequest`] → request body. System messages go to the
//!   top-level `system`; human and tool messages are `user` turns and consecutive turns of
//!   one role merge (all `tool_result`s of a round in one message); thinking and redacted
//!   thinking blocks go back exactly as received; [`PromptCache`](crate::PromptCache)
//!   breakpoints become `cache_control`; `max_tokens`, which the API requires, falls back to
//!   [`ModelConfig::max_tokens`] and then to the model's output limit from the registry.
//! - `stream`: the SSE events → `Chunk`s of the shared assembler (text, thinking with its
//!   `signature_delta`, redacted thinking, `tool_use` input assembled from
//!   `input_json_delta`s, usage from `message_start` and `message_delta`, in-band errors).
//! - `response`: the non-streamed message → the same chunks.
//! - `wire`: what both answers share; `error`: the error envelope, over HTTP and in a stream.
//!
//! Headers: `x-api-key` (with a custom `base_url` and no key, `dummy`), `anthropic-version:
//! 2023-06-01` (a configured header of the same name wins), and one `anthropic-beta` joining
//! the configured betas, the request's and those the body needs (the one-hour cache TTL).
//!
//! Usage: `input_tokens` is the whole prompt (Anthropic's `input_tokens` plus the cache reads
//! and writes it reports apart), `cached_input_tokens` the cache reads,
//! `cache_creation_tokens` the writes, `reasoning_tokens` the `thinking_tokens` newer models
//! report.
//!
//! Reliability: 429, 5xx and 529 `overloaded_error` go through the shared retry policy
//! (honouring `retry-after`), and so does a stream whose first event after `message_start`
//! is a retryable in-band `error`; nothing of a failed attempt reaches the caller.
//!
//! What does not map one to one:
//!
//! - Server-tool blocks (`server_tool_use`, `web_search_tool_result`, …) ran on Anthropic's
//!   side; they are neither tool calls nor kept in the message, so text blocks around them
//!   join into one text part.
//! - With extended thinking (`thinking_budget`) the API takes only temperature 1: a requested
//!   temperature is sent as 1.0. `reasoning_effort` is `output_config.effort`.
//! - Tool-call arguments that are not a JSON object are sent back as input `{}`;
//!   `tool_result.is_error` is never sent (a [`ToolResponse`](crate::ToolResponse) has no
//!   error flag).
//!
//! [`decode_stream`] decodes a recorded stream body without HTTP (replays, benchmarks,
//! fuzzing).

mod answer_tool;
mod content;
mod error;
mod request;
mod response;
mod stream;
#[cfg(test)]
mod tests;
mod wire;

use std::collections::BTreeMap;

use futures::Stream;

use crate::assemble::Chunk;
use crate::http::HttpFailure;
use crate::protocol::{HttpModel, WireProtocol, decode_recorded};
use crate::{ChatModel, ChatRequest, EventStream, ModelConfig, ModelInfo, Provider, ProviderError};

/// The API version sent as `anthropic-version`.
pub const API_VERSION: &str = "2023-06-01";
const BETA_HEADER: &str = "anthropic-beta";

/// The Messages API of one model.
#[derive(Debug)]
struct Messages {
    model: String,
    url: String,
    /// `max_tokens` when a request sets none.
    max_tokens: u32,
    /// Betas from the configured headers (joined with each request's own).
    betas: Vec<String>,
    /// Whether thinking blocks go back: the configured policy, else the registry's.
    replay: crate::ReasoningReplay,
    /// How a JSON answer is asked for: natively or through a forced tool.
    json: request::JsonOutput,
}

/// Builds the Anthropic model for `config`.
pub(crate) fn from_config(
    config: &ModelConfig,
    info: ModelInfo,
) -> Result<Box<dyn ChatModel>, ProviderError> {
    Ok(Box::new(answer_tool::AnswerAsText::new(model(
        config, info,
    )?)))
}

fn model(config: &ModelConfig, info: ModelInfo) -> Result<HttpModel<Messages>, ProviderError> {
    let key = config.api_key_or_dummy()?;
    let base = config.base_url_or(Provider::Anthropic.info().default_base_url);
    // The convention is the host without `/v1`; a base that already ends in it is taken as
    // meant rather than doubled.
    let url = match base.strip_suffix("/v1") {
        Some(host) => format!("{host}/v1/messages"),
        None => format!("{base}/v1/messages"),
    };
    // Betas are merged into one header per request, so the configured ones are kept apart.
    let (betas, headers) = split_betas(&config.default_headers);
    let protocol = Messages {
        model: info.id.trim().to_owned(),
        url,
        max_tokens: config.max_tokens.unwrap_or(info.max_output_tokens),
        betas,
        replay: config
            .reasoning_replay
            .unwrap_or_else(|| info.reasoning_replay()),
        json: if info.native_json_schema() {
            request::JsonOutput::Native
        } else {
            request::JsonOutput::ForcedTool
        },
    };
    let config = ModelConfig {
        default_headers: headers,
        ..config.clone()
    };
    let auth = [
        ("x-api-key", key),
        ("anthropic-version", API_VERSION.to_owned()),
    ];
    HttpModel::new(&config, info, protocol, &auth)
}

/// The `anthropic-beta` values of `headers` and the other headers.
fn split_betas(headers: &BTreeMap<String, String>) -> (Vec<String>, BTreeMap<String, String>) {
    let mut betas = Vec::new();
    let mut rest = BTreeMap::new();
    for (name, value) in headers {
        if name.eq_ignore_ascii_case(BETA_HEADER) {
            betas.extend(
                value
                    .split(',')
                    .map(str::trim)
                    .filter(|beta| !beta.is_empty())
                    .map(str::to_owned),
            );
        } else {
            rest.insert(name.clone(), value.clone());
        }
    }
    (betas, rest)
}

impl WireProtocol for Messages {
    type Body<'a> = request::Built<'a>;
    type Parser = stream::StreamParser;
    const PROVIDER: Provider = Provider::Anthropic;
    const RETRIES_FAILED_START: bool = true;

    fn url(&self, _stream: bool) -> String {
        self.url.clone()
    }

    fn body<'a>(
        &'a self,
        request: &'a ChatRequest,
        stream: bool,
    ) -> Result<request::Built<'a>, ProviderError> {
        request::build_replaying(
            &self.model,
            self.max_tokens,
            self.replay,
            self.json,
            request,
            stream,
        )
    }

    /// One `anthropic-beta` joining the configured betas, the request's and those the body
    /// needs, each once.
    fn headers(
        &self,
        request: &ChatRequest,
        body: &request::Built<'_>,
    ) -> BTreeMap<String, String> {
        let (request_betas, mut headers) = split_betas(&request.options.extra_headers);
        let mut betas: Vec<&str> = Vec::new();
        let all = self.betas.iter().chain(&request_betas).map(String::as_str);
        for beta in all.chain(body.betas.iter().copied()) {
            if !betas.contains(&beta) {
                betas.push(beta);
            }
        }
        if !betas.is_empty() {
            headers.insert(BETA_HEADER.to_owned(), betas.join(","));
        }
        headers
    }

    fn response_chunks(body: &str) -> Result<Vec<Chunk>, ProviderError> {
        response::chunks(body)
    }

    fn http_error(failure: &HttpFailure<'_>) -> ProviderError {
        error::http_error(failure)
    }
}

/// Decodes a recorded Messages SSE body (any chunking) into stream events.
///
/// ```
/// use futures::StreamExt;
/// use providers::StreamEvent;
///
/// let body = "event: message_start\n\
///     data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"usage\":{\"input_tokens\":3}}}\n\n\
///     event: content_block_delta\n\
///     data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n\
///     event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
/// let stream = providers::anthropic::decode_stream(futures::stream::iter([body]));
/// let runtime = tokio::runtime::Builder::new_current_thread().build()?;
/// let events: Vec<_> = runtime.block_on(stream.collect());
/// assert!(events.contains(&Ok(StreamEvent::TextDelta("Hi".into()))));
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn decode_stream<S, B>(body: S) -> EventStream
where
    S: Stream<Item = B> + Send + 'static,
    B: AsRef<[u8]> + Send + 'static,
{
    decode_recorded::<Messages, _, _>(body)
}

//! Google Gemini adapter: `generateContent` and `streamGenerateContent?alt=sse` of the Gemini
//! API (`…/v1beta`), authenticated with the `x-goog-api-key` header.
//!
//! Like every adapter it is a thin mapping onto the shared core:
//!
//! - `request` builds the JSON body from a [`ChatRequest`]: `systemInstruction`, `contents`
//!   with roles `user` / `model`, `generationConfig`, `tools` (the JSON Schemas converted by
//!   `schema`) and `toolConfig`; `parts` maps one message to Gemini parts;
//! - `stream` reads a `GenerateContentResponse` — one SSE event, the whole non-streamed body,
//!   or the JSON array `streamGenerateContent` returns without `alt=sse` — into
//!   the internal chunks the shared assembler turns into stream events;
//! - `error` reads the `google.rpc.Status` error envelope, including `RetryInfo.retryDelay`
//!   (the retry hint Gemini sends instead of a `retry-after` header) and daily quotas that
//!   waiting does not clear.
//!
//! # Gemini's peculiarities, and what Skein does about them
//!
//! - **No tool-call ids.** Gemini names a call but does not identify it. The adapter mints an
//!   id for each call (`gemini_call_<responseId>_<n>`, see [`MINTED_ID_PREFIX`]) so that a
//!   conversation can pair calls and responses, and never sends a minted id back: function
//!   responses are matched by name and put in the order of the calls. An id Gemini did issue,
//!   or one from elsewhere (a summarised pair, another client), is sent back unchanged.
//! - **Thought signatures.** A `thoughtSignature` rides on the part it came with: on the
//!   [`ContentPart::Text`](crate::ContentPart) or [`ToolCall`](crate::ToolCall) as
//!   `reasoning.signature`, and on a [`Reasoning`](crate::Reasoning) part when it came on a
//!   thought part. It is sent back byte for byte on the same part (unless the model's
//!   [`ReasoningReplay`](crate::ReasoningReplay) is `Never`). Thought summaries
//!   (`thought: true` parts) become reasoning; unsigned ones are not sent back (Gemini reads
//!   nothing from them).
//! - **The current turn.** Gemini 3 rejects a request whose current turn (everything after
//!   the last user message with text) has a model step whose first `functionCall` carries no
//!   signature. Calls that never came from Gemini (another provider's history, a summary) get
//!   [`SKIP_SIGNATURE`], the value Google documents for this case and the one chain-ast puts
//!   on summarised pairs; real signatures are never replaced. Models the registry knows not to
//!   think are left alone.
//! - **Function responses** are objects: a tool's text result is sent as
//!   `{"output": "<text>"}`; images and other media of a tool message are sent inline in the
//!   `functionResponse.parts` of the response they follow (Gemini 3 reads them).
//! - **Usage**: `thoughtsTokenCount` is reported apart from `candidatesTokenCount`; Skein's
//!   `output_tokens` is their sum, `reasoning_tokens` the thoughts, `cached_input_tokens`
//!   `cachedContentTokenCount` (already part of `promptTokenCount`).
//! - **Finish reasons**: `STOP` ends every answer, with or without calls; an answer with
//!   calls finishes as [`FinishReason::ToolCalls`](crate::FinishReason).
//!
//! [`decode_stream`] decodes a recorded `alt=sse` body without HTTP (replaying recordings,
//! benchmarks, fuzzing).

pub(crate) mod embed;
mod error;
mod parts;
mod request;
mod schema;
mod stream;

use futures::Stream;

use crate::assemble::Chunk;
use crate::http::HttpFailure;
use crate::protocol::{HttpModel, WireProtocol, decode_recorded};
use crate::{ChatModel, ChatRequest, EventStream, ModelConfig, ModelInfo, Provider, ProviderError};

/// How ids the adapter minted for Gemini's id-less function calls start. Ids with this prefix
/// are never sent to Gemini.
pub const MINTED_ID_PREFIX: &str = "gemini_call_";

/// The thought signature Google documents for function calls Gemini did not produce
/// (`skip_thought_signature_validator`; chain-ast's `FAKE_THOUGHT_SIGNATURE`).
pub const SKIP_SIGNATURE: &str = "skip_thought_signature_validator";

/// `generateContent` and `streamGenerateContent` of one model.
#[derive(Debug)]
struct GenerateContent {
    info: ModelInfo,
    /// `{base_url}/models/{model}`.
    model_url: String,
    max_tokens: Option<u32>,
    /// Whether thought signatures go back: the configured policy, else the registry's.
    replay: crate::ReasoningReplay,
}

/// Builds the Gemini model for `config`.
pub(crate) fn from_config(
    config: &ModelConfig,
    info: ModelInfo,
) -> Result<Box<dyn ChatModel>, ProviderError> {
    let model = model_name(&config.model_id)?;
    let key = config.api_key_or_dummy()?;
    let protocol = GenerateContent {
        info: info.clone(),
        model_url: format!(
            "{}/models/{model}",
            config.base_url_or(Provider::Google.info().default_base_url)
        ),
        max_tokens: config.max_tokens,
        replay: config
            .reasoning_replay
            .unwrap_or_else(|| info.reasoning_replay()),
    };
    HttpModel::boxed(config, info, protocol, &[("x-goog-api-key", key)])
}

/// The model's name in the URL: the id without a `models/` prefix (the API's resource name).
fn model_name(model_id: &str) -> Result<&str, ProviderError> {
    let id = model_id.trim();
    let name = id.strip_prefix("models/").unwrap_or(id);
    let valid = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '@'));
    if valid {
        Ok(name)
    } else {
        Err(ProviderError::config(format!(
            "`{model_id}` is not a Gemini model id: use the id alone, e.g. `gemini-2.5-flash` (letters, digits, `-`, `_`, `.`, `@`)"
        )))
    }
}

impl WireProtocol for GenerateContent {
    type Body<'a> = request::Body<'a>;
    type Parser = stream::StreamParser;
    const PROVIDER: Provider = Provider::Google;
    const RETRIES_FAILED_START: bool = true;

    fn url(&self, stream: bool) -> String {
        if stream {
            format!("{}:streamGenerateContent?alt=sse", self.model_url)
        } else {
            format!("{}:generateContent", self.model_url)
        }
    }

    fn body<'a>(
        &'a self,
        request: &'a ChatRequest,
        _stream: bool,
    ) -> Result<request::Body<'a>, ProviderError> {
        let target = request::Target {
            info: &self.info,
            max_tokens: self.max_tokens,
            replay: self.replay,
        };
        request::body(&target, request)
    }

    fn response_chunks(body: &str) -> Result<Vec<Chunk>, ProviderError> {
        stream::response_chunks(body)
    }

    fn unsupported_options(options: &crate::ChatOptions) -> Vec<&'static str> {
        crate::support::unsupported(options, crate::support::GEMINI)
    }

    fn http_error(failure: &HttpFailure<'_>) -> ProviderError {
        error::http_error(failure)
    }
}

/// Decodes a recorded `streamGenerateContent?alt=sse` body (any chunking) into stream events,
/// exactly as [`ChatModel::stream`] would.
pub fn decode_stream<S, B>(body: S) -> EventStream
where
    S: Stream<Item = B> + Send + 'static,
    B: AsRef<[u8]> + Send + 'static,
{
    decode_recorded::<GenerateContent, _, _>(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_names() {
        assert_eq!(
            model_name("gemini-2.5-flash").ok(),
            Some("gemini-2.5-flash")
        );
        assert_eq!(
            model_name(" models/gemini-3-pro-preview ").ok(),
            Some("gemini-3-pro-preview")
        );
        for bad in ["gemini/../x", "gemini-2.5-flash?key=1", "models/", "a b"] {
            assert!(
                matches!(model_name(bad), Err(ProviderError::Config { .. })),
                "{bad}"
            );
        }
    }
}

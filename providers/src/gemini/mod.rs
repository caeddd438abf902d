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
//!   thought part. It is sent back byte for byte on the same part. Thought summaries
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

mod error;
mod parts;
mod request;
mod schema;
mod stream;

use async_trait::async_trait;
use futures::Stream;

use crate::assemble::events_from_chunks;
use crate::collect::response_from_events;
use crate::http::{HttpClient, WireRequest};
use crate::{
    ChatModel, ChatRequest, ChatResponse, EventStream, ModelConfig, ModelInfo, Provider,
    ProviderError,
};

/// The official endpoint; a `base_url` replaces it (`…/v1beta` convention: the adapter
/// appends `/models/{model}:generateContent`).
pub const DEFAULT_BASE_URL: &str = "https://generativelanguage.googleapis.com/v1beta";

/// How ids the adapter minted for Gemini's id-less function calls start. Ids with this prefix
/// are never sent to Gemini.
pub const MINTED_ID_PREFIX: &str = "gemini_call_";

/// The thought signature Google documents for function calls Gemini did not produce
/// (`skip_thought_signature_validator`; chain-ast's `FAKE_THOUGHT_SIGNATURE`).
pub const SKIP_SIGNATURE: &str = "skip_thought_signature_validator";

/// A model reached over the Gemini API.
#[derive(Debug)]
struct GeminiModel {
    info: ModelInfo,
    http: HttpClient,
    /// `{base_url}/models/{model}`.
    model_url: String,
    max_tokens: Option<u32>,
}

/// Builds the Gemini model for `config`.
pub(crate) fn from_config(
    config: &ModelConfig,
    info: ModelInfo,
) -> Result<Box<dyn ChatModel>, ProviderError> {
    let model = model_name(&config.model_id)?;
    let key = config.api_key_or_dummy()?;
    let http = HttpClient::new(Provider::Google, config, &[("x-goog-api-key", key)])?;
    let base_url = config.base_url_or(DEFAULT_BASE_URL);
    Ok(Box::new(GeminiModel {
        info,
        http,
        model_url: format!("{base_url}/models/{model}"),
        max_tokens: config.max_tokens,
    }))
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

impl GeminiModel {
    fn wire_request(
        &self,
        request: &ChatRequest,
        method: &str,
    ) -> Result<WireRequest, ProviderError> {
        let target = request::Target {
            info: &self.info,
            max_tokens: self.max_tokens,
        };
        let body = serde_json::to_vec(&request::body(&target, request)?)
            .map_err(|err| ProviderError::config(format!("cannot encode the request: {err}")))?;
        Ok(WireRequest {
            url: format!("{}:{method}", self.model_url),
            body,
            headers: request.options.extra_headers.clone(),
        })
    }
}

#[async_trait]
impl ChatModel for GeminiModel {
    fn info(&self) -> &ModelInfo {
        &self.info
    }

    async fn complete(&self, request: ChatRequest) -> Result<ChatResponse, ProviderError> {
        let wire = self.wire_request(&request, "generateContent")?;
        let body = self.http.post_json(&wire, error::http_error).await?;
        let chunks = stream::response_chunks(&String::from_utf8_lossy(&body))?;
        response_from_events(events_from_chunks(Provider::Google, chunks)?)
    }

    async fn stream(&self, request: ChatRequest) -> Result<EventStream, ProviderError> {
        let wire = self.wire_request(&request, "streamGenerateContent?alt=sse")?;
        // An error event before any content (Gemini can report `UNAVAILABLE` in-band right
        // after a 200) is retried like an HTTP error.
        self.http
            .post_sse_retrying_start(&wire, error::http_error, stream::StreamParser::default)
            .await
    }
}

/// Decodes a recorded `streamGenerateContent?alt=sse` body (any chunking) into stream events,
/// exactly as [`ChatModel::stream`] would.
pub fn decode_stream<S, B>(body: S) -> EventStream
where
    S: Stream<Item = B> + Send + 'static,
    B: AsRef<[u8]> + Send + 'static,
{
    crate::http::sse::decode_recorded(Provider::Google, body, stream::StreamParser::default())
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

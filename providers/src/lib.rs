//! Skein's chat models: the [`ChatModel`] trait and adapters for OpenAI (Chat Completions,
//! Responses API, any OpenAI-compatible server such as DeepSeek, and OpenRouter's dialect),
//! Anthropic Messages and Google Gemini, each behind its cargo feature (`openai`, `anthropic`,
//! `gemini`; all on by default).
//!
//! ```
//! use futures::StreamExt;
//! use providers::{collect, model_from_config, ChatRequest, Message, ModelConfig, StreamEvent};
//!
//! # #[cfg(feature = "testing")]
//! # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
//! // `echo` is the offline debug model (feature `testing`); `gpt-4o`, `claude-sonnet-4-5` or
//! // `gemini-2.5-flash` with an `api_key` reach the real providers.
//! let model = model_from_config(&ModelConfig::new("echo"))?;
//! let request = ChatRequest::new(vec![Message::human(r#"{"raw": "Hello!"}"#)]);
//!
//! let mut stream = model.stream(request.clone()).await?;
//! let mut text = String::new();
//! while let Some(event) = stream.next().await {
//!     if let StreamEvent::TextDelta(delta) = event? {
//!         text.push_str(&delta);
//!     }
//! }
//! assert_eq!(text, "Hello!");
//!
//! // `collect` of a stream gives exactly what `complete` gives.
//! let streamed = collect(model.stream(request.clone()).await?).await?;
//! assert_eq!(streamed, model.complete(request).await?);
//! # Ok::<(), providers::ProviderError>(())
//! # }).unwrap();
//! ```
//!
//! # Contents
//!
//! - [`ChatModel`] (`info`, `complete`, `stream`), [`EventStream`] of [`StreamEvent`]s, and
//!   [`collect`], which folds a stream into a [`ChatResponse`] (message, [`Usage`],
//!   [`FinishReason`]).
//! - [`ChatRequest`]: messages, tools ([`ToolSpec`]) and [`ChatOptions`] (temperature, max
//!   tokens, stop, [`ToolChoice`], [`ResponseFormat`] (structured output),
//!   [`ReasoningEffort`] / thinking budget, [`PromptCache`] hints, extra headers).
//! - [`EmbeddingModel`] (`embed`) and [`embedding_model_from_config`]: OpenAI's
//!   `/embeddings`, Gemini's `batchEmbedContents` and the offline `echo`
//!   ([`EmbeddingRequest`] → [`Embeddings`]), under the same HTTP core as chat.
//! - [`ModelConfig`] (model id, protocol, endpoint, key, headers, plus [`RetryPolicy`],
//!   [`Timeouts`] and [`Limits`]),
//!   [`detect_provider`] (alias → id prefix → OpenAI), [`model_from_config`].
//! - [`Provider`] and its descriptor, [`ProviderInfo`] ([`Provider::info`]): every fact kept
//!   about a provider (names, model-id prefixes, key variable, cargo feature, endpoint, own
//!   host, default model, [`ReasoningStyle`], tool-call id shape), which the other crates read
//!   instead of keeping lists of their own.
//! - [`ModelInfo`]: the registry of context windows and output limits, and each model's
//!   default [`ReasoningReplay`] (whether its reasoning goes back to it).
//! - [`ProviderError`]: typed, says whether a retry may help, never holds a key.
//! - `openai`, `openrouter`, `anthropic`, `gemini`: the adapters, reached through
//!   [`model_from_config`] (they also decode recorded streams without HTTP:
//!   `openai::decode_chat_stream`, `openai::decode_responses_stream`,
//!   `openrouter::decode_stream`, `anthropic::decode_stream`, `gemini::decode_stream`). Which
//!   provider feature is promised, and the test or fixture that shows it, is in `COMPAT.md`.
//! - `testing` (feature `testing`): `ScriptedModel` and the `echo` model.
//!
//! # Invariants
//!
//! - Reasoning is opaque: whatever a provider returns in a [`Reasoning`] (signatures,
//!   encrypted content, ids) is sent back unchanged on later requests, on the messages the
//!   model's [`ReasoningReplay`] policy names (the registry's default for the model, or
//!   [`ModelConfig::reasoning_replay`]); it is never edited, only left out.
//! - Tool-call ids minted by Skein (Gemini issues none) are never sent back to a provider.
//! - Retries happen only before the first byte of an answer reaches the caller.
//! - Dropping an [`EventStream`] closes the connection.

mod assemble;
mod collect;
mod config;
mod embedding;
mod error;
mod event;
mod factory;
mod logprobs;
mod model;
mod provider;
#[cfg(feature = "__http")]
mod redact;
mod registry;
mod request;
mod response;
mod response_format;
mod support;
#[cfg(any(feature = "anthropic", feature = "gemini"))]
mod system_prompt;
#[cfg(feature = "__http")]
mod wire_numbers;

#[cfg(feature = "__http")]
mod http;
#[cfg(feature = "__http")]
pub use http::{install_crypto_provider, preload as preload_http_client};
#[cfg(feature = "__http")]
mod protocol;

#[cfg(feature = "anthropic")]
pub mod anthropic;
#[cfg(feature = "gemini")]
pub mod gemini;
#[cfg(feature = "openai")]
pub mod openai;
#[cfg(feature = "openai")]
pub mod openrouter;

#[cfg(feature = "testing")]
pub mod testing;

#[cfg(feature = "__http")]
#[doc(hidden)]
pub mod fuzzing;

pub use assemble::{MAX_OPEN_BLOCKS, MAX_TOOL_CALLS};
pub use collect::{ResponseBuilder, collect};
pub use config::{ApiFormat, Limits, ModelConfig, RetryPolicy, Timeouts};
#[cfg(feature = "testing")]
pub use embedding::{ECHO_DEFAULT_DIMENSIONS, ECHO_MAX_DIMENSIONS, EchoEmbedding};
pub use embedding::{
    EmbeddingInput, EmbeddingModel, EmbeddingRequest, Embeddings, embedding_model_from_config,
};
pub use error::{Limit, ProviderError, TimeoutPhase};
pub use event::StreamEvent;
pub use factory::model_from_config;
pub use logprobs::{TokenLogprob, TopLogprob};
pub use model::{ChatModel, ECHO_MODEL_ID, EventStream};
pub use provider::{Provider, ProviderInfo, ReasoningStyle, detect_provider};
pub use registry::{DEFAULT_CONTEXT_WINDOW, DEFAULT_MAX_OUTPUT_TOKENS, ModelInfo, ReasoningReplay};
pub use request::{
    CacheBreakpoint, ChatOptions, ChatRequest, PromptCache, ReasoningEffort, ServiceTier,
    ToolChoice, Verbosity,
};
pub use response::{ChatResponse, FinishReason, Usage};
pub use response_format::{JsonSchemaFormat, ResponseFormat};
pub use support::OPTIONAL_FIELDS;

pub use messages::{ContentPart, Message, Reasoning, Role, ToolCall, ToolResponse, ToolSpec};

//! The [`ChatModel`] trait and the [`EventStream`] it streams.

use std::pin::Pin;

use async_trait::async_trait;
use futures::Stream;

use crate::{
    ChatOptions, ChatRequest, ChatResponse, ModelInfo, ProviderError, ResponseFormat, StreamEvent,
};

/// The model id that selects the echo debug model (feature `testing`), which needs no key and
/// talks to no one.
pub const ECHO_MODEL_ID: &str = "echo";

/// A stream of [`StreamEvent`]s. Dropping it cancels the request (the connection is closed).
pub type EventStream = Pin<Box<dyn Stream<Item = Result<StreamEvent, ProviderError>> + Send>>;

/// A chat model: one provider adapter bound to one model id and configuration.
///
/// `complete` and [`collect`](crate::collect)`(stream(..))` give the same [`ChatResponse`] for
/// the same provider answer.
///
/// A caller that keeps its request after the call (an agent loop, whose chain grows by a
/// round at a time) lends it to [`stream_borrowed`](ChatModel::stream_borrowed) instead of
/// copying the conversation for every call. Its default copies the request and calls
/// `stream`, so an implementation only needs `stream`; one that reads the request without
/// keeping it (the HTTP adapters serialise it before sending) overrides it to skip the copy.
#[async_trait]
pub trait ChatModel: Send + Sync {
    /// What the model is: id, provider, context window, output limit.
    fn info(&self) -> &ModelInfo;

    /// The options of `options` this model's API can neither send nor translate, by their
    /// OpenAI request-field names (`seed`, `logit_bias`, …; see
    /// [`OPTIONAL_FIELDS`](crate::OPTIONAL_FIELDS)), which a caller refuses or drops with
    /// [`ChatOptions::clear_option`] before calling. By default none: a model that needs no
    /// wire (a scripted or echo model) honours every option by ignoring it.
    ///
    /// ```
    /// # #[cfg(feature = "anthropic")] {
    /// use providers::{ChatModel, ChatOptions, ModelConfig, model_from_config};
    ///
    /// let config = ModelConfig {
    ///     api_key: Some("sk-ant-example".into()),
    ///     ..ModelConfig::new("claude-sonnet-4-5")
    /// };
    /// let model = model_from_config(&config).unwrap();
    /// let options = ChatOptions { seed: Some(1), top_p: Some(0.9), ..ChatOptions::default() };
    /// // Anthropic takes `top_p` but has no seed.
    /// assert_eq!(model.unsupported_options(&options), ["seed"]);
    /// # }
    /// ```
    fn unsupported_options(&self, options: &ChatOptions) -> Vec<&'static str> {
        let _ = options;
        Vec::new()
    }

    /// Whether this model's API enforces `format` while it samples, so that an answer is
    /// valid for the schema by construction (OpenAI's strict structured output on OpenAI's
    /// own endpoint). By default not: the answer is the model's best effort, and a caller
    /// that needs a valid instance checks it (a typed run of the agent loop asks once more).
    ///
    /// ```
    /// # #[cfg(feature = "openai")] {
    /// use providers::{ChatModel, ModelConfig, ResponseFormat, model_from_config};
    ///
    /// let config = ModelConfig {
    ///     api_key: Some("sk-example".into()),
    ///     ..ModelConfig::new("gpt-4o-mini")
    /// };
    /// let model = model_from_config(&config).unwrap();
    /// let schema = serde_json::json!({"type": "object"});
    /// let format = ResponseFormat::json_schema("answer", schema);
    /// let strict = format.clone().strict(true);
    /// assert!(!model.guarantees_schema(&format));
    /// assert!(model.guarantees_schema(&strict));
    /// // A compatible server may take `strict` and ignore it.
    /// let local = ModelConfig {
    ///     base_url: Some("http://127.0.0.1:8000/v1".into()),
    ///     ..config
    /// };
    /// assert!(!model_from_config(&local).unwrap().guarantees_schema(&strict));
    /// # }
    /// ```
    fn guarantees_schema(&self, format: &ResponseFormat) -> bool {
        let _ = format;
        false
    }

    /// Sends the request and waits for the whole answer.
    async fn complete(&self, request: ChatRequest) -> Result<ChatResponse, ProviderError>;

    /// Sends the request and streams the answer as it is generated.
    ///
    /// Errors before the first event (HTTP status errors after retries, connection failures)
    /// are returned here; errors after it arrive in the stream.
    async fn stream(&self, request: ChatRequest) -> Result<EventStream, ProviderError>;

    /// [`stream`](ChatModel::stream) with the request lent: the same answer, the same errors.
    ///
    /// By default the request is copied and given to `stream`.
    async fn stream_borrowed(&self, request: &ChatRequest) -> Result<EventStream, ProviderError> {
        self.stream(request.clone()).await
    }
}

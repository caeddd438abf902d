//! [`WireProtocol`]: what makes one provider's HTTP API different from another's, and
//! [`HttpModel`], the one [`ChatModel`] over any of them.
//!
//! An adapter fills in the trait — where to post, the typed request body, the stream parser,
//! how to read the non-streamed answer and the error envelope, which statuses are worth a
//! retry — and gets everything else from the shared core: the HTTP client with its retry
//! policy and timeouts, SSE framing and size caps, the delta assembler, `complete` and
//! `stream` agreeing by construction, and the decoder of recorded streams.

use std::collections::BTreeMap;
use std::fmt;

use async_trait::async_trait;
use futures::Stream;
use serde::Serialize;

use crate::assemble::{Chunk, events_from_chunks};
use crate::collect::response_from_events;
use crate::http::sse::{self, EventParser};
use crate::http::{HttpClient, HttpFailure, WireRequest};
use crate::{
    ChatModel, ChatRequest, ChatResponse, EventStream, ModelConfig, ModelInfo, Provider,
    ProviderError,
};

/// One provider API's wire format.
///
/// Implementations hold what they need from the [`ModelConfig`] (model id, endpoint, output
/// limit) and are otherwise stateless: one value serves every request of a model.
pub(crate) trait WireProtocol: fmt::Debug + Send + Sync + 'static {
    /// The request body, a typed serde struct borrowing from the request.
    type Body<'a>: Serialize + Send
    where
        Self: 'a;

    /// Reads the provider's SSE stream, one event at a time; a fresh one per stream.
    type Parser: EventParser + Default;

    /// Whose API this is (named in errors and events).
    const PROVIDER: Provider;

    /// Whether a stream that fails before its first piece of content is retried like an HTTP
    /// error: Anthropic reports `overloaded_error`, Gemini `UNAVAILABLE`, in-band right after
    /// a 200.
    const RETRIES_FAILED_START: bool = false;

    /// The URL to post to.
    fn url(&self, stream: bool) -> String;

    /// The body for `request`; `stream` asks for server-sent events.
    fn body<'a>(
        &'a self,
        request: &'a ChatRequest,
        stream: bool,
    ) -> Result<Self::Body<'a>, ProviderError>;

    /// The options of `options` this API can neither send nor translate
    /// ([`ChatModel::unsupported_options`]); by default none.
    fn unsupported_options(options: &crate::ChatOptions) -> Vec<&'static str> {
        let _ = options;
        Vec::new()
    }

    /// Whether the API enforces `format` while sampling ([`ChatModel::guarantees_schema`]);
    /// by default not.
    fn guarantees_schema(&self, format: &crate::ResponseFormat) -> bool {
        let _ = format;
        false
    }

    /// Headers for this request only, after the model's own: by default the request's
    /// `extra_headers`.
    fn headers(&self, request: &ChatRequest, _body: &Self::Body<'_>) -> BTreeMap<String, String> {
        request.options.extra_headers.clone()
    }

    /// A whole non-streamed answer as the chunks its stream would have given.
    fn response_chunks(body: &str) -> Result<Vec<Chunk>, ProviderError>;

    /// Reads the provider's error envelope.
    fn http_error(failure: &HttpFailure<'_>) -> ProviderError;

    /// Whether an HTTP status is worth sending the same request again for (before the error
    /// envelope, which may say otherwise, e.g. an exhausted quota).
    fn retryable_status(status: u16) -> bool {
        crate::http::retryable_status(status)
    }
}

/// A [`ChatModel`] speaking protocol `P` over HTTP.
#[derive(Debug)]
pub(crate) struct HttpModel<P> {
    info: ModelInfo,
    http: HttpClient,
    protocol: P,
}

impl<P: WireProtocol> HttpModel<P> {
    /// The model of `config` speaking `protocol`, sending `auth_headers` (never shown in
    /// errors) with every request.
    pub(crate) fn new(
        config: &ModelConfig,
        info: ModelInfo,
        protocol: P,
        auth_headers: &[(&str, String)],
    ) -> Result<Self, ProviderError> {
        let http = HttpClient::new(P::PROVIDER, config, auth_headers, P::retryable_status)?;
        Ok(HttpModel {
            info,
            http,
            protocol,
        })
    }

    /// [`HttpModel::new`], boxed as the [`ChatModel`] the factory hands out.
    #[cfg_attr(not(any(feature = "openai", feature = "gemini")), allow(dead_code))]
    pub(crate) fn boxed(
        config: &ModelConfig,
        info: ModelInfo,
        protocol: P,
        auth_headers: &[(&str, String)],
    ) -> Result<Box<dyn ChatModel>, ProviderError> {
        Ok(Box::new(Self::new(config, info, protocol, auth_headers)?))
    }

    fn wire_request(
        &self,
        request: &ChatRequest,
        stream: bool,
    ) -> Result<WireRequest, ProviderError> {
        request.options.check_sendable()?;
        let body = self.protocol.body(request, stream)?;
        let headers = self.protocol.headers(request, &body);
        let body = serde_json::to_vec(&body)
            .map_err(|err| ProviderError::config(format!("cannot encode the request: {err}")))?;
        Ok(WireRequest {
            url: self.protocol.url(stream),
            body: body.into(),
            headers,
        })
    }
}

#[async_trait]
impl<P: WireProtocol> ChatModel for HttpModel<P> {
    fn info(&self) -> &ModelInfo {
        &self.info
    }

    fn unsupported_options(&self, options: &crate::ChatOptions) -> Vec<&'static str> {
        P::unsupported_options(options)
    }

    fn guarantees_schema(&self, format: &crate::ResponseFormat) -> bool {
        self.protocol.guarantees_schema(format)
    }

    async fn complete(&self, request: ChatRequest) -> Result<ChatResponse, ProviderError> {
        let wire = self.wire_request(&request, false)?;
        let body = self.http.post_json(&wire, P::http_error).await?;
        let chunks = P::response_chunks(&String::from_utf8_lossy(&body))?;
        response_from_events(events_from_chunks(P::PROVIDER, chunks)?)
    }

    async fn stream(&self, request: ChatRequest) -> Result<EventStream, ProviderError> {
        self.stream_borrowed(&request).await
    }

    /// The body is serialised from the lent request before anything is sent: nothing is
    /// copied, and the bytes are shared by every retry.
    async fn stream_borrowed(&self, request: &ChatRequest) -> Result<EventStream, ProviderError> {
        let wire = self.wire_request(request, true)?;
        if P::RETRIES_FAILED_START {
            self.http
                .post_sse_retrying_start(&wire, P::http_error, P::Parser::default)
                .await
        } else {
            self.http
                .post_sse(&wire, P::http_error, P::Parser::default())
                .await
        }
    }
}

/// Decodes a recorded SSE body of protocol `P` (any chunking) into stream events, exactly as
/// [`ChatModel::stream`] would.
pub(crate) fn decode_recorded<P, S, B>(body: S) -> EventStream
where
    P: WireProtocol,
    S: Stream<Item = B> + Send + 'static,
    B: AsRef<[u8]> + Send + 'static,
{
    sse::decode_recorded(P::PROVIDER, body, P::Parser::default())
}

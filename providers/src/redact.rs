//! The redactor every model's errors pass through: a provider (or a proxy in front of it) that
//! echoes the request's key or `Authorization` header in an error body, an in-stream error
//! event or anything Skein quotes from it must not hand that key to whoever reads the error
//! (a client of `skein serve`, a log, the conversation store).
//!
//! [`model_from_config`](crate::model_from_config) wraps every adapter in [`Redacting`], so
//! this is the one place: HTTP error bodies, in-stream errors, transport messages, decode
//! excerpts and every other string field of a [`ProviderError`] are cleaned before they leave
//! the crate.

use std::pin::Pin;
use std::task::{Context, Poll};

use async_trait::async_trait;
use futures::Stream;

use messages::redact::{Redactor, looks_secret};

use crate::{
    ChatModel, ChatRequest, ChatResponse, EventStream, ModelConfig, ModelInfo, ProviderError,
    StreamEvent,
};

/// A redactor for `config`'s key and the values of its credential-like default headers.
pub(crate) fn for_config(config: &ModelConfig) -> Redactor {
    let mut redactor = Redactor::new();
    if let Some(key) = &config.api_key {
        redactor.add(key);
    }
    for (name, value) in &config.default_headers {
        if looks_secret(name) {
            redactor.add(value);
        }
    }
    redactor
}

/// `error` with every text field redacted by `redactor`.
pub(crate) fn error(redactor: &Redactor, mut error: ProviderError) -> ProviderError {
    error.for_each_text(|text| redactor.redact_in_place(text));
    error
}

/// A model whose every error goes through a [`Redactor`] first.
pub(crate) struct Redacting {
    pub(crate) inner: Box<dyn ChatModel>,
    pub(crate) redactor: Redactor,
}

#[async_trait]
impl ChatModel for Redacting {
    fn info(&self) -> &ModelInfo {
        self.inner.info()
    }

    fn unsupported_options(&self, options: &crate::ChatOptions) -> Vec<&'static str> {
        self.inner.unsupported_options(options)
    }

    fn guarantees_schema(&self, format: &crate::ResponseFormat) -> bool {
        self.inner.guarantees_schema(format)
    }

    async fn complete(&self, request: ChatRequest) -> Result<ChatResponse, ProviderError> {
        self.inner
            .complete(request)
            .await
            .map_err(|err| error(&self.redactor, err))
    }

    async fn stream(&self, request: ChatRequest) -> Result<EventStream, ProviderError> {
        let stream = self.inner.stream(request).await;
        self.redacted(stream)
    }

    async fn stream_borrowed(&self, request: &ChatRequest) -> Result<EventStream, ProviderError> {
        let stream = self.inner.stream_borrowed(request).await;
        self.redacted(stream)
    }
}

impl Redacting {
    /// `stream`, and every error it gives later, redacted.
    fn redacted(
        &self,
        stream: Result<EventStream, ProviderError>,
    ) -> Result<EventStream, ProviderError> {
        let stream = stream.map_err(|err| error(&self.redactor, err))?;
        Ok(Box::pin(RedactedStream {
            inner: stream,
            redactor: self.redactor.clone(),
        }))
    }
}

/// A stream whose errors are redacted where they lie: events pass through untouched (a
/// `map` over every item moved each event, the size of the largest, twice more per delta).
struct RedactedStream {
    inner: EventStream,
    redactor: Redactor,
}

impl Stream for RedactedStream {
    type Item = Result<StreamEvent, ProviderError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        let mut polled = this.inner.as_mut().poll_next(cx);
        if let Poll::Ready(Some(Err(err))) = &mut polled {
            err.for_each_text(|text| this.redactor.redact_in_place(text));
        }
        polled
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use messages::redact::REDACTED;

    fn redactor() -> Redactor {
        let mut config = ModelConfig::new("gpt-4o");
        config.api_key = Some("sk-server-SECRET-0123456789".into());
        config
            .default_headers
            .insert("X-Proxy-Token".into(), "Bearer proxy-SECRET-99".into());
        for_config(&config)
    }

    #[test]
    fn the_key_and_credential_headers_of_a_config_are_removed() {
        let r = redactor();
        for text in [
            "Incorrect API key provided: sk-server-SECRET-0123456789.",
            "token proxy-SECRET-99 refused",
        ] {
            let clean = r.redact(text);
            assert!(!clean.contains("SECRET"), "{text} -> {clean}");
            assert!(clean.contains(REDACTED), "{text} -> {clean}");
        }
    }

    #[test]
    fn every_text_field_of_an_error_is_redacted() {
        let r = redactor();
        let key = "sk-server-SECRET-0123456789";
        let errors = [
            ProviderError::Http {
                provider: crate::Provider::OpenAi,
                status: 401,
                error_type: Some(key.into()),
                code: Some(key.into()),
                message: format!("bad key {key}"),
                request_id: Some(key.into()),
                retryable: false,
                retry_after: None,
                body_cut_at: None,
            },
            ProviderError::Stream {
                provider: crate::Provider::Anthropic,
                error_type: Some(key.into()),
                message: key.into(),
                retryable: false,
            },
            ProviderError::Transport {
                provider: crate::Provider::Google,
                message: key.into(),
            },
            ProviderError::decode(crate::Provider::OpenAi, key, key),
            ProviderError::StreamTruncated {
                provider: None,
                detail: key.into(),
            },
            ProviderError::config(key),
            ProviderError::Redirected {
                provider: crate::Provider::Google,
                status: 307,
                location: Some(format!("https://elsewhere.example/v1?key={key}")),
            },
        ];
        for error in errors {
            let clean = super::error(&r, error);
            assert!(
                !format!("{clean} {clean:?}").contains("SECRET"),
                "{clean:?}"
            );
        }
    }
}

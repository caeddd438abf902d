//! Media a provider cannot read by URL, fetched for it.
//!
//! Gemini reads `fileData` only from its own Files API, Cloud Storage and YouTube: an image a
//! client names by any other `http(s)` URL is fetched here, under the [`MediaFetcher`]'s rules
//! (public addresses only unless the operator allows a host, size and time limits, redirects
//! checked again), and sent inline. OpenAI and Anthropic fetch image URLs themselves.
//!
//! The gateway inlines the media of its one request ([`inline_for`]). An agent run (the Chat
//! Shell, an agent alias) sends its history again on every round: its model is wrapped in
//! [`InlinedMedia`], which gives every request the bytes, each URL fetched once per run. In
//! both, the conversation tree keeps the URL the client sent; only the provider gets the bytes.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use messages::{ContentPart, Message};
use providers::{
    ChatModel, ChatOptions, ChatRequest, ChatResponse, EventStream, ModelInfo, Provider,
    ProviderError,
};
use tools::{MediaFetchError, MediaFetcher};

/// Whether `provider` needs the bytes of media at `url` rather than the URL.
fn needs_bytes(provider: Provider, url: &str) -> bool {
    if provider != Provider::Google {
        return false;
    }
    let lower = url.to_ascii_lowercase();
    let gemini_reads = [
        "https://generativelanguage.googleapis.com/",
        "https://www.youtube.com/",
        "https://youtube.com/",
        "https://youtu.be/",
    ];
    (lower.starts_with("http://") || lower.starts_with("https://"))
        && !gemini_reads.iter().any(|prefix| lower.starts_with(prefix))
}

/// Whether `provider` reads every media URL itself, so that nothing is ever fetched for it.
pub(crate) fn reads_every_url(provider: Provider) -> bool {
    provider != Provider::Google
}

/// The media fetched so far, as the parts that replace their URLs: each URL is fetched once
/// per call or run, and every request of a run sends the same bytes.
#[derive(Debug, Default)]
pub(crate) struct Fetched(HashMap<String, ContentPart>);

/// Fetches each media URL among `parts` that `provider` cannot read and `fetched` lacks.
///
/// # Errors
///
/// The first URL that cannot be fetched, with why.
pub(crate) async fn fetch_for(
    fetcher: &MediaFetcher,
    provider: Provider,
    parts: &[&ContentPart],
    fetched: &mut Fetched,
) -> Result<(), MediaFetchError> {
    for part in parts {
        let ContentPart::ImageUrl { url, .. } = part else {
            continue;
        };
        if !needs_bytes(provider, url) || fetched.0.contains_key(url) {
            continue;
        }
        let media = fetcher.fetch(url).await?;
        let mime_type = media
            .content_type
            .filter(|kind| kind != "application/octet-stream")
            .unwrap_or_else(|| type_of_url(url).to_owned());
        fetched
            .0
            .insert(url.clone(), ContentPart::binary(mime_type, media.bytes));
    }
    Ok(())
}

/// Replaces each media URL of `messages` that `provider` cannot read with the fetched bytes,
/// fetching those `fetched` lacks.
///
/// # Errors
///
/// The first URL that cannot be fetched, with why.
pub(crate) async fn inline_for(
    fetcher: &MediaFetcher,
    provider: Provider,
    messages: &mut [Message],
    fetched: &mut Fetched,
) -> Result<(), MediaFetchError> {
    if reads_every_url(provider) {
        return Ok(());
    }
    let parts: Vec<&ContentPart> = messages.iter().flat_map(|message| &message.parts).collect();
    fetch_for(fetcher, provider, &parts, fetched).await?;
    for part in messages.iter_mut().flat_map(|message| &mut message.parts) {
        if let ContentPart::ImageUrl { url, .. } = part
            && let Some(bytes) = fetched.0.get(url)
        {
            *part = bytes.clone();
        }
    }
    Ok(())
}

/// A model whose every request gets the bytes of the media its provider cannot read by URL,
/// each URL fetched once for all the requests (an agent run's rounds).
pub(crate) struct InlinedMedia {
    model: Arc<dyn ChatModel>,
    fetcher: Arc<MediaFetcher>,
    // Held across the fetches of one request: a run's requests come one at a time.
    fetched: tokio::sync::Mutex<Fetched>,
}

impl InlinedMedia {
    /// `model`, its requests' media fetched by `fetcher`; `fetched` holds what was fetched
    /// already (the run's input, checked before it began).
    pub(crate) fn new(
        model: Arc<dyn ChatModel>,
        fetcher: Arc<MediaFetcher>,
        fetched: Fetched,
    ) -> Self {
        InlinedMedia {
            model,
            fetcher,
            fetched: tokio::sync::Mutex::new(fetched),
        }
    }

    /// `request` with its media inlined; `None` when it has none to inline.
    async fn inlined(&self, request: &ChatRequest) -> Result<Option<ChatRequest>, ProviderError> {
        let provider = self.model.info().provider;
        let has_web_media = request
            .messages
            .iter()
            .flat_map(|message| &message.parts)
            .any(|part| matches!(part, ContentPart::ImageUrl { url, .. } if needs_bytes(provider, url)));
        if !has_web_media {
            return Ok(None);
        }
        let mut request = request.clone();
        let mut fetched = self.fetched.lock().await;
        inline_for(&self.fetcher, provider, &mut request.messages, &mut fetched)
            .await
            .map_err(|error| ProviderError::Unsupported {
                provider,
                what: format!(
                    "read media by a web URL, and the server could not fetch it: {error}"
                ),
            })?;
        Ok(Some(request))
    }
}

#[async_trait]
impl ChatModel for InlinedMedia {
    fn info(&self) -> &ModelInfo {
        self.model.info()
    }

    fn unsupported_options(&self, options: &ChatOptions) -> Vec<&'static str> {
        self.model.unsupported_options(options)
    }

    async fn complete(&self, request: ChatRequest) -> Result<ChatResponse, ProviderError> {
        let request = self.inlined(&request).await?.unwrap_or(request);
        self.model.complete(request).await
    }

    async fn stream(&self, request: ChatRequest) -> Result<EventStream, ProviderError> {
        let request = self.inlined(&request).await?.unwrap_or(request);
        self.model.stream(request).await
    }

    async fn stream_borrowed(&self, request: &ChatRequest) -> Result<EventStream, ProviderError> {
        match self.inlined(request).await? {
            Some(inlined) => self.model.stream(inlined).await,
            None => self.model.stream_borrowed(request).await,
        }
    }
}

/// The type an image URL's extension implies, for a server that did not say.
fn type_of_url(url: &str) -> &'static str {
    let path = url.split(['?', '#']).next().unwrap_or(url);
    match path
        .rsplit_once('.')
        .map(|(_, ext)| ext.to_ascii_lowercase())
        .as_deref()
    {
        Some("png") => "image/png",
        Some("gif") => "image/gif",
        Some("webp") => "image/webp",
        Some("pdf") => "application/pdf",
        _ => "image/jpeg",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_gemini_needs_the_bytes_of_plain_web_urls() {
        assert!(needs_bytes(Provider::Google, "https://example.com/cat.png"));
        assert!(needs_bytes(Provider::Google, "HTTP://example.com/cat.png"));
        assert!(!needs_bytes(Provider::Google, "gs://bucket/cat.png"));
        assert!(!needs_bytes(
            Provider::Google,
            "https://generativelanguage.googleapis.com/v1beta/files/abc"
        ));
        assert!(!needs_bytes(Provider::Google, "https://youtu.be/xyz"));
        assert!(!needs_bytes(Provider::Google, "data:image/png;base64,AA=="));
        assert!(!needs_bytes(
            Provider::Anthropic,
            "https://example.com/cat.png"
        ));
        assert!(!needs_bytes(
            Provider::OpenAi,
            "https://example.com/cat.png"
        ));
    }

    #[tokio::test]
    async fn a_loopback_url_for_gemini_is_refused_and_names_the_url() {
        let fetcher = MediaFetcher::new(&tools::MediaFetchPolicy::default()).expect("valid");
        let mut messages = vec![Message::new(
            messages::Role::Human,
            vec![ContentPart::image_url("http://127.0.0.1:9/cat.png")],
        )];
        let error = inline_for(
            &fetcher,
            Provider::Google,
            &mut messages,
            &mut Fetched::default(),
        )
        .await
        .unwrap_err();
        assert!(
            error.to_string().contains("http://127.0.0.1:9/cat.png"),
            "{error}"
        );
        assert!(error.to_string().contains("loopback"), "{error}");
        // Anthropic reads the URL itself: nothing is fetched.
        inline_for(
            &fetcher,
            Provider::Anthropic,
            &mut messages,
            &mut Fetched::default(),
        )
        .await
        .expect("untouched");
    }
}

//! Media a provider cannot read by URL, fetched for it.
//!
//! Gemini reads `fileData` only from its own Files API, Cloud Storage and YouTube: an image a
//! client names by any other `http(s)` URL is fetched here, under the [`MediaFetcher`]'s rules
//! (public addresses only unless the operator allows a host, size and time limits, redirects
//! checked again), and sent inline. OpenAI and Anthropic fetch image URLs themselves.

use messages::{ContentPart, Message};
use providers::Provider;
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

/// Replaces each media URL of `messages` that `provider` cannot read with the fetched bytes.
///
/// # Errors
///
/// The first URL that cannot be fetched, with why.
pub(crate) async fn inline_for(
    fetcher: &MediaFetcher,
    provider: Provider,
    messages: &mut [Message],
) -> Result<(), MediaFetchError> {
    for part in messages.iter_mut().flat_map(|message| &mut message.parts) {
        let ContentPart::ImageUrl { url, .. } = part else {
            continue;
        };
        if !needs_bytes(provider, url) {
            continue;
        }
        let fetched = fetcher.fetch(url).await?;
        let mime_type = fetched
            .content_type
            .filter(|kind| kind != "application/octet-stream")
            .unwrap_or_else(|| type_of_url(url).to_owned());
        *part = ContentPart::binary(mime_type, fetched.bytes);
    }
    Ok(())
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
        let error = inline_for(&fetcher, Provider::Google, &mut messages)
            .await
            .unwrap_err();
        assert!(
            error.to_string().contains("http://127.0.0.1:9/cat.png"),
            "{error}"
        );
        assert!(error.to_string().contains("loopback"), "{error}");
        // Anthropic reads the URL itself: nothing is fetched.
        inline_for(&fetcher, Provider::Anthropic, &mut messages)
            .await
            .expect("untouched");
    }
}

//! OpenRouter's error envelope: `{"error": {"code": 402, "message": "…", "metadata":
//! {"provider_name": "…", "raw": …}}}`.

use serde::Deserialize;

use crate::ProviderError;
use crate::http::HttpFailure;

#[derive(Deserialize)]
struct Envelope {
    error: Details,
}

#[derive(Deserialize)]
struct Details {
    metadata: Option<Metadata>,
}

#[derive(Deserialize)]
struct Metadata {
    provider_name: Option<String>,
}

/// Reads an OpenRouter HTTP error: OpenAI's envelope, plus the upstream provider that failed
/// (a user choosing another provider needs to know which one). Retries follow the status:
/// 408, 429 and 5xx are retried, 402 (credits exhausted) is not.
pub(crate) fn http_error(failure: &HttpFailure<'_>) -> ProviderError {
    let mut error = crate::openai::error::http_error(failure);
    let upstream = serde_json::from_slice::<Envelope>(failure.body)
        .ok()
        .and_then(|envelope| envelope.error.metadata?.provider_name);
    if let (ProviderError::Http { message, .. }, Some(name)) = (&mut error, upstream)
        && !message.contains(&name)
    {
        message.push_str(&format!(" (upstream provider: {name})"));
    }
    error
}

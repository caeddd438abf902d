//! The search backends: where each sends a query, with what key, and where its answer keeps
//! the results (one module each); [`Hit`] is a result as a backend gave it.

mod brave;
mod searxng;
mod tavily;

use messages::Secret;
use reqwest::Url;
use reqwest::header::HeaderValue;
use serde_json::Value;

/// A backend key as a header value marked sensitive, `prefix` first (`Bearer `).
pub(super) fn key_header(key: &Secret, prefix: &str) -> HeaderValue {
    // Checked when the configuration is resolved, so this cannot fail; an empty value would
    // only be refused by the backend.
    let mut value = HeaderValue::from_str(&format!("{prefix}{}", key.expose()))
        .unwrap_or_else(|_| HeaderValue::from_static(""));
    value.set_sensitive(true);
    value
}

/// A configured backend: where to search, with what key.
#[derive(Clone, Debug)]
pub(super) enum Backend {
    Searxng { endpoint: Url },
    Brave { endpoint: Url, key: Secret },
    Tavily { endpoint: Url, key: Secret },
}

impl Backend {
    pub(super) fn name(&self) -> &'static str {
        match self {
            Backend::Searxng { .. } => "SearxNG",
            Backend::Brave { .. } => "Brave Search",
            Backend::Tavily { .. } => "Tavily",
        }
    }

    pub(super) fn key(&self) -> Option<&Secret> {
        match self {
            Backend::Searxng { .. } => None,
            Backend::Brave { key, .. } | Backend::Tavily { key, .. } => Some(key),
        }
    }

    pub(super) fn request(
        &self,
        client: &reqwest::Client,
        query: &str,
        count: usize,
    ) -> reqwest::RequestBuilder {
        let request = match self {
            Backend::Searxng { endpoint } => searxng::request(client, endpoint, query),
            Backend::Brave { endpoint, key } => brave::request(client, endpoint, key, query, count),
            Backend::Tavily { endpoint, key } => {
                tavily::request(client, endpoint, key, query, count)
            }
        };
        request.header(reqwest::header::ACCEPT, "application/json")
    }

    /// Whether an error answer says the key was refused (Brave answers an unknown key with a
    /// status that is not always 401).
    pub(super) fn key_refused(&self, body: &[u8]) -> bool {
        matches!(self, Backend::Brave { .. }) && brave::key_refused(body)
    }

    pub(super) fn hits(&self, answer: &Value) -> Result<Vec<Hit>, String> {
        if !answer.is_object() {
            return Err("the answer is not a JSON object".to_owned());
        }
        match self {
            Backend::Searxng { .. } => searxng::hits(answer),
            Backend::Brave { .. } => brave::hits(answer),
            Backend::Tavily { .. } => tavily::hits(answer),
        }
    }
}

/// One result as a backend gave it; any field may be missing.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Hit {
    pub(super) title: Option<String>,
    pub(super) url: Option<String>,
    pub(super) snippet: Option<String>,
}

impl Hit {
    /// A hit from an object's string fields `title`, `url` and `snippet_field`; anything else
    /// (a missing field, a number) counts as missing.
    pub(super) fn from_fields(item: &Value, snippet_field: &str) -> Self {
        let text = |field: &str| item.get(field).and_then(Value::as_str).map(str::to_owned);
        Hit {
            title: text("title"),
            url: text("url"),
            snippet: text(snippet_field),
        }
    }
}

/// The items of the array at `path` in `answer`; `Ok(None)` when it is missing, an error when
/// it is something other than an array.
pub(super) fn array_at<'a>(
    answer: &'a Value,
    path: &[&str],
) -> Result<Option<&'a Vec<Value>>, String> {
    let mut value = answer;
    for key in path {
        match value.get(key) {
            Some(inner) if !inner.is_null() => value = inner,
            _ => return Ok(None),
        }
    }
    value
        .as_array()
        .map(Some)
        .ok_or_else(|| format!("`{}` in the answer is not a list", path.join(".")))
}

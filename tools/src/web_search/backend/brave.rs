//! Brave Web Search: `GET https://api.search.brave.com/res/v1/web/search?q=…&count=…` with the
//! key in `X-Subscription-Token`, answered with a `WebSearchApiResponse` whose web results are
//! `web.results[]` (`title`, `url`, `description`, …). An answer without web results has no
//! `web` at all.

use messages::Secret;
use reqwest::Url;
use serde_json::Value;

use super::{Hit, array_at, key_header};

pub(super) fn request(
    client: &reqwest::Client,
    endpoint: &Url,
    key: &Secret,
    query: &str,
    count: usize,
) -> reqwest::RequestBuilder {
    let mut url = endpoint.clone();
    url.query_pairs_mut()
        .append_pair("q", query)
        .append_pair("count", &count.to_string());
    client
        .get(url)
        .header("X-Subscription-Token", key_header(key, ""))
}

pub(super) fn hits(answer: &Value) -> Result<Vec<Hit>, String> {
    Ok(array_at(answer, &["web", "results"])?
        .map(|results| {
            results
                .iter()
                .map(|item| Hit::from_fields(item, "description"))
                .collect()
        })
        .unwrap_or_default())
}

/// Whether an error answer says the key is invalid: Brave answers an unknown key with
/// `{"type": "ErrorResponse", "error": {"code": "SUBSCRIPTION_TOKEN_INVALID", …}}`, with a
/// status that is not always 401.
pub(super) fn key_refused(body: &[u8]) -> bool {
    serde_json::from_slice::<Value>(body).is_ok_and(|answer| {
        answer
            .pointer("/error/code")
            .and_then(Value::as_str)
            .is_some_and(|code| code.starts_with("SUBSCRIPTION_TOKEN"))
    })
}

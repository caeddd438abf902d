//! SearxNG's JSON API: `GET /search?q=…&format=json`, answered with
//! `{"query": …, "results": [{"url", "title", "content", "engine", "score", …}], …}`.
//! The instance decides how many results a page holds; the tool keeps the first ones.

use reqwest::Url;
use serde_json::Value;

use super::{Hit, array_at};

pub(super) fn request(
    client: &reqwest::Client,
    endpoint: &Url,
    query: &str,
) -> reqwest::RequestBuilder {
    let mut url = endpoint.clone();
    url.query_pairs_mut()
        .append_pair("q", query)
        .append_pair("format", "json");
    client.get(url)
}

pub(super) fn hits(answer: &Value) -> Result<Vec<Hit>, String> {
    let results = array_at(answer, &["results"])?
        .ok_or("it has no `results` list (is this a SearxNG instance?)")?;
    Ok(results
        .iter()
        .map(|item| Hit::from_fields(item, "content"))
        .collect())
}

//! Tavily: `POST https://api.tavily.com/search` with `Authorization: Bearer …` and a JSON body
//! `{"query", "max_results", …}`, answered with
//! `{"query": …, "results": [{"title", "url", "content", "score", …}], "response_time": …}`.

use messages::Secret;
use reqwest::Url;
use serde_json::{Value, json};

use super::{Hit, array_at, key_header};

pub(super) fn request(
    client: &reqwest::Client,
    endpoint: &Url,
    key: &Secret,
    query: &str,
    count: usize,
) -> reqwest::RequestBuilder {
    let body = json!({
        "query": query,
        "max_results": count,
        "search_depth": "basic",
        "include_answer": false,
        "include_raw_content": false,
        "include_images": false,
    });
    client
        .post(endpoint.clone())
        .header(reqwest::header::AUTHORIZATION, key_header(key, "Bearer "))
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body.to_string())
}

pub(super) fn hits(answer: &Value) -> Result<Vec<Hit>, String> {
    let results = array_at(answer, &["results"])?.ok_or("it has no `results` list")?;
    Ok(results
        .iter()
        .map(|item| Hit::from_fields(item, "content"))
        .collect())
}

//! `web_search`: searches the web through the backend a [`WebSearchConfig`] names: a SearxNG
//! instance, Brave Search or Tavily (one module each under `backend/`).
//!
//! Each backend module knows its request (endpoint, parameters, key header) and where its
//! answer keeps the results; everything else is shared: the limits (answer size, timeout,
//! result count), the error messages, the cleaning of titles and snippets (HTML tags and
//! entities become text) and the deduplication by URL. A backend's key is read once, from the
//! environment variable the configuration names, and appears in no error, log line or `Debug`
//! output; it is only ever sent to the configured endpoint (no redirects are followed, and
//! plain `http` is refused unless the endpoint is on a loopback address).

mod backend;
mod clean;
mod config;

use std::sync::Arc;
use std::time::Duration;

use messages::Secret;
use reqwest::{StatusCode, Url, redirect};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolchain::{ExecutionContext, Source, Tool, ToolError, ToolResult, async_trait};

use crate::http::{read_capped, with_causes};
use crate::{Builtin, Offered};
use backend::{Backend, Hit};
use clean::{clean_text, cut};
use config::DEFAULT_TIMEOUT_SECS;
pub use config::{
    BRAVE_KEY_ENV, BRAVE_URL, DEFAULT_MAX_RESULTS, MAX_QUERY_CHARS, MAX_RESULTS, TAVILY_KEY_ENV,
    TAVILY_URL, WebSearchConfig, WebSearchConfigError,
};

/// `web_search` in the table of built-in tools: on when a backend is configured.
pub(crate) const BUILTIN: Builtin = Builtin {
    name: WEB_SEARCH,
    enable: "configure a search backend (`tools.web_search` with `backend: searxng` and its \
             `url`, or `backend: brave` / `tavily` with the key in an environment variable)",
    build: |config| match &config.web_search {
        Some(search) => {
            let search = WebSearch::new(search)?;
            let secrets = search.redactor();
            Ok(Some(Offered::new(search)?.with_secrets(secrets)))
        }
        None => Ok(None),
    },
};

/// Largest backend answer read; a larger one is an error rather than a truncated JSON.
const MAX_ANSWER_BYTES: usize = 2 * 1024 * 1024;
/// Longest snippet kept, in characters; a longer one is cut and ends with `…`.
const MAX_SNIPPET_CHARS: usize = 1000;
/// Longest backend error message quoted, in characters.
const MAX_ERROR_CHARS: usize = 300;

/// The `web_search` tool.
#[derive(Clone, Debug)]
pub struct WebSearch {
    client: reqwest::Client,
    backend: Arc<Backend>,
    max_results: usize,
    timeout_secs: u64,
    description: Arc<str>,
}

impl WebSearch {
    /// The tool `config` describes, its key (for Brave and Tavily) read from the environment.
    pub fn new(config: &WebSearchConfig) -> Result<Self, WebSearchConfigError> {
        Self::with_env(config, |name| std::env::var(name).ok())
    }

    /// The tool `config` describes, looking environment variables up with `lookup` (for
    /// embedders keeping keys elsewhere, and tests).
    pub fn with_env(
        config: &WebSearchConfig,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, WebSearchConfigError> {
        let backend = config.resolve(lookup)?;
        let (max_results, timeout_secs) = config.limits();
        let max_results = max_results.unwrap_or(DEFAULT_MAX_RESULTS);
        if !(1..=MAX_RESULTS).contains(&max_results) {
            return Err(WebSearchConfigError::BadMaxResults { value: max_results });
        }
        let timeout_secs = timeout_secs.unwrap_or(DEFAULT_TIMEOUT_SECS);
        if timeout_secs == 0 {
            return Err(WebSearchConfigError::BadTimeout);
        }
        providers::install_crypto_provider();
        let client = reqwest::Client::builder()
            // A redirect could carry the key elsewhere (reqwest drops `Authorization` on a
            // cross-host redirect, not `X-Subscription-Token`): none is followed.
            .redirect(redirect::Policy::none())
            .timeout(Duration::from_secs(timeout_secs))
            .user_agent(concat!("skein-web-search/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|err| WebSearchConfigError::Client(err.to_string()))?;
        let description = format!(
            "Searches the web and returns the best matching pages, each with its title, URL and \
             a short snippet: {max_results} results unless you ask for between 1 and \
             {MAX_RESULTS}. Use it for recent events and facts you are unsure of, then cite the \
             URLs you rely on. Snippets are excerpts chosen by a search engine and may be \
             incomplete or outdated."
        );
        Ok(WebSearch {
            client,
            backend: Arc::new(backend),
            max_results,
            timeout_secs,
            description: description.into(),
        })
    }
}

impl WebSearch {
    /// A redactor that knows the backend's key (none for SearxNG).
    pub fn redactor(&self) -> messages::Redactor {
        self.backend.key().map(Secret::redactor).unwrap_or_default()
    }
}

/// Input of [`WebSearch`].
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WebSearchInput {
    /// What to search for, as you would type it into a search engine (1 to 400 characters).
    #[schemars(length(min = 1, max = 400))]
    pub query: String,
    /// How many results to return, 1 to 10; leave it out for the server's default.
    #[serde(default)]
    #[schemars(range(min = 1, max = 10))]
    pub max_results: Option<usize>,
}

/// Output of [`WebSearch`].
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WebSearchOutput {
    /// The query searched for.
    pub query: String,
    /// The results, best first, one per URL.
    pub results: Vec<WebSearchResult>,
    /// The same results as the sources of an answer (`response.done`'s `sources`).
    pub sources: Vec<WebSearchSource>,
}

/// One search result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WebSearchResult {
    /// The page's title (its URL when the backend gave none).
    pub title: String,
    /// The page's address.
    pub url: String,
    /// What the backend quoted from the page, as plain text (possibly empty).
    pub snippet: String,
}

/// A search result in the shape of an answer's sources.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WebSearchSource {
    /// The page's title.
    pub title: String,
    /// The page's URL.
    pub location: String,
    /// The snippet.
    pub passage: String,
}

impl WebSearchSource {
    /// This result as an answer's source.
    fn cited(&self) -> Source {
        Source {
            title: self.title.clone(),
            location: self.location.clone(),
            passage: self.passage.clone(),
        }
    }
}

/// The tool's name, as the model calls it and as requests and tool events name it.
pub const WEB_SEARCH: &str = "web_search";

#[async_trait]
impl Tool<WebSearchInput, WebSearchOutput> for WebSearch {
    fn name(&self) -> &str {
        WEB_SEARCH
    }

    fn description(&self) -> &str {
        &self.description
    }

    async fn call(
        &self,
        ctx: &ExecutionContext,
        input: WebSearchInput,
    ) -> Result<ToolResult<WebSearchOutput>, ToolError> {
        let query = input.query.trim();
        if query.is_empty() {
            return Err(ToolError::failed(
                "the query is empty; write what to search for",
            ));
        }
        let chars = query.chars().count();
        if chars > MAX_QUERY_CHARS {
            return Err(ToolError::failed(format!(
                "the query is {chars} characters long; shorten it to at most {MAX_QUERY_CHARS}"
            )));
        }
        let count = input.max_results.unwrap_or(self.max_results);
        if !(1..=MAX_RESULTS).contains(&count) {
            return Err(ToolError::failed(format!(
                "max_results is {count}; ask for 1 to {MAX_RESULTS} results"
            )));
        }
        tokio::select! {
            biased;
            () = ctx.cancellation().cancelled() => Err(ToolError::Cancelled {
                tool: WEB_SEARCH.to_owned(),
            }),
            output = self.search(query, count) => output.map(ToolResult::text),
        }
    }

    /// The pages found, as the answer's sources.
    fn sources(&self, output: &WebSearchOutput) -> Vec<Source> {
        output.sources.iter().map(WebSearchSource::cited).collect()
    }
}

impl WebSearch {
    async fn search(&self, query: &str, count: usize) -> Result<WebSearchOutput, ToolError> {
        let backend = &*self.backend;
        let response = backend
            .request(&self.client, query, count)
            .send()
            .await
            .map_err(|err| self.transport(err))?;
        let status = response.status();
        if status.is_redirection() {
            let location = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|value| value.to_str().ok())
                .unwrap_or("nowhere");
            let location = match backend.key() {
                Some(key) => key.redactor().redact(location),
                None => location.to_owned(),
            };
            return Err(ToolError::failed(format!(
                "web search failed: {} answered with a redirect (HTTP {}) to `{location}`, which \
                 is not followed; the server's web_search url should name the final endpoint",
                backend.name(),
                status.as_u16()
            )));
        }
        let body = self.read_body(response).await?;
        if !status.is_success() {
            return Err(self.status_error(status, &body));
        }
        let answer: Value = serde_json::from_slice(&body).map_err(|err| {
            ToolError::failed(format!(
                "web search failed: {} answered with something other than JSON ({err})",
                backend.name()
            ))
        })?;
        let hits = backend.hits(&answer).map_err(|reason| {
            ToolError::failed(format!(
                "web search failed: {} answered in an unexpected shape: {reason}",
                backend.name()
            ))
        })?;
        Ok(output(query, hits, count))
    }

    async fn read_body(&self, response: reqwest::Response) -> Result<Vec<u8>, ToolError> {
        let (body, more) = read_capped(response, MAX_ANSWER_BYTES)
            .await
            .map_err(|err| self.transport(err))?;
        if more {
            return Err(ToolError::failed(format!(
                "web search failed: {}'s answer is larger than {} MiB",
                self.backend.name(),
                MAX_ANSWER_BYTES / (1024 * 1024)
            )));
        }
        Ok(body)
    }

    /// A failure to get an answer at all, for the model.
    fn transport(&self, err: reqwest::Error) -> ToolError {
        let name = self.backend.name();
        if err.is_timeout() {
            return ToolError::failed(format!(
                "web search failed: {name} did not answer within {} seconds; try again later",
                self.timeout_secs
            ));
        }
        // Without the URL: it holds the query, which the model knows, and nothing else of use.
        let err = err.without_url();
        let mut message = format!(
            "web search failed: cannot reach {name}: {}",
            with_causes(&err)
        );
        if let Some(key) = self.backend.key() {
            message = key.redactor().redact(&message);
        }
        ToolError::failed(message)
    }

    /// An answer with an error status, for the model: what it means, and the backend's own
    /// message when it gave one.
    fn status_error(&self, status: StatusCode, body: &[u8]) -> ToolError {
        let backend = &*self.backend;
        let name = backend.name();
        let key_refused = backend.key_refused(body);
        let what = match (status.as_u16(), backend) {
            _ if key_refused => "the web search key was refused".to_owned(),
            (401 | 403, Backend::Searxng { .. }) => "the SearxNG instance refused the request \
                 (its settings.yml must list json under search.formats)"
                .to_owned(),
            (401 | 403, _) => "the web search key was refused".to_owned(),
            (429, _) => "rate limited; try later".to_owned(),
            (code, _) if code >= 500 => format!("{name} failed"),
            _ => format!("{name} refused the request"),
        };
        let mut message = format!("web search failed: {what} (HTTP {})", status.as_u16());
        if let Some(detail) = error_detail(body) {
            message.push_str(": ");
            message.push_str(&detail);
        }
        if let Some(key) = backend.key() {
            message = key.redactor().redact(&message);
        }
        ToolError::failed(message)
    }
}

/// The message of an error answer: a JSON error's text (Brave's `error.detail`, Tavily's
/// `detail.error`, or the usual `message` / `error` / `detail`), else short plain text.
fn error_detail(body: &[u8]) -> Option<String> {
    let text = match serde_json::from_slice::<Value>(body) {
        Ok(json) => {
            let paths: [&[&str]; 7] = [
                &["detail", "error"],
                &["error", "detail"],
                &["error", "message"],
                &["detail"],
                &["error"],
                &["message"],
                &["error", "code"],
            ];
            paths.iter().find_map(|path| {
                path.iter()
                    .try_fold(&json, |value, key| value.get(key))
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            })?
        }
        Err(_) => String::from_utf8_lossy(body).into_owned(),
    };
    let text = clean_text(&text);
    (!text.is_empty()).then(|| cut(&text, MAX_ERROR_CHARS))
}

/// The tool's output from a backend's hits: cleaned, one per URL, at most `count`.
fn output(query: &str, hits: Vec<Hit>, count: usize) -> WebSearchOutput {
    let mut seen = std::collections::HashSet::new();
    let mut results = Vec::new();
    for hit in hits {
        if results.len() == count {
            break;
        }
        let Some(url) = hit.url.as_deref().map(str::trim) else {
            continue;
        };
        let Ok(mut parsed) = Url::parse(url) else {
            continue;
        };
        if !matches!(parsed.scheme(), "http" | "https") {
            continue;
        }
        parsed.set_fragment(None);
        if !seen.insert(parsed.as_str().trim_end_matches('/').to_owned()) {
            continue;
        }
        let title = hit.title.as_deref().map(clean_text).unwrap_or_default();
        let snippet = hit.snippet.as_deref().map(clean_text).unwrap_or_default();
        results.push(WebSearchResult {
            title: if title.is_empty() {
                url.to_owned()
            } else {
                title
            },
            url: url.to_owned(),
            snippet: cut(&snippet, MAX_SNIPPET_CHARS),
        });
    }
    let sources = results
        .iter()
        .map(|result| WebSearchSource {
            title: result.title.clone(),
            location: result.url.clone(),
            passage: result.snippet.clone(),
        })
        .collect();
    WebSearchOutput {
        query: query.to_owned(),
        results,
        sources,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_messages_come_from_each_backends_shape() {
        let brave = br#"{"type":"ErrorResponse","error":{"id":"x","status":422,"code":"SUBSCRIPTION_TOKEN_INVALID","detail":"The provided subscription token is invalid.","meta":{}}}"#;
        assert_eq!(
            error_detail(brave).as_deref(),
            Some("The provided subscription token is invalid.")
        );
        let tavily = br#"{"detail":{"error":"Unauthorized: missing or invalid API key."}}"#;
        assert_eq!(
            error_detail(tavily).as_deref(),
            Some("Unauthorized: missing or invalid API key.")
        );
        assert_eq!(
            error_detail(b"Too Many Requests").as_deref(),
            Some("Too Many Requests")
        );
        assert_eq!(error_detail(b"").as_deref(), None);
        assert_eq!(error_detail(b"{}").as_deref(), None);
        assert_eq!(error_detail(&[0xff, 0xfe]).as_deref(), Some("��"));
    }

    #[test]
    fn bad_configurations_are_refused_without_the_key() {
        let secret = "sk-very-secret-key";
        let env = |name: &str| (name == "GOOD").then(|| secret.to_owned());
        let refused = |config: &WebSearchConfig| {
            let err = WebSearch::with_env(config, env).unwrap_err().to_string();
            assert!(!err.contains(secret), "{err}");
            err
        };
        assert!(refused(&"searxng".parse().unwrap()).contains("needs `url`"));
        assert!(refused(&WebSearchConfig::searxng("ftp://host")).contains("only http"));
        assert!(refused(&WebSearchConfig::brave()).contains("`BRAVE_API_KEY`, which is not set"));
        assert!(refused(&WebSearchConfig::tavily()).contains("`TAVILY_API_KEY`"));
        let with = |url: Option<&str>, env: &str, max: Option<usize>| WebSearchConfig::Tavily {
            url: url.map(str::to_owned),
            api_key_env: Some(env.to_owned()),
            max_results: max,
            timeout_secs: None,
        };
        assert!(
            refused(&with(Some("http://api.example.com/search"), "GOOD", None))
                .contains("unencrypted")
        );
        assert!(
            refused(&with(Some("https://u:p@api.example.com/"), "GOOD", None))
                .contains("credentials")
        );
        assert!(refused(&with(None, "GOOD", Some(11))).contains("between 1 and 10"));
        assert!(refused(&with(None, "GOOD", Some(0))).contains("between 1 and 10"));
        // A key pasted where its variable's name belongs is not repeated.
        let pasted = refused(&with(None, secret, None));
        assert!(
            pasted.contains("must be the name of an environment variable"),
            "{pasted}"
        );

        let tool = WebSearch::with_env(&with(Some("http://127.0.0.1:9/search"), "GOOD", None), env)
            .unwrap();
        let debug = format!("{tool:?}");
        assert!(!debug.contains(secret), "{debug}");
        assert!(debug.contains("<redacted>"), "{debug}");
    }

    #[test]
    fn odd_answers_never_panic() {
        let backends = [
            Backend::Searxng {
                endpoint: Url::parse("http://x/search").unwrap(),
            },
            Backend::Brave {
                endpoint: Url::parse("http://x/").unwrap(),
                key: Secret::new("k"),
            },
            Backend::Tavily {
                endpoint: Url::parse("http://x/").unwrap(),
                key: Secret::new("k"),
            },
        ];
        let answers = [
            serde_json::json!(null),
            serde_json::json!([]),
            serde_json::json!("text"),
            serde_json::json!({}),
            serde_json::json!({"results": 3, "web": {"results": "no"}}),
            serde_json::json!({"results": [1, null, {"url": 5}, {"title": ["x"]}],
                               "web": {"results": [1, null, {"url": 5}]}}),
        ];
        for backend in &backends {
            for answer in &answers {
                if let Ok(hits) = backend.hits(answer) {
                    let out = output("q", hits, 10);
                    assert!(out.results.is_empty(), "{backend:?} {answer}");
                }
            }
        }
    }

    #[test]
    fn results_are_deduplicated_by_url_and_limited() {
        let hit = |url: &str, title: Option<&str>| Hit {
            title: title.map(str::to_owned),
            url: Some(url.to_owned()),
            snippet: None,
        };
        let out = output(
            "q",
            vec![
                hit("https://a.example/", Some("A")),
                hit("https://a.example", Some("A again")),
                hit("https://A.example/#part", Some("A part")),
                hit("javascript:alert(1)", Some("script")),
                hit("https://b.example/x", None),
                hit("https://c.example/", Some("C")),
            ],
            2,
        );
        assert_eq!(
            out.results,
            [
                WebSearchResult {
                    title: "A".into(),
                    url: "https://a.example/".into(),
                    snippet: String::new(),
                },
                WebSearchResult {
                    title: "https://b.example/x".into(),
                    url: "https://b.example/x".into(),
                    snippet: String::new(),
                },
            ]
        );
        assert_eq!(out.sources.len(), 2);
        assert_eq!(out.sources[1].location, "https://b.example/x");
    }
}

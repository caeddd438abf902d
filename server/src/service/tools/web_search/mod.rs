//! `web_search`: searches the web through the backend a [`WebSearchConfig`] names: a SearxNG
//! instance (`searxng.rs`), Brave Search (`brave.rs`) or Tavily (`tavily.rs`).
//!
//! Each backend module knows its request (endpoint, parameters, key header) and where its
//! answer keeps the results; everything else is shared: the limits (answer size, timeout,
//! result count), the error messages, the cleaning of titles and snippets (HTML tags and
//! entities become text) and the deduplication by URL. A backend's key is read once, from the
//! environment variable the configuration names, and appears in no error, log line or `Debug`
//! output; it is only ever sent to the configured endpoint (no redirects are followed, and
//! plain `http` is refused unless the endpoint is on a loopback address).

mod brave;
mod searxng;
mod tavily;

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use messages::Secret;
use reqwest::header::HeaderValue;
use reqwest::{StatusCode, Url, redirect};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolchain::{ExecutionContext, Tool, ToolError, ToolResult, async_trait};

use super::http::{read_capped, with_causes};

/// Results returned when neither the configuration nor the model asks for another number.
pub const DEFAULT_MAX_RESULTS: usize = 5;
/// Most results one search returns.
pub const MAX_RESULTS: usize = 10;
/// Longest query accepted, in characters (Brave Search's own limit).
pub const MAX_QUERY_CHARS: usize = 400;
/// The Brave Web Search endpoint, used unless the configuration names another.
pub const BRAVE_URL: &str = "https://api.search.brave.com/res/v1/web/search";
/// The Tavily search endpoint, used unless the configuration names another.
pub const TAVILY_URL: &str = "https://api.tavily.com/search";
/// The environment variable holding the Brave Search key unless `api_key_env` names another.
pub const BRAVE_KEY_ENV: &str = "BRAVE_API_KEY";
/// The environment variable holding the Tavily key unless `api_key_env` names another.
pub const TAVILY_KEY_ENV: &str = "TAVILY_API_KEY";

/// Time limit of one search, body included, unless `timeout_secs` says otherwise.
const DEFAULT_TIMEOUT_SECS: u64 = 10;
/// Largest backend answer read; a larger one is an error rather than a truncated JSON.
const MAX_ANSWER_BYTES: usize = 2 * 1024 * 1024;
/// Longest snippet kept, in characters; a longer one is cut and ends with `…`.
const MAX_SNIPPET_CHARS: usize = 1000;
/// Longest backend error message quoted, in characters.
const MAX_ERROR_CHARS: usize = 300;

/// Which search backend `web_search` uses, and its limits. Without one the tool does not
/// exist. Written with a `backend` tag:
///
/// ```yaml
/// web_search:
///   backend: brave            # or searxng (with url), or tavily
///   api_key_env: BRAVE_API_KEY
///   max_results: 5
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "backend", rename_all = "lowercase", deny_unknown_fields)]
pub enum WebSearchConfig {
    /// A SearxNG instance's JSON API (`GET /search?q=…&format=json`); the instance must list
    /// `json` under `search.formats` in its `settings.yml`. No key.
    Searxng {
        /// The instance's address (`http://localhost:8888`); `/search` is appended unless the
        /// path already ends with it. Required.
        #[serde(default)]
        url: Option<String>,
        /// Results returned when the model does not say (1 to 10, default 5).
        #[serde(default)]
        max_results: Option<usize>,
        /// Time limit of one search in seconds (default 10).
        #[serde(default)]
        timeout_secs: Option<u64>,
    },
    /// Brave Web Search (`GET …/res/v1/web/search?q=…&count=…`, key in `X-Subscription-Token`).
    Brave {
        /// The endpoint (default [`BRAVE_URL`]); plain `http` only to a loopback address.
        #[serde(default)]
        url: Option<String>,
        /// The name of the environment variable holding the key (default [`BRAVE_KEY_ENV`]):
        /// capital letters, digits and `_`.
        /// The key itself never belongs in a configuration file.
        #[serde(default)]
        api_key_env: Option<String>,
        /// Results returned when the model does not say (1 to 10, default 5).
        #[serde(default)]
        max_results: Option<usize>,
        /// Time limit of one search in seconds (default 10).
        #[serde(default)]
        timeout_secs: Option<u64>,
    },
    /// Tavily (`POST /search` with a JSON body, key as `Authorization: Bearer …`).
    Tavily {
        /// The endpoint (default [`TAVILY_URL`]); plain `http` only to a loopback address.
        #[serde(default)]
        url: Option<String>,
        /// The name of the environment variable holding the key (default [`TAVILY_KEY_ENV`]):
        /// capital letters, digits and `_`.
        /// The key itself never belongs in a configuration file.
        #[serde(default)]
        api_key_env: Option<String>,
        /// Results returned when the model does not say (1 to 10, default 5).
        #[serde(default)]
        max_results: Option<usize>,
        /// Time limit of one search in seconds (default 10).
        #[serde(default)]
        timeout_secs: Option<u64>,
    },
}

impl WebSearchConfig {
    /// A SearxNG instance at `url`, with the default limits.
    pub fn searxng(url: impl Into<String>) -> Self {
        WebSearchConfig::Searxng {
            url: Some(url.into()),
            max_results: None,
            timeout_secs: None,
        }
    }

    /// Brave Search at its official endpoint, the key in [`BRAVE_KEY_ENV`].
    pub fn brave() -> Self {
        WebSearchConfig::Brave {
            url: None,
            api_key_env: None,
            max_results: None,
            timeout_secs: None,
        }
    }

    /// Tavily at its official endpoint, the key in [`TAVILY_KEY_ENV`].
    pub fn tavily() -> Self {
        WebSearchConfig::Tavily {
            url: None,
            api_key_env: None,
            max_results: None,
            timeout_secs: None,
        }
    }

    /// The backend named `backend` (`searxng`, `brave` or `tavily`, any case), with `url` if
    /// given (required for SearxNG, checked when the tool is built) and the default key
    /// variable and limits: what a command-line flag builds.
    pub fn from_backend(backend: &str, url: Option<String>) -> Result<Self, WebSearchConfigError> {
        let mut config = match backend.trim().to_ascii_lowercase().as_str() {
            "searxng" => WebSearchConfig::Searxng {
                url: None,
                max_results: None,
                timeout_secs: None,
            },
            "brave" => WebSearchConfig::brave(),
            "tavily" => WebSearchConfig::tavily(),
            _ => {
                return Err(WebSearchConfigError::UnknownBackend {
                    name: backend.to_owned(),
                });
            }
        };
        match &mut config {
            WebSearchConfig::Searxng { url: slot, .. }
            | WebSearchConfig::Brave { url: slot, .. }
            | WebSearchConfig::Tavily { url: slot, .. } => *slot = url,
        }
        Ok(config)
    }

    /// The backend's name as configured: `searxng`, `brave` or `tavily`.
    pub fn backend(&self) -> &'static str {
        match self {
            WebSearchConfig::Searxng { .. } => "searxng",
            WebSearchConfig::Brave { .. } => "brave",
            WebSearchConfig::Tavily { .. } => "tavily",
        }
    }

    fn limits(&self) -> (Option<usize>, Option<u64>) {
        match self {
            WebSearchConfig::Searxng {
                max_results,
                timeout_secs,
                ..
            }
            | WebSearchConfig::Brave {
                max_results,
                timeout_secs,
                ..
            }
            | WebSearchConfig::Tavily {
                max_results,
                timeout_secs,
                ..
            } => (*max_results, *timeout_secs),
        }
    }
}

/// `BACKEND` or `BACKEND=URL` (`searxng=http://localhost:8888`, `brave`, `tavily`), as
/// [`WebSearchConfig::from_backend`] reads them.
impl FromStr for WebSearchConfig {
    type Err = WebSearchConfigError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.split_once('=') {
            Some((backend, url)) => WebSearchConfig::from_backend(backend, Some(url.to_owned())),
            None => WebSearchConfig::from_backend(text, None),
        }
    }
}

/// A `web_search` configuration that cannot be used. No message contains a key.
#[derive(Debug, thiserror::Error)]
pub enum WebSearchConfigError {
    /// The backend is not one Skein knows.
    #[error("unknown web_search backend `{name}`; use searxng, brave or tavily")]
    UnknownBackend {
        /// The name given.
        name: String,
    },
    /// SearxNG was configured without the instance's address.
    #[error(
        "web_search with backend searxng needs `url`, the address of a SearxNG instance whose \
         settings.yml lists json under search.formats (e.g. http://localhost:8888)"
    )]
    MissingUrl,
    /// The endpoint is not a usable URL.
    #[error("web_search `url` `{url}` cannot be used: {reason}")]
    BadUrl {
        /// The URL as configured.
        url: String,
        /// Why not.
        reason: String,
    },
    /// The key would travel unencrypted.
    #[error(
        "web_search with backend {backend} would send its API key unencrypted to `{url}`; use an \
         https URL (plain http is allowed only to a loopback address)"
    )]
    InsecureUrl {
        /// The backend.
        backend: &'static str,
        /// The URL as configured.
        url: String,
    },
    /// The environment variable that should hold the key is unset or empty.
    #[error(
        "web_search with backend {backend} reads its API key from the environment variable \
         `{variable}`, which is not set or empty; set it, or name another variable with \
         `api_key_env`"
    )]
    MissingKey {
        /// The backend.
        backend: &'static str,
        /// The variable's name.
        variable: String,
    },
    /// The key holds characters an HTTP header cannot carry.
    #[error(
        "the API key in the environment variable `{variable}` cannot be sent in an HTTP header \
         (it holds a line break or another control character)"
    )]
    BadKey {
        /// The variable's name.
        variable: String,
    },
    /// `api_key_env` is not a variable name (what it holds is not shown: it may be a key).
    #[error(
        "web_search `api_key_env` must be the name of an environment variable (capital letters, \
         digits and _, like BRAVE_API_KEY), not the key itself; the value given is not shown"
    )]
    BadKeyEnv,
    /// `max_results` is out of range.
    #[error("web_search `max_results` is {value}; it must be between 1 and {MAX_RESULTS}")]
    BadMaxResults {
        /// The value given.
        value: usize,
    },
    /// `timeout_secs` is zero.
    #[error("web_search `timeout_secs` must be at least 1")]
    BadTimeout,
    /// The HTTP client could not be built.
    #[error("cannot build the web_search client: {0}")]
    Client(String),
}

/// A backend key as a header value marked sensitive, `prefix` first (`Bearer `).
fn key_header(key: &Secret, prefix: &str) -> HeaderValue {
    // Checked by `keyed`, so this cannot fail; an empty value would only be refused by the
    // backend.
    let mut value = HeaderValue::from_str(&format!("{prefix}{}", key.expose()))
        .unwrap_or_else(|_| HeaderValue::from_static(""));
    value.set_sensitive(true);
    value
}

/// A configured backend: where to search, with what key.
#[derive(Clone, Debug)]
enum Backend {
    Searxng { endpoint: Url },
    Brave { endpoint: Url, key: Secret },
    Tavily { endpoint: Url, key: Secret },
}

impl Backend {
    fn name(&self) -> &'static str {
        match self {
            Backend::Searxng { .. } => "SearxNG",
            Backend::Brave { .. } => "Brave Search",
            Backend::Tavily { .. } => "Tavily",
        }
    }

    fn key(&self) -> Option<&Secret> {
        match self {
            Backend::Searxng { .. } => None,
            Backend::Brave { key, .. } | Backend::Tavily { key, .. } => Some(key),
        }
    }

    fn request(
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

    fn hits(&self, answer: &Value) -> Result<Vec<Hit>, String> {
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
struct Hit {
    title: Option<String>,
    url: Option<String>,
    snippet: Option<String>,
}

impl Hit {
    /// A hit from an object's string fields `title`, `url` and `snippet_field`; anything else
    /// (a missing field, a number) counts as missing.
    fn from_fields(item: &Value, snippet_field: &str) -> Self {
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
fn array_at<'a>(answer: &'a Value, path: &[&str]) -> Result<Option<&'a Vec<Value>>, String> {
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
        let backend = match config {
            WebSearchConfig::Searxng { url, .. } => {
                let url = url.as_deref().ok_or(WebSearchConfigError::MissingUrl)?;
                let mut endpoint = parse_endpoint(url)?;
                if !endpoint.path().trim_end_matches('/').ends_with("/search") {
                    let path = format!("{}/search", endpoint.path().trim_end_matches('/'));
                    endpoint.set_path(&path);
                }
                Backend::Searxng { endpoint }
            }
            WebSearchConfig::Brave {
                url, api_key_env, ..
            } => {
                let (endpoint, key) = keyed(
                    "brave",
                    url.as_deref().unwrap_or(BRAVE_URL),
                    api_key_env.as_deref().unwrap_or(BRAVE_KEY_ENV),
                    &lookup,
                )?;
                Backend::Brave { endpoint, key }
            }
            WebSearchConfig::Tavily {
                url, api_key_env, ..
            } => {
                let (endpoint, key) = keyed(
                    "tavily",
                    url.as_deref().unwrap_or(TAVILY_URL),
                    api_key_env.as_deref().unwrap_or(TAVILY_KEY_ENV),
                    &lookup,
                )?;
                Backend::Tavily { endpoint, key }
            }
        };
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

impl WebSearchConfig {
    /// A redactor that knows the key the tool of this configuration would use (read from the
    /// environment as [`WebSearch::new`] reads it); none when it has no key or cannot be built.
    pub fn redactor(&self) -> messages::Redactor {
        WebSearch::new(self)
            .map(|search| search.redactor())
            .unwrap_or_default()
    }
}

/// The endpoint and key of a backend that needs one.
fn keyed(
    backend: &'static str,
    url: &str,
    variable: &str,
    lookup: &impl Fn(&str) -> Option<String>,
) -> Result<(Url, Secret), WebSearchConfigError> {
    let endpoint = parse_endpoint(url)?;
    if endpoint.scheme() != "https" && !is_loopback(&endpoint) {
        return Err(WebSearchConfigError::InsecureUrl {
            backend,
            url: url.to_owned(),
        });
    }
    let variable = variable.trim();
    // Capital letters, digits and `_`: a pasted key (mixed case, `-`) is refused without being
    // repeated, rather than named in a "not set" message.
    let valid_name = variable.len() <= 128
        && variable
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_uppercase() || c == '_')
        && variable
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
    if !valid_name {
        return Err(WebSearchConfigError::BadKeyEnv);
    }
    let key = lookup(variable)
        .map(|key| key.trim().to_owned())
        .filter(|key| !key.is_empty())
        .ok_or_else(|| WebSearchConfigError::MissingKey {
            backend,
            variable: variable.to_owned(),
        })?;
    if HeaderValue::from_str(&format!("Bearer {key}")).is_err() {
        return Err(WebSearchConfigError::BadKey {
            variable: variable.to_owned(),
        });
    }
    Ok((endpoint, Secret::new(key)))
}

fn parse_endpoint(url: &str) -> Result<Url, WebSearchConfigError> {
    let bad = |reason: &str| WebSearchConfigError::BadUrl {
        url: url.to_owned(),
        reason: reason.to_owned(),
    };
    let endpoint = Url::parse(url.trim()).map_err(|err| bad(&err.to_string()))?;
    if !matches!(endpoint.scheme(), "http" | "https") {
        return Err(bad("only http and https URLs can be used"));
    }
    if !endpoint.username().is_empty() || endpoint.password().is_some() {
        return Err(WebSearchConfigError::BadUrl {
            url: "<not shown: it holds credentials>".to_owned(),
            reason: "put no credentials in the URL".to_owned(),
        });
    }
    if endpoint.host_str().is_none_or(str::is_empty) {
        return Err(bad("it names no host"));
    }
    Ok(endpoint)
}

fn is_loopback(url: &Url) -> bool {
    let host = url.host_str().unwrap_or_default();
    let ip = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || ip
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
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
        let key_refused = matches!(backend, Backend::Brave { .. }) && brave::key_refused(body);
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

/// `text` cut to `max` characters, ending with `…` when cut.
fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((end, _)) => format!("{}…", text[..end].trim_end()),
        None => text.to_owned(),
    }
}

/// Tags that mark up words rather than separate them.
const INLINE_TAGS: [&str; 9] = ["a", "b", "em", "i", "mark", "small", "span", "strong", "u"];

/// Text from a snippet that may hold HTML: tags (`<strong>`, `</b>`, `<br/>`, comments) are
/// dropped, entities (`&amp;`, `&#39;`, `&#x27;`) decoded, and runs of whitespace become one
/// space. A `<` that does not open a tag (`a < b`) stays.
fn clean_text(text: &str) -> String {
    let mut stripped = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find('<') {
        stripped.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        let opens_tag = after
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '/' || c == '!');
        match after.find('>') {
            Some(end) if opens_tag => {
                // An inline tag (`<strong>Rust</strong>'s`) joins what surrounds it; any other
                // (`a<br>b`, `</p><p>`) separates it.
                let name = after[..end]
                    .trim_start_matches('/')
                    .split(|c: char| c.is_whitespace() || c == '/')
                    .next()
                    .unwrap_or_default()
                    .to_ascii_lowercase();
                if !INLINE_TAGS.contains(&name.as_str()) {
                    stripped.push(' ');
                }
                rest = &after[end + 1..];
            }
            _ => {
                stripped.push('<');
                rest = after;
            }
        }
    }
    stripped.push_str(rest);
    let decoded = decode_entities(&stripped);
    decoded.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `text` with HTML character references decoded (the named ones search engines use, and
/// every numeric one); an unknown or malformed reference stays as written.
fn decode_entities(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find('&') {
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        let decoded = after
            .find(';')
            .filter(|&end| end > 0 && end <= 10)
            .and_then(|end| entity(&after[..end]).map(|c| (c, end)));
        match decoded {
            Some((c, end)) => {
                out.push(c);
                rest = &after[end + 1..];
            }
            None => {
                out.push('&');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

fn entity(name: &str) -> Option<char> {
    if let Some(number) = name.strip_prefix('#') {
        let code = match number.strip_prefix(['x', 'X']) {
            Some(hex) => u32::from_str_radix(hex, 16).ok()?,
            None => number.parse().ok()?,
        };
        return char::from_u32(code).filter(|c| *c != '\0');
    }
    Some(match name {
        "amp" => '&',
        "lt" => '<',
        "gt" => '>',
        "quot" => '"',
        "apos" => '\'',
        "nbsp" => ' ',
        "ndash" => '–',
        "mdash" => '—',
        "hellip" => '…',
        "laquo" => '«',
        "raquo" => '»',
        "lsquo" => '‘',
        "rsquo" => '’',
        "ldquo" => '“',
        "rdquo" => '”',
        "middot" => '·',
        "copy" => '©',
        "reg" => '®',
        "trade" => '™',
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snippets_become_plain_text() {
        assert_eq!(
            clean_text("The <strong>Rust</strong> Programming Language &amp; more&hellip;"),
            "The Rust Programming Language & more…"
        );
        assert_eq!(clean_text("It&#39;s &#x27;fast&#x27;"), "It's 'fast'");
        assert_eq!(clean_text("line<br/>break"), "line break");
        assert_eq!(clean_text("a < b and c > d"), "a < b and c > d");
        assert_eq!(clean_text("&lt;strong&gt; is a tag"), "<strong> is a tag");
        assert_eq!(clean_text("  spaced \n\t out  "), "spaced out");
        assert_eq!(clean_text("AT&T &bogus; &#xZZ; &"), "AT&T &bogus; &#xZZ; &");
        assert_eq!(clean_text("<!-- note -->kept"), "kept");
        assert_eq!(clean_text("unclosed <b tag"), "unclosed <b tag");
        assert_eq!(clean_text("&#0; &#1114112;"), "&#0; &#1114112;");
    }

    #[test]
    fn long_snippets_are_cut_on_a_character() {
        assert_eq!(cut("héllo wörld", 5), "héllo…");
        assert_eq!(cut("short", 5), "short");
    }

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
    fn configuration_is_read_from_yaml_and_checked() {
        let config: WebSearchConfig =
            serde_saphyr::from_str("backend: searxng\nurl: http://localhost:8888\n").unwrap();
        assert_eq!(config, WebSearchConfig::searxng("http://localhost:8888"));
        let config: WebSearchConfig = serde_saphyr::from_str(
            "backend: brave\napi_key_env: MY_BRAVE\nmax_results: 3\ntimeout_secs: 5\n",
        )
        .unwrap();
        assert_eq!(
            config,
            WebSearchConfig::Brave {
                url: None,
                api_key_env: Some("MY_BRAVE".into()),
                max_results: Some(3),
                timeout_secs: Some(5),
            }
        );
        for bad in [
            "backend: bing\n",
            "backend: searxng\nurl: http://x\napi_key_env: KEY\n",
            "backend: tavily\napi_key: tvly-secret\n",
            "url: http://x\n",
        ] {
            assert!(
                serde_saphyr::from_str::<WebSearchConfig>(bad).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn backends_by_name() {
        assert_eq!(
            "searxng=http://127.0.0.1:8888"
                .parse::<WebSearchConfig>()
                .unwrap(),
            WebSearchConfig::searxng("http://127.0.0.1:8888")
        );
        assert_eq!(
            "Brave".parse::<WebSearchConfig>().unwrap(),
            WebSearchConfig::brave()
        );
        assert_eq!(
            "tavily".parse::<WebSearchConfig>().unwrap(),
            WebSearchConfig::tavily()
        );
        let err = "bing".parse::<WebSearchConfig>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown web_search backend `bing`; use searxng, brave or tavily"
        );
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

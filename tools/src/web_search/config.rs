//! What `web_search` is configured with (`WebSearchConfig`), and how a configuration
//! becomes a backend: its endpoint checked (no credentials in it; plain `http` only to a
//! loopback address when a key travels) and its key read once from the environment.

use std::str::FromStr;

use reqwest::Url;
use reqwest::header::HeaderValue;
use serde::{Deserialize, Serialize};

use super::WebSearch;
use messages::Secret;

use super::backend::Backend;

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
pub(super) const DEFAULT_TIMEOUT_SECS: u64 = 10;

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

    pub(super) fn limits(&self) -> (Option<usize>, Option<u64>) {
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

impl WebSearchConfig {
    /// The backend this configuration names, its key (for Brave and Tavily) looked up with
    /// `lookup`.
    pub(super) fn resolve(
        &self,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Backend, WebSearchConfigError> {
        Ok(match self {
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
        })
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

#[cfg(test)]
mod tests {
    use super::*;

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
}

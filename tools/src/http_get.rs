//! `http_get`: fetches a URL from an allow-list, with size and time limits ([`HttpGetPolicy`]).

use std::sync::Arc;
use std::time::Duration;

use reqwest::Url;
use reqwest::redirect;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolchain::{ExecutionContext, Tool, ToolError, ToolResult, async_trait};

use crate::http::{read_capped, with_causes};
use crate::{Builtin, Offered};

/// `http_get` in the table of built-in tools: on when a policy is configured.
pub(crate) const BUILTIN: Builtin = Builtin {
    name: "http_get",
    enable: "configure an allow-list of hosts (`tools.http_get.allow`, or `skein --allow-host HOST`)",
    build: |config| match &config.http_get {
        Some(policy) => Ok(Some(Offered::new(HttpGet::new(policy)?)?)),
        None => Ok(None),
    },
};

/// Where `http_get` may go and how much it may bring back. Without a policy the tool does not
/// exist: a server offers it only when its configuration says which hosts are allowed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpGetPolicy {
    /// Hosts that may be fetched: `example.com` (exactly that host), `*.example.com` (its
    /// subdomains, not itself), each with an optional `:port` (otherwise any port). Redirects
    /// are followed only to allowed hosts.
    pub allow: Vec<String>,
    /// Largest body returned, in bytes; the rest is cut off (and `truncated` says so).
    #[serde(default = "default_max_bytes")]
    pub max_bytes: usize,
    /// Time limit for the whole request, body included, in seconds.
    #[serde(default = "default_timeout_secs")]
    pub timeout_secs: u64,
}

fn default_max_bytes() -> usize {
    256 * 1024
}

fn default_timeout_secs() -> u64 {
    10
}

impl HttpGetPolicy {
    /// A policy allowing `hosts`, with the default limits (256 KiB, 10 s).
    pub fn allow(hosts: impl IntoIterator<Item = impl Into<String>>) -> Self {
        HttpGetPolicy {
            allow: hosts.into_iter().map(Into::into).collect(),
            max_bytes: default_max_bytes(),
            timeout_secs: default_timeout_secs(),
        }
    }
}

/// An `http_get` policy that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum HttpGetPolicyError {
    /// An allow-list entry that is not a host name with an optional port.
    #[error(
        "http_get allow-list entry `{entry}` is not a host: write `example.com`, `*.example.com` or `127.0.0.1:8080` (no scheme, no path)"
    )]
    BadEntry {
        /// The entry.
        entry: String,
    },
    /// The allow-list is empty: the tool could fetch nothing.
    #[error("the http_get allow-list is empty; list the hosts it may fetch, or leave http_get off")]
    Empty,
    /// The HTTP client could not be built.
    #[error("cannot build the http_get client: {0}")]
    Client(String),
}

/// One allow-list entry.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Allowed {
    /// Lowercase host; for a wildcard, the suffix after `*.`.
    host: String,
    wildcard: bool,
    port: Option<u16>,
}

impl Allowed {
    fn parse(entry: &str) -> Result<Self, HttpGetPolicyError> {
        let bad = || HttpGetPolicyError::BadEntry {
            entry: entry.to_owned(),
        };
        let entry_lower = entry.trim().to_ascii_lowercase();
        let (host, port) = if let Some(rest) = entry_lower.strip_prefix('[') {
            // An IPv6 literal: `[::1]` or `[::1]:8080`.
            let (inside, after) = rest.split_once(']').ok_or_else(bad)?;
            let port = match after {
                "" => None,
                _ => Some(after.strip_prefix(':').ok_or_else(bad)?),
            };
            (format!("[{inside}]"), port)
        } else {
            match entry_lower.rsplit_once(':') {
                Some((host, port)) => (host.to_owned(), Some(port)),
                None => (entry_lower.clone(), None),
            }
        };
        let port = port
            .map(|port| port.parse::<u16>().map_err(|_| bad()))
            .transpose()?;
        let (host, wildcard) = match host.strip_prefix("*.") {
            Some(suffix) => (suffix.to_owned(), true),
            None => (host, false),
        };
        let valid = !host.is_empty()
            && host
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']'));
        if !valid {
            return Err(bad());
        }
        Ok(Allowed {
            host,
            wildcard,
            port,
        })
    }

    fn matches(&self, host: &str, port: Option<u16>) -> bool {
        let host_ok = if self.wildcard {
            host.strip_suffix(self.host.as_str())
                .is_some_and(|prefix| prefix.ends_with('.') && prefix.len() > 1)
        } else {
            host == self.host
        };
        host_ok && self.port.is_none_or(|allowed| Some(allowed) == port)
    }
}

/// The allow-list, shared by the tool and its redirect policy.
#[derive(Debug)]
struct AllowList(Vec<Allowed>);

impl AllowList {
    /// `Ok` when `url` may be fetched, else why not (for the model).
    fn check(&self, url: &Url) -> Result<(), String> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(format!(
                "only http and https URLs can be fetched, not `{}:`",
                url.scheme()
            ));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err("URLs with credentials cannot be fetched".to_owned());
        }
        let host = url.host_str().unwrap_or_default().to_ascii_lowercase();
        let port = url.port_or_known_default();
        if self.0.iter().any(|allowed| allowed.matches(&host, port)) {
            Ok(())
        } else {
            Err(format!(
                "host `{host}` is not on this server's http_get allow-list"
            ))
        }
    }
}

/// The `http_get` tool.
#[derive(Clone, Debug)]
pub struct HttpGet {
    client: reqwest::Client,
    allow: Arc<AllowList>,
    max_bytes: usize,
}

impl HttpGet {
    /// The tool under `policy`.
    pub fn new(policy: &HttpGetPolicy) -> Result<Self, HttpGetPolicyError> {
        if policy.allow.is_empty() {
            return Err(HttpGetPolicyError::Empty);
        }
        let allow = Arc::new(AllowList(
            policy
                .allow
                .iter()
                .map(|entry| Allowed::parse(entry))
                .collect::<Result<_, _>>()?,
        ));
        let redirect_allow = Arc::clone(&allow);
        let redirects = redirect::Policy::custom(move |attempt| {
            if attempt.previous().len() >= 5 {
                attempt.error("more than 5 redirects")
            } else if let Err(reason) = redirect_allow.check(attempt.url()) {
                attempt.error(format!("redirect refused: {reason}"))
            } else {
                attempt.follow()
            }
        });
        providers::install_crypto_provider();
        let client = reqwest::Client::builder()
            .redirect(redirects)
            .timeout(Duration::from_secs(policy.timeout_secs))
            .user_agent(concat!("skein-http-get/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|err| HttpGetPolicyError::Client(err.to_string()))?;
        Ok(HttpGet {
            client,
            allow,
            max_bytes: policy.max_bytes,
        })
    }
}

/// Input of [`HttpGet`].
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HttpGetInput {
    /// The http or https URL to fetch.
    pub url: String,
}

/// Output of [`HttpGet`].
#[derive(Debug, PartialEq, Serialize)]
pub struct HttpGetOutput {
    /// The URL finally fetched (after redirects).
    pub url: String,
    /// The HTTP status code.
    pub status: u16,
    /// The `Content-Type` header, if any.
    pub content_type: Option<String>,
    /// The body as text (invalid UTF-8 replaced), possibly cut.
    pub body: String,
    /// Whether `body` stops before the end of the response.
    pub truncated: bool,
}

#[async_trait]
impl Tool<HttpGetInput, HttpGetOutput> for HttpGet {
    fn name(&self) -> &str {
        "http_get"
    }

    fn display_name(&self) -> Option<&str> {
        // The name made readable would be "Http get".
        Some("Fetch a web page")
    }

    fn description(&self) -> &str {
        "Fetches a web page or API response with an HTTP GET and returns its status and body \
         text. Only hosts on the server's allow-list can be fetched."
    }

    async fn call(
        &self,
        _ctx: &ExecutionContext,
        input: HttpGetInput,
    ) -> Result<ToolResult<HttpGetOutput>, ToolError> {
        let url = Url::parse(input.url.trim())
            .map_err(|err| ToolError::failed(format!("`{}` is not a URL: {err}", input.url)))?;
        self.allow
            .check(&url)
            .map_err(|reason| ToolError::failed(format!("cannot fetch `{url}`: {reason}")))?;
        // reqwest's message names the URL without credentials (refused above).
        let failed = |err: reqwest::Error| {
            ToolError::failed(format!("fetching `{url}` failed: {}", with_causes(&err)))
        };
        let response = self.client.get(url.clone()).send().await.map_err(failed)?;
        let status = response.status().as_u16();
        let final_url = response.url().to_string();
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        let (body, truncated) = read_capped(response, self.max_bytes)
            .await
            .map_err(failed)?;
        Ok(ToolResult::text(HttpGetOutput {
            url: final_url,
            status,
            content_type,
            body: String::from_utf8_lossy(&body).into_owned(),
            truncated,
        }))
    }
}

#[cfg(test)]
mod tests;

//! `http_get`: fetches a URL from an allow-list, with size and time limits ([`HttpGetPolicy`]).

use std::sync::Arc;
use std::time::Duration;

use reqwest::Url;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolchain::{ExecutionContext, Tool, ToolError, ToolResult, async_trait};

use crate::http::{AllowList, Allowed, checked_client, read_capped, with_causes};
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
        let check = Arc::clone(&allow);
        let client = checked_client(
            concat!("skein-http-get/", env!("CARGO_PKG_VERSION")),
            Duration::from_secs(policy.timeout_secs),
            move |url| check.check(url),
        )
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

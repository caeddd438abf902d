//! What the clients that fetch URLs (`http_get`, `web_search`, media fetching) share: the URL
//! checks (http or https, no credentials, an allow-list of hosts), a client that checks every
//! redirect again, reading a body up to a limit, and an error message that says why a request
//! failed.

use std::time::Duration;

use futures::StreamExt as _;
use reqwest::{Url, redirect};

use crate::HttpGetPolicyError;

/// `Ok` when `url` is http or https without credentials, else why not.
pub(crate) fn check_scheme(url: &Url) -> Result<(), String> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "only http and https URLs can be fetched, not `{}:`",
            url.scheme()
        ));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("URLs with credentials cannot be fetched".to_owned());
    }
    Ok(())
}

/// A client with a time limit for each request, that follows at most 5 redirects, each only
/// where `check` allows.
pub(crate) fn checked_client(
    user_agent: &'static str,
    timeout: Duration,
    check: impl Fn(&Url) -> Result<(), String> + Send + Sync + 'static,
) -> reqwest::Result<reqwest::Client> {
    checked_client_builder(user_agent, timeout, check).build()
}

/// [`checked_client`] before it is built, for a caller that adds to it.
pub(crate) fn checked_client_builder(
    user_agent: &'static str,
    timeout: Duration,
    check: impl Fn(&Url) -> Result<(), String> + Send + Sync + 'static,
) -> reqwest::ClientBuilder {
    let redirects = redirect::Policy::custom(move |attempt| {
        if attempt.previous().len() >= 5 {
            attempt.error("more than 5 redirects")
        } else if let Err(reason) = check(attempt.url()) {
            attempt.error(format!("redirect refused: {reason}"))
        } else {
            attempt.follow()
        }
    });
    providers::install_crypto_provider();
    reqwest::Client::builder()
        .redirect(redirects)
        .timeout(timeout)
        .user_agent(user_agent)
}

/// The body of `response`, at most `max` bytes, and whether more followed: reading stops at
/// the limit, so an endless or huge answer costs no more than `max` bytes of memory.
pub(crate) async fn read_capped(
    response: reqwest::Response,
    max: usize,
) -> Result<(Vec<u8>, bool), reqwest::Error> {
    let mut body = Vec::new();
    let mut chunks = response.bytes_stream();
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk?;
        let room = max - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return Ok((body, true));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body, false))
}

/// `error` and each of its causes, joined by `: `: reqwest's own message names only the step
/// that failed, the reason (a refused redirect, a timeout, a refused connection) is in its
/// sources.
pub(crate) fn with_causes(error: &dyn std::error::Error) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    message
}

/// One allow-list entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Allowed {
    /// Lowercase host; for a wildcard, the suffix after `*.`.
    host: String,
    wildcard: bool,
    port: Option<u16>,
}

impl Allowed {
    pub(crate) fn parse(entry: &str) -> Result<Self, HttpGetPolicyError> {
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

    pub(crate) fn matches(&self, host: &str, port: Option<u16>) -> bool {
        let host_ok = if self.wildcard {
            host.strip_suffix(self.host.as_str())
                .is_some_and(|prefix| prefix.ends_with('.') && prefix.len() > 1)
        } else {
            host == self.host
        };
        host_ok && self.port.is_none_or(|allowed| Some(allowed) == port)
    }
}

/// An allow-list of hosts, shared by a client and its redirect policy.
#[derive(Debug)]
pub(crate) struct AllowList(pub(crate) Vec<Allowed>);

impl AllowList {
    /// Whether `url`'s host and port are on the list.
    pub(crate) fn allows(&self, url: &Url) -> bool {
        let host = url.host_str().unwrap_or_default().to_ascii_lowercase();
        let port = url.port_or_known_default();
        self.0.iter().any(|allowed| allowed.matches(&host, port))
    }

    /// Whether `host` is on the list for some port.
    pub(crate) fn names_host(&self, host: &str) -> bool {
        let host = host.to_ascii_lowercase();
        self.0
            .iter()
            .any(|allowed| allowed.matches(&host, allowed.port))
    }

    /// `Ok` when `url` may be fetched, else why not (for the model).
    pub(crate) fn check(&self, url: &Url) -> Result<(), String> {
        check_scheme(url)?;
        if self.allows(url) {
            Ok(())
        } else {
            Err(format!(
                "host `{}` is not on this server's http_get allow-list",
                url.host_str().unwrap_or_default().to_ascii_lowercase()
            ))
        }
    }
}

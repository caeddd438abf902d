//! Fetching an image or file a client named by URL, for a provider that needs the bytes
//! (Gemini takes no `http` URL for media): [`MediaFetcher`].
//!
//! The rules are `http_get`'s — http or https only, no credentials, a size and a time limit,
//! every redirect checked again — with one more, because any client of the server can name any
//! URL: the host must be on public addresses (no loopback, private, link-local or other
//! internal ranges), checked on the addresses a name resolves to, so a name that points inside
//! the network is refused too. An operator lets chosen internal hosts through with
//! [`MediaFetchPolicy::allow_private`].
//!
//! ```
//! use tools::{MediaFetchPolicy, MediaFetcher};
//!
//! # async fn demo() {
//! let fetcher = MediaFetcher::new(&MediaFetchPolicy::default()).expect("the default policy is valid");
//! let error = fetcher.fetch("http://127.0.0.1:8080/cat.png").await.unwrap_err();
//! assert!(error.to_string().contains("loopback"));
//! # }
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(demo());
//! ```

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use reqwest::Url;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use serde::{Deserialize, Serialize};

use crate::HttpGetPolicyError;
use crate::http::{AllowList, Allowed, check_scheme, checked_client_builder, read_capped};

/// Limits of media fetching, and the internal hosts it may still reach.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MediaFetchPolicy {
    /// Hosts on private or loopback addresses that may be fetched all the same, in
    /// `http_get`'s allow-list syntax (`media.internal`, `*.corp.example`, `10.0.0.5:8080`).
    #[serde(default)]
    pub allow_private: Vec<String>,
    /// Largest file fetched, in bytes (default 20 MiB, Gemini's limit for inline data); a
    /// larger one is refused, never cut.
    #[serde(default = "default_max_bytes")]
    pub max_bytes: usize,
    /// Time limit for the whole request, body included, in seconds (default 30).
    #[serde(default = "default_timeout_secs")]
    pub timeout_secs: u64,
}

fn default_max_bytes() -> usize {
    20 * 1024 * 1024
}

fn default_timeout_secs() -> u64 {
    30
}

impl Default for MediaFetchPolicy {
    fn default() -> Self {
        MediaFetchPolicy {
            allow_private: Vec::new(),
            max_bytes: default_max_bytes(),
            timeout_secs: default_timeout_secs(),
        }
    }
}

/// Why a URL was not fetched. Each message names the URL and what to do.
#[derive(Debug, thiserror::Error)]
pub enum MediaFetchError {
    /// The policy cannot be used.
    #[error("media fetching is misconfigured: {0}")]
    Policy(#[from] HttpGetPolicyError),
    /// Not a URL.
    #[error("`{url}` is not a URL: {reason}")]
    BadUrl {
        /// What was given.
        url: String,
        /// Why it does not parse.
        reason: String,
    },
    /// The URL breaks a rule: its scheme, credentials in it, or an internal address.
    #[error("cannot fetch `{url}`: {reason}; send the bytes inline as a `data:` URL instead")]
    Refused {
        /// The URL.
        url: String,
        /// The rule it breaks.
        reason: String,
    },
    /// The body is larger than the limit.
    #[error("`{url}` is larger than the {limit}-byte limit for fetched media; send a smaller file")]
    TooLarge {
        /// The URL.
        url: String,
        /// [`MediaFetchPolicy::max_bytes`].
        limit: usize,
    },
    /// The server answered with an error status.
    #[error("fetching `{url}` answered HTTP {status}; check that the URL is public and current")]
    Status {
        /// The URL.
        url: String,
        /// The status code.
        status: u16,
    },
    /// The request failed: a refused redirect, a timeout, a refused connection.
    #[error("fetching `{url}` failed: {reason}")]
    Failed {
        /// The URL.
        url: String,
        /// Why, with every cause.
        reason: String,
    },
}

/// A fetched file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FetchedMedia {
    /// The URL finally fetched (after redirects).
    pub url: String,
    /// The `Content-Type` header without its parameters, if any.
    pub content_type: Option<String>,
    /// The body.
    pub bytes: Vec<u8>,
}

/// Fetches media by URL under a [`MediaFetchPolicy`].
#[derive(Clone, Debug)]
pub struct MediaFetcher {
    client: reqwest::Client,
    rules: Arc<Rules>,
    max_bytes: usize,
}

impl MediaFetcher {
    /// A fetcher under `policy`.
    ///
    /// # Errors
    ///
    /// [`MediaFetchError::Policy`] for an `allow_private` entry that is not a host, or a
    /// client that cannot be built.
    pub fn new(policy: &MediaFetchPolicy) -> Result<Self, MediaFetchError> {
        let rules = Arc::new(Rules(AllowList(
            policy
                .allow_private
                .iter()
                .map(|entry| Allowed::parse(entry))
                .collect::<Result<_, _>>()?,
        )));
        let check = Arc::clone(&rules);
        let client = checked_client_builder(
            concat!("skein-media-fetch/", env!("CARGO_PKG_VERSION")),
            Duration::from_secs(policy.timeout_secs),
            move |url| check.check(url),
        )
        .dns_resolver(Arc::new(PublicResolver(Arc::clone(&rules))))
        .build()
        .map_err(|err| HttpGetPolicyError::Client(err.to_string()))?;
        Ok(MediaFetcher {
            client,
            rules,
            max_bytes: policy.max_bytes,
        })
    }

    /// The body of `url`.
    ///
    /// # Errors
    ///
    /// A [`MediaFetchError`] naming the URL: refused by the rules, too large, an error status,
    /// or a failed request.
    pub async fn fetch(&self, url: &str) -> Result<FetchedMedia, MediaFetchError> {
        let parsed = Url::parse(url.trim()).map_err(|err| MediaFetchError::BadUrl {
            url: url.to_owned(),
            reason: err.to_string(),
        })?;
        self.rules
            .check(&parsed)
            .map_err(|reason| MediaFetchError::Refused {
                url: url.to_owned(),
                reason,
            })?;
        let failed = |err: reqwest::Error| MediaFetchError::Failed {
            url: url.to_owned(),
            reason: crate::http::with_causes(&err),
        };
        let response = self.client.get(parsed).send().await.map_err(failed)?;
        let status = response.status();
        if !status.is_success() {
            return Err(MediaFetchError::Status {
                url: url.to_owned(),
                status: status.as_u16(),
            });
        }
        let final_url = response.url().to_string();
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.split(';').next())
            .map(|value| value.trim().to_ascii_lowercase())
            .filter(|value| !value.is_empty());
        let (bytes, truncated) = read_capped(response, self.max_bytes)
            .await
            .map_err(failed)?;
        if truncated {
            return Err(MediaFetchError::TooLarge {
                url: url.to_owned(),
                limit: self.max_bytes,
            });
        }
        Ok(FetchedMedia {
            url: final_url,
            content_type,
            bytes,
        })
    }
}

/// The hosts allowed although internal.
#[derive(Debug)]
struct Rules(AllowList);

impl Rules {
    /// `Ok` when `url` may be fetched as far as its text tells (a name's addresses are checked
    /// when it resolves), else why not.
    fn check(&self, url: &Url) -> Result<(), String> {
        check_scheme(url)?;
        if self.0.allows(url) {
            return Ok(());
        }
        let Some(host) = url.host_str() else {
            return Err("the URL names no host".to_owned());
        };
        let literal = host.trim_start_matches('[').trim_end_matches(']');
        match literal.parse::<IpAddr>() {
            Ok(ip) => public(ip),
            Err(_) => {
                let name = host.to_ascii_lowercase();
                if name == "localhost" || name.ends_with(".localhost") {
                    Err(format!("`{name}` is a loopback address"))
                } else if self.0.names_host(&name) {
                    Err(format!(
                        "`{name}` is allowed only on the ports the operator listed"
                    ))
                } else {
                    Ok(())
                }
            }
        }
    }
}

/// Resolves names as the system does, and refuses one with an internal address unless the
/// operator allowed it: the client connects only to the addresses checked here.
struct PublicResolver(Arc<Rules>);

impl Resolve for PublicResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_owned();
        let allowed = self.0.0.names_host(&host);
        Box::pin(async move {
            let addrs: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            if !allowed && let Some(reason) = addrs.iter().find_map(|a| public(a.ip()).err()) {
                return Err(format!("`{host}` resolves to an internal address: {reason}").into());
            }
            Ok(Box::new(addrs.into_iter()) as Addrs)
        })
    }
}

/// `Ok` for an address on the public internet, else which kind of internal address it is.
fn public(ip: IpAddr) -> Result<(), String> {
    let kind = match ip {
        IpAddr::V4(ip) => internal_v4(ip),
        IpAddr::V6(ip) => match ip.to_ipv4_mapped() {
            Some(v4) => internal_v4(v4),
            None => internal_v6(ip),
        },
    };
    match kind {
        Some(kind) => Err(format!("{ip} is a {kind} address")),
        None => Ok(()),
    }
}

fn internal_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, ..] = ip.octets();
    if ip.is_loopback() {
        Some("loopback")
    } else if ip.is_private() || (a == 100 && (64..128).contains(&b)) {
        // 100.64.0.0/10: carrier-grade NAT, as internal as the private ranges.
        Some("private")
    } else if ip.is_link_local() {
        Some("link-local")
    } else if ip.is_unspecified() || a == 0 || ip.is_broadcast() || a >= 240 {
        Some("reserved")
    } else if ip.is_multicast() {
        Some("multicast")
    } else if ip.is_documentation() || (a == 198 && (b == 18 || b == 19)) || (a == 192 && b == 0) {
        Some("special-purpose")
    } else {
        None
    }
}

fn internal_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let first = ip.segments()[0];
    if ip.is_loopback() {
        Some("loopback")
    } else if ip.is_unique_local() {
        Some("private")
    } else if ip.is_unicast_link_local() {
        Some("link-local")
    } else if ip.is_unspecified() {
        Some("reserved")
    } else if ip.is_multicast() {
        Some("multicast")
    } else if first == 0x2001 && ip.segments()[1] == 0xdb8 || first == 0x64 {
        // Documentation, and NAT64 prefixes that reach IPv4 addresses behind the gateway.
        Some("special-purpose")
    } else {
        None
    }
}

#[cfg(test)]
mod tests;

//! [`ServerConfig`]: what a server allows (tokens, limits, timeouts, origins), with the
//! [`ServiceConfig`] of the service it serves flattened into it.
//!
//! Deserialisable (the CLI reads it from a YAML file), with every field defaulted: one flat
//! YAML map holds the HTTP settings and the service's alike. Provider keys are never part of
//! it: they come from the environment ([`ProviderKeys::from_env`](service::keys::ProviderKeys::from_env)).

use std::time::Duration;

use serde::Deserialize;
use service::{Secret, ServiceConfig};

/// Default largest request body, in bytes (base64 images make requests big).
pub const DEFAULT_BODY_LIMIT: usize = 8 * 1024 * 1024;
/// Default number of responses one caller may stream at once.
pub const DEFAULT_CONCURRENCY_PER_CALLER: usize = 8;
/// Default time a client has to send a request's headers, in seconds.
pub const DEFAULT_HEADER_READ_TIMEOUT_SECS: u64 = 10;
/// Default time a client has to send a request's body once its headers are in, in seconds.
pub const DEFAULT_BODY_READ_TIMEOUT_SECS: u64 = 30;
/// Default longest stall of a write to a client that stopped reading, in seconds.
pub const DEFAULT_IDLE_TIMEOUT_SECS: u64 = 60;
/// Default number of client connections served at once.
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;

/// How a server runs. `ServerConfig::default()` is a loopback-only server on an in-memory
/// store with the calculator as its only tool.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerConfig {
    /// Bearer tokens clients must send (`Authorization: Bearer …`). None: only loopback
    /// clients are served.
    pub tokens: Vec<Secret>,
    /// Largest request body in bytes; larger ones get 413.
    pub body_limit: usize,
    /// Responses one caller (one token, or all loopback clients together when there are no
    /// tokens) may stream at once; more get 429 with `Retry-After`.
    pub concurrency_per_caller: usize,
    /// The `Retry-After` of a 429, in seconds.
    pub retry_after_secs: u64,
    /// On shutdown, how long in-flight responses may run before they are cancelled, in
    /// seconds.
    pub shutdown_grace_secs: u64,
    /// Seconds a client has to send a request's headers, counted from when the server waits
    /// for them: a new connection, or a kept-alive one after its last answer (so it is also how
    /// long an idle kept-alive connection stays open). The connection is closed after it.
    pub header_read_timeout_secs: u64,
    /// Seconds a client has to send a request's whole body once its headers are in; later
    /// bodies are answered 408.
    pub body_read_timeout_secs: u64,
    /// Seconds a write to a client may stall (a client that stopped reading its answer)
    /// before the connection is closed and its run cancelled.
    pub idle_timeout_secs: u64,
    /// Client connections served at once; more are answered 503 and closed.
    pub max_connections: usize,
    /// Extra `Host` names (with or without a port) a server without tokens accepts, besides
    /// loopback addresses (`127.0.0.0/8`, `[::1]`) and `localhost` (and its subdomains), which
    /// is where a tokenless server listens. A request naming any other host is refused (a
    /// DNS-rebinding web page).
    pub allowed_hosts: Vec<String>,
    /// Web origins (`https://app.example.com`) allowed to call the API from a browser (CORS).
    /// None by default: a request with an `Origin` header is refused unless it names one of
    /// these (`*` allows every origin).
    pub cors_origins: Vec<String>,
    /// What the service offers: the store, endpoints, tools, agents, MCP servers, skills and
    /// knowledge bases. Its fields sit beside the ones above in a configuration file.
    #[serde(flatten)]
    pub service: ServiceConfig,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            tokens: Vec::new(),
            body_limit: DEFAULT_BODY_LIMIT,
            concurrency_per_caller: DEFAULT_CONCURRENCY_PER_CALLER,
            retry_after_secs: 1,
            shutdown_grace_secs: 30,
            header_read_timeout_secs: DEFAULT_HEADER_READ_TIMEOUT_SECS,
            body_read_timeout_secs: DEFAULT_BODY_READ_TIMEOUT_SECS,
            idle_timeout_secs: DEFAULT_IDLE_TIMEOUT_SECS,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            allowed_hosts: Vec::new(),
            cors_origins: Vec::new(),
            service: ServiceConfig::default(),
        }
    }
}

impl ServerConfig {
    /// The shutdown grace period.
    pub fn shutdown_grace(&self) -> Duration {
        Duration::from_secs(self.shutdown_grace_secs)
    }

    /// The header read timeout ([`header_read_timeout_secs`](Self::header_read_timeout_secs)).
    pub fn header_read_timeout(&self) -> Duration {
        Duration::from_secs(self.header_read_timeout_secs)
    }

    /// The body read timeout ([`body_read_timeout_secs`](Self::body_read_timeout_secs)).
    pub fn body_read_timeout(&self) -> Duration {
        Duration::from_secs(self.body_read_timeout_secs)
    }

    /// A redactor that knows every secret this configuration gives the server: the bearer
    /// tokens, and the service's ([`ServiceConfig::redactor`]: provider keys, MCP servers'
    /// tokens, the built-in tools' keys). Log lines and tool results go through it, so none of
    /// these is shown to anyone.
    pub fn redactor(&self) -> messages::Redactor {
        let mut redactor = self.service.redactor();
        for token in &self.tokens {
            redactor.add(token.expose());
        }
        redactor
    }

    /// The write stall timeout ([`idle_timeout_secs`](Self::idle_timeout_secs)).
    pub fn idle_timeout(&self) -> Duration {
        Duration::from_secs(self.idle_timeout_secs)
    }

    /// The `Retry-After` delay of a 429.
    pub fn retry_after(&self) -> Duration {
        Duration::from_secs(self.retry_after_secs)
    }
}

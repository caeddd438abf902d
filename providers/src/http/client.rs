//! The reqwest clients models send with: one per tokio runtime and connect timeout, built over
//! one TLS configuration per process.
//!
//! What is costly to build is the TLS configuration: its verifier reads the system's root
//! certificates (several milliseconds). That is built once and shared. A connection, though,
//! belongs to the runtime it was opened on: its I/O task runs there. A keep-alive connection
//! handed to a request on another runtime is driven by a runtime that may be idle (the
//! request then waits for nothing) or shutting down (the request fails with "dispatch task is
//! gone"). So each runtime gets its own client and connection pool, dropped with the runtime.
//!
//! No client follows redirects: a redirect would carry the key headers (`x-api-key`,
//! `x-goog-api-key`, and `Authorization` on later hops) and, on a 307 or 308, the whole
//! conversation to wherever the provider points. The 3xx answer is returned instead, and
//! becomes [`ProviderError::Redirected`].

use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use tokio::runtime::{self, Handle};

use crate::ProviderError;

/// The clients of live runtimes, by runtime and connect timeout. A process has few runtimes
/// alive at once and few distinct connect timeouts: the list stays short.
static CLIENTS: Mutex<Vec<Client>> = Mutex::new(Vec::new());

/// One runtime's client for one connect timeout.
struct Client {
    runtime: runtime::Id,
    connect: Duration,
    client: reqwest::Client,
}

/// The client for requests on the current tokio runtime with this connect timeout.
pub(super) fn for_current_runtime(connect: Duration) -> Result<reqwest::Client, ProviderError> {
    let handle = Handle::try_current().map_err(|_| {
        ProviderError::config(
            "a model call needs a tokio runtime with I/O and timers enabled; run it inside one",
        )
    })?;
    let runtime = handle.id();
    let mut clients = CLIENTS.lock().unwrap_or_else(PoisonError::into_inner);
    let found = clients
        .iter()
        .find(|entry| entry.runtime == runtime && entry.connect == connect);
    if let Some(entry) = found {
        return Ok(entry.client.clone());
    }
    let client = build(tls_config()?, connect)?;
    if !clients.iter().any(|entry| entry.runtime == runtime) {
        // The runtime drops this task when it shuts down, and with it the runtime's clients:
        // their connections cannot be used anywhere else, and runtime ids are never reused.
        let forget = ForgetOnDrop(runtime);
        handle.spawn(async move {
            let _forget = forget;
            std::future::pending::<()>().await;
        });
    }
    clients.push(Client {
        runtime,
        connect,
        client: client.clone(),
    });
    Ok(client)
}

/// Removes a runtime's clients from [`CLIENTS`] when dropped.
struct ForgetOnDrop(runtime::Id);

impl Drop for ForgetOnDrop {
    fn drop(&mut self) {
        let mut clients = CLIENTS.lock().unwrap_or_else(PoisonError::into_inner);
        clients.retain(|entry| entry.runtime != self.0);
    }
}

/// The process's TLS configuration (rustls with the `ring` provider, the platform's roots),
/// built on first use. Blocking the first time: it reads the system's root certificates.
pub(super) fn tls_config() -> Result<Arc<rustls::ClientConfig>, ProviderError> {
    static CONFIG: OnceLock<Result<Arc<rustls::ClientConfig>, String>> = OnceLock::new();
    CONFIG
        .get_or_init(build_tls_config)
        .clone()
        .map_err(|reason| {
            ProviderError::config(format!(
                "cannot build the HTTP client's TLS setup: {reason}"
            ))
        })
}

fn build_tls_config() -> Result<Arc<rustls::ClientConfig>, String> {
    use rustls_platform_verifier::BuilderVerifierExt as _;
    super::install_crypto_provider();
    let provider = rustls::crypto::CryptoProvider::get_default()
        .cloned()
        .unwrap_or_else(|| Arc::new(rustls::crypto::ring::default_provider()));
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .and_then(|builder| builder.with_platform_verifier())
        .map_err(|err| format!("the system's root certificates cannot be used ({err})"))?
        .with_no_client_auth();
    // The clients speak HTTP/1.1 only (reqwest is built without HTTP/2).
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

fn build(
    tls: Arc<rustls::ClientConfig>,
    connect: Duration,
) -> Result<reqwest::Client, ProviderError> {
    reqwest::Client::builder()
        .tls_backend_preconfigured(rustls::ClientConfig::clone(&tls))
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(connect)
        .user_agent(concat!("skein-providers/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|err| ProviderError::config(format!("cannot build the HTTP client: {err}")))
}

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

/// The clients of live runtimes, by runtime, connect timeout and transport. A process has few
/// runtimes alive at once and few distinct connect timeouts: the list stays short.
static CLIENTS: Mutex<Vec<Client>> = Mutex::new(Vec::new());

/// One runtime's client for one connect timeout and transport.
struct Client {
    runtime: runtime::Id,
    connect: Duration,
    transport: Transport,
    client: reqwest::Client,
}

/// Whether a request's URL needs TLS. A model served over plain HTTP (a local server) is
/// called by a client that never reads the system's root certificates: they cost several
/// milliseconds of CPU at the first request, and no redirect is followed that could lead
/// to an `https://` URL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Transport {
    /// `http://`.
    Plain,
    /// `https://` (and anything else, which the client then refuses).
    Tls,
}

impl Transport {
    /// The transport `url` is sent over.
    pub(super) fn of(url: &str) -> Self {
        let plain = url
            .get(..7)
            .is_some_and(|scheme| scheme.eq_ignore_ascii_case("http://"));
        if plain {
            Transport::Plain
        } else {
            Transport::Tls
        }
    }
}

/// The client for requests over `transport` on the current tokio runtime with this connect
/// timeout.
pub(super) fn for_current_runtime(
    connect: Duration,
    transport: Transport,
) -> Result<reqwest::Client, ProviderError> {
    let handle = Handle::try_current().map_err(|_| {
        ProviderError::config(
            "a model call needs a tokio runtime with I/O and timers enabled; run it inside one",
        )
    })?;
    let runtime = handle.id();
    if let Some(client) = find(&lock(), runtime, connect, transport) {
        return Ok(client);
    }
    // Built without the lock held: the first TLS setup reads the system's root certificates.
    let tls = match transport {
        Transport::Plain => plain_tls_config()?,
        Transport::Tls => tls_config()?,
    };
    let built = build(tls, connect)?;
    let (client, first_of_runtime) = {
        let mut clients = lock();
        if let Some(client) = find(&clients, runtime, connect, transport) {
            // Another request of this runtime got there first; use its client and pool.
            return Ok(client);
        }
        let first = !clients.iter().any(|entry| entry.runtime == runtime);
        clients.push(Client {
            runtime,
            connect,
            transport,
            client: built.clone(),
        });
        (built, first)
    };
    if first_of_runtime {
        // The runtime drops this task when it shuts down, and with it the runtime's clients:
        // their connections cannot be used anywhere else, and runtime ids are never reused.
        // Spawned without the lock held: a runtime already shutting down drops the task at
        // once, and `ForgetOnDrop` takes the lock.
        let forget = ForgetOnDrop(runtime);
        drop(handle.spawn(async move {
            let _forget = forget;
            std::future::pending::<()>().await;
        }));
    }
    Ok(client)
}

fn lock() -> std::sync::MutexGuard<'static, Vec<Client>> {
    CLIENTS.lock().unwrap_or_else(PoisonError::into_inner)
}

fn find(
    clients: &[Client],
    runtime: runtime::Id,
    connect: Duration,
    transport: Transport,
) -> Option<reqwest::Client> {
    clients
        .iter()
        .find(|entry| {
            entry.runtime == runtime && entry.connect == connect && entry.transport == transport
        })
        .map(|entry| entry.client.clone())
}

/// Removes a runtime's clients from [`CLIENTS`] when dropped.
struct ForgetOnDrop(runtime::Id);

impl Drop for ForgetOnDrop {
    fn drop(&mut self) {
        let gone: Vec<Client> = {
            let mut clients = lock();
            let (gone, kept) = std::mem::take(&mut *clients)
                .into_iter()
                .partition(|entry| entry.runtime == self.0);
            *clients = kept;
            gone
        };
        // The clients (and their pools) are dropped here, without the lock held.
        drop(gone);
    }
}

/// The process's TLS configuration (rustls with the `ring` provider, the platform's roots),
/// built on first use. Blocking the first time: it reads the system's root certificates.
pub(super) fn tls_config() -> Result<Arc<rustls::ClientConfig>, ProviderError> {
    static CONFIG: OnceLock<Result<Arc<rustls::ClientConfig>, String>> = OnceLock::new();
    built_once(&CONFIG, build_tls_config)
}

/// The TLS configuration of a client for `http://` URLs only: no root certificates, so none
/// are read (reqwest would otherwise build its own configuration, with them).
fn plain_tls_config() -> Result<Arc<rustls::ClientConfig>, ProviderError> {
    static CONFIG: OnceLock<Result<Arc<rustls::ClientConfig>, String>> = OnceLock::new();
    built_once(&CONFIG, || {
        rustls::ClientConfig::builder_with_provider(crypto_provider())
            .with_safe_default_protocol_versions()
            .map(|builder| {
                let builder = builder.with_root_certificates(rustls::RootCertStore::empty());
                Arc::new(builder.with_no_client_auth())
            })
            .map_err(|err| err.to_string())
    })
}

/// The configuration `config` keeps, built by `build` on first use; a setup that cannot be
/// built fails every call the same way.
fn built_once(
    config: &'static OnceLock<Result<Arc<rustls::ClientConfig>, String>>,
    build: impl FnOnce() -> Result<Arc<rustls::ClientConfig>, String>,
) -> Result<Arc<rustls::ClientConfig>, ProviderError> {
    config.get_or_init(build).clone().map_err(|reason| {
        ProviderError::config(format!(
            "cannot build the HTTP client's TLS setup: {reason}"
        ))
    })
}

/// The process's crypto provider (rustls's `ring` one, installed as the default unless
/// another was).
fn crypto_provider() -> Arc<rustls::crypto::CryptoProvider> {
    super::install_crypto_provider();
    rustls::crypto::CryptoProvider::get_default()
        .cloned()
        .unwrap_or_else(|| Arc::new(rustls::crypto::ring::default_provider()))
}

fn build_tls_config() -> Result<Arc<rustls::ClientConfig>, String> {
    use rustls_platform_verifier::BuilderVerifierExt as _;
    let provider = crypto_provider();
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

#[cfg(test)]
mod tests {
    use super::*;

    fn clients_of(runtime: runtime::Id) -> usize {
        lock()
            .iter()
            .filter(|entry| entry.runtime == runtime)
            .count()
    }

    #[test]
    fn only_http_urls_go_without_tls() {
        for plain in ["http://127.0.0.1:8080/v1", "HTTP://localhost/v1/chat"] {
            assert_eq!(Transport::of(plain), Transport::Plain, "{plain}");
        }
        for tls in [
            "https://api.openai.com/v1",
            "http:/x",
            "",
            "ftp://x",
            "httpx://y",
        ] {
            assert_eq!(Transport::of(tls), Transport::Tls, "{tls}");
        }
    }

    #[test]
    fn plain_and_tls_clients_are_kept_apart() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        let connect = Duration::from_secs(4);
        runtime.block_on(async {
            for_current_runtime(connect, Transport::Plain).expect("a plain client");
            for_current_runtime(connect, Transport::Tls).expect("a TLS client");
            for_current_runtime(connect, Transport::Plain).expect("the plain client again");
        });
        let id = runtime.handle().id();
        let kept: Vec<Transport> = lock()
            .iter()
            .filter(|entry| entry.runtime == id && entry.connect == connect)
            .map(|entry| entry.transport)
            .collect();
        assert_eq!(kept, [Transport::Plain, Transport::Tls]);
    }

    #[test]
    fn a_runtime_has_its_own_clients_until_it_shuts_down() {
        let runtime = || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime")
        };
        let (first, second) = (runtime(), runtime());
        let connect = Duration::from_secs(3);
        let client_of = |runtime: &tokio::runtime::Runtime| {
            runtime.block_on(async {
                for_current_runtime(connect, Transport::Tls).expect("a client")
            });
            runtime.handle().id()
        };
        let first_id = client_of(&first);
        let second_id = client_of(&second);
        client_of(&first);
        assert_ne!(first_id, second_id);
        assert_eq!((clients_of(first_id), clients_of(second_id)), (1, 1));
        drop(first);
        assert_eq!((clients_of(first_id), clients_of(second_id)), (0, 1));
        drop(second);
        assert_eq!(clients_of(second_id), 0);
    }
}

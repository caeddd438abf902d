//! [`App`]: what every handler shares, built and checked once from a [`ServerConfig`]: the
//! HTTP settings and layers, around the [`Service`] that answers.

use service::{ConcurrencyLimit, Service};
use std::time::Instant;

use crate::api::auth::Auth;
use crate::api::error::ServerError;
use crate::api::guard::Guard;
use crate::config::ServerConfig;

/// What every handler shares.
#[derive(Debug)]
pub(crate) struct App {
    pub(crate) config: ServerConfig,
    pub(crate) service: Service,
    pub(crate) auth: Auth,
    pub(crate) limit: ConcurrencyLimit,
    pub(crate) started: Instant,
    pub(crate) guard: std::sync::Arc<Guard>,
    /// CORS for the configured origins (`None`: no cross-origin callers).
    pub(crate) cors: Option<tower_http::cors::CorsLayer>,
}

impl App {
    /// The state for `config` around `service`.
    pub(crate) fn new(config: ServerConfig, service: Service) -> Result<Self, ServerError> {
        Ok(App {
            auth: Auth::new(&config.tokens),
            // Counted across replicas with a PostgreSQL store; a dead replica's slots free
            // themselves as its run leases expire.
            limit: service.concurrency_limit(
                config.concurrency_per_caller,
                service.config().runs.lease_ttl,
            ),
            started: Instant::now(),
            guard: std::sync::Arc::new(Guard::new(&config)),
            cors: crate::api::guard::cors(&config)?,
            service,
            config,
        })
    }
}

/// Refuses HTTP settings under which no request could be served; the service checks its own
/// half of the configuration when it is built.
pub(crate) fn check(config: &ServerConfig) -> Result<(), ServerError> {
    if config.concurrency_per_caller == 0 {
        return Err(ServerError::Config(
            "`concurrency_per_caller` is 0, so no request could ever be served".to_owned(),
        ));
    }
    for (field, value) in [
        ("header_read_timeout_secs", config.header_read_timeout_secs),
        ("body_read_timeout_secs", config.body_read_timeout_secs),
        ("idle_timeout_secs", config.idle_timeout_secs),
    ] {
        if value == 0 {
            return Err(ServerError::Config(format!(
                "`{field}` is 0, so every client would time out at once; give a number of \
                 seconds of at least 1"
            )));
        }
    }
    if config.max_connections == 0 {
        return Err(ServerError::Config(
            "`max_connections` is 0, so no client could ever connect".to_owned(),
        ));
    }
    crate::api::guard::cors(config)?;
    Ok(())
}

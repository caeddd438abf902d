//! How Skein's PostgreSQL stores connect (feature `postgres`): the one place that reads a
//! connection URL, sets up TLS and builds the pool, for the conversation store
//! (`PostgresStore`) and the knowledge bases (`knowledge-base`'s `PostgresKnowledge`) alike.
//!
//! # TLS
//!
//! TLS is rustls with the `ring` provider, the same stack the provider clients use. The URL's
//! `sslmode` says what is required, as libpq documents it:
//!
//! | `sslmode`          | encrypted                        | the server's certificate is checked                           |
//! |--------------------|----------------------------------|---------------------------------------------------------------|
//! | `disable`          | never                            | no                                                            |
//! | `prefer` (default) | when the server offers TLS       | no                                                            |
//! | `require`          | always (refused without TLS)     | no; with `sslrootcert`, as `verify-ca`                        |
//! | `verify-ca`        | always                           | signed by a trusted root                                      |
//! | `verify-full`      | always                           | signed by a trusted root, and issued for the host connected to |
//!
//! The trusted roots are the certificates in the PEM file `sslrootcert` names, or the
//! platform's roots when it is absent or `system` (libpq reads `~/.postgresql/root.crt`
//! instead; Skein does not look there). Client certificates (`sslcert`, `sslkey`) are not
//! supported. `allow` is refused: it would send the password in clear to a server that asks
//! for it.
//!
//! Both URL forms are read: `postgres://…?sslmode=verify-full&sslrootcert=/etc/ca.pem`
//! (values percent-encoded) and `host=… sslmode=verify-full sslrootcert=/etc/ca.pem` (these two
//! values unquoted, without spaces).
//!
//! ```
//! use conversation_tree::pg_connect::{PgConnect, SslMode};
//!
//! let connect = PgConnect::parse("postgres://skein@db.internal/skein?sslmode=verify-full")?;
//! assert_eq!(connect.ssl_mode(), SslMode::VerifyFull);
//! assert_eq!(connect.describe(), "PostgreSQL database \"skein\" on db.internal:5432");
//!
//! // Without sslmode, TLS is used when the server offers it, as libpq does.
//! assert_eq!(PgConnect::parse("postgres://localhost/skein")?.ssl_mode(), SslMode::Prefer);
//! assert!(PgConnect::parse("postgres://localhost/skein?sslmode=sometimes").is_err());
//! # Ok::<(), conversation_tree::pg_connect::ConnectError>(())
//! ```

mod url;
mod verify;

use std::path::PathBuf;
use std::sync::Arc;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use tokio_postgres_rustls::MakeRustlsConnect;

/// What a connection requires of TLS: libpq's `sslmode` values but `allow`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SslMode {
    /// Never TLS.
    Disable,
    /// TLS when the server offers it, without checking its certificate.
    #[default]
    Prefer,
    /// Always TLS, without checking the certificate (unless `sslrootcert` is given: then as
    /// [`SslMode::VerifyCa`]).
    Require,
    /// Always TLS, with a certificate signed by a trusted root.
    VerifyCa,
    /// Always TLS, with a certificate signed by a trusted root and issued for the host.
    VerifyFull,
}

impl SslMode {
    /// The `sslmode` value.
    pub fn as_str(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }
}

/// Why a connection URL cannot be used. The messages never hold the password.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// The URL is not one tokio-postgres reads.
    #[error("the PostgreSQL connection URL cannot be read: {reason}")]
    Url {
        /// tokio-postgres's reason.
        reason: String,
    },
    /// `sslmode` has a value Skein does not offer.
    #[error(
        "the PostgreSQL connection URL has sslmode={value}; use disable, prefer, require, \
         verify-ca or verify-full"
    )]
    SslMode {
        /// The value found.
        value: String,
    },
    /// An option of the URL that Skein does not support.
    #[error(
        "the PostgreSQL connection URL sets {option}, which Skein does not support (client \
         certificates are not offered); remove it"
    )]
    Unsupported {
        /// The option.
        option: &'static str,
    },
    /// The `sslrootcert` file holds no usable certificate.
    #[error(
        "sslrootcert {path} cannot be used: {reason}; name a PEM file holding the CA \
         certificate that signed the server's certificate"
    )]
    RootCert {
        /// The file named.
        path: PathBuf,
        /// What was wrong with it.
        reason: String,
    },
    /// The platform's root certificates cannot be used.
    #[error(
        "the platform's root certificates cannot be used ({reason}); name one with sslrootcert"
    )]
    PlatformRoots {
        /// rustls's reason.
        reason: String,
    },
    /// The pool cannot be built.
    #[error("the PostgreSQL connection pool cannot be built: {reason}")]
    Pool {
        /// deadpool's reason.
        reason: String,
    },
}

/// A connection URL read: tokio-postgres's configuration and the TLS it requires.
#[derive(Clone)]
pub struct PgConnect {
    config: tokio_postgres::Config,
    mode: SslMode,
    root_cert: Option<PathBuf>,
    tls: MakeRustlsConnect,
}

impl std::fmt::Debug for PgConnect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgConnect")
            .field("location", &self.describe())
            .field("sslmode", &self.mode)
            .field("sslrootcert", &self.root_cert)
            .finish_non_exhaustive()
    }
}

impl PgConnect {
    /// Reads `url` (either form) and sets up the TLS its `sslmode` and `sslrootcert` ask for,
    /// reading the root certificate file now.
    ///
    /// # Errors
    ///
    /// A [`ConnectError`] naming what is wrong: the URL, the `sslmode` value, an unsupported
    /// option, or the root certificates.
    pub fn parse(url: &str) -> Result<Self, ConnectError> {
        let parsed = url::split(url)?;
        let mut config: tokio_postgres::Config =
            parsed
                .rest
                .parse()
                .map_err(|err: tokio_postgres::Error| ConnectError::Url {
                    reason: err.to_string(),
                })?;
        let mode = parsed.mode.unwrap_or_default();
        config.ssl_mode(match mode {
            SslMode::Disable => tokio_postgres::config::SslMode::Disable,
            SslMode::Prefer => tokio_postgres::config::SslMode::Prefer,
            _ => tokio_postgres::config::SslMode::Require,
        });
        let tls = verify::connector(mode, parsed.root_cert.as_deref())?;
        Ok(PgConnect {
            config,
            mode,
            root_cert: parsed.root_cert,
            tls,
        })
    }

    /// The `sslmode` in effect.
    pub fn ssl_mode(&self) -> SslMode {
        self.mode
    }

    /// tokio-postgres's configuration (without the TLS options, which [`PgConnect`] applies).
    pub fn config(&self) -> &tokio_postgres::Config {
        &self.config
    }

    /// The configuration to change (options, timeouts) before connecting.
    pub fn config_mut(&mut self) -> &mut tokio_postgres::Config {
        &mut self.config
    }

    /// The TLS connector for tokio-postgres.
    pub fn tls(&self) -> MakeRustlsConnect {
        self.tls.clone()
    }

    /// "PostgreSQL database "D" on H:P": where it connects, without credentials.
    pub fn describe(&self) -> String {
        let host = self
            .config
            .get_hosts()
            .first()
            .map(|host| match host {
                tokio_postgres::config::Host::Tcp(name) => name.clone(),
                tokio_postgres::config::Host::Unix(path) => path.display().to_string(),
            })
            .unwrap_or_else(|| "localhost".to_owned());
        let port = self.config.get_ports().first().copied().unwrap_or(5432);
        let dbname = self.config.get_dbname().unwrap_or("(default)");
        format!("PostgreSQL database {dbname:?} on {host}:{port}")
    }

    /// One connection, its driving task spawned on the current runtime.
    ///
    /// # Errors
    ///
    /// The driver's error with its causes ([`WithCauses`]): the server cannot be reached,
    /// refuses the login, or fails the TLS handshake or the certificate check.
    pub async fn connect(&self) -> Result<tokio_postgres::Client, WithCauses> {
        let (client, connection) = self
            .config
            .connect(self.tls())
            .await
            .map_err(|err| WithCauses::new(&err))?;
        tokio::spawn(connection);
        Ok(client)
    }

    /// A pool of at most `max_size` connections.
    ///
    /// # Errors
    ///
    /// [`ConnectError::Pool`] when deadpool cannot build it.
    pub fn pool(&self, max_size: usize) -> Result<Pool, ConnectError> {
        let manager = Manager::from_config(
            self.config.clone(),
            self.tls(),
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        Pool::builder(manager)
            .max_size(max_size)
            .build()
            .map_err(|err| ConnectError::Pool {
                reason: err.to_string(),
            })
    }
}

/// An error shown with every cause of its chain: a connection failure's own message omits
/// what failed (a TLS handshake says only "error performing TLS handshake", not that the
/// certificate was refused, nor why).
#[derive(Debug)]
pub struct WithCauses(String);

impl WithCauses {
    /// `err` and its causes, each once, joined with `: `.
    pub fn new(err: &(dyn std::error::Error + 'static)) -> Self {
        let mut text = err.to_string();
        let mut source = err.source();
        while let Some(cause) = source {
            let cause_text = cause.to_string();
            // Some errors repeat their cause in their own message.
            if !text.contains(&cause_text) {
                text.push_str(": ");
                text.push_str(&cause_text);
            }
            source = cause.source();
        }
        WithCauses(text)
    }
}

impl std::fmt::Display for WithCauses {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for WithCauses {}

/// The process's crypto provider, or rustls's `ring` one.
fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    rustls::crypto::CryptoProvider::get_default()
        .cloned()
        .unwrap_or_else(|| Arc::new(rustls::crypto::ring::default_provider()))
}

#[cfg(test)]
mod tests;

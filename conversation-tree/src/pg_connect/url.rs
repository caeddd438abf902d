//! The TLS options of a connection URL, taken out before tokio-postgres reads the rest (it
//! knows neither `verify-ca`/`verify-full` nor `sslrootcert`).

use std::path::PathBuf;

use super::{ConnectError, SslMode};

/// A URL split into its TLS options and the rest.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Split {
    pub(super) mode: Option<SslMode>,
    pub(super) root_cert: Option<PathBuf>,
    /// The URL without them, for tokio-postgres.
    pub(super) rest: String,
}

/// Options libpq offers that Skein refuses rather than ignores: ignoring them would connect
/// with less than the operator asked for.
const UNSUPPORTED: &[&str] = &["sslcert", "sslkey", "sslpassword", "sslcrl", "sslcrldir"];

pub(super) fn split(url: &str) -> Result<Split, ConnectError> {
    let mut split = Split {
        mode: None,
        root_cert: None,
        rest: String::new(),
    };
    let mut take = |key: &str, value: String| -> Result<bool, ConnectError> {
        match key {
            "sslmode" => {
                split.mode = Some(mode(&value)?);
                Ok(true)
            }
            "sslrootcert" => {
                split.root_cert = Some(PathBuf::from(value));
                Ok(true)
            }
            _ => match UNSUPPORTED.iter().find(|option| **option == key) {
                Some(option) => Err(ConnectError::Unsupported { option }),
                None => Ok(false),
            },
        }
    };
    let rest = if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        match url.split_once('?') {
            None => url.to_owned(),
            Some((base, query)) => {
                let mut kept = Vec::new();
                for pair in query.split('&').filter(|pair| !pair.is_empty()) {
                    let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
                    let value = percent_encoding::percent_decode_str(value)
                        .decode_utf8_lossy()
                        .into_owned();
                    if !take(key, value)? {
                        kept.push(pair);
                    }
                }
                if kept.is_empty() {
                    base.to_owned()
                } else {
                    format!("{base}?{}", kept.join("&"))
                }
            }
        }
    } else {
        // Split on single spaces and joined back the same way, so every other value (a quoted
        // password with spaces) reaches tokio-postgres exactly as written.
        let mut kept = Vec::new();
        for word in url.split(' ') {
            let taken = match word.split_once('=') {
                Some((key, value)) => take(key, value.trim_matches('\'').to_owned())?,
                None => false,
            };
            if !taken {
                kept.push(word);
            }
        }
        kept.join(" ")
    };
    Ok(Split { rest, ..split })
}

fn mode(value: &str) -> Result<SslMode, ConnectError> {
    Ok(match value {
        "disable" => SslMode::Disable,
        "prefer" => SslMode::Prefer,
        "require" => SslMode::Require,
        "verify-ca" => SslMode::VerifyCa,
        "verify-full" => SslMode::VerifyFull,
        _ => {
            return Err(ConnectError::SslMode {
                value: value.to_owned(),
            });
        }
    })
}

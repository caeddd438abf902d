//! The library's typed errors.

use std::path::PathBuf;
use std::time::Duration;

/// What went wrong in a helper, and where.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The OS gave no loopback port.
    #[error("cannot find a free loopback port: {0}")]
    NoFreePort(#[source] std::io::Error),
    /// `kill` could not be run or refused the signal.
    #[error("could not send SIGTERM to {name} (pid {pid}): {reason}")]
    Signal {
        /// What the process is.
        name: String,
        /// Its pid.
        pid: u32,
        /// Why (the error starting `kill`, or its exit status).
        reason: String,
    },
    /// A process still ran after SIGTERM and its grace time; it was killed.
    #[error("{name} did not stop within {timeout:?} of SIGTERM and was killed")]
    NotStopped {
        /// What the process is.
        name: String,
        /// How long it was given.
        timeout: Duration,
    },
    /// Waiting for a child failed.
    #[error("cannot wait for {name}: {source}")]
    Wait {
        /// What the process is.
        name: String,
        /// The OS's error.
        #[source]
        source: std::io::Error,
    },
    /// A harness option is unknown or its value is not what it takes.
    #[error("{message}\nusage: {usage}")]
    Usage {
        /// What is wrong.
        message: String,
        /// The options' summary.
        usage: &'static str,
    },
    /// No nginx executable on this machine.
    #[error("nginx is not installed (looked for `nginx` on PATH and in {searched:?}); {hint}")]
    NginxMissing {
        /// The folders searched besides `PATH`.
        searched: Vec<PathBuf>,
        /// How to install it.
        hint: &'static str,
    },
}

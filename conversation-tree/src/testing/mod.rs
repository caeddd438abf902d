//! Test helpers (feature `testing`): a throwaway PostgreSQL cluster, and with `postgres`, fresh
//! databases in it.
//!
//! Tests that need PostgreSQL call [`postgres_url`]: it returns `$SKEIN_PG_URL` when set
//! (`cargo xtask ci` and `cargo xtask pg start` provide one), and otherwise starts one
//! [`PgCluster`] for the whole test process. It never skips: without a server or the binaries
//! to start one, it fails with a message that says what to install.

mod pg_cluster;
#[cfg(feature = "postgres")]
mod postgres;

use std::sync::OnceLock;

pub use pg_cluster::{BIN_ENV, Lifetime, PgCluster, PgClusterError, URL_ENV};
#[cfg(feature = "postgres")]
pub use postgres::fresh_postgres_database;

/// The URL of a PostgreSQL server for tests: `$SKEIN_PG_URL`, or a cluster started once per
/// process (stopped when the process exits).
///
/// # Panics
///
/// When `$SKEIN_PG_URL` is unset and no cluster can be started: a test must fail, not skip,
/// when its database is missing.
pub fn postgres_url() -> String {
    if let Some(url) = std::env::var(URL_ENV).ok().filter(|url| !url.is_empty()) {
        return url;
    }
    static CLUSTER: OnceLock<Result<PgCluster, String>> = OnceLock::new();
    match CLUSTER.get_or_init(|| PgCluster::start(Lifetime::Process).map_err(|err| err.to_string()))
    {
        Ok(cluster) => cluster.url(),
        Err(err) => panic!("{err}"),
    }
}

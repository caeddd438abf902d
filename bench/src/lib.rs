//! Skein's load and chaos harnesses and the helpers they share with `xtask`.
//!
//! ```
//! use bench::stats::{median, percentile};
//!
//! let mut ttft_ms = vec![3.1, 2.9, 4.0, 2.7];
//! ttft_ms.sort_by(f64::total_cmp);
//! assert_eq!(percentile(&ttft_ms, 0.5), Some(2.9));
//! assert_eq!(median(&[1.7, 1.5, 1.6]), Some(1.6));
//! ```
//!
//! The binaries (feature `harness`, on by default) are the benchmarks of the served path:
//!
//! - `gateway` (`cargo xtask bench gateway`): `skein serve`, nginx and LiteLLM's proxy in front
//!   of the same loopback provider, in alternated rounds, with each relay's CPU time and write
//!   syscalls per delta and its time to first token.
//! - `load` (`cargo xtask bench`): 200 streaming clients against a `Server` in a child process
//!   (so that its CPU time is measured apart from the clients' and the provider's).
//! - `chaos-runs` (`cargo xtask chaos-runs`): background runs through `skein serve` replicas
//!   on one store that are killed with SIGKILL and restarted; runs ended, nodes lost or
//!   duplicated, resumed streams against the full replay, takeover time.
//!
//! The library is std-only, so that `xtask` uses it without building the server: free ports and
//! health checks ([`net`]), stopping process trees ([`process`]), what `/proc` says about them
//! ([`procfs`]), percentiles ([`stats`]), finding and configuring nginx ([`nginx`]) and the
//! options the `gateway` binary takes ([`gateway_options`]).

pub mod gateway_options;
pub mod net;
pub mod nginx;
pub mod process;
pub mod procfs;
pub mod stats;

mod error;

pub use error::Error;

//! Loopback helpers for the steps that start servers: a free port, and waiting until a server
//! answers `GET /health` (plain HTTP/1.1 through the `bench` crate's helpers, so xtask needs no
//! HTTP client).

/// How long a started `skein serve` may take to answer `GET /health`.
const START_TIMEOUT: Duration = Duration::from_secs(60);

use std::path::Path;
use std::process::Child;
use std::time::{Duration, Instant};

use bench::net::status_of_get;

/// A free loopback port (the OS picks one; it is released for the server to take).
pub(crate) fn free_port() -> Result<u16, String> {
    bench::net::free_port().map_err(|err| err.to_string())
}

/// Waits until `name` (the process `child`, logging to `log`) answers `GET /health` with 200 at
/// `address`; an error if it exits first or takes longer than a minute.
pub(crate) fn wait_healthy(
    child: &mut Child,
    address: &str,
    name: &str,
    log: &Path,
) -> Result<(), String> {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().map_err(|err| err.to_string())? {
            return Err(format!(
                "{name} exited before it was healthy ({status}); see {}",
                log.display()
            ));
        }
        if status_of_get(address, "/health").is_some_and(|status| status == 200) {
            return Ok(());
        }
        if started.elapsed() > START_TIMEOUT {
            return Err(format!(
                "{name} did not answer /health within {START_TIMEOUT:?}; see {}",
                log.display()
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

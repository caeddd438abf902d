//! Loopback helpers for the steps that start servers: a free port, and whether a server
//! answers `GET /health` yet (plain HTTP/1.1, so xtask needs no HTTP client).

/// How long a started `skein serve` may take to answer `GET /health`.
const START_TIMEOUT: Duration = Duration::from_secs(60);

use std::io::{Read as _, Write as _};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::Path;
use std::process::Child;
use std::time::{Duration, Instant};

/// A free loopback port (the OS picks one; it is released for the server to take).
pub(crate) fn free_port() -> Result<u16, String> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .map_err(|err| format!("cannot find a free port: {err}"))?;
    listener
        .local_addr()
        .map(|address| address.port())
        .map_err(|err| err.to_string())
}

/// The status of `GET /health` at `address`, if a server answers there.
pub(crate) fn health(address: &str) -> Option<u16> {
    let mut stream = TcpStream::connect(address).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    write!(
        stream,
        "GET /health HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut head = [0_u8; 12];
    stream.read_exact(&mut head).ok()?;
    std::str::from_utf8(&head[9..12]).ok()?.parse().ok()
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
        if health(address).is_some_and(|status| status == 200) {
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

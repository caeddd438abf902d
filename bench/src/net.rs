//! Loopback helpers for starting servers: a free port, and whether a server answers yet
//! (plain HTTP/1.1 over a std socket, so that callers need no HTTP client).

use std::io::{Read as _, Write as _};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::time::Duration;

use crate::Error;

/// A free loopback port: the OS picks one, and it is released for the server to take.
pub fn free_port() -> Result<u16, Error> {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .map_err(Error::NoFreePort)
}

/// The status of `GET path` at `address` (`host:port`), if a server answers there within two
/// seconds.
pub fn status_of_get(address: &str, path: &str) -> Option<u16> {
    let mut stream = TcpStream::connect(address).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut head = [0_u8; 12];
    stream.read_exact(&mut head).ok()?;
    std::str::from_utf8(&head[9..12]).ok()?.parse().ok()
}

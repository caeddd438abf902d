//! nginx as a reference relay: where it is, how to install it, and the configuration the
//! `gateway` harness runs it with.

use std::path::{Path, PathBuf};

use crate::Error;

/// How to get nginx when it is missing (Debian's smallest build has the proxy module).
pub const INSTALL_HINT: &str = "install it with `apt-get install -y nginx-light` (Debian, Ubuntu) \
     or your system's nginx package, or pass its path with --nginx PATH";

/// Folders searched after `PATH`: Debian installs nginx in `/usr/sbin`, which is not on every
/// user's `PATH`.
const SBIN: [&str; 2] = ["/usr/sbin", "/usr/local/sbin"];

/// The nginx executable: the first `nginx` on `PATH`, else in `/usr/sbin` or `/usr/local/sbin`.
pub fn find() -> Result<PathBuf, Error> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(SBIN.iter().map(PathBuf::from))
        .map(|dir| dir.join("nginx"))
        .find(|candidate| candidate.is_file())
        .ok_or_else(|| Error::NginxMissing {
            searched: SBIN.iter().map(PathBuf::from).collect(),
            hint: INSTALL_HINT,
        })
}

/// nginx as a plain streaming relay: one worker, in the foreground, no access log,
/// `proxy_buffering off` (each piece read from the upstream is written to the client as it
/// comes), HTTP/1.1 keep-alive to the upstream and to clients.
#[derive(Clone, Debug)]
pub struct RelayConfig<'a> {
    /// Where it listens (`127.0.0.1:PORT`).
    pub listen: &'a str,
    /// The upstream it relays to (`127.0.0.1:PORT`); request paths are passed unchanged.
    pub upstream: &'a str,
    /// Its folder: pid file, error log, temporary files (every module's, so that nginx needs
    /// nothing outside it and runs as any user).
    pub dir: &'a Path,
    /// The bearer token it sends upstream in place of the client's.
    pub upstream_key: &'a str,
    /// Idle keep-alive connections to the upstream it keeps (at least the streams in flight,
    /// so that no stream opens a connection of its own).
    pub upstream_keepalive: usize,
}

impl RelayConfig<'_> {
    /// The `nginx.conf` text. `GET /health` is answered by nginx itself.
    pub fn render(&self) -> String {
        let dir = self.dir.display();
        let RelayConfig {
            listen,
            upstream,
            upstream_key,
            upstream_keepalive,
            ..
        } = self;
        format!(
            "\
worker_processes 1;
daemon off;
pid {dir}/nginx.pid;
error_log {dir}/nginx-error.log warn;
worker_rlimit_nofile 65536;
events {{
    worker_connections 16384;
}}
http {{
    access_log off;
    client_body_temp_path {dir}/client_body;
    proxy_temp_path {dir}/proxy;
    fastcgi_temp_path {dir}/fastcgi;
    uwsgi_temp_path {dir}/uwsgi;
    scgi_temp_path {dir}/scgi;
    keepalive_requests 1000000;
    upstream provider {{
        server {upstream};
        keepalive {upstream_keepalive};
        keepalive_requests 1000000;
    }}
    server {{
        listen {listen};
        location = /health {{
            return 200 \"ok\\n\";
        }}
        location / {{
            proxy_pass http://provider;
            proxy_http_version 1.1;
            proxy_set_header Connection \"\";
            proxy_set_header Authorization \"Bearer {upstream_key}\";
            proxy_buffering off;
        }}
    }}
}}
"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_relay_streams_unbuffered_through_one_worker_with_keepalive_upstream() {
        let config = RelayConfig {
            listen: "127.0.0.1:8080",
            upstream: "127.0.0.1:9090",
            dir: Path::new("/run/bench"),
            upstream_key: "sk-test",
            upstream_keepalive: 256,
        }
        .render();
        for line in [
            "worker_processes 1;",
            "proxy_buffering off;",
            "keepalive 256;",
            "proxy_http_version 1.1;",
            "server 127.0.0.1:9090;",
            "listen 127.0.0.1:8080;",
        ] {
            assert!(config.contains(line), "{line} missing from\n{config}");
        }
    }
}

//! Fresh PostgreSQL databases for the server's end-to-end tests (feature `postgres`).
//!
//! conversation-tree's `testing::fresh_postgres_database` does this, but the server's
//! dev-dependencies do not turn on conversation-tree's `testing` feature, so that module does
//! not exist in `cargo test -p server` builds. Until they do (one line in
//! `server/Cargo.toml`: `conversation-tree = { workspace = true, features = ["testing"] }`
//! under `[dev-dependencies]`), this module does the same with what it can reach:
//!
//! - the server is `$SKEIN_PG_URL` (set by `cargo xtask ci`), or else a throwaway cluster
//!   started once per test process with conversation-tree's own cluster code (`pg_cluster.rs`,
//!   std only, compiled in from its source file as `xtask` does);
//! - the database is created with one `CREATE DATABASE` sent over PostgreSQL's wire protocol
//!   (trust or clear-text password authentication, which is what the throwaway clusters use),
//!   because the server crate has no PostgreSQL client of its own to send it with.
#![allow(dead_code, unreachable_pub)]

#[allow(
    dead_code,
    unreachable_pub,
    reason = "shared with conversation-tree's testing module, where every item is used"
)]
#[path = "../../../conversation-tree/src/testing/pg_cluster.rs"]
mod pg_cluster;

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use pg_cluster::{Lifetime, PgCluster, URL_ENV};

/// The URL of the test server: `$SKEIN_PG_URL`, or a cluster started once for this process
/// (stopped when the process exits).
///
/// # Panics
///
/// When no cluster can be started: a PostgreSQL test fails, it never skips.
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

/// Creates an empty database on the test server and returns its URL.
///
/// Blocking (it may start a cluster): call it from `spawn_blocking` in async tests.
///
/// # Panics
///
/// When the server cannot be reached or the database cannot be created.
pub fn fresh_postgres_database() -> String {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let base = postgres_url();
    let name = format!(
        "skein_server_test_{}_{}_{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed),
        uuid::Uuid::new_v4().simple()
    );
    let target = Target::parse(&base).unwrap_or_else(|err| panic!("{err}"));
    target
        .execute(&format!("CREATE DATABASE {name}"))
        .unwrap_or_else(|err| panic!("cannot create test database {name} on {base}: {err}"));
    target.url_of(&name)
}

/// Where a `postgres://user[:password]@host[:port][/database][?query]` URL points.
struct Target {
    scheme: &'static str,
    user: String,
    password: Option<String>,
    host: String,
    port: u16,
    database: String,
    query: Option<String>,
}

impl Target {
    fn parse(url: &str) -> Result<Target, String> {
        let unsupported = || {
            format!(
                "`{URL_ENV}` must be a postgres:// URL (user@host:port/database) for the server \
                 tests, got `{url}`"
            )
        };
        let (scheme, rest) = ["postgres://", "postgresql://"]
            .into_iter()
            .find_map(|scheme| url.strip_prefix(scheme).map(|rest| (scheme, rest)))
            .ok_or_else(unsupported)?;
        let (location, query) = match rest.split_once('?') {
            Some((location, query)) => (location, Some(query.to_owned())),
            None => (rest, None),
        };
        let (authority, database) = location.split_once('/').unwrap_or((location, ""));
        let (userinfo, hostport) = authority
            .rsplit_once('@')
            .unwrap_or(("postgres", authority));
        let (user, password) = match userinfo.split_once(':') {
            Some((user, password)) => (user.to_owned(), Some(password.to_owned())),
            None => (userinfo.to_owned(), None),
        };
        let (host, port) = match hostport.rsplit_once(':') {
            Some((host, port)) => (host, port.parse().map_err(|_| unsupported())?),
            None => (hostport, 5432),
        };
        if host.is_empty() || user.is_empty() {
            return Err(unsupported());
        }
        Ok(Target {
            scheme,
            user,
            password,
            host: host.to_owned(),
            port,
            database: if database.is_empty() {
                "postgres".to_owned()
            } else {
                database.to_owned()
            },
            query,
        })
    }

    /// The same server, database `name`.
    fn url_of(&self, name: &str) -> String {
        let password = self
            .password
            .as_ref()
            .map(|password| format!(":{password}"))
            .unwrap_or_default();
        let query = self
            .query
            .as_ref()
            .map(|query| format!("?{query}"))
            .unwrap_or_default();
        format!(
            "{}{}{password}@{}:{}/{name}{query}",
            self.scheme, self.user, self.host, self.port
        )
    }

    /// Runs one statement with the simple query protocol.
    fn execute(&self, sql: &str) -> Result<(), String> {
        let mut stream = TcpStream::connect((self.host.as_str(), self.port))
            .map_err(|err| format!("connecting to {}:{}: {err}", self.host, self.port))?;
        let limit = Some(Duration::from_secs(30));
        stream
            .set_read_timeout(limit)
            .map_err(|err| err.to_string())?;
        stream
            .set_write_timeout(limit)
            .map_err(|err| err.to_string())?;

        // StartupMessage: protocol 3.0, then `name\0value\0` pairs and a final `\0`.
        let mut startup = 196_608_i32.to_be_bytes().to_vec();
        for (key, value) in [("user", &self.user), ("database", &self.database)] {
            startup.extend_from_slice(key.as_bytes());
            startup.push(0);
            startup.extend_from_slice(value.as_bytes());
            startup.push(0);
        }
        startup.push(0);
        send(&mut stream, None, &startup)?;
        self.until_ready(&mut stream)?;

        let mut query = sql.as_bytes().to_vec();
        query.push(0);
        send(&mut stream, Some(b'Q'), &query)?;
        self.until_ready(&mut stream)?;
        send(&mut stream, Some(b'X'), &[])
    }

    /// Reads messages up to `ReadyForQuery`, answering a clear-text password request and
    /// failing on an error or another authentication method.
    fn until_ready(&self, stream: &mut TcpStream) -> Result<(), String> {
        let mut error = None;
        loop {
            let (kind, body) = receive(stream)?;
            match kind {
                b'R' => match body.get(..4) {
                    Some([0, 0, 0, 0]) => {}
                    Some([0, 0, 0, 3]) => {
                        let Some(password) = &self.password else {
                            return Err("the server asks for a password; the URL has none".into());
                        };
                        let mut message = password.as_bytes().to_vec();
                        message.push(0);
                        send(stream, Some(b'p'), &message)?;
                    }
                    other => {
                        return Err(format!(
                            "authentication request {other:?} is not supported by this test \
                             helper (trust or clear-text password only); see the module docs"
                        ));
                    }
                },
                b'E' => {
                    let (severity, message) = error_fields(&body);
                    let text = format!("{severity}: {message}");
                    // A failed startup ends with a fatal error and no ReadyForQuery.
                    if severity == "FATAL" || severity == "PANIC" {
                        return Err(text);
                    }
                    error = Some(text);
                }
                b'Z' => return error.map_or(Ok(()), Err),
                _ => {}
            }
        }
    }
}

fn send(stream: &mut TcpStream, kind: Option<u8>, body: &[u8]) -> Result<(), String> {
    let length = i32::try_from(body.len() + 4).map_err(|err| err.to_string())?;
    let mut message = Vec::with_capacity(body.len() + 5);
    message.extend(kind);
    message.extend_from_slice(&length.to_be_bytes());
    message.extend_from_slice(body);
    stream
        .write_all(&message)
        .map_err(|err| format!("writing to the server: {err}"))
}

fn receive(stream: &mut TcpStream) -> Result<(u8, Vec<u8>), String> {
    let mut header = [0_u8; 5];
    stream
        .read_exact(&mut header)
        .map_err(|err| format!("reading from the server: {err}"))?;
    let length = i32::from_be_bytes([header[1], header[2], header[3], header[4]]);
    let length = usize::try_from(length - 4).map_err(|err| err.to_string())?;
    let mut body = vec![0_u8; length];
    stream
        .read_exact(&mut body)
        .map_err(|err| format!("reading from the server: {err}"))?;
    Ok((header[0], body))
}

/// The severity (`S`) and message (`M`) fields of an ErrorResponse.
fn error_fields(body: &[u8]) -> (String, String) {
    let mut severity = String::new();
    let mut message = String::new();
    for field in body.split(|byte| *byte == 0) {
        match field.split_first() {
            Some((b'S', value)) => severity = String::from_utf8_lossy(value).into_owned(),
            Some((b'M', value)) => message = String::from_utf8_lossy(value).into_owned(),
            _ => {}
        }
    }
    (severity, message)
}

#[test]
fn urls_keep_everything_but_the_database() {
    let target = Target::parse("postgres://postgres@127.0.0.1:5433/postgres").unwrap();
    assert_eq!(target.url_of("t1"), "postgres://postgres@127.0.0.1:5433/t1");
    let target = Target::parse("postgresql://u:p@h:1/db?sslmode=disable").unwrap();
    assert_eq!(
        target.url_of("t2"),
        "postgresql://u:p@h:1/t2?sslmode=disable"
    );
    assert!(Target::parse("host=h user=u").is_err());
}

//! A throwaway PostgreSQL cluster for tests, started from the machine's PostgreSQL binaries.
//!
//! `initdb` makes a cluster in a new temporary directory; `pg_ctl` starts it on a free port of
//! 127.0.0.1, with trust authentication for 127.0.0.1 only, no Unix socket, and durability
//! switched off (the data is thrown away). PostgreSQL refuses to run as root, so when this
//! process is root the directory is handed to `nobody` and the binaries run as that user.
//!
//! A cluster started with [`Lifetime::Process`] is stopped and its directory removed when the
//! value is dropped (also while a failing test unwinds) and, failing that, when this process
//! exits in any way, even killed: a small reaper process waits for the end of a pipe this
//! process holds, then stops the cluster.
//!
//! This file uses only `std`: `cargo xtask` compiles it too (`xtask/src/pg.rs`), so CI and the
//! tests start clusters with the same code. Binaries are looked up in `$SKEIN_PG_BIN`, then on
//! `PATH`, then in `/usr/lib/postgresql/*/bin`.

use std::ffi::OsStr;
use std::fmt;
use std::fs;
use std::net::{Ipv4Addr, TcpListener};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// Environment variable holding the URL of a running cluster that tests should use instead of
/// starting their own (`cargo xtask ci` sets it).
pub const URL_ENV: &str = "SKEIN_PG_URL";

/// Environment variable naming the directory of `initdb` and `pg_ctl`, when they are not on
/// `PATH`.
pub const BIN_ENV: &str = "SKEIN_PG_BIN";

/// How long a cluster lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lifetime {
    /// Stopped when the [`PgCluster`] is dropped or stopped, or when this process exits.
    Process,
    /// Keeps running after this process exits; stop it with [`PgCluster::stop_dir`].
    Detached,
}

/// A running throwaway cluster.
#[derive(Debug)]
pub struct PgCluster {
    root: PathBuf,
    pg_ctl: PathBuf,
    port: u16,
    lifetime: Lifetime,
    reaper: Option<Child>,
    running: bool,
}

/// Why a cluster could not be started or stopped.
#[derive(Debug)]
pub struct PgClusterError {
    step: &'static str,
    detail: String,
}

impl fmt::Display for PgClusterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "throwaway PostgreSQL cluster: {}: {}",
            self.step, self.detail
        )
    }
}

impl std::error::Error for PgClusterError {}

fn fail(step: &'static str, detail: impl fmt::Display) -> PgClusterError {
    PgClusterError {
        step,
        detail: detail.to_string(),
    }
}

impl PgCluster {
    /// Makes and starts a cluster. Fails with a message naming the missing binary, or quoting
    /// PostgreSQL's own output, when it cannot.
    pub fn start(lifetime: Lifetime) -> Result<Self, PgClusterError> {
        Self::start_with(lifetime, None)
    }

    /// Makes and starts a cluster that serves TLS only (`ssl = on`, `hostssl` in
    /// `pg_hba.conf`: a connection without TLS is refused), with the server certificate chain
    /// and key given in PEM.
    pub fn start_with_tls(
        lifetime: Lifetime,
        cert_pem: &str,
        key_pem: &str,
    ) -> Result<Self, PgClusterError> {
        Self::start_with(lifetime, Some((cert_pem, key_pem)))
    }

    fn start_with(lifetime: Lifetime, tls: Option<(&str, &str)>) -> Result<Self, PgClusterError> {
        let bin = find_bin_dir()?;
        let root = make_root()?;
        let mut cluster = PgCluster {
            pg_ctl: bin.join("pg_ctl"),
            root,
            port: 0,
            lifetime,
            reaper: None,
            running: false,
        };
        // Dropping `cluster` on an error below removes the directory.
        cluster.init(&bin, tls)?;
        if lifetime == Lifetime::Process {
            cluster.reaper = Some(cluster.spawn_reaper()?);
        }
        cluster.start_on_free_port()?;
        Ok(cluster)
    }

    /// The connection URL: `postgres://postgres@127.0.0.1:PORT/postgres`.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// The cluster's directory (the data directory is `data` inside it).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The port it listens on, on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Stops the cluster and removes its directory, reporting failures (dropping does the same
    /// silently).
    pub fn stop(mut self) -> Result<(), PgClusterError> {
        self.shutdown()
    }

    /// Stops a cluster left running by [`Lifetime::Detached`], given its directory, and
    /// removes the directory.
    pub fn stop_dir(root: &Path) -> Result<(), PgClusterError> {
        let data = root.join("data");
        if data.join("postmaster.pid").exists() {
            let pg_ctl = find_bin_dir()?.join("pg_ctl");
            let mut stop = Command::new(pg_ctl);
            stop.args([OsStr::new("stop"), OsStr::new("-D"), data.as_os_str()])
                .args(["-m", "fast", "-w", "-t", "60"]);
            run(as_owner(&mut stop, root)?, "stopping the cluster")?;
        }
        fs::remove_dir_all(root).map_err(|err| fail("removing its directory", err))
    }

    fn init(&mut self, bin: &Path, tls: Option<(&str, &str)>) -> Result<(), PgClusterError> {
        let data = self.root.join("data");
        let mut initdb = Command::new(bin.join("initdb"));
        initdb
            .args([OsStr::new("-D"), data.as_os_str()])
            .args(["-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-locale"])
            .args(["--no-sync", "--no-instructions"]);
        run(as_owner(&mut initdb, &self.root)?, "initdb")?;
        // Appended settings override initdb's. The data is thrown away, so durability is off.
        let settings = "\n# skein throwaway cluster\n\
            listen_addresses = '127.0.0.1'\n\
            unix_socket_directories = ''\n\
            fsync = off\n\
            synchronous_commit = off\n\
            full_page_writes = off\n\
            max_connections = 200\n\
            log_min_messages = warning\n";
        append(&data.join("postgresql.conf"), settings)?;
        let hba = match tls {
            None => {
                "# skein throwaway cluster: trust, from 127.0.0.1 only\n\
                     host all all 127.0.0.1/32 trust\n"
            }
            Some((cert, key)) => {
                self.write_tls(&data, cert, key)?;
                "# skein throwaway cluster: trust, from 127.0.0.1 only, over TLS only\n\
                 hostssl all all 127.0.0.1/32 trust\n"
            }
        };
        fs::write(data.join("pg_hba.conf"), hba).map_err(|err| fail("writing pg_hba.conf", err))
    }

    /// Writes the server's certificate and key (readable by the server's user only, as
    /// PostgreSQL demands of a key) and switches TLS on.
    fn write_tls(&self, data: &Path, cert: &str, key: &str) -> Result<(), PgClusterError> {
        let owner =
            fs::metadata(&self.root).map_err(|err| fail("reading the cluster directory", err))?;
        for (name, pem) in [("server.crt", cert), ("server.key", key)] {
            let path = data.join(name);
            fs::write(&path, pem)
                .and_then(|()| fs::set_permissions(&path, fs::Permissions::from_mode(0o600)))
                .and_then(|()| {
                    std::os::unix::fs::chown(&path, Some(owner.uid()), Some(owner.gid()))
                })
                .map_err(|err| fail("writing the TLS certificate and key", err))?;
        }
        append(
            &data.join("postgresql.conf"),
            "ssl = on\nssl_cert_file = 'server.crt'\nssl_key_file = 'server.key'\n",
        )
    }

    fn start_on_free_port(&mut self) -> Result<(), PgClusterError> {
        const ATTEMPTS: usize = 5;
        let data = self.root.join("data");
        let log = self.root.join("server.log");
        let mut last = None;
        for _ in 0..ATTEMPTS {
            // The port is free now; another process may take it before the server binds it,
            // hence the retries.
            let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
                .and_then(|listener| listener.local_addr())
                .map_err(|err| fail("finding a free port", err))?
                .port();
            let mut start = Command::new(&self.pg_ctl);
            start
                .args([OsStr::new("start"), OsStr::new("-D"), data.as_os_str()])
                .args([OsStr::new("-l"), log.as_os_str()])
                .args(["-w", "-t", "60", "-o"])
                .arg(format!("-p {port}"))
                // Out of the terminal's process group: Ctrl-C stops us, and the reaper
                // then stops the server cleanly.
                .process_group(0);
            match run(as_owner(&mut start, &self.root)?, "starting the server") {
                Ok(()) => {
                    self.port = port;
                    self.running = true;
                    return Ok(());
                }
                Err(mut err) => {
                    let server_log = fs::read_to_string(&log).unwrap_or_default();
                    err.detail.push_str(&format!("\nserver log:\n{server_log}"));
                    if !server_log.contains("could not bind") {
                        return Err(err);
                    }
                    last = Some(err);
                }
            }
        }
        Err(last.unwrap_or_else(|| fail("starting the server", "no attempt was made")))
    }

    /// A process that waits for this one to close its end of a pipe (by exiting, in any way),
    /// then stops the server and removes the directory.
    fn spawn_reaper(&self) -> Result<Child, PgClusterError> {
        let mut reaper = Command::new("sh");
        reaper
            .arg("-c")
            .arg(
                "cat >/dev/null; \"$0\" stop -D \"$1\" -m immediate -w -t 60 >/dev/null 2>&1; \
                 rm -rf \"$2\"",
            )
            .arg(&self.pg_ctl)
            .arg(self.root.join("data"))
            .arg(&self.root)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0);
        as_owner(&mut reaper, &self.root)?
            .spawn()
            .map_err(|err| fail("starting the reaper process (sh)", err))
    }

    fn shutdown(&mut self) -> Result<(), PgClusterError> {
        let mut result = Ok(());
        if self.running {
            self.running = false;
            let mut stop = Command::new(&self.pg_ctl);
            stop.args([OsStr::new("stop"), OsStr::new("-D")])
                .arg(self.root.join("data"))
                .args(["-m", "fast", "-w", "-t", "60"]);
            result =
                as_owner(&mut stop, &self.root).and_then(|stop| run(stop, "stopping the server"));
        }
        if let Some(mut reaper) = self.reaper.take() {
            // Closing its pipe lets it run; the server is down, so it only removes the
            // directory, which we also do below.
            drop(reaper.stdin.take());
            let _ = reaper.wait();
        }
        if self.root.exists() {
            let removed = fs::remove_dir_all(&self.root);
            if result.is_ok() {
                result = removed.map_err(|err| fail("removing its directory", err));
            }
        }
        result
    }
}

impl Drop for PgCluster {
    fn drop(&mut self) {
        if self.lifetime == Lifetime::Process || !self.running {
            let _ = self.shutdown();
        }
    }
}

/// The directory of `initdb` and `pg_ctl`.
fn find_bin_dir() -> Result<PathBuf, PgClusterError> {
    let has_both = |dir: &Path| dir.join("initdb").is_file() && dir.join("pg_ctl").is_file();
    if let Some(dir) = std::env::var_os(BIN_ENV) {
        let dir = PathBuf::from(dir);
        return if has_both(&dir) {
            Ok(dir)
        } else {
            Err(fail(
                "finding the PostgreSQL binaries",
                format!(
                    "${BIN_ENV} is {}, which holds no initdb and pg_ctl",
                    dir.display()
                ),
            ))
        };
    }
    let on_path = std::env::var_os("PATH")
        .map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .unwrap_or_default();
    let mut debian: Vec<PathBuf> = fs::read_dir("/usr/lib/postgresql")
        .map(|entries| {
            entries
                .filter_map(|entry| entry.ok().map(|entry| entry.path().join("bin")))
                .collect()
        })
        .unwrap_or_default();
    // Newest version first (directories are named by major version).
    debian.sort_by_key(|dir| {
        std::cmp::Reverse(
            dir.parent()
                .and_then(Path::file_name)
                .and_then(OsStr::to_str)
                .and_then(|name| name.parse::<u32>().ok()),
        )
    });
    on_path
        .into_iter()
        .chain(debian)
        .find(|dir| has_both(dir))
        .ok_or_else(|| {
            fail(
                "finding the PostgreSQL binaries",
                format!(
                    "initdb and pg_ctl are neither on PATH nor in /usr/lib/postgresql/*/bin; \
                     install the PostgreSQL server (Debian: `apt-get install postgresql`), set \
                     ${BIN_ENV} to their directory, or set ${URL_ENV} to a running server"
                ),
            )
        })
}

/// A new, private temporary directory; handed to `nobody` when this process is root.
fn make_root() -> Result<PathBuf, PgClusterError> {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| elapsed.subsec_nanos())
        .unwrap_or_default();
    let name = format!(
        "skein-pg-{}-{nanos}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    let root = std::env::temp_dir().join(name);
    fs::DirBuilder::new()
        .mode(0o700)
        .create(&root)
        .map_err(|err| fail("creating a temporary directory", err))?;
    let owner = fs::metadata(&root)
        .map_err(|err| fail("reading the temporary directory", err))?
        .uid();
    if owner == 0 {
        let (uid, gid) = nobody();
        if let Err(err) = std::os::unix::fs::chown(&root, Some(uid), Some(gid)) {
            let _ = fs::remove_dir(&root);
            return Err(fail("handing the temporary directory to nobody", err));
        }
    }
    Ok(root)
}

/// Uid and gid of `nobody` from /etc/passwd (65534 where it is missing).
fn nobody() -> (u32, u32) {
    let passwd = fs::read_to_string("/etc/passwd").unwrap_or_default();
    passwd
        .lines()
        .find_map(|line| {
            let mut fields = line.split(':');
            if fields.next() != Some("nobody") {
                return None;
            }
            let uid = fields.nth(1)?.parse().ok()?;
            let gid = fields.next()?.parse().ok()?;
            Some((uid, gid))
        })
        .unwrap_or((65534, 65534))
}

/// Makes `command` run as the owner of `root`, inside it: as `nobody` when we are root, and as
/// ourselves otherwise (switching to one's own uid is allowed).
fn as_owner<'c>(command: &'c mut Command, root: &Path) -> Result<&'c mut Command, PgClusterError> {
    let metadata = fs::metadata(root).map_err(|err| fail("reading the cluster directory", err))?;
    Ok(command
        .uid(metadata.uid())
        .gid(metadata.gid())
        .current_dir(root)
        .env("HOME", root))
}

/// Runs `command` to completion; a failure quotes its output.
fn run(command: &mut Command, step: &'static str) -> Result<(), PgClusterError> {
    // pg_ctl's server logs to a file and holds no pipe of ours, so this returns once pg_ctl has.
    let output = command.stdin(Stdio::null()).output().map_err(|err| {
        fail(
            step,
            format!("cannot run {:?}: {err}", command.get_program()),
        )
    })?;
    if output.status.success() {
        return Ok(());
    }
    Err(fail(
        step,
        format!(
            "{:?} exited with {}:\n{}{}",
            command.get_program(),
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ),
    ))
}

fn append(path: &Path, text: &str) -> Result<(), PgClusterError> {
    use std::io::Write as _;
    fs::OpenOptions::new()
        .append(true)
        .open(path)
        .and_then(|mut file| file.write_all(text.as_bytes()))
        .map_err(|err| fail("writing postgresql.conf", err))
}

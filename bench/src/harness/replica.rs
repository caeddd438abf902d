//! A `skein serve` replica of a harness: started on a fixed loopback port, killed with
//! SIGKILL, started again on the same port and store, stopped with SIGTERM.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bench::net::free_port;

/// The dummy key the replicas send to the harness's loopback provider (it accepts any).
const DUMMY_KEY: &str = "sk-harness-loopback";
/// How long a replica may take to answer `GET /health` after a start.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// What every replica of a harness is started with.
pub(crate) struct Launch<'a> {
    /// The `skein` binary.
    pub(crate) binary: &'a Path,
    /// `--db`: a PostgreSQL URL or a SQLite file.
    pub(crate) db: &'a str,
    /// `--config`.
    pub(crate) config: &'a Path,
    /// `--token-file`.
    pub(crate) token_file: &'a Path,
    /// Where the replicas' logs go.
    pub(crate) work_dir: &'a Path,
}

/// One replica: how to start it, and its process while it runs.
pub(crate) struct Replica {
    pub(crate) name: String,
    /// `127.0.0.1:PORT`, the same across restarts.
    pub(crate) address: String,
    db: String,
    config: PathBuf,
    token_file: PathBuf,
    log: PathBuf,
    binary: PathBuf,
    child: Option<Child>,
    /// Starts so far.
    pub(crate) starts: usize,
}

impl Replica {
    /// A replica named `name` of `launch` on a free port (not started yet); its log is
    /// `{work_dir}/{name}.log`.
    pub(crate) fn new(launch: &Launch<'_>, name: String) -> Result<Self, String> {
        Ok(Replica {
            address: format!("127.0.0.1:{}", free_port().map_err(|err| err.to_string())?),
            log: launch.work_dir.join(format!("{name}.log")),
            name,
            db: launch.db.to_owned(),
            config: launch.config.to_owned(),
            token_file: launch.token_file.to_owned(),
            binary: launch.binary.to_owned(),
            child: None,
            starts: 0,
        })
    }

    /// Its base URL.
    pub(crate) fn url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// Whether its process is running.
    pub(crate) fn is_up(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|child| matches!(child.try_wait(), Ok(None)))
    }

    /// Starts the process (its log appended to the previous starts').
    pub(crate) fn spawn(&mut self) -> Result<(), String> {
        let file = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .map_err(|err| format!("{}: {err}", self.log.display()))?;
        let err_file = file.try_clone().map_err(|err| err.to_string())?;
        let mut command = Command::new(&self.binary);
        command
            .arg("serve")
            .args(["--db", &self.db])
            .arg("--config")
            .arg(&self.config)
            .arg("--token-file")
            .arg(&self.token_file)
            .args(["--listen", &self.address])
            .env("RUST_LOG", "info")
            .env("RUST_BACKTRACE", "1")
            .stdin(Stdio::null())
            .stdout(file)
            .stderr(err_file);
        bench::process::scrub_environment(&mut command);
        command.env("OPENAI_API_KEY", DUMMY_KEY);
        let child = command
            .spawn()
            .map_err(|err| format!("cannot start {}: {err}", self.binary.display()))?;
        self.child = Some(child);
        self.starts += 1;
        Ok(())
    }

    /// Waits until it answers `GET /health` with 200.
    pub(crate) async fn wait_healthy(&mut self, http: &reqwest::Client) -> Result<(), String> {
        let started = Instant::now();
        let health = format!("{}/health", self.url());
        loop {
            if !self.is_up() {
                return Err(format!(
                    "{} exited before it was healthy; see {}",
                    self.name,
                    self.log.display()
                ));
            }
            let answer = http
                .get(&health)
                .timeout(Duration::from_secs(2))
                .send()
                .await;
            if answer.is_ok_and(|answer| answer.status().is_success()) {
                return Ok(());
            }
            if started.elapsed() > START_TIMEOUT {
                return Err(format!(
                    "{} did not answer /health within {START_TIMEOUT:?}; see {}",
                    self.name,
                    self.log.display()
                ));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// SIGKILL, and waits for the process to be gone.
    pub(crate) fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// SIGTERM at the end of the run; an error when it does not exit cleanly.
    pub(crate) fn stop(&mut self) -> Result<(), String> {
        let Some(mut child) = self.child.take() else {
            return Ok(());
        };
        let status = bench::process::terminate(&mut child, &self.name, Duration::from_secs(20))
            .map_err(|err| format!("{err}; see {}", self.log.display()))?;
        if status.success() {
            Ok(())
        } else {
            Err(format!(
                "{} exited with {status} on SIGTERM; see {}",
                self.name,
                self.log.display()
            ))
        }
    }

    /// The names its starts so far held leases under, as they logged them (`replica: NAME` in
    /// the serving line, `replica=NAME` in the run records' lines).
    pub(crate) fn lease_names(&self) -> Vec<String> {
        let log = fs::read_to_string(&self.log).unwrap_or_default();
        ["replica=", "replica: "]
            .iter()
            .flat_map(|key| log.match_indices(key))
            .map(|(at, key)| {
                log[at + key.len()..]
                    .trim_start_matches('"')
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
                    .collect::<String>()
            })
            .filter(|name| !name.is_empty())
            .collect()
    }

    /// The lines of its log that report a panic.
    pub(crate) fn panics(&self) -> Vec<String> {
        fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter(|line| line.contains("panicked"))
            .map(str::to_owned)
            .collect()
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        self.kill();
    }
}

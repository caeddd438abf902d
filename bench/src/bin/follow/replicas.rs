//! The two `skein serve` replicas on one PostgreSQL database.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bench::net::free_port;

/// The model the runs ask for; the configuration points OpenAI at the loopback provider.
pub(crate) const MODEL: &str = "gpt-4o-mini";
/// The dummy key the replicas send to the loopback provider (it accepts any).
const DUMMY_KEY: &str = "sk-follow-loopback";
/// How long a replica may take to answer `GET /health` after its start.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// The `--config` of both replicas.
pub(crate) fn config_text(provider_url: &str) -> String {
    format!(
        "base_urls:\n  openai: {provider_url}\n\
         concurrency_per_caller: 10000\n\
         max_connections: 10000\n\
         shutdown_grace_secs: 2\n"
    )
}

/// One running replica; killed when dropped.
pub(crate) struct Replica {
    pub(crate) name: &'static str,
    address: String,
    log: PathBuf,
    child: Child,
}

/// What every replica is started with.
pub(crate) struct Launch<'a> {
    pub(crate) binary: &'a Path,
    pub(crate) db: &'a str,
    pub(crate) config: &'a Path,
    pub(crate) token_file: &'a Path,
    pub(crate) work_dir: &'a Path,
}

impl Replica {
    /// Starts `skein serve` named `name` on a free loopback port.
    pub(crate) fn spawn(launch: &Launch<'_>, name: &'static str) -> Result<Self, String> {
        let address = format!("127.0.0.1:{}", free_port().map_err(|err| err.to_string())?);
        let log = launch.work_dir.join(format!("{name}.log"));
        let file = fs::File::create(&log).map_err(|err| format!("{}: {err}", log.display()))?;
        let err_file = file.try_clone().map_err(|err| err.to_string())?;
        let mut command = Command::new(launch.binary);
        command
            .arg("serve")
            .args(["--db", launch.db])
            .arg("--config")
            .arg(launch.config)
            .arg("--token-file")
            .arg(launch.token_file)
            .args(["--listen", &address])
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(file)
            .stderr(err_file);
        bench::process::scrub_environment(&mut command);
        command.env("OPENAI_API_KEY", DUMMY_KEY);
        let child = command
            .spawn()
            .map_err(|err| format!("cannot start {}: {err}", launch.binary.display()))?;
        Ok(Replica {
            name,
            address,
            log,
            child,
        })
    }

    /// Its base URL.
    pub(crate) fn url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// Waits until it answers `GET /health` with 200.
    pub(crate) async fn wait_healthy(&mut self, http: &reqwest::Client) -> Result<(), String> {
        let started = Instant::now();
        let health = format!("{}/health", self.url());
        loop {
            if !matches!(self.child.try_wait(), Ok(None)) {
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

    /// SIGTERM, then SIGKILL if it does not exit in time.
    pub(crate) fn stop(mut self) {
        let _ = bench::process::terminate(&mut self.child, self.name, Duration::from_secs(10));
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

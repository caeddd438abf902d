//! The processes of a row: the provider, and the relay in front of it.

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use bench::gateway_options::Options;
use bench::net::free_port;
use bench::nginx::RelayConfig;
use bench::process::{kill_tree, scrub_environment, terminate, wait_or_kill};
use bench::procfs::has_exited;

use crate::targets::MODEL;

/// The dummy key the relays send to the loopback provider (it accepts any).
const DUMMY_KEY: &str = "sk-loopback-bench";
/// How long a process may take to exit once asked to.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// A child process of the bench, killed with its descendants if still running when dropped.
pub(crate) struct Process {
    pub(crate) what: String,
    child: Child,
    pub(crate) pid: u32,
    pub(crate) log: PathBuf,
    pub(crate) address: String,
    pub(crate) health_url: String,
    /// The provider's base URL (`http://127.0.0.1:PORT/v1`).
    pub(crate) base_url: Option<String>,
}

impl Process {
    /// This harness again, as the loopback provider.
    pub(crate) fn provider(options: &Options, work_dir: &Path, tag: &str) -> Result<Self, String> {
        let log = work_dir.join(format!("{tag}-provider.log"));
        let exe = std::env::current_exe()
            .map_err(|err| format!("cannot find this executable to start the provider: {err}"))?;
        let mut child = Command::new(exe)
            .args(["--provider", "--deltas", &options.deltas.to_string()])
            .args(["--delay-ms", &options.delay_ms.to_string()])
            .args([
                "--provider-nagle",
                if options.provider_nagle { "on" } else { "off" },
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(log_file(&log)?)
            .spawn()
            .map_err(|err| format!("cannot start the provider process: {err}"))?;
        let mut base_url = String::new();
        if let Some(stdout) = child.stdout.take() {
            let _ = BufReader::new(stdout).read_line(&mut base_url);
        }
        let base_url = base_url.trim().to_owned();
        if base_url.is_empty() {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "the provider process did not print its address; see {}",
                log.display()
            ));
        }
        let address = base_url
            .trim_start_matches("http://")
            .trim_end_matches("/v1")
            .to_owned();
        Ok(Process {
            what: "the loopback provider".to_owned(),
            pid: child.id(),
            child,
            log,
            health_url: String::new(),
            address,
            base_url: Some(base_url),
        })
    }

    /// `skein serve` with its OpenAI endpoint pointed at the provider.
    pub(crate) fn skein(
        binary: &Path,
        work_dir: &Path,
        tag: &str,
        provider: &str,
    ) -> Result<Self, String> {
        let address = format!("127.0.0.1:{}", free_port().map_err(|err| err.to_string())?);
        let log = work_dir.join(format!("{tag}-skein.log"));
        let mut command = Command::new(binary);
        command
            .arg("serve")
            .arg("--db")
            .arg(work_dir.join(format!("{tag}.db")))
            .args(["--listen", &address, "--base-url", provider])
            // Every stream of the bench comes from one caller (loopback, no token).
            .args(["--concurrency", "100000", "--max-connections", "100000"])
            .args(["--shutdown-grace", "2"])
            // One thread, as nginx runs one worker and LiteLLM one process: the relays are
            // compared at the same parallelism.
            .args(["--workers", "1"]);
        Self::spawn(
            "skein serve",
            command,
            &log,
            &[("OPENAI_API_KEY", DUMMY_KEY)],
            address.clone(),
            format!("http://{address}/health"),
        )
    }

    /// nginx relaying every path to the provider: one worker, `proxy_buffering off`,
    /// keep-alive connections upstream (as many idle ones as streams, so none is reopened).
    pub(crate) fn nginx(
        binary: &Path,
        work_dir: &Path,
        tag: &str,
        provider: &str,
        concurrency: usize,
    ) -> Result<Self, String> {
        let address = format!("127.0.0.1:{}", free_port().map_err(|err| err.to_string())?);
        let dir = work_dir.join(format!("{tag}-nginx"));
        std::fs::create_dir_all(&dir)
            .map_err(|err| format!("cannot create {}: {err}", dir.display()))?;
        let config = dir.join("nginx.conf");
        let upstream = provider
            .trim_start_matches("http://")
            .trim_end_matches("/v1");
        let text = RelayConfig {
            listen: &address,
            upstream,
            dir: &dir,
            upstream_key: DUMMY_KEY,
            upstream_keepalive: concurrency.max(16),
        }
        .render();
        std::fs::write(&config, text)
            .map_err(|err| format!("cannot write {}: {err}", config.display()))?;
        let mut command = Command::new(binary);
        command
            .arg("-p")
            .arg(&dir)
            .arg("-c")
            .arg(&config)
            .arg("-e")
            .arg(dir.join("nginx-error.log"));
        Self::spawn(
            "nginx",
            command,
            &work_dir.join(format!("{tag}-nginx.log")),
            &[],
            address.clone(),
            format!("http://{address}/health"),
        )
    }

    /// LiteLLM's proxy: one worker, no database, the model mapped to the provider.
    pub(crate) fn litellm(
        binary: &Path,
        work_dir: &Path,
        tag: &str,
        provider: &str,
    ) -> Result<Self, String> {
        let port = free_port().map_err(|err| err.to_string())?;
        let address = format!("127.0.0.1:{port}");
        let log = work_dir.join(format!("{tag}-litellm.log"));
        let config = work_dir.join(format!("{tag}-litellm.yaml"));
        std::fs::write(
            &config,
            format!(
                "model_list:\n\
                 \x20 - model_name: {MODEL}\n\
                 \x20   litellm_params:\n\
                 \x20     model: openai/{MODEL}\n\
                 \x20     api_base: {provider}\n\
                 \x20     api_key: {DUMMY_KEY}\n\
                 litellm_settings:\n\
                 \x20 telemetry: false\n\
                 \x20 drop_params: true\n"
            ),
        )
        .map_err(|err| format!("cannot write {}: {err}", config.display()))?;
        let mut command = Command::new(binary);
        command
            .arg("--config")
            .arg(&config)
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .args(["--num_workers", "1"]);
        Self::spawn(
            "the LiteLLM proxy",
            command,
            &log,
            &[
                // No usage reports, no download of the model cost map at start.
                ("LITELLM_TELEMETRY", "False"),
                ("LITELLM_LOCAL_MODEL_COST_MAP", "True"),
                // Tokenizers come with the package; never from a model hub.
                ("HF_HUB_OFFLINE", "1"),
                ("NO_PROXY", "127.0.0.1,localhost"),
            ],
            address.clone(),
            format!("http://{address}/health/liveliness"),
        )
    }

    fn spawn(
        what: &str,
        mut command: Command,
        log: &Path,
        env: &[(&str, &str)],
        address: String,
        health_url: String,
    ) -> Result<Self, String> {
        scrub_environment(&mut command);
        command.envs(env.iter().copied());
        let stdout = log_file(log)?;
        let stderr = stdout
            .try_clone()
            .map_err(|err| format!("{}: {err}", log.display()))?;
        command.stdin(Stdio::null()).stdout(stdout).stderr(stderr);
        let child = command.spawn().map_err(|err| {
            format!(
                "cannot start {what} ({}): {err}",
                command.get_program().to_string_lossy()
            )
        })?;
        Ok(Process {
            what: what.to_owned(),
            pid: child.id(),
            child,
            log: log.to_owned(),
            address,
            health_url,
            base_url: None,
        })
    }

    /// Whether the process has exited.
    pub(crate) fn exited(&self) -> bool {
        has_exited(self.pid)
    }

    /// SIGTERM (or closing stdin, for the provider), then a kill of its tree after ten
    /// seconds.
    pub(crate) fn stop(mut self) -> Result<(), String> {
        if let Ok(Some(status)) = self.child.try_wait() {
            return Err(format!(
                "{} exited during the run ({status}); see {}",
                self.what,
                self.log.display()
            ));
        }
        let stopped = if self.base_url.is_some() {
            drop(self.child.stdin.take());
            wait_or_kill(&mut self.child, &self.what, STOP_TIMEOUT)
        } else {
            terminate(&mut self.child, &self.what, STOP_TIMEOUT)
        };
        stopped.map(drop).map_err(|err| err.to_string())
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            kill_tree(self.pid);
            let _ = self.child.wait();
        }
    }
}

fn log_file(path: &Path) -> Result<std::fs::File, String> {
    std::fs::File::create(path).map_err(|err| format!("cannot create {}: {err}", path.display()))
}

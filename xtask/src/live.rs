//! A live `skein serve` whose providers are recorded streams, for the steps that run real
//! clients against it (`openai-sdk`, `clients`).
//!
//! [`Replay`] starts `xtask/openai_sdk/replay.py`, a fake OpenAI, Anthropic and Gemini on a free
//! loopback port that answers with the exact bytes of recordings under
//! `providers/tests/fixtures/`. [`Skein`] starts `skein serve` on a free loopback port with a
//! temporary SQLite store and one bearer token (from a `--token-file`); [`replay_config`] points
//! every provider endpoint at the replay server and [`DUMMY_KEYS`] gives the server keys that
//! only ever reach it. [`stop`] stops servers and the replay server and collects what went
//! wrong: a server that exited during the run, panicked or did not exit cleanly on SIGTERM.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::cmd::{remove_api_keys, workspace_root};

/// How long a server may take to exit after SIGTERM (its shutdown grace is set to 5 s).
const STOP_TIMEOUT: Duration = Duration::from_secs(20);
/// How long the replay server may take to write its port.
const REPLAY_START_TIMEOUT: Duration = Duration::from_secs(20);
/// Variables that would give a server tokens or a store other than this run's (its keys are
/// removed by `remove_api_keys`).
const SERVER_VARIABLES: &[&str] = &["SKEIN_TOKENS", "SKEIN_DB"];
/// Variables that would point an OpenAI client elsewhere than the server under test.
pub(crate) const CLIENT_UNSET_VARIABLES: &[&str] = &[
    "OPENAI_BASE_URL",
    "OPENAI_API_BASE",
    "OPENAI_API_KEY",
    "OPENAI_ORG_ID",
    "OPENAI_PROJECT_ID",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
];
/// The keys of a server whose providers are the replay server: dummies, as they only ever
/// reach it.
pub(crate) const DUMMY_KEYS: &[(&str, &str)] = &[
    ("OPENAI_API_KEY", "sk-openai-sdk-replay"),
    ("ANTHROPIC_API_KEY", "sk-ant-openai-sdk-replay"),
    ("GEMINI_API_KEY", "gemini-openai-sdk-replay"),
];

/// The folder of the replay server and the openai SDK checks.
pub(crate) fn replay_dir() -> PathBuf {
    workspace_root().join("xtask").join("openai_sdk")
}

/// A bearer token unique to this run (`label` and the process), never a real secret.
pub(crate) fn run_token(label: &str) -> String {
    format!(
        "{label}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_nanos())
    )
}

/// Writes a `skein serve` config to `name` in `run_dir` that points every provider at the
/// replay server listening on `port`.
pub(crate) fn replay_config(run_dir: &Path, name: &str, port: u16) -> Result<PathBuf, String> {
    write(
        run_dir,
        name,
        &format!(
            "base_urls:\n  openai: http://127.0.0.1:{port}/v1\n  anthropic: \
             http://127.0.0.1:{port}\n  google: http://127.0.0.1:{port}/v1beta\n\
             shutdown_grace_secs: 5\n"
        ),
    )
}

/// Writes `text` to `name` in `dir`.
pub(crate) fn write(dir: &Path, name: &str, text: &str) -> Result<PathBuf, String> {
    let path = dir.join(name);
    fs::write(&path, text).map_err(|err| format!("{}: {err}", path.display()))?;
    Ok(path)
}

/// Stops `servers` (SIGTERM; each must exit cleanly and must not have panicked) and then
/// `replay`; what went wrong, one entry per problem.
pub(crate) fn stop(servers: &mut [Skein<'_>], replay: Replay) -> Vec<String> {
    let mut failures = Vec::new();
    for server in servers {
        if let Err(err) = server.stop() {
            failures.push(err);
        }
        let panics = server.panics();
        if !panics.is_empty() {
            failures.push(format!(
                "{} panicked ({} in {}):\n{}",
                server.setup.name,
                panics.len(),
                server.log.display(),
                panics.join("\n")
            ));
        }
    }
    if let Err(err) = replay.stop() {
        failures.push(err);
    }
    failures
}

/// The replay server, stopped when dropped.
pub(crate) struct Replay {
    child: Child,
    /// The loopback port it listens on.
    pub(crate) port: u16,
    log: PathBuf,
}

impl Replay {
    /// Starts `replay.py` with `python`, logging to `run_dir/replay.log`, and waits until it
    /// listens.
    pub(crate) fn start(python: &Path, run_dir: &Path) -> Result<Self, String> {
        let log = run_dir.join("replay.log");
        let port_file = run_dir.join("replay.port");
        let file = append(&log)?;
        let err_file = file.try_clone().map_err(|err| err.to_string())?;
        let child = Command::new(python)
            .arg(replay_dir().join("replay.py"))
            .arg("--fixtures")
            .arg(
                workspace_root()
                    .join("providers")
                    .join("tests")
                    .join("fixtures"),
            )
            .arg("--port-file")
            .arg(&port_file)
            .arg("--log")
            .arg(&log)
            .stdin(Stdio::null())
            .stdout(file)
            .stderr(err_file)
            .current_dir(run_dir)
            .spawn()
            .map_err(|err| format!("cannot start the replay server: {err}"))?;
        let mut replay = Replay {
            child,
            port: 0,
            log,
        };
        let started = Instant::now();
        loop {
            if let Some(status) = replay.child.try_wait().map_err(|err| err.to_string())? {
                return Err(format!(
                    "the replay server exited before it listened ({status}); see {}",
                    replay.log.display()
                ));
            }
            if let Some(port) = fs::read_to_string(&port_file)
                .ok()
                .and_then(|text| text.trim().parse().ok())
            {
                replay.port = port;
                eprintln!(
                    "==> replay server on 127.0.0.1:{port} (log: {})",
                    replay.log.display()
                );
                return Ok(replay);
            }
            if started.elapsed() > REPLAY_START_TIMEOUT {
                return Err(format!(
                    "the replay server did not listen within {REPLAY_START_TIMEOUT:?}; see {}",
                    replay.log.display()
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn stop(mut self) -> Result<(), String> {
        if let Some(status) = self.child.try_wait().map_err(|err| err.to_string())? {
            return Err(format!(
                "the replay server exited during the run ({status}); see {}",
                self.log.display()
            ));
        }
        crate::cmd::terminate(&mut self.child, "the replay server", STOP_TIMEOUT).map(drop)
    }
}

impl Drop for Replay {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// How one `skein serve` is started (again, on a restart).
pub(crate) struct Setup<'a> {
    /// Names its log (`NAME.log`), store (`NAME.db`) and messages.
    pub(crate) name: &'static str,
    /// The `skein` binary.
    pub(crate) binary: &'a Path,
    /// The run directory: log, store, working directory.
    pub(crate) dir: &'a Path,
    /// `--config`.
    pub(crate) config: PathBuf,
    /// `--token-file`.
    pub(crate) token_file: PathBuf,
    /// `--listen`, a loopback `host:port`.
    pub(crate) address: String,
    /// The only provider keys in its environment.
    pub(crate) keys: &'static [(&'static str, &'static str)],
}

/// `skein serve`, killed if still running when dropped.
pub(crate) struct Skein<'a> {
    /// How it was started.
    pub(crate) setup: Setup<'a>,
    child: Option<Child>,
    log: PathBuf,
}

impl<'a> Skein<'a> {
    /// Starts the server (without waiting for it: see [`Skein::wait_healthy`]).
    pub(crate) fn start(setup: Setup<'a>) -> Result<Self, String> {
        let log = setup.dir.join(format!("{}.log", setup.name));
        let mut skein = Skein {
            setup,
            child: None,
            log,
        };
        skein.spawn()?;
        Ok(skein)
    }

    /// Its base URL, `http://host:port`.
    pub(crate) fn url(&self) -> String {
        format!("http://{}", self.setup.address)
    }

    fn spawn(&mut self) -> Result<(), String> {
        let setup = &self.setup;
        // Appended to, so that a restarted server's log follows the first one's.
        let file = append(&self.log)?;
        let err_file = file.try_clone().map_err(|err| err.to_string())?;
        let mut command = Command::new(setup.binary);
        command
            .arg("serve")
            .arg("--db")
            .arg(setup.dir.join(format!("{}.db", setup.name)))
            .arg("--config")
            .arg(&setup.config)
            .arg("--token-file")
            .arg(&setup.token_file)
            .args(["--listen", &setup.address])
            .env("RUST_LOG", "info")
            .env("RUST_BACKTRACE", "1")
            .stdin(Stdio::null())
            .stdout(file)
            .stderr(err_file)
            .current_dir(setup.dir);
        remove_api_keys(&mut command);
        for variable in SERVER_VARIABLES {
            command.env_remove(variable);
        }
        command.envs(setup.keys.iter().copied());
        eprintln!(
            "==> {} serve on {} (log: {})",
            setup.name,
            setup.address,
            self.log.display()
        );
        let child = command
            .spawn()
            .map_err(|err| format!("cannot start {}: {err}", setup.binary.display()))?;
        self.child = Some(child);
        Ok(())
    }

    /// Waits until `GET /health` answers 200.
    pub(crate) fn wait_healthy(&mut self) -> Result<(), String> {
        let name = self.setup.name;
        let child = self
            .child
            .as_mut()
            .ok_or_else(|| format!("{name} is not running"))?;
        crate::net::wait_healthy(child, &self.setup.address, name, &self.log)
    }

    /// SIGTERM, then waits for a clean exit.
    fn stop(&mut self) -> Result<(), String> {
        let name = self.setup.name;
        let log = self.log.display();
        let Some(mut child) = self.child.take() else {
            return Ok(());
        };
        if let Some(status) = child.try_wait().map_err(|err| err.to_string())? {
            return Err(format!(
                "{name} exited during the run ({status}); see {log}"
            ));
        }
        let result = crate::cmd::terminate(&mut child, name, STOP_TIMEOUT);
        if result.is_err() {
            let _ = child.kill();
            let _ = child.wait();
        }
        let status = result.map_err(|err| format!("{err}; see {log}"))?;
        eprintln!("<== {name} stopped on SIGTERM ({status})");
        if status.success() {
            Ok(())
        } else {
            Err(format!("{name} exited with {status} on SIGTERM; see {log}"))
        }
    }

    /// Stops the server and starts it again with the same port, store, tokens and keys.
    pub(crate) fn restart(&mut self) -> Result<(), String> {
        self.stop()?;
        self.spawn()?;
        self.wait_healthy()
    }

    /// The panic lines of the server's log.
    fn panics(&self) -> Vec<String> {
        fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter(|line| line.contains("panicked"))
            .map(str::to_owned)
            .collect()
    }
}

impl Drop for Skein<'_> {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child
            && matches!(child.try_wait(), Ok(None))
        {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn append(path: &Path) -> Result<fs::File, String> {
    fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|err| format!("{}: {err}", path.display()))
}

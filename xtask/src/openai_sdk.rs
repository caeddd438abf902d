//! `cargo xtask openai-sdk`: the official `openai` Python SDK against a live `skein serve`.
//!
//! Starts `xtask/openai_sdk/replay.py`, a fake OpenAI, Anthropic and Gemini on a free loopback
//! port that answers with the exact bytes of recordings under `providers/tests/fixtures/`; builds
//! the `skein` binary and starts two servers on free loopback ports, each with a temporary
//! SQLite store and one bearer token (from a `--token-file`):
//! - the main one, with dummy provider keys in its environment and every provider endpoint set
//!   to the replay server (`--config`), so each model call is answered by a recording;
//! - a keyless one, with no provider key or endpoint, so a real model is refused by the server
//!   itself (the SDK must see that as a 404).
//!
//! Once both answer `GET /health`, `xtask/openai_sdk/client.py` runs with the virtualenv's
//! Python: every check calls Skein through `openai.OpenAI` and asserts on the SDK's objects and
//! exception classes, with expected values taken from the recordings. A check may ask for the
//! main server to be restarted (a line on the client's stdout; the answer goes to its stdin):
//! it is stopped with SIGTERM and started again on the same port and store. At the end the
//! servers are stopped with SIGTERM (they must exit cleanly) and the replay server too.
//!
//! The step fails on a failed check, a server that exits, panics or does not stop on SIGTERM,
//! and keeps the logs (servers, replay, client) in the run directory it names.
//!
//! The SDK comes from PyPI, pinned with all its dependencies in
//! `xtask/openai-sdk-requirements.txt`, into a virtualenv under `target/xtask-openai-sdk/venv`
//! that is reused while that file is unchanged.

use std::fs;
use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use crate::cmd::{remove_api_keys, target_dir, workspace_root};

/// How long a server may take to exit after SIGTERM (its shutdown grace is set to 5 s).
const STOP_TIMEOUT: Duration = Duration::from_secs(20);
/// How long the replay server may take to write its port.
const REPLAY_START_TIMEOUT: Duration = Duration::from_secs(20);
/// The line with which the client asks for the main server to be restarted, and the answer
/// when it was (anything else is the reason it was not).
const RESTART_REQUEST: &str = "@@xtask restart-skein";
const RESTART_DONE: &str = "restarted";
/// Variables that would give a server tokens or a store other than this run's (its keys are
/// removed by `remove_api_keys`).
const SERVER_VARIABLES: &[&str] = &["SKEIN_TOKENS", "SKEIN_DB"];
/// Variables that would point the SDK elsewhere than the server under test.
const CLIENT_UNSET_VARIABLES: &[&str] = &[
    "OPENAI_BASE_URL",
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
/// The keys of the main server: dummies, as they only ever reach the replay server.
const DUMMY_KEYS: &[(&str, &str)] = &[
    ("OPENAI_API_KEY", "sk-openai-sdk-replay"),
    ("ANTHROPIC_API_KEY", "sk-ant-openai-sdk-replay"),
    ("GEMINI_API_KEY", "gemini-openai-sdk-replay"),
];

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    if args.iter().any(|arg| arg == "-h" || arg == "--help") {
        println!(
            "usage: cargo xtask openai-sdk\n\
             runs the official `openai` Python SDK against a fresh `skein serve` whose providers \
             are recorded streams replayed on loopback (offline)"
        );
        return Ok(());
    }
    if let Some(extra) = args.first() {
        return Err(format!("`openai-sdk` takes no arguments, got `{extra}`"));
    }
    let started = Instant::now();
    let dir = target_dir().join("xtask-openai-sdk");
    let python = crate::venv::ensure(&dir, "openai-sdk-requirements.txt", "openai SDK")
        .map(|bin| bin.join("python"))?;
    let binary = crate::cmd::build_skein()?;
    let run_dir = crate::cmd::fresh_run_dir(&dir)?;
    let result = run_in(&python, &binary, &run_dir);
    match result {
        Ok(()) => {
            let _ = fs::remove_dir_all(&run_dir);
            eprintln!("openai-sdk: passed in {:.1?}", started.elapsed());
            Ok(())
        }
        Err(message) => Err(format!(
            "{message}\n(the logs of the servers, the replay server and the client are kept in \
             {})",
            run_dir.display()
        )),
    }
}

/// Everything after the build, in `run_dir`; every process started is stopped on return.
fn run_in(python: &Path, binary: &Path, run_dir: &Path) -> Result<(), String> {
    let sdk_dir = workspace_root().join("xtask").join("openai_sdk");
    let replay = Replay::start(python, &sdk_dir, run_dir)?;

    // A bearer token, unique per run and never a real secret; both servers read it from a file.
    let token = format!(
        "openai-sdk-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_nanos())
    );
    let token_file = write(run_dir, "tokens.txt", &format!("{token}\n"))?;
    let main_config = write(
        run_dir,
        "skein.yaml",
        &format!(
            "base_urls:\n  openai: http://127.0.0.1:{port}/v1\n  anthropic: \
             http://127.0.0.1:{port}\n  google: http://127.0.0.1:{port}/v1beta\n\
             shutdown_grace_secs: 5\n",
            port = replay.port
        ),
    )?;
    let keyless_config = write(run_dir, "skein-keyless.yaml", "shutdown_grace_secs: 5\n")?;
    let mut servers = [
        Skein::start(Setup {
            name: "skein",
            binary,
            dir: run_dir,
            config: main_config,
            token_file: token_file.clone(),
            address: crate::net::free_port().map(|port| format!("127.0.0.1:{port}"))?,
            keys: DUMMY_KEYS,
        })?,
        Skein::start(Setup {
            name: "skein-keyless",
            binary,
            dir: run_dir,
            config: keyless_config,
            token_file,
            address: crate::net::free_port().map(|port| format!("127.0.0.1:{port}"))?,
            keys: &[],
        })?,
    ];
    let mut failures = Vec::new();
    let ready = servers.iter_mut().try_for_each(Skein::wait_healthy);
    if let Err(err) = ready {
        failures.push(err);
    } else {
        let [main, keyless] = &mut servers;
        let keyless_url = format!("http://{}", keyless.setup.address);
        if let Err(err) = run_client(python, &sdk_dir, run_dir, main, &keyless_url, &token) {
            failures.push(err);
        }
    }
    for server in &mut servers {
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
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("\n"))
    }
}

/// Runs `client.py` against `main` (and `keyless_url`), restarting `main` when it asks, and
/// copies its lines to stdout and to `client.log`.
fn run_client(
    python: &Path,
    sdk_dir: &Path,
    run_dir: &Path,
    main: &mut Skein<'_>,
    keyless_url: &str,
    token: &str,
) -> Result<(), String> {
    let log_path = run_dir.join("client.log");
    let mut log =
        fs::File::create(&log_path).map_err(|err| format!("{}: {err}", log_path.display()))?;
    let script = sdk_dir.join("client.py");
    eprintln!(
        "\n==> openai SDK checks: {} {}",
        python.display(),
        script.display()
    );
    let started = Instant::now();
    let mut command = Command::new(python);
    command
        .arg(&script)
        .env("SKEIN_URL", format!("http://{}", main.setup.address))
        .env("SKEIN_KEYLESS_URL", keyless_url)
        .env("SKEIN_TOKEN", token)
        .env("PYTHONUNBUFFERED", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .current_dir(run_dir);
    // Neither the SDK's own settings nor a proxy may change where it connects: loopback only.
    for variable in CLIENT_UNSET_VARIABLES {
        command.env_remove(variable);
    }
    let mut child = command
        .spawn()
        .map_err(|err| format!("cannot start {}: {err}", python.display()))?;
    let relayed = relay(&mut child, main, &mut log);
    if relayed.is_err() {
        // The client cannot be driven any further; it must not outlive the run.
        let _ = child.kill();
    }
    let status = child
        .wait()
        .map_err(|err| format!("cannot wait for the client: {err}"))?;
    eprintln!(
        "<== openai SDK checks: {status} in {:.1?}",
        started.elapsed()
    );
    relayed?;
    if status.success() {
        Ok(())
    } else {
        Err(format!(
            "the openai SDK checks failed ({status}); the failing check is printed above and in \
             {}",
            log_path.display()
        ))
    }
}

/// Copies the client's lines to stdout and `log` until it closes its stdout, restarting `main`
/// whenever the client asks; an error if a restart failed or the client could not be driven.
fn relay(child: &mut Child, main: &mut Skein<'_>, log: &mut fs::File) -> Result<(), String> {
    let stdout = child
        .stdout
        .take()
        .ok_or("the client's stdout is not piped")?;
    let mut stdin = child
        .stdin
        .take()
        .ok_or("the client's stdin is not piped")?;
    let mut restart_failure = None;
    for line in BufReader::new(stdout).lines() {
        let line = line.map_err(|err| format!("cannot read the client's output: {err}"))?;
        let _ = writeln!(log, "{line}");
        if line == RESTART_REQUEST {
            eprintln!("==> restarting skein for the client");
            let answer = match main.restart() {
                Ok(()) => RESTART_DONE.to_owned(),
                Err(err) => {
                    let answer = err.replace('\n', " ");
                    restart_failure = Some(err);
                    answer
                }
            };
            answer_client(&mut stdin, &answer)?;
        } else {
            println!("{line}");
        }
    }
    match restart_failure {
        Some(err) => Err(format!("restarting skein for the client failed: {err}")),
        None => Ok(()),
    }
}

fn answer_client(stdin: &mut ChildStdin, answer: &str) -> Result<(), String> {
    writeln!(stdin, "{answer}")
        .and_then(|()| stdin.flush())
        .map_err(|err| format!("cannot answer the client: {err}"))
}

/// Writes `text` to `name` in `dir`.
fn write(dir: &Path, name: &str, text: &str) -> Result<PathBuf, String> {
    let path = dir.join(name);
    fs::write(&path, text).map_err(|err| format!("{}: {err}", path.display()))?;
    Ok(path)
}

/// The replay server, stopped when dropped.
struct Replay {
    child: Child,
    port: u16,
    log: PathBuf,
}

impl Replay {
    fn start(python: &Path, sdk_dir: &Path, run_dir: &Path) -> Result<Self, String> {
        let log = run_dir.join("replay.log");
        let port_file = run_dir.join("replay.port");
        let file = append(&log)?;
        let err_file = file.try_clone().map_err(|err| err.to_string())?;
        let child = Command::new(python)
            .arg(sdk_dir.join("replay.py"))
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
struct Setup<'a> {
    name: &'static str,
    binary: &'a Path,
    dir: &'a Path,
    config: PathBuf,
    token_file: PathBuf,
    address: String,
    keys: &'static [(&'static str, &'static str)],
}

/// `skein serve`, killed if still running when dropped.
struct Skein<'a> {
    setup: Setup<'a>,
    child: Option<Child>,
    log: PathBuf,
}

impl<'a> Skein<'a> {
    fn start(setup: Setup<'a>) -> Result<Self, String> {
        let log = setup.dir.join(format!("{}.log", setup.name));
        let mut skein = Skein {
            setup,
            child: None,
            log,
        };
        skein.spawn()?;
        Ok(skein)
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
    fn wait_healthy(&mut self) -> Result<(), String> {
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
    fn restart(&mut self) -> Result<(), String> {
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

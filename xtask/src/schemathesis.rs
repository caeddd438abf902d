//! `cargo xtask schemathesis [ST_RUN_OPTIONS…]`: API fuzzing from the OpenAPI document.
//!
//! Builds the `skein` binary, starts `skein serve` on a free loopback port with a temporary
//! SQLite store, one bearer token (schemathesis sends it, and checks that requests without it
//! are refused) and provider keys removed from its environment (so the `echo` model answers
//! and any other model is refused before any network call: a server holds neither a key nor
//! an endpoint for it), waits for `GET /health`, then runs schemathesis (`st run …/openapi.json --checks
//! all`, every operation, a bounded number of examples, a fixed seed) and stops the server with
//! SIGTERM. The step fails on any schemathesis finding (a 5xx, a response or status the
//! document does not describe, a schema-valid request refused…), on a server that exits or
//! panics during the run, and on one that does not stop on SIGTERM.
//!
//! Schemathesis comes from PyPI, pinned with all its dependencies in
//! `xtask/schemathesis-requirements.txt`, into a virtualenv under
//! `target/xtask-schemathesis/venv` that is reused while that file is unchanged. Its settings
//! (expected statuses of checks) are `xtask/schemathesis.toml`. Options after the command are
//! passed to `st run` and win over the defaults (e.g. `--max-examples 200`, `--seed 7`).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::cmd::{remove_api_keys, step, target_dir, workspace_root};

/// Examples per operation and phase: enough to cover every field's shapes, small enough that
/// the step takes about a minute on two cores.
const MAX_EXAMPLES: &str = "60";
/// Fixed, so that CI runs are reproducible; `--seed` after the command overrides it.
const SEED: &str = "20261123";
/// A time budget for the whole schemathesis run (seconds).
const MAX_TIME: &str = "120";
/// How long the server may take to exit after SIGTERM (its shutdown grace is set to 5 s).
const STOP_TIMEOUT: Duration = Duration::from_secs(20);
/// Variables that would give the server tokens or a store of its own, removed from its
/// environment with every key (`remove_api_keys`).
const SERVER_VARIABLES: &[&str] = &["SKEIN_TOKENS", "SKEIN_DB"];

/// The server configuration: no provider endpoint and (above) no key, so a request naming a
/// real model is refused by the server itself and nothing reaches out.
const SERVER_CONFIG: &str = "\
shutdown_grace_secs: 5
";

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    if args.iter().any(|arg| arg == "-h" || arg == "--help") {
        println!(
            "usage: cargo xtask schemathesis [ST_RUN_OPTIONS…]\n\
             runs schemathesis against a fresh `skein serve` (echo model, offline); options are \
             passed to `st run` (defaults: --max-examples {MAX_EXAMPLES} --seed {SEED} \
             --max-time {MAX_TIME})"
        );
        return Ok(());
    }
    let dir = target_dir().join("xtask-schemathesis");
    let st = crate::venv::ensure(&dir, "schemathesis-requirements.txt", "schemathesis")
        .map(|bin| bin.join("st"))?;
    let binary = crate::cmd::build_skein()?;
    let run_dir = crate::cmd::fresh_run_dir(&dir)?;
    let config = run_dir.join("server.yaml");
    fs::write(&config, SERVER_CONFIG).map_err(|err| format!("{}: {err}", config.display()))?;
    let port = crate::net::free_port()?;
    let address = format!("127.0.0.1:{port}");
    // A bearer token, so that the run also checks authentication (401 without it); the
    // server is still loopback-only in practice. Unique per run, never a real secret.
    let token = format!(
        "schemathesis-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_nanos())
    );
    let mut server = Server::start(&binary, &run_dir, &config, &address, &token)?;
    server.wait_healthy(&address)?;

    let report = run_dir.join("report");
    let result = step(
        "schemathesis",
        Command::new(&st)
            .arg("--config-file")
            .arg(workspace_root().join("xtask").join("schemathesis.toml"))
            .args(["run", &format!("http://{address}/openapi.json")])
            .args(["--checks", "all", "--max-examples", MAX_EXAMPLES])
            .args(["--seed", SEED, "--max-time", MAX_TIME])
            .args(["--workers", "1", "--request-timeout", "30"])
            .args(["--header", &format!("Authorization: Bearer {token}")])
            .args(["--generation-database", "none", "--no-color"])
            .args(["--report", "junit", "--report-dir"])
            .arg(&report)
            .args(args)
            .current_dir(&run_dir),
    );
    let stopped = server.stop();
    let panics = server.panics();
    let mut failures: Vec<String> = [result.err(), stopped.err()]
        .into_iter()
        .flatten()
        .collect();
    if !panics.is_empty() {
        failures.push(format!(
            "the server panicked ({} in {}):\n{}",
            panics.len(),
            server.log.display(),
            panics.join("\n")
        ));
    }
    if !failures.is_empty() {
        return Err(format!(
            "{}\n(server log, config and the JUnit report are kept in {})",
            failures.join("\n"),
            run_dir.display()
        ));
    }
    let _ = fs::remove_dir_all(&run_dir);
    Ok(())
}

/// `skein serve`, killed if still running when dropped.
struct Server {
    child: Child,
    log: PathBuf,
}

impl Server {
    fn start(
        binary: &Path,
        dir: &Path,
        config: &Path,
        address: &str,
        token: &str,
    ) -> Result<Self, String> {
        let log = dir.join("server.log");
        let file = fs::File::create(&log).map_err(|err| format!("{}: {err}", log.display()))?;
        let err_file = file.try_clone().map_err(|err| err.to_string())?;
        let mut command = Command::new(binary);
        command
            .arg("serve")
            .arg("--db")
            .arg(dir.join("logs.db"))
            .arg("--config")
            .arg(config)
            .args(["--listen", address])
            .env("RUST_LOG", "info")
            .env("RUST_BACKTRACE", "1")
            .stdin(Stdio::null())
            .stdout(file)
            .stderr(err_file)
            .current_dir(dir);
        remove_api_keys(&mut command);
        for variable in SERVER_VARIABLES {
            command.env_remove(variable);
        }
        command.env("SKEIN_TOKENS", token);
        eprintln!("\n==> skein serve on {address} (log: {})", log.display());
        let child = command
            .spawn()
            .map_err(|err| format!("cannot start {}: {err}", binary.display()))?;
        Ok(Server { child, log })
    }

    /// Waits until `GET /health` answers 200.
    fn wait_healthy(&mut self, address: &str) -> Result<(), String> {
        crate::net::wait_healthy(&mut self.child, address, "skein serve", &self.log)
    }

    /// SIGTERM, then waits for a clean exit.
    fn stop(&mut self) -> Result<(), String> {
        if let Some(status) = self.child.try_wait().map_err(|err| err.to_string())? {
            return Err(format!(
                "skein serve exited during the run ({status}); see {}",
                self.log.display()
            ));
        }
        let status = crate::cmd::terminate(&mut self.child, "skein serve", STOP_TIMEOUT)
            .map_err(|err| format!("{err}; see {}", self.log.display()))?;
        eprintln!("<== skein serve stopped on SIGTERM ({status})");
        if status.success() {
            Ok(())
        } else {
            Err(format!(
                "skein serve exited with {status} on SIGTERM; see {}",
                self.log.display()
            ))
        }
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

impl Drop for Server {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

//! `cargo xtask openai-sdk`: the official `openai` Python SDK against a live `skein serve`.
//!
//! Starts `xtask/openai_sdk/replay.py`, a fake OpenAI, Anthropic and Gemini on a free loopback
//! port that answers with the exact bytes of recordings under `providers/tests/fixtures/`; builds
//! the `skein` binary and starts two servers on free loopback ports, each with a temporary
//! SQLite store and one bearer token (from a `--token-file`):
//! - the main one, with dummy provider keys in its environment and every provider endpoint set
//!   to the replay server (`--config`), so each model call is answered by a recording, and the
//!   reference MCP server `@modelcontextprotocol/server-everything` configured as `everything`
//!   (stdio; installed as `cargo xtask mcp-servers` does when missing), for the Responses `mcp`
//!   tool and its approval items;
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
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::Instant;

use crate::cmd::target_dir;
use crate::live::{CLIENT_UNSET_VARIABLES, DUMMY_KEYS, Replay, Setup, Skein, write};

/// The line with which the client asks for the main server to be restarted, and the answer
/// when it was (anything else is the reason it was not).
const RESTART_REQUEST: &str = "@@xtask restart-skein";
const RESTART_DONE: &str = "restarted";

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
    let everything = crate::mcp_servers::everything()?;
    let binary = crate::cmd::build_skein()?;
    let run_dir = crate::cmd::fresh_run_dir(&dir)?;
    let result = run_in(&python, &binary, &everything, &run_dir);
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
/// `everything` is server-everything's entry point.
fn run_in(python: &Path, binary: &Path, everything: &Path, run_dir: &Path) -> Result<(), String> {
    let sdk_dir = crate::live::replay_dir();
    let replay = Replay::start(python, run_dir)?;

    // Both servers read the run's token from a file.
    let token = crate::live::run_token("openai-sdk");
    let token_file = write(run_dir, "tokens.txt", &format!("{token}\n"))?;
    let main_config = crate::live::replay_config(run_dir, "skein.yaml", replay.port)?;
    add_everything(&main_config, everything)?;
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
        let keyless_url = keyless.url();
        if let Err(err) = run_client(python, &sdk_dir, run_dir, main, &keyless_url, &token) {
            failures.push(err);
        }
    }
    failures.extend(crate::live::stop(&mut servers, replay));
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("\n"))
    }
}

/// Adds server-everything, started as `node <entry> stdio`, to the configuration file `config`
/// as the MCP server `everything` (the label the client's `mcp` tools name).
fn add_everything(config: &Path, entry: &Path) -> Result<(), String> {
    let mut file = fs::OpenOptions::new()
        .append(true)
        .open(config)
        .map_err(|err| format!("{}: {err}", config.display()))?;
    // A YAML double-quoted scalar takes the escapes of a Rust `Debug` string.
    writeln!(
        file,
        "mcp_servers:\n  - name: everything\n    command: node\n    args: [{:?}, stdio]",
        entry.to_string_lossy()
    )
    .map_err(|err| format!("{}: {err}", config.display()))
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
        .env("SKEIN_URL", main.url())
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

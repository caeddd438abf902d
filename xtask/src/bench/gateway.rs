//! `cargo xtask bench gateway [OPTIONS]`: `skein serve` beside LiteLLM's proxy.
//!
//! Builds the release `skein` binary and the `gateway` example of the `server` crate, installs
//! LiteLLM's proxy into a virtualenv under `target/xtask-litellm/venv` (pinned with all its
//! dependencies in `xtask/litellm-requirements.txt`, reused while that file is unchanged), then
//! runs the example: the loopback provider alone (the floor), `skein serve` (`/v1/response`,
//! and `/v1/chat/completions` and `/v1/responses` when the build has them) and the LiteLLM
//! proxy in front of the same provider, each started afresh and driven by the same client at
//! each concurrency. It prints a Markdown table (streams completed and failed, time to first
//! token p50/p99, the server's CPU per delta over its whole process tree, peak RSS, the first
//! request's time to first token beside the warm ones) and which of Skein's goals are met.
//!
//! When LiteLLM cannot be installed the bench says why and measures the other targets. The
//! step fails when the provider or Skein cannot be measured or one of their streams fails.
//! Logs, configurations and stores of the run are kept in `target/xtask-litellm/run-<pid>/`
//! when it fails, removed when it succeeds.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::cmd::{cargo, step, target_dir};

const USAGE: &str = "\
usage: cargo xtask bench gateway [--seconds S] [--concurrency 50,200] [--deltas N] [--delay-ms MS]
                                 [--only direct,skein,skein-chat,skein-responses,litellm]
                                 [--no-litellm] [--provider-nagle on|off] [--samples-dir DIR]

Runs the loopback provider alone, `skein serve` and LiteLLM's proxy in front of it, each with
the same client, for S seconds (default 20) at each concurrency (default 50 and 200), the
provider streaming N deltas per answer (default 500) MS apart (default 1).
--no-litellm skips installing and running LiteLLM. --provider-nagle on serves the provider
without TCP_NODELAY (server::testing::StreamingProvider as it is). --samples-dir writes every
stream's start, time to first event and time to first token to DIR/<row>.tsv.";

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    if args.iter().any(|arg| arg == "-h" || arg == "--help") {
        println!("{USAGE}");
        return Ok(());
    }
    let no_litellm = args.iter().any(|arg| arg == "--no-litellm");
    let passed: Vec<&String> = args.iter().filter(|arg| *arg != "--no-litellm").collect();
    if let Some(unknown) = passed
        .iter()
        .step_by(2)
        .find(|arg| !OPTIONS.contains(&arg.as_str()))
    {
        return Err(format!(
            "bench gateway: unknown option `{unknown}`\n\n{USAGE}"
        ));
    }

    step(
        "build skein (release)",
        cargo().args([
            "build",
            "--release",
            "--locked",
            "-p",
            "cli",
            "--bin",
            "skein",
        ]),
    )?;
    step(
        "build the gateway bench (release)",
        cargo().args([
            "build",
            "--release",
            "--locked",
            "-p",
            "server",
            "--features",
            "testing",
            "--example",
            "gateway",
        ]),
    )?;
    let release = target_dir().join("release");
    let skein = release.join("skein");
    let example = release.join("examples").join("gateway");

    let dir = target_dir().join("xtask-litellm");
    let litellm = if no_litellm {
        Err("not measured: --no-litellm".to_owned())
    } else {
        ensure_litellm(&dir).map_err(|err| {
            eprintln!("bench gateway: LiteLLM is not available, measuring the others: {err}");
            format!("not measured: LiteLLM could not be installed ({err})")
        })
    };

    let run_dir = crate::cmd::fresh_run_dir(&dir)?;
    let mut command = Command::new(&example);
    command.arg("--skein").arg(&skein);
    match &litellm {
        Ok(binary) => command.arg("--litellm").arg(binary),
        Err(note) => command.args(["--litellm-note", note]),
    };
    command.arg("--work-dir").arg(&run_dir).args(passed);
    match step("bench gateway", &mut command) {
        Ok(()) => {
            let _ = fs::remove_dir_all(&run_dir);
            Ok(())
        }
        Err(err) => Err(format!(
            "{err}\n(the servers' logs, configurations and stores are kept in {})",
            run_dir.display()
        )),
    }
}

/// Options the example takes from the command line (each with a value).
const OPTIONS: &[&str] = &[
    "--seconds",
    "--concurrency",
    "--deltas",
    "--delay-ms",
    "--only",
    "--provider-nagle",
    "--samples-dir",
];

/// The virtualenv's `litellm`, installed from the pinned requirements unless they are already.
fn ensure_litellm(dir: &Path) -> Result<PathBuf, String> {
    let bin = crate::venv::ensure(dir, "litellm-requirements.txt", "litellm")
        .map_err(|err| format!("{err} (is the package index reachable?)"))?;
    let litellm = bin.join("litellm");
    if !litellm.exists() {
        return Err(format!(
            "the install did not provide {}; check xtask/litellm-requirements.txt",
            litellm.display()
        ));
    }
    Ok(litellm)
}

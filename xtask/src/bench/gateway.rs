//! `cargo xtask bench gateway [OPTIONS]`: `skein serve` beside nginx and LiteLLM's proxy.
//!
//! Builds the `skein` binary (the `dist` profile) and the `gateway` harness of the `bench`
//! crate, finds nginx (Debian's `nginx-light` is enough) and installs LiteLLM's proxy into a
//! virtualenv under `target/xtask-litellm/venv` (pinned with all its dependencies in
//! `xtask/litellm-requirements.txt`, reused while that file is unchanged), then runs the
//! harness: the loopback provider alone (the floor), `skein serve` (`/v1/response`,
//! `/v1/chat/completions`, `/v1/responses`), nginx and the LiteLLM proxy in front of the same
//! provider, each started afresh and driven by the same client, in alternated rounds at each
//! concurrency. It prints a Markdown table (streams completed and failed, time to first token
//! p50/p99, the relay's CPU and write syscalls per delta, peak RSS, the first request's time to
//! first token beside the warm ones), the medians of the rounds with each target's ratio to
//! nginx's of the same round, and which of Skein's goals are met.
//!
//! When nginx is missing the bench says how to install it, and when LiteLLM cannot be
//! installed it says why; either way it measures the other targets. The step fails when the
//! provider or Skein cannot be measured or one of their streams fails. Logs, configurations and
//! stores of the run are kept in `target/xtask-litellm/run-<pid>/` when it fails, removed when
//! it succeeds.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use bench::gateway_options::Options;

use crate::cmd::{step, target_dir};

const USAGE: &str = "\
usage: cargo xtask bench gateway [--seconds S] [--concurrency 50,200] [--rounds N] [--deltas N]
                                 [--delay-ms MS]
                                 [--only direct,skein,skein-chat,skein-responses,nginx,litellm]
                                 [--no-litellm] [--no-nginx] [--baseline-skein PATH]
                                 [--provider-nagle on|off] [--samples-dir DIR]

Runs the loopback provider alone, `skein serve`, nginx and LiteLLM's proxy in front of it, each
with the same client, for S seconds (default 20) per row, N rounds (default 3) of every target
in turn at each concurrency (default 50 and 200), the provider streaming N deltas per answer
(default 500) MS apart (default 1). --no-litellm skips installing and running LiteLLM,
--no-nginx skips nginx. --baseline-skein measures another skein binary (the build before a
change) beside this tree's in every round. --provider-nagle on serves the provider with
server::testing::StreamingProvider. --samples-dir writes every stream's start, time to first
event and time to first token to DIR/<row>.tsv.";

/// Flags of this command that the harness does not take (it is told with notes instead).
const OWN_FLAGS: [&str; 2] = ["--no-litellm", "--no-nginx"];
/// Options xtask sets itself.
const SET_HERE: [&str; 6] = [
    "--skein",
    "--nginx",
    "--nginx-note",
    "--litellm",
    "--litellm-note",
    "--work-dir",
];

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    if args.iter().any(|arg| arg == "-h" || arg == "--help") {
        println!("{USAGE}");
        return Ok(());
    }
    let no_litellm = args.iter().any(|arg| arg == "--no-litellm");
    let no_nginx = args.iter().any(|arg| arg == "--no-nginx");
    let passed: Vec<String> = args
        .iter()
        .filter(|arg| !OWN_FLAGS.contains(&arg.as_str()))
        .cloned()
        .collect();
    if let Some(own) = passed
        .iter()
        .step_by(2)
        .find(|arg| SET_HERE.contains(&arg.as_str()))
    {
        return Err(format!("bench gateway: `{own}` is set by xtask\n\n{USAGE}"));
    }
    Options::parse(&passed).map_err(|err| format!("bench gateway: {err}\n\n{USAGE}"))?;

    let (skein, harness) = super::bench_binaries("gateway")?;

    let nginx = if no_nginx {
        Err("not measured: --no-nginx".to_owned())
    } else {
        bench::nginx::find().map_err(|err| {
            eprintln!("bench gateway: measuring without nginx: {err}");
            format!("not measured: {err}")
        })
    };
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
    let mut command = Command::new(&harness);
    command.arg("--skein").arg(&skein);
    match &nginx {
        Ok(binary) => command.arg("--nginx").arg(binary),
        Err(note) => command.args(["--nginx-note", note]),
    };
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

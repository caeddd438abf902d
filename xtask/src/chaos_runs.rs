//! `cargo xtask chaos-runs [--sqlite] [OPTIONS]`: the chaos test of durable runs.
//!
//! Builds the debug `skein` binary and the `chaos-runs` harness of the `bench` crate (with the
//! whole workspace's features, as the lints and tests build them, so after them this is only
//! a link), starts a throwaway PostgreSQL cluster (unless `--sqlite`), and runs the harness:
//! three `skein serve` replicas on one database with a 3 s lease time to live, 100 background
//! runs with tool rounds (a scripted loopback provider and the `echo` model, behind agent
//! aliases with the server-side `calculator`), clients that resume from random replicas at
//! random `starting_after`, and 10 `kill -9` of random replicas, each started again a moment
//! later. It prints the runs that reached a terminal state, the nodes lost or duplicated in
//! the tree, the resumed streams that differ from the full replay and the takeover time
//! p50/p99, and fails when a goal is missed. `--sqlite` runs one replica on a SQLite file,
//! killed and started again (its unfinished background runs resume at the next start).
//!
//! Options (`--runs N`, `--kills N`, `--replicas N`, `--lease-ttl SECS`, `--chunk-ms MS`,
//! `--seed N`) are passed to the harness. The replicas' logs, configuration and store are kept
//! in `target/xtask-chaos-runs/run-<pid>/` when the test fails, removed when it passes.

use std::fs;
use std::process::Command;

use crate::cmd::{cargo, step, target_dir};

const USAGE: &str = "\
usage: cargo xtask chaos-runs [--sqlite] [--runs N] [--kills N] [--replicas N]
                              [--lease-ttl SECS] [--chunk-ms MS] [--seed N]

Background runs through `skein serve` replicas on one PostgreSQL database (default: 3
replicas, 100 runs, 10 kill -9 with restarts, a 3 s lease ttl), or with --sqlite one replica on
a SQLite file (20 runs, 4 kills); fails when a run does not complete, a node is lost or
duplicated, a completed run's record names no last node, a resumed stream differs from the
full replay, or a killed replica's run is not taken over.";

/// Options xtask sets itself.
const SET_HERE: [&str; 3] = ["--skein", "--work-dir", "--pg-url"];

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    if args.iter().any(|arg| arg == "-h" || arg == "--help") {
        println!("{USAGE}");
        return Ok(());
    }
    if let Some(own) = args.iter().find(|arg| SET_HERE.contains(&arg.as_str())) {
        return Err(format!("chaos-runs: `{own}` is set by xtask\n\n{USAGE}"));
    }
    let sqlite = args.iter().any(|arg| arg == "--sqlite");
    step(
        "build skein and the chaos harness",
        cargo().args([
            "build",
            "--locked",
            "--workspace",
            "--all-features",
            "--bin",
            "skein",
            "--bin",
            "chaos-runs",
        ]),
    )?;
    let debug = target_dir().join("debug");
    let dir = target_dir().join("xtask-chaos-runs");
    let run_dir = crate::cmd::fresh_run_dir(&dir)?;
    // Dropped (stopped, its data removed) when this function returns.
    let cluster = if sqlite {
        None
    } else {
        Some(
            crate::pg::PgCluster::start(crate::pg::Lifetime::Process)
                .map_err(|err| err.to_string())?,
        )
    };
    let mut command = Command::new(debug.join("chaos-runs"));
    command
        .arg("--skein")
        .arg(debug.join("skein"))
        .arg("--work-dir")
        .arg(&run_dir);
    if let Some(cluster) = &cluster {
        command.args(["--pg-url", &cluster.url()]);
    }
    command.args(args);
    let name = if sqlite {
        "chaos-runs (SQLite)"
    } else {
        "chaos-runs (PostgreSQL)"
    };
    let result = step(name, &mut command);
    drop(cluster);
    match result {
        Ok(()) => {
            let _ = fs::remove_dir_all(&run_dir);
            Ok(())
        }
        Err(err) => Err(format!(
            "{err}\n(the replicas' logs, configuration and store are kept in {})",
            run_dir.display()
        )),
    }
}

//! `cargo xtask bench follow [OPTIONS]`: the delay of following a run live from another
//! replica.
//!
//! Builds the `skein` binary (the `dist` profile) and the `follow` harness of the `bench`
//! crate, starts a throwaway PostgreSQL cluster, and runs the harness: two replicas on it,
//! background streaming runs started on one and followed on both (see the harness's
//! documentation). Options (`--runs N`, `--concurrency N`, `--deltas N`, `--delta-ms MS`) are
//! passed through. Not part of `cargo xtask ci`: its figures go to BENCHMARKS.md.

use std::fs;
use std::process::Command;

use crate::cmd::{step, target_dir};

/// Options xtask sets itself.
const SET_HERE: [&str; 3] = ["--skein", "--work-dir", "--pg-url"];

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    if let Some(own) = args.iter().find(|arg| SET_HERE.contains(&arg.as_str())) {
        return Err(format!("bench follow: `{own}` is set by xtask"));
    }
    let harness = super::harness_binary("follow")?;
    if args.iter().any(|arg| arg == "-h" || arg == "--help") {
        // The help is the harness's: no need to build skein for it.
        return step("follow --help", Command::new(&harness).arg("--help"));
    }
    let skein = super::dist_skein()?;
    let dir = target_dir().join("xtask-follow");
    let run_dir = crate::cmd::fresh_run_dir(&dir)?;
    // Dropped (stopped, its data removed) when this function returns.
    let cluster =
        crate::pg::PgCluster::start(crate::pg::Lifetime::Process).map_err(|err| err.to_string())?;
    let mut command = Command::new(&harness);
    command
        .arg("--skein")
        .arg(&skein)
        .arg("--work-dir")
        .arg(&run_dir)
        .args(["--pg-url", &cluster.url()])
        .args(args);
    let result = step("bench follow", &mut command);
    drop(cluster);
    match result {
        Ok(()) => {
            let _ = fs::remove_dir_all(&run_dir);
            Ok(())
        }
        Err(err) => Err(format!(
            "{err}\n(the replicas' logs and configuration are kept in {})",
            run_dir.display()
        )),
    }
}

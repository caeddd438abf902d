//! `cargo xtask bench [OPTIONS]`: the server load scenario.
//!
//! Runs the `load` harness of the `bench` crate in release mode: 200 concurrent streaming
//! clients for 30 s against a server process whose model is a loopback provider streaming 500
//! deltas per answer. It prints completed and failed streams, the p50/p99 time to first event
//! and the server's CPU time per delta, and fails if any stream failed or was lost. Options
//! (`--concurrency N`, `--seconds S`, `--deltas N`, `--delay-ms MS`) are passed through.
//! The scenario lives in the `bench` crate so that xtask needs no HTTP dependencies.
//!
//! `cargo xtask bench gateway [OPTIONS]` compares `skein serve` with nginx and LiteLLM's proxy
//! in front of the same loopback provider (see [`gateway`]).
//!
//! `cargo xtask bench follow [OPTIONS]` measures the delay of following a run live from another
//! replica on one PostgreSQL database (see [`follow`]).

mod follow;
mod gateway;

use std::path::PathBuf;

use crate::cmd;

/// The scenario the issue asks for; options given on the command line come after and win.
const DEFAULTS: [&str; 6] = ["--concurrency", "200", "--seconds", "30", "--deltas", "500"];

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    if args.first().map(String::as_str) == Some("gateway") {
        return gateway::run(&args[1..]);
    }
    if args.first().map(String::as_str) == Some("follow") {
        return follow::run(&args[1..]);
    }
    if args.iter().any(|arg| arg == "-h" || arg == "--help") {
        println!(
            "usage: cargo xtask bench [--concurrency N] [--seconds S] [--deltas N] [--delay-ms MS]\n\
             defaults: 200 clients, 30 s, 500 deltas per answer, 1 ms between deltas\n\
             \n\
             cargo xtask bench gateway [--help]: skein serve beside nginx and LiteLLM's proxy\n\
             cargo xtask bench follow [--help]: the delay of following a run from another replica"
        );
        return Ok(());
    }
    cmd::step(
        "bench",
        cmd::cargo()
            .args(["run", "--release", "-p", "bench", "--bin", "load", "--"])
            .args(DEFAULTS)
            .args(args),
    )
}

/// Builds the `skein` binary people deploy (the `dist` profile) and the `bench` crate's
/// `harness` binary (release); their paths.
fn bench_binaries(harness: &str) -> Result<(PathBuf, PathBuf), String> {
    Ok((dist_skein()?, harness_binary(harness)?))
}

/// Builds the `skein` binary of the `dist` profile (whole-program optimised: minutes on a cold
/// target directory); its path.
fn dist_skein() -> Result<PathBuf, String> {
    cmd::step(
        "build skein (dist profile)",
        cmd::cargo().args([
            "build",
            "--profile",
            "dist",
            "--locked",
            "-p",
            "cli",
            "--bin",
            "skein",
        ]),
    )?;
    Ok(cmd::target_dir().join("dist").join("skein"))
}

/// Builds the `bench` crate's `harness` binary (release); its path.
fn harness_binary(harness: &str) -> Result<PathBuf, String> {
    cmd::step(
        &format!("build the {harness} bench (release)"),
        cmd::cargo().args([
            "build",
            "--release",
            "--locked",
            "-p",
            "bench",
            "--bin",
            harness,
        ]),
    )?;
    Ok(cmd::target_dir().join("release").join(harness))
}

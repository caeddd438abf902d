//! `cargo xtask pg start | stop | status`: a throwaway PostgreSQL cluster for developers, and
//! the one `cargo xtask ci` runs the tests against.
//!
//! The cluster code is conversation-tree's `testing::PgCluster`, compiled in from its source
//! file (it uses only `std`), so CI, developers and the tests start clusters the same way
//! without xtask depending on the crate.

use std::fs;
use std::path::PathBuf;

use crate::cmd::workspace_root;

#[allow(
    dead_code,
    unreachable_pub,
    reason = "shared with conversation-tree's testing module, where every item is used"
)]
#[path = "../../conversation-tree/src/testing/pg_cluster.rs"]
mod pg_cluster;

pub(crate) use pg_cluster::{Lifetime, PgCluster, URL_ENV};

const USAGE: &str = "\
usage: cargo xtask pg <start | stop | status>

  start    start a throwaway cluster on 127.0.0.1 and print its URL; it keeps running
  stop     stop it and delete its data
  status   print its URL if one is running

Tests read the URL from $SKEIN_PG_URL; without it they start a cluster of their own.
";

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    match args {
        [command] if command == "start" => start(),
        [command] if command == "stop" => stop(),
        [command] if command == "status" => status(),
        _ => Err(USAGE.to_owned()),
    }
}

/// Starts a cluster that lives until this process ends, for `cargo xtask ci`.
pub(crate) fn start_for_ci() -> Result<PgCluster, String> {
    let cluster = PgCluster::start(Lifetime::Process).map_err(|err| err.to_string())?;
    eprintln!("ci: PostgreSQL test cluster at {}", cluster.url());
    Ok(cluster)
}

/// Where `start` records the running cluster: its directory, then its URL.
fn state_file() -> PathBuf {
    workspace_root()
        .join("target")
        .join("xtask-pg")
        .join("cluster")
}

struct State {
    root: PathBuf,
    url: String,
}

fn read_state() -> Option<State> {
    let text = fs::read_to_string(state_file()).ok()?;
    let mut lines = text.lines();
    let root = PathBuf::from(lines.next()?);
    let url = lines.next()?.to_owned();
    root.exists().then_some(State { root, url })
}

fn start() -> Result<(), String> {
    if let Some(state) = read_state() {
        return Err(format!(
            "a cluster is already running at {} (`cargo xtask pg stop` stops it)",
            state.url
        ));
    }
    let cluster = PgCluster::start(Lifetime::Detached).map_err(|err| err.to_string())?;
    let file = state_file();
    if let Some(dir) = file.parent() {
        fs::create_dir_all(dir).map_err(|err| format!("cannot create {}: {err}", dir.display()))?;
    }
    let state = format!("{}\n{}\n", cluster.root().display(), cluster.url());
    fs::write(&file, state).map_err(|err| format!("cannot write {}: {err}", file.display()))?;
    eprintln!(
        "PostgreSQL test cluster running in {}",
        cluster.root().display()
    );
    eprintln!("stop it with `cargo xtask pg stop`; point the tests at it with:");
    println!("export {URL_ENV}={}", cluster.url());
    Ok(())
}

fn stop() -> Result<(), String> {
    let Some(state) = read_state() else {
        let _ = fs::remove_file(state_file());
        return Err("no cluster is running (none was started with `cargo xtask pg start`)".into());
    };
    PgCluster::stop_dir(&state.root).map_err(|err| err.to_string())?;
    let _ = fs::remove_file(state_file());
    eprintln!("stopped the cluster at {}", state.url);
    Ok(())
}

fn status() -> Result<(), String> {
    match read_state() {
        Some(state) => {
            println!("{}", state.url);
            Ok(())
        }
        None => Err("no cluster is running (`cargo xtask pg start` starts one)".into()),
    }
}

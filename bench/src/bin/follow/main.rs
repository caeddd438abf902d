//! `follow`: the delay of following a run live from another replica.
//!
//! Two `skein serve` replicas (A and B) on one PostgreSQL database, a loopback model that
//! streams its deltas at a steady pace, background streaming Responses runs started on A.
//! Each run is read by the client that started it (on A, served straight from the run) and
//! followed from the moment its id is known with `GET /v1/responses/{id}?stream=true` on B
//! (events stored by A's batch writer, announced through the database) and on A (the same
//! path, without the other process). The figure is each follower's delay behind the starting
//! client per live event; the bytes of every followed stream must equal the starting client's.
//!
//! Run through `cargo xtask bench follow`, which builds the release binaries and starts
//! PostgreSQL.

mod client;
mod options;
mod provider;
// Shared with the chaos test, whose restarts and log checks this bench does not use.
#[allow(dead_code)]
#[path = "../../harness/replica.rs"]
mod replica;
mod replicas;
mod report;
#[path = "../../harness/sse.rs"]
mod sse;

use std::fs;
use std::process::ExitCode;
use std::time::Instant;

use futures::StreamExt as _;

use crate::client::Target;
use crate::options::{Options, USAGE};
use crate::replica::{Launch, Replica};
use crate::report::Figures;

/// The bearer token of the runs.
const TOKEN: &str = "follow-bench-token-0123456789";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|arg| arg == "-h" || arg == "--help") {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let options = match Options::parse(&args) {
        Ok(options) => options,
        Err(err) => {
            eprintln!("follow: {err}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("follow: cannot start the runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(&options)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("follow: {err}");
            ExitCode::FAILURE
        }
    }
}

async fn run(options: &Options) -> Result<(), String> {
    fs::create_dir_all(&options.work_dir)
        .map_err(|err| format!("{}: {err}", options.work_dir.display()))?;
    let (provider_url, sent) = provider::start(options.deltas, options.delta_delay).await?;
    let config = options.work_dir.join("skein.yaml");
    fs::write(&config, replicas::config_text(&provider_url)).map_err(|err| err.to_string())?;
    let token_file = options.work_dir.join("tokens.txt");
    fs::write(&token_file, format!("{TOKEN}\n")).map_err(|err| err.to_string())?;
    let launch = Launch {
        binary: &options.skein,
        db: &options.pg_url,
        config: &config,
        token_file: &token_file,
        work_dir: &options.work_dir,
    };
    // reqwest's rustls wants a process-wide crypto provider; loopback needs no TLS, but the
    // client refuses to build without one.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::builder()
        .tcp_nodelay(true)
        .build()
        .map_err(|err| err.to_string())?;
    let mut a = Replica::new(&launch, "replica-a".to_owned())?;
    let mut b = Replica::new(&launch, "replica-b".to_owned())?;
    // One after the other: the first brings the schema up to date.
    for replica in [&mut a, &mut b] {
        replica.spawn()?;
        replica.wait_healthy(&http).await?;
    }
    let target = Target {
        http,
        a: a.url(),
        b: b.url(),
        token: TOKEN.to_owned(),
    };

    let started = Instant::now();
    let logs: Vec<_> = futures::stream::iter(0..options.runs)
        .map(|tag| client::drive(target.clone(), tag))
        .buffer_unordered(options.concurrency)
        .collect()
        .await;
    let elapsed = started.elapsed();
    a.stop()?;
    b.stop()?;

    let mut figures = Figures::default();
    let mut failures = Vec::new();
    for log in logs {
        match log {
            Ok(log) => figures.add(&log, &sent),
            Err(err) => failures.push(err),
        }
    }
    println!(
        "{} runs ({} at a time), {} deltas {} ms apart each, two replicas on PostgreSQL, {:.1} s\n",
        options.runs,
        options.concurrency,
        options.deltas,
        options.delta_delay.as_millis(),
        elapsed.as_secs_f64()
    );
    print!("{}", figures.table());
    failures.extend(figures.mismatches.iter().cloned());
    if failures.is_empty() {
        Ok(())
    } else {
        for failure in failures.iter().take(10) {
            eprintln!("follow: {failure}");
        }
        Err(format!(
            "{} runs failed or were followed with other bytes (logs in {})",
            failures.len(),
            options.work_dir.display()
        ))
    }
}

//! Chaos test of durable runs (`cargo xtask chaos-runs`): background runs through `skein serve`
//! replicas that are killed with SIGKILL at random instants and started again.
//!
//! ```text
//! cargo build --workspace --all-features --bin skein --bin chaos-runs
//! target/debug/chaos-runs --skein target/debug/skein --work-dir /tmp/chaos \
//!     --pg-url postgres://postgres@127.0.0.1:5432/postgres
//! target/debug/chaos-runs --skein target/debug/skein --work-dir /tmp/chaos --sqlite
//! ```
//!
//! The replicas share one store (a PostgreSQL database, or one replica on a SQLite file) and a
//! short lease time to live, and their OpenAI endpoint is a scripted loopback provider in this
//! process: it calls the server-side `calculator` tool on the first rounds of each run and
//! then answers, a chunk every few tens of milliseconds, so kills land in the middle of model
//! calls and tool rounds. The runs ask for two agent aliases, one on that provider and one on
//! the offline `echo` model, both with `calculator`.
//!
//! Each run has a client of its own: it posts the run with `background: true` (half of them
//! with `stream: true`, reading a few events before leaving) to a random replica that is up,
//! then comes back every few hundred milliseconds to a random replica, mostly with
//! `GET /v1/responses/{id}?stream=true&starting_after=N` at a random N it has seen (reading a
//! few events, or to the end), sometimes with a plain GET, until it receives the terminal
//! event. Meanwhile a random replica is killed at random instants (never the last one up on
//! PostgreSQL) and started again a moment later on the same port and store. For each run the
//! killed replica held (by its lease), the takeover time is from the kill to the first event a
//! newer lease holder stored.
//!
//! At the end, with every replica up, each run's full replay
//! (`GET /v1/responses/{id}?stream=true`) is fetched from a random replica and compared with
//! every stream its client received (the events after its `starting_after`, byte for byte) and
//! with the events the store holds; the conversation tree is read through the store: every
//! run completed (those taken over mid-run too) and its record names its last node, the path
//! holds each round once, every tool call is
//! answered exactly once, no turn is stored twice at one place, and the final answer is the
//! script's. The figures are printed as a Markdown table; the exit status is non-zero when a
//! goal is missed.

mod chaos;
mod check;
mod client;
mod options;
mod provider;
#[path = "../../harness/replica.rs"]
mod replica;
mod replicas;
mod report;
#[path = "../../harness/sse.rs"]
mod sse;

use std::collections::HashMap;
use std::fs;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use conversation_tree::{PostgresStore, SqliteStore, Store};
use rand::rngs::StdRng;
use rand::{RngExt as _, SeedableRng as _};

use crate::client::{Cluster, Plan, RunLog};
use crate::options::{Backend, Options, USAGE};
use crate::replica::{Launch, Replica};
use crate::replicas::{ECHO_AGENT, LOOPBACK_AGENT, PLAIN_MODEL};
use crate::report::Figures;

/// What the runs ask for, with the share of each: the agent on the loopback provider (tool
/// rounds), its model alone (one model call), the agent on `echo`.
const MIX: [(&str, f64); 3] = [(LOOPBACK_AGENT, 0.6), (PLAIN_MODEL, 0.2), (ECHO_AGENT, 0.2)];
/// Tokens the runs are spread over (each run is visible to its own only).
const TOKENS: usize = 3;
/// Time between kills on average, beyond the lease ttl a takeover waits for.
const KILL_SPACING: Duration = Duration::from_millis(1500);

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|arg| arg == "-h" || arg == "--help") {
        println!("usage: {USAGE}");
        return std::process::ExitCode::SUCCESS;
    }
    let result = Options::parse(&args)
        .map_err(|err| format!("{err}\n\nusage: {USAGE}"))
        .and_then(|options| {
            tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .map_err(|err| format!("cannot start the async runtime: {err}"))?
                .block_on(run(options))
        });
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("chaos-runs: {message}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run(options: Options) -> Result<(), String> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let started = Instant::now();
    fs::create_dir_all(&options.work_dir)
        .map_err(|err| format!("{}: {err}", options.work_dir.display()))?;
    eprintln!("chaos-runs: seed {}", options.seed);
    let provider = provider::Provider::start(options.chunk_delay).await?;
    let tokens: Vec<String> = (0..TOKENS)
        .map(|index| {
            format!(
                "chaos-token-{index}-{}-{}",
                std::process::id(),
                options.seed
            )
        })
        .collect();
    let token_file = write(&options, "tokens.txt", &(tokens.join("\n") + "\n"))?;
    let config = write(
        &options,
        "skein.yaml",
        &replicas::config_text(&options, &provider.base_url),
    )?;
    let http = reqwest::Client::builder()
        .pool_idle_timeout(Duration::from_secs(5))
        .build()
        .map_err(|err| format!("cannot build the HTTP client: {err}"))?;

    let db = match &options.backend {
        Backend::Postgres(url) => url.clone(),
        Backend::Sqlite => options.work_dir.join("runs.db").display().to_string(),
    };
    let launch = Launch {
        binary: &options.skein,
        db: &db,
        config: &config,
        token_file: &token_file,
        work_dir: &options.work_dir,
    };
    let mut replicas = (0..options.replicas)
        .map(|index| Replica::new(&launch, format!("replica-{index}")))
        .collect::<Result<Vec<_>, _>>()?;
    // One after the other: the first brings the schema up to date.
    for replica in &mut replicas {
        replica.spawn()?;
        replica.wait_healthy(&http).await?;
    }
    let store = open_store(&options).await?;
    let cluster = Arc::new(Cluster {
        urls: replicas.iter().map(Replica::url).collect(),
        up: replicas.iter().map(|_| AtomicBool::new(true)).collect(),
        tokens,
        started_on: chaos::StartedOn::default(),
    });

    let window = (options.lease_ttl + KILL_SPACING) * options.kills.max(1) as u32;
    let deadline = Instant::now() + window + options.lease_ttl * 10 + Duration::from_secs(60);
    let schedule = chaos::Schedule {
        kills: options.kills,
        window,
        down: 300..1500,
        kill_last: options.backend == Backend::Sqlite,
        takeover_limit: options.lease_ttl * 10 + Duration::from_secs(30),
    };
    let chaos = tokio::spawn(chaos::run(
        replicas,
        Arc::clone(&cluster),
        http.clone(),
        Arc::clone(&store),
        schedule,
        options.seed,
    ));

    let mut rng = StdRng::seed_from_u64(options.seed ^ 0x5eed);
    let spacing = window / options.runs as u32;
    let mut clients = Vec::new();
    for tag in 0..options.runs {
        let plan = Plan {
            tag,
            agent: pick(&mut rng),
            stream: rng.random_bool(0.5),
            token: tag % TOKENS,
        };
        clients.push(tokio::spawn(client::drive(
            http.clone(),
            Arc::clone(&cluster),
            plan,
            rng.random(),
            deadline,
        )));
        tokio::time::sleep(spacing).await;
    }
    let mut logs = Vec::new();
    for client in clients {
        logs.push(
            client
                .await
                .map_err(|err| format!("a client panicked: {err}"))?,
        );
    }
    let (mut replicas, kills) = chaos
        .await
        .map_err(|err| format!("the chaos task panicked: {err}"))??;

    let mut figures = Figures {
        backend: match options.backend {
            Backend::Postgres(_) => "PostgreSQL".to_owned(),
            Backend::Sqlite => "SQLite".to_owned(),
        },
        replicas: options.replicas,
        runs: options.runs,
        kills: kills.len(),
        seed: options.seed,
        ..Figures::default()
    };
    for kill in &kills {
        figures.runs_held_at_kills += kill.held;
        for taken in &kill.takeovers {
            match taken {
                Some(taken) => figures.takeovers.push(*taken),
                None => figures.not_taken_over += 1,
            }
        }
    }
    check_runs(
        &http,
        &cluster,
        store.as_ref(),
        &logs,
        &mut rng,
        &mut figures,
    )
    .await;
    figures.model_calls_again = provider
        .calls
        .snapshot()
        .values()
        .map(|count| count.saturating_sub(1))
        .sum();
    for replica in &mut replicas {
        if let Err(err) = replica.stop() {
            figures.replica_problems.push(err);
        }
        let panics = replica.panics();
        if !panics.is_empty() {
            figures.replica_problems.push(format!(
                "{} panicked: {}",
                replica.name,
                panics.join(" | ")
            ));
        }
    }
    figures.duration = started.elapsed();
    println!("{}", figures.table());
    let missed = figures.missed();
    if missed.is_empty() {
        eprintln!("chaos-runs: every goal met");
        Ok(())
    } else {
        Err(format!(
            "goals missed:\n  {}\n(logs in {}; replay with --seed {})",
            missed.join("\n  "),
            options.work_dir.display(),
            options.seed
        ))
    }
}

/// Replays and checks every run, adding to `figures`; prints what is wrong with each run.
async fn check_runs(
    http: &reqwest::Client,
    cluster: &Cluster,
    store: &dyn Store,
    logs: &[RunLog],
    rng: &mut StdRng,
    figures: &mut Figures,
) {
    let by_tag = check::latest_nodes_by_tag(store)
        .await
        .unwrap_or_else(|err| {
            eprintln!("chaos-runs: {err}");
            HashMap::new()
        });
    let mut printed = 0;
    for log in logs {
        figures.streamed += usize::from(log.plan.stream);
        figures.segments += log.segments.len();
        figures.protocol_errors += log.errors.len();
        figures.seen_by_other_token += usize::from(log.seen_by_other_token);
        let mut findings = check::Findings::default();
        findings.notes.extend(log.errors.iter().cloned());
        if let Some(id) = &log.id {
            figures.accepted += 1;
            let status = log.final_status.clone().unwrap_or_else(|| {
                findings
                    .notes
                    .push("its client never saw it end".to_owned());
                "unfinished".to_owned()
            });
            *figures.statuses.entry(status.clone()).or_default() += 1;
            let replica = cluster.pick(rng);
            let token = &cluster.tokens[log.plan.token];
            // A run never seen ending has no full replay to wait for.
            if log.final_status.is_some() {
                match client::full_replay(http, &cluster.urls[replica], id, token).await {
                    Ok(replay) => {
                        check::compare_segments(log, &replay, &mut findings);
                        check::check_replay(store, id, &replay, &mut findings).await;
                    }
                    Err(err) => {
                        figures.protocol_errors += 1;
                        findings.notes.push(format!("full replay: {err}"));
                    }
                }
            }
            check::check_tree(store, &by_tag, log, &status, &mut findings).await;
            let answer = provider::answer_text(log.plan.tag);
            if log.plan.agent != ECHO_AGENT
                && status == "completed"
                && log.output_text.as_deref().map(str::trim) != Some(answer.trim())
            {
                findings.lost_nodes += 1;
                findings
                    .notes
                    .push(format!("its output_text is {:?}", log.output_text));
            }
            // An item a takeover cut short holds what the first worker had sent of an answer:
            // a beginning of the script's answer (an agent's answer is asked again whole).
            if log.plan.agent != ECHO_AGENT
                && let Some(cut) = log
                    .cut_short
                    .iter()
                    .find(|cut| !answer.starts_with(cut.as_str()))
            {
                figures.protocol_errors += 1;
                findings.notes.push(format!(
                    "an output item cut short by a takeover is no beginning of the answer: {cut:?}"
                ));
            }
        }
        figures.differing_segments += findings.differing_segments;
        figures.lost_nodes += findings.lost_nodes;
        figures.duplicated_nodes += findings.duplicated_nodes;
        figures.no_last_node += usize::from(findings.no_last_node);
        if !findings.notes.is_empty() && printed < 20 {
            printed += 1;
            eprintln!(
                "chaos-runs: run {} ({}, {}, stream {}): {}",
                log.plan.tag,
                log.id.as_deref().unwrap_or("not accepted"),
                log.plan.agent,
                log.plan.stream,
                findings.notes.join("; ")
            );
        }
    }
}

/// A model or agent of [`MIX`], by its share.
fn pick(rng: &mut StdRng) -> &'static str {
    let mut draw: f64 = rng.random();
    for (agent, share) in MIX {
        if draw < share {
            return agent;
        }
        draw -= share;
    }
    MIX[0].0
}

async fn open_store(options: &Options) -> Result<Arc<dyn Store>, String> {
    let store: Arc<dyn Store> = match &options.backend {
        Backend::Postgres(url) => Arc::new(
            PostgresStore::connect_read_only(url)
                .await
                .map_err(|err| format!("cannot read the replicas' database: {err}"))?,
        ),
        Backend::Sqlite => Arc::new(
            SqliteStore::open_read_only(options.work_dir.join("runs.db"))
                .await
                .map_err(|err| format!("cannot read the replica's store: {err}"))?,
        ),
    };
    Ok(store)
}

fn write(options: &Options, name: &str, text: &str) -> Result<std::path::PathBuf, String> {
    let path = options.work_dir.join(name);
    fs::write(&path, text).map_err(|err| format!("{}: {err}", path.display()))?;
    Ok(path)
}

//! The kills: SIGKILL of a random replica at random instants, a restart a moment later, and
//! for every run the killed replica held, the time until another worker stored its next event
//! (the takeover time).

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use conversation_tree::Store;
use rand::rngs::StdRng;
use rand::{RngExt as _, SeedableRng as _};

use crate::client::Cluster;
use crate::replica::Replica;

/// Which replica each run was started on (by the client's POST), so that a lease holder's
/// name can be tied to a replica: a run's first lease is its starter's.
pub(crate) type StartedOn = Arc<Mutex<HashMap<String, usize>>>;

/// One kill and what it cost.
#[derive(Clone, Debug)]
pub(crate) struct Kill {
    /// Unfinished runs whose lease the replica held.
    pub(crate) held: usize,
    /// Per held run: time from the kill until its next event was stored by a new lease
    /// holder; `None` when that did not happen before the end of the run.
    pub(crate) takeovers: Vec<Option<Duration>>,
}

/// When to kill: `kills` instants spread over `window`.
pub(crate) struct Schedule {
    pub(crate) kills: usize,
    pub(crate) window: Duration,
    /// How long a killed replica stays down.
    pub(crate) down: std::ops::Range<u64>,
    /// Whether a replica may be killed while it is the only one up (SQLite: the only one).
    pub(crate) kill_last: bool,
    /// How long a takeover may take before it counts as not happening.
    pub(crate) takeover_limit: Duration,
}

/// Kills and restarts replicas on `schedule`; returns the replicas (all started again) and the
/// kills.
pub(crate) async fn run(
    mut replicas: Vec<Replica>,
    cluster: Arc<Cluster>,
    http: reqwest::Client,
    store: Arc<dyn Store>,
    schedule: Schedule,
    seed: u64,
) -> Result<(Vec<Replica>, Vec<Kill>), String> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut kills = Vec::new();
    let mut watchers = Vec::new();
    let mean = schedule.window.as_millis() as u64 / (schedule.kills as u64 + 1);
    for _ in 0..schedule.kills {
        let wait = rng.random_range(mean / 2..=mean * 3 / 2);
        tokio::time::sleep(Duration::from_millis(wait)).await;
        let up: Vec<usize> = (0..replicas.len())
            .filter(|&index| cluster.up[index].load(Ordering::SeqCst))
            .collect();
        if up.is_empty() || (up.len() == 1 && !schedule.kill_last) {
            continue;
        }
        let victim = up[rng.random_range(0..up.len())];
        let logged = replicas[victim].lease_names();
        let held = held_runs(store.as_ref(), &cluster.started_on, victim, logged).await;
        cluster.up[victim].store(false, Ordering::SeqCst);
        let at = Instant::now();
        replicas[victim].kill();
        eprintln!(
            "chaos-runs: kill -9 {} (it held {} runs)",
            replicas[victim].name,
            held.len(),
        );
        let index = kills.len();
        kills.push(Kill {
            held: held.len(),
            takeovers: Vec::new(),
        });
        for run in held {
            let store = Arc::clone(&store);
            let limit = schedule.takeover_limit;
            watchers.push((index, tokio::spawn(watch_takeover(store, run, at, limit))));
        }
        let down = rng.random_range(schedule.down.clone());
        tokio::time::sleep(Duration::from_millis(down)).await;
        replicas[victim].spawn()?;
        replicas[victim].wait_healthy(&http).await?;
        cluster.up[victim].store(true, Ordering::SeqCst);
    }
    for (index, watcher) in watchers {
        let taken = watcher.await.map_err(|err| err.to_string())?;
        kills[index].takeovers.push(taken);
    }
    Ok((replicas, kills))
}

/// A run held at the kill: its id, lease epoch and last stored event then.
struct Held {
    id: String,
    epoch: u64,
    last_seq: Option<u64>,
}

/// The unfinished runs whose lease `replica` holds: by the names it logged, and the names its
/// runs were first leased under (a run's first lease is its starter's).
async fn held_runs(
    store: &dyn Store,
    started_on: &StartedOn,
    replica: usize,
    mut names: Vec<String>,
) -> Vec<Held> {
    let runs: Vec<(String, usize)> = started_on
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .map(|(id, on)| (id.clone(), *on))
        .collect();
    let mut records = Vec::new();
    for (id, on) in runs {
        if let Ok(Some(run)) = store.run(&id).await {
            records.push((on, run));
        }
    }
    names.extend(
        records
            .iter()
            .filter(|(on, _)| *on == replica)
            .filter_map(|(_, run)| run.lease.as_ref())
            .filter(|lease| lease.epoch == 1)
            .map(|lease| lease.holder.clone()),
    );
    records
        .into_iter()
        .filter(|(_, run)| run.finished.is_none())
        .filter_map(|(_, run)| {
            let lease = run.lease.as_ref()?;
            names.contains(&lease.holder).then(|| Held {
                id: run.id.clone(),
                epoch: lease.epoch,
                last_seq: run.last_seq,
            })
        })
        .collect()
}

/// Polls the run until a newer lease than `held`'s has stored an event after the kill's last
/// one (or the run ended with one); the time since `killed_at`.
async fn watch_takeover(
    store: Arc<dyn Store>,
    held: Held,
    killed_at: Instant,
    limit: Duration,
) -> Option<Duration> {
    while killed_at.elapsed() < limit {
        if let Ok(Some(run)) = store.run(&held.id).await {
            let newer = run
                .lease
                .as_ref()
                .is_some_and(|lease| lease.epoch > held.epoch)
                || run.finished.is_some();
            if newer && run.last_seq > held.last_seq {
                return Some(killed_at.elapsed());
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    None
}

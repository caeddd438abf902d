//! The service's run records between replicas: two `Service`s on one store (a shared SQLite
//! store in this process, or two connections to one PostgreSQL database, whose changes travel
//! through LISTEN/NOTIFY) read, follow, cancel and take over each other's runs.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use conversation_tree::{SqliteStore, Store};
use futures::StreamExt as _;
use service::runs::{NewRun, Run, RunMode, RunProtocol, RunStatus};
use service::store::StoreKind;
use service::{Principal, Resume, RunWorker, RunsConfig, Service, ServiceConfig};

/// A replica: a service with short leases so takeovers happen within a test's patience.
fn replica(store: Arc<dyn Store>, kind: StoreKind) -> Service {
    let config = ServiceConfig {
        runs: RunsConfig {
            lease_ttl: Duration::from_secs(1),
            ..RunsConfig::default()
        },
        ..ServiceConfig::default()
    };
    Service::with_store(config, &[], store, kind).expect("a service")
}

async fn two_sqlite_replicas() -> (Service, Service) {
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open_in_memory().await.unwrap());
    (
        replica(Arc::clone(&store), StoreKind::Memory),
        replica(store, StoreKind::Memory),
    )
}

#[cfg(feature = "postgres")]
async fn two_postgres_replicas() -> (Service, Service) {
    let url = conversation_tree::testing::fresh_postgres_database().await;
    let a = conversation_tree::PostgresStore::connect(&url)
        .await
        .unwrap();
    let b = conversation_tree::PostgresStore::connect(&url)
        .await
        .unwrap();
    (
        replica(Arc::new(a), StoreKind::Postgres),
        replica(Arc::new(b), StoreKind::Postgres),
    )
}

fn new_run(service: &Service, id: &str, mode: RunMode) -> NewRun {
    NewRun::new(
        id,
        service.owner(Principal::SHARED),
        RunProtocol::Responses,
        mode,
        serde_json::json!({"model": "echo"}),
    )
}

async fn follow_all(service: &Service, id: &str, after: Option<u64>) -> Vec<(u64, Vec<u8>)> {
    let records = service.run_records().unwrap();
    tokio::time::timeout(
        Duration::from_secs(20),
        records
            .follow(id, Principal::SHARED, after)
            .map(|event| {
                let event = event.expect("an event");
                (event.seq, event.data)
            })
            .collect(),
    )
    .await
    .expect("the run ends")
}

/// A follower on replica B sees every event replica A stores, live, with A's numbers, and ends
/// with the run; a resumed follower gets the tail of the same events.
async fn followers_on_another_replica_see_the_stream_live(a: Service, b: Service) {
    let worker = a
        .run_records()
        .unwrap()
        .start(new_run(&a, "resp_live", RunMode::Background))
        .await
        .unwrap();
    let follower = tokio::spawn(async move { follow_all(&b, "resp_live", None).await });
    worker.in_progress().await.unwrap();
    for n in 0..100_u64 {
        assert_eq!(worker.push(format!("event: e\ndata: {n}\n\n")), n);
        if n % 10 == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    let run = worker.finish(RunStatus::Completed, None).await.unwrap();
    assert_eq!(run.status, RunStatus::Completed);
    assert_eq!(run.last_seq, Some(99));
    let followed = follower.await.unwrap();
    assert_eq!(followed.len(), 100);
    for (n, (seq, data)) in followed.iter().enumerate() {
        assert_eq!(*seq, n as u64);
        assert_eq!(data, format!("event: e\ndata: {n}\n\n").as_bytes());
    }
    let tail = follow_all(&a, "resp_live", Some(89)).await;
    assert_eq!(tail, followed[90..]);
    assert!(
        a.run_records()
            .unwrap()
            .get("resp_unknown", Principal::SHARED)
            .await
            .unwrap()
            .is_none()
    );
}

/// A cancel asked on replica B cancels the token of the run replica A works on, and B's
/// answer is the run as A ended it.
async fn a_cancel_on_another_replica_stops_the_run(a: Service, b: Service) {
    let worker = a
        .run_records()
        .unwrap()
        .start(new_run(&a, "resp_cancel", RunMode::Background))
        .await
        .unwrap();
    worker.in_progress().await.unwrap();
    worker.push("event: response.created\n\n");
    let token = worker.cancel_token().clone();
    let ender = tokio::spawn(async move {
        token.cancelled().await;
        worker
            .finish(RunStatus::Cancelled, Some("cancelled".into()))
            .await
            .unwrap()
    });
    let cancelled = b
        .run_records()
        .unwrap()
        .cancel("resp_cancel", Principal::SHARED)
        .await
        .unwrap()
        .expect("the run");
    assert_eq!(cancelled.status, RunStatus::Cancelled);
    assert!(cancelled.cancel_requested);
    let ended = tokio::time::timeout(Duration::from_secs(5), ender)
        .await
        .expect("A's worker saw the cancel")
        .unwrap();
    assert_eq!(ended.status, RunStatus::Cancelled);
}

/// Continues a run by pushing one more event and completing it.
#[derive(Debug, Default)]
struct Finisher {
    resumed: AtomicUsize,
}

#[async_trait]
impl Resume for Finisher {
    async fn resume(&self, run: Run, worker: RunWorker) {
        self.resumed.fetch_add(1, Ordering::SeqCst);
        assert_eq!(worker.next_seq(), run.last_seq.map_or(0, |last| last + 1));
        worker.push("event: resumed\n\n");
        worker.finish(RunStatus::Completed, None).await.unwrap();
    }
}

/// A replica that dies (halted: no renewal, nothing more written) leaves its background run
/// to another once the lease expires: the other continues it after the stored events; its
/// foreground run ends cancelled with an error saying why.
async fn a_dead_replicas_runs_are_taken_over(a: Service, b: Service) {
    let finisher = Arc::new(Finisher::default());
    b.run_records()
        .unwrap()
        .on_takeover(RunProtocol::Responses, finisher.clone());
    let records = a.run_records().unwrap();
    let background = records
        .start(new_run(&a, "resp_bg", RunMode::Background))
        .await
        .unwrap();
    let foreground = records
        .start(new_run(&a, "resp_fg", RunMode::Foreground))
        .await
        .unwrap();
    background.in_progress().await.unwrap();
    background.push("event: one\n\n");
    background.push("event: two\n\n");
    // Stored before the replica dies.
    tokio::time::sleep(Duration::from_millis(200)).await;
    records.halt();
    assert!(background.cancel_token().is_cancelled());
    // What a dead replica would have written next is never stored.
    background.push("event: lost\n\n");
    drop((background, foreground));
    let events = follow_all(&b, "resp_bg", None).await;
    let data: Vec<&[u8]> = events.iter().map(|(_, data)| data.as_slice()).collect();
    assert_eq!(
        data,
        [
            b"event: one\n\n".as_slice(),
            b"event: two\n\n",
            b"event: resumed\n\n"
        ]
    );
    assert_eq!(events[2].0, 2);
    let run = b
        .run_records()
        .unwrap()
        .get("resp_bg", Principal::SHARED)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(run.status, RunStatus::Completed);
    assert_eq!(finisher.resumed.load(Ordering::SeqCst), 1);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let foreground = loop {
        let run = b
            .run_records()
            .unwrap()
            .get("resp_fg", Principal::SHARED)
            .await
            .unwrap()
            .unwrap();
        if run.status.is_terminal() || tokio::time::Instant::now() > deadline {
            break run;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(foreground.status, RunStatus::Cancelled);
    assert!(
        foreground
            .error
            .as_deref()
            .is_some_and(|error| error.contains("stopped")),
        "{foreground:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_followers_on_another_replica_see_the_stream_live() {
    let (a, b) = two_sqlite_replicas().await;
    followers_on_another_replica_see_the_stream_live(a, b).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_a_cancel_on_another_replica_stops_the_run() {
    let (a, b) = two_sqlite_replicas().await;
    a_cancel_on_another_replica_stops_the_run(a, b).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_a_dead_replicas_runs_are_taken_over() {
    let (a, b) = two_sqlite_replicas().await;
    a_dead_replicas_runs_are_taken_over(a, b).await;
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_followers_on_another_replica_see_the_stream_live() {
    let (a, b) = two_postgres_replicas().await;
    followers_on_another_replica_see_the_stream_live(a, b).await;
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_cancel_on_another_replica_stops_the_run() {
    let (a, b) = two_postgres_replicas().await;
    a_cancel_on_another_replica_stops_the_run(a, b).await;
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_dead_replicas_runs_are_taken_over() {
    let (a, b) = two_postgres_replicas().await;
    a_dead_replicas_runs_are_taken_over(a, b).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finished_runs_past_their_retention_are_purged() {
    let clock = conversation_tree::runs::ManualClock::new();
    let store: Arc<dyn Store> = Arc::new(
        SqliteStore::open_in_memory()
            .await
            .unwrap()
            .with_clock(clock.clone()),
    );
    let service = replica(Arc::clone(&store), StoreKind::Memory);
    let records = service.run_records().unwrap();
    let worker = records
        .start(new_run(&service, "resp_old", RunMode::Background))
        .await
        .unwrap();
    worker.push("event: x\n\n");
    worker.finish(RunStatus::Completed, None).await.unwrap();
    clock.advance(Duration::from_secs(25 * 3600));
    // A replica starting now purges at once what is past the default 24 h.
    let later = replica(Arc::clone(&store), StoreKind::Memory);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while later
        .run_records()
        .unwrap()
        .get("resp_old", Principal::SHARED)
        .await
        .unwrap()
        .is_some()
    {
        assert!(tokio::time::Instant::now() < deadline, "purged at start");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

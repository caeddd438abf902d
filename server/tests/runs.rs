//! The service's run records between replicas: two `Service`s on one store (a shared SQLite
//! store in this process, or two connections to one PostgreSQL database, whose changes travel
//! through LISTEN/NOTIFY) read, follow, cancel and take over each other's runs.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use conversation_tree::{
    CallOptions, ConversationId, Message, NewResponse, NodeId, SqliteStore, Store,
};
use futures::StreamExt as _;
use service::runs::{NewRun, Run, RunMode, RunProtocol, RunStatus};
use service::store::StoreKind;
use service::{Principal, Resume, RunWorker, RunsConfig, Service, ServiceConfig};

/// A replica: a service with short leases so takeovers happen within a test's patience.
fn replica(store: Arc<dyn Store>, kind: StoreKind) -> Service {
    replica_of(store, kind, &[])
}

/// A replica serving the holders of `tokens`.
fn replica_of(store: Arc<dyn Store>, kind: StoreKind, tokens: &[service::Secret]) -> Service {
    let config = ServiceConfig {
        runs: RunsConfig {
            lease_ttl: Duration::from_secs(1),
            ..RunsConfig::default()
        },
        ..ServiceConfig::default()
    };
    Service::with_store(config, tokens, store, kind).expect("a service")
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

/// A foreground run of `principal`.
fn owned_run(service: &Service, principal: Principal, id: &str) -> NewRun {
    run_of(service, principal, id, RunMode::Foreground)
}

fn new_run(service: &Service, id: &str, mode: RunMode) -> NewRun {
    run_of(service, Principal::SHARED, id, mode)
}

fn run_of(service: &Service, principal: Principal, id: &str, mode: RunMode) -> NewRun {
    NewRun::new(
        id,
        service.owner(principal),
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
                (event.seq, event.data.to_vec())
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
    expired: AtomicUsize,
}

#[async_trait]
impl Resume for Finisher {
    async fn resume(&self, run: Run, worker: RunWorker) {
        self.resumed.fetch_add(1, Ordering::SeqCst);
        assert_eq!(worker.next_seq(), run.last_seq.map_or(0, |last| last + 1));
        worker.push("event: resumed\n\n");
        worker.finish(RunStatus::Completed, None).await.unwrap();
    }

    async fn expired(&self, run: Run, worker: RunWorker) {
        self.expired.fetch_add(1, Ordering::SeqCst);
        assert_eq!(run.paused, Some(pause_document()));
        worker.push("event: rejected\n\n");
        worker.finish(RunStatus::Completed, None).await.unwrap();
    }
}

fn pause_document() -> serde_json::Value {
    serde_json::json!({"pending": [{"id": "call_1", "name": "http_get"}]})
}

/// A run paused on replica A waits unheld; decisions reach replica B, which takes it once
/// (a decider racing it on A is told it is not paused), with its events and document; a
/// paused run cancelled ends at once.
async fn a_pause_is_decided_once_on_any_replica(
    store_a: Arc<dyn Store>,
    store_b: Arc<dyn Store>,
    kind: StoreKind,
) {
    let tokens = [
        service::Secret::new("alpha-token"),
        service::Secret::new("beta-token"),
    ];
    let a = replica_of(store_a, kind, &tokens);
    let b = replica_of(store_b, kind, &tokens);
    let alpha = Principal::token(0);
    let finisher = Arc::new(Finisher::default());
    b.run_records()
        .unwrap()
        .on_takeover(RunProtocol::Responses, finisher.clone());
    let records_a = a.run_records().unwrap();
    let records_b = b.run_records().unwrap();
    let worker = records_a
        .start(owned_run(&a, alpha, "resp_pause"))
        .await
        .unwrap();
    worker.in_progress().await.unwrap();
    worker.push("event: approval\n\n");
    let paused = worker.pause(pause_document()).await.unwrap();
    assert_eq!(paused.status, RunStatus::Paused);
    assert!(paused.lease.is_none());
    assert!(records_a.held().is_empty());
    // Longer than a lease: no takeover touches a paused run.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let waiting = records_b.get("resp_pause", alpha).await.unwrap().unwrap();
    assert_eq!(waiting.status, RunStatus::Paused);
    assert_eq!(waiting.last_seq, Some(0));
    // A follower of a paused run gets what it said, and its stream ends with the pause.
    let so_far: Vec<(u64, Vec<u8>)> = tokio::time::timeout(
        Duration::from_secs(5),
        records_b
            .follow("resp_pause", alpha, None)
            .map(|event| event.map(|event| (event.seq, event.data.to_vec())).unwrap())
            .collect(),
    )
    .await
    .expect("the stream of a paused run ends");
    assert_eq!(so_far, [(0, b"event: approval\n\n".to_vec())]);
    assert_eq!(finisher.resumed.load(Ordering::SeqCst), 0);

    // Another principal's decision finds nothing.
    assert!(
        records_b
            .take_paused("resp_pause", Principal::token(1))
            .await
            .unwrap()
            .is_none()
    );
    let (on_a, on_b) = tokio::join!(
        records_a.take_paused("resp_pause", alpha),
        records_b.take_paused("resp_pause", alpha),
    );
    let (winner, loser) = match (on_a, on_b) {
        (Ok(Some(won)), Err(lost)) | (Err(lost), Ok(Some(won))) => (won, lost),
        other => panic!("one decider wins: {other:?}"),
    };
    assert!(
        matches!(&loser, service::ServiceError::RunNotPaused { id, status: RunStatus::InProgress } if id == "resp_pause"),
        "{loser}"
    );
    assert!(
        loser.to_string().contains("not waiting for approval"),
        "{loser}"
    );
    let (run, worker) = winner;
    assert_eq!(run.paused, Some(pause_document()));
    assert_eq!(worker.next_seq(), 1);
    worker.push("event: decided\n\n");
    worker.finish(RunStatus::Completed, None).await.unwrap();
    let events: Vec<(u64, Vec<u8>)> = records_b
        .follow("resp_pause", alpha, None)
        .map(|event| event.map(|event| (event.seq, event.data.to_vec())).unwrap())
        .collect()
        .await;
    assert_eq!(events.len(), 2);
    assert_eq!(events[1], (1, b"event: decided\n\n".to_vec()));
    let finished = records_b.take_paused("resp_pause", alpha).await;
    assert!(
        matches!(
            finished,
            Err(service::ServiceError::RunNotPaused {
                status: RunStatus::Completed,
                ..
            })
        ),
        "{finished:?}"
    );

    // Cancelling a paused run ends it at once.
    let worker = records_a
        .start(owned_run(&a, alpha, "resp_cancel"))
        .await
        .unwrap();
    worker.pause(pause_document()).await.unwrap();
    let cancelled = records_b
        .cancel("resp_cancel", alpha)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(cancelled.status, RunStatus::Cancelled);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_a_pause_is_decided_once_on_any_replica() {
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open_in_memory().await.unwrap());
    a_pause_is_decided_once_on_any_replica(Arc::clone(&store), store, StoreKind::Memory).await;
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_pause_is_decided_once_on_any_replica() {
    let url = conversation_tree::testing::fresh_postgres_database().await;
    let a = conversation_tree::PostgresStore::connect(&url)
        .await
        .unwrap();
    let b = conversation_tree::PostgresStore::connect(&url)
        .await
        .unwrap();
    a_pause_is_decided_once_on_any_replica(Arc::new(a), Arc::new(b), StoreKind::Postgres).await;
}

/// A pause nobody decides about within `approval.timeout` is taken by the sweep of a replica
/// and continued by its protocol's `expired`, once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_undecided_pause_is_continued_by_its_protocol_once_its_time_passes() {
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open_in_memory().await.unwrap());
    let config = ServiceConfig {
        runs: RunsConfig {
            lease_ttl: Duration::from_secs(1),
            ..RunsConfig::default()
        },
        approval: service::approval::ApprovalConfig {
            timeout: Duration::from_secs(1),
            ..Default::default()
        },
        ..ServiceConfig::default()
    };
    let a =
        Service::with_store(config.clone(), &[], Arc::clone(&store), StoreKind::Memory).unwrap();
    let b = Service::with_store(config, &[], store, StoreKind::Memory).unwrap();
    let finisher = Arc::new(Finisher::default());
    for service in [&a, &b] {
        service
            .run_records()
            .unwrap()
            .on_takeover(RunProtocol::Responses, finisher.clone());
    }
    let worker = a
        .run_records()
        .unwrap()
        .start(new_run(&a, "resp_late", RunMode::Foreground))
        .await
        .unwrap();
    worker.push("event: approval\n\n");
    let paused = worker.pause(pause_document()).await.unwrap();
    let wait = paused
        .decide_by
        .unwrap()
        .duration_since(paused.updated)
        .as_millis();
    assert_eq!(wait, 1000);
    // A follower's stream ends with the pause; the sweep goes on with it once its time passed.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let run = b
            .run_records()
            .unwrap()
            .get("resp_late", Principal::SHARED)
            .await
            .unwrap()
            .unwrap();
        if run.status == RunStatus::Completed {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "still {:?}",
            run.status
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let events = follow_all(&b, "resp_late", None).await;
    let data: Vec<&[u8]> = events.iter().map(|(_, data)| data.as_slice()).collect();
    assert_eq!(
        data,
        [b"event: approval\n\n".as_slice(), b"event: rejected\n\n"]
    );
    assert_eq!(finisher.expired.load(Ordering::SeqCst), 1);
    assert_eq!(finisher.resumed.load(Ordering::SeqCst), 0);
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

/// A run that ends at a node records that node with its end; a node the tree does not hold
/// is not recorded, and the end still is.
async fn a_runs_end_records_its_last_node(a: Service, store: Arc<dyn Store>) {
    let options = CallOptions::new("echo");
    let node = store
        .log_response(NewResponse::new(
            ConversationId::random(),
            None,
            vec![Message::human("Hi")],
            Message::ai("Hello"),
            &options,
        ))
        .await
        .unwrap();
    let records = a.run_records().unwrap();
    let worker = records
        .start(new_run(&a, "resp_at", RunMode::Foreground))
        .await
        .unwrap();
    worker.in_progress().await.unwrap();
    worker.push("event: e\n\n");
    let run = worker
        .finish_at(Some(node.id()), RunStatus::Completed, None)
        .await
        .unwrap();
    assert_eq!(
        (run.status, run.last_node, run.last_seq),
        (RunStatus::Completed, Some(node.id()), Some(0))
    );
    assert!(run.lease.is_none(), "an ended run is no replica's");

    let worker = records
        .start(new_run(&a, "resp_lost_node", RunMode::Foreground))
        .await
        .unwrap();
    worker.in_progress().await.unwrap();
    let missing: NodeId = (node.id().get() + 1_000).to_string().parse().unwrap();
    let run = worker
        .finish_at(
            Some(missing),
            RunStatus::Failed,
            Some("it broke".to_owned()),
        )
        .await
        .unwrap();
    assert_eq!(
        (run.status, run.last_node, run.error.as_deref()),
        (RunStatus::Failed, None, Some("it broke"))
    );
    let stored = records
        .get("resp_lost_node", Principal::SHARED)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.status, RunStatus::Failed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_a_runs_end_records_its_last_node() {
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open_in_memory().await.unwrap());
    let a = replica(Arc::clone(&store), StoreKind::Memory);
    a_runs_end_records_its_last_node(a, store).await;
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_runs_end_records_its_last_node() {
    let url = conversation_tree::testing::fresh_postgres_database().await;
    let store: Arc<dyn Store> = Arc::new(
        conversation_tree::PostgresStore::connect(&url)
            .await
            .unwrap(),
    );
    let a = replica(Arc::clone(&store), StoreKind::Postgres);
    a_runs_end_records_its_last_node(a, store).await;
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

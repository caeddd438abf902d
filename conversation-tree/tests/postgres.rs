//! `PostgresStore` against the behaviour suite, and the checks on databases it did not write.
//!
//! Each test gets a fresh database on the server `conversation_tree::testing::postgres_url`
//! names: `$SKEIN_PG_URL` (set by `cargo xtask ci` and `cargo xtask pg start`), or a throwaway
//! cluster this process starts. Without either, the tests fail; they never skip.

use crate::common;

use std::sync::Arc;

use conversation_tree::testing::fresh_postgres_database;
use conversation_tree::{PostgresStore, Store, StoreError};

use common::Harness;

/// A fresh database.
struct PostgresHarness {
    url: String,
}

impl Harness for PostgresHarness {
    async fn new() -> Self {
        PostgresHarness {
            url: fresh_postgres_database().await,
        }
    }

    async fn open(&self) -> Arc<dyn Store> {
        Arc::new(PostgresStore::connect(&self.url).await.unwrap())
    }

    async fn execute(&self, sql: &str) {
        execute(&self.url, sql).await.unwrap();
    }

    fn failing_insert_trigger(table: &str) -> String {
        format!(
            "CREATE FUNCTION fail_{table}() RETURNS trigger LANGUAGE plpgsql AS \
             $$ BEGIN RAISE EXCEPTION 'injected failure'; END $$; \
             CREATE TRIGGER fail_{table} BEFORE INSERT ON {table} \
             FOR EACH ROW EXECUTE FUNCTION fail_{table}();"
        )
    }

    fn failing_event_insert() -> String {
        Self::failing_insert_trigger("run_events")
    }

    fn failing_event_insert_for(run: &str) -> String {
        format!(
            "CREATE FUNCTION fail_events_of_one_run() RETURNS trigger LANGUAGE plpgsql AS \
             $$ BEGIN IF NEW.run_id = '{run}' THEN RAISE EXCEPTION 'injected failure'; END IF; \
             RETURN NEW; END $$; \
             CREATE TRIGGER fail_events_of_one_run BEFORE INSERT ON run_events \
             FOR EACH ROW EXECUTE FUNCTION fail_events_of_one_run();"
        )
    }

    fn spec(&self) -> String {
        self.url.clone()
    }

    async fn open_spec(spec: &str) -> Arc<dyn Store> {
        Arc::new(PostgresStore::connect(spec).await.unwrap())
    }

    async fn ready_to_follow(changes: &mut conversation_tree::runs::RunChanges) {
        // The listening connection says it is up with a first `Missed`.
        let first = tokio::time::timeout(
            std::time::Duration::from_secs(10),
            futures::StreamExt::next(changes),
        )
        .await
        .expect("the listening connection opens within 10 s");
        assert_eq!(first, Some(conversation_tree::runs::RunChange::Missed));
    }
}

suite!(PostgresHarness);

async fn execute(url: &str, sql: &str) -> Result<(), tokio_postgres::Error> {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await?;
    let connection = tokio::spawn(connection);
    let result = client.batch_execute(sql).await;
    drop(client);
    let _ = connection.await;
    result
}

async fn query_strings(url: &str, sql: &str) -> Vec<String> {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    let connection = tokio::spawn(connection);
    let rows = client.query(sql, &[]).await.unwrap();
    drop(client);
    let _ = connection.await;
    rows.iter().map(|row| row.get(0)).collect()
}

const TABLES: &str = "SELECT table_name::text FROM information_schema.tables \
     WHERE table_schema = 'public' ORDER BY table_name";

#[tokio::test]
async fn another_applications_database_is_refused_and_left_untouched() {
    let url = fresh_postgres_database().await;
    execute(
        &url,
        "CREATE TABLE responses (id TEXT PRIMARY KEY, prompt TEXT);
         INSERT INTO responses VALUES ('01j', 'hi');",
    )
    .await
    .unwrap();
    let err = PostgresStore::connect(&url).await.unwrap_err();
    assert!(
        matches!(&err, StoreError::NotAStore { reason, .. } if reason.contains("responses")),
        "{err}"
    );
    assert!(err.to_string().contains("left untouched"), "{err}");
    assert!(!err.to_string().contains("password"));
    assert_eq!(query_strings(&url, TABLES).await, ["responses"]);
    assert_eq!(
        query_strings(&url, "SELECT id || ':' || prompt FROM responses").await,
        ["01j:hi"]
    );
}

/// `labels` is one of Skein's table names too: another application's table of that name is
/// refused, not mistaken for a half-made store.
#[tokio::test]
async fn another_applications_labels_table_is_refused_and_left_untouched() {
    let url = fresh_postgres_database().await;
    execute(&url, "CREATE TABLE labels (name TEXT PRIMARY KEY);")
        .await
        .unwrap();
    let err = PostgresStore::connect(&url).await.unwrap_err();
    assert!(
        matches!(&err, StoreError::NotAStore { reason, .. } if reason.contains("labels")),
        "{err}"
    );
    assert_eq!(query_strings(&url, TABLES).await, ["labels"]);
}

#[tokio::test]
async fn a_store_from_a_newer_schema_is_refused_and_left_untouched() {
    let url = fresh_postgres_database().await;
    drop(PostgresStore::connect(&url).await.unwrap());
    execute(
        &url,
        "UPDATE skein_meta SET value = '99' WHERE key = 'schema_version'",
    )
    .await
    .unwrap();
    let err = PostgresStore::connect(&url).await.unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::NewerSchema {
                found: 99,
                supported: 11,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(
        query_strings(
            &url,
            "SELECT key || '=' || value FROM skein_meta ORDER BY key"
        )
        .await,
        ["application=skein-conversation-tree", "schema_version=99"]
    );
}

#[tokio::test]
async fn replicas_connecting_at_once_migrate_once() {
    let url = fresh_postgres_database().await;
    let connects = (0..4).map(|_| PostgresStore::connect(&url));
    for store in futures::future::join_all(connects).await {
        store.unwrap();
    }
    assert_eq!(
        query_strings(&url, TABLES).await,
        [
            "calls",
            "conversations",
            "labels",
            "responses",
            "run_events",
            "runs",
            "skein_meta",
            "summaries",
            "token_slots"
        ]
    );
}

#[tokio::test]
async fn a_bad_url_is_a_typed_error_without_the_password() {
    let err = PostgresStore::connect("postgres://user:hunter2@127.0.0.1:1/db?bogus=1")
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Database { .. }), "{err}");
    assert!(!format!("{err} {err:?}").contains("hunter2"));
}

/// The cluster helper itself: a cluster is stopped and its directory removed when its owner
/// panics (drop while unwinding) and when its process is killed (the reaper).
mod cluster {
    use std::io::{BufRead as _, BufReader};
    use std::net::{Ipv4Addr, TcpStream};
    use std::path::PathBuf;
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    use conversation_tree::testing::{Lifetime, PgCluster};

    const CHILD_ENV: &str = "SKEIN_TREE_CLUSTER_CHILD";

    fn accepts(port: u16) -> bool {
        TcpStream::connect((Ipv4Addr::LOCALHOST, port)).is_ok()
    }

    fn wait_until_gone(root: &std::path::Path, port: u16) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while (root.exists() || accepts(port)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
        }
        assert!(!root.exists(), "{} was removed", root.display());
        assert!(!accepts(port), "port {port} was closed");
    }

    #[test]
    fn a_panicking_owner_stops_its_cluster() {
        let (sender, receiver) = std::sync::mpsc::channel();
        let owner = std::thread::spawn(move || {
            let cluster = PgCluster::start(Lifetime::Process).unwrap();
            assert!(accepts(cluster.port()));
            sender
                .send((cluster.root().to_path_buf(), cluster.port()))
                .unwrap();
            panic!("a test fails while holding the cluster");
        });
        assert!(owner.join().is_err());
        let (root, port) = receiver.recv().unwrap();
        wait_until_gone(&root, port);
    }

    #[test]
    fn a_killed_owner_process_leaves_no_cluster_behind() {
        if std::env::var_os(CHILD_ENV).is_some() {
            let cluster = PgCluster::start(Lifetime::Process).unwrap();
            println!("cluster {} {}", cluster.port(), cluster.root().display());
            std::thread::sleep(Duration::from_secs(600));
            return;
        }
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "postgres::cluster::a_killed_owner_process_leaves_no_cluster_behind",
                "--exact",
                "--nocapture",
            ])
            .env(CHILD_ENV, "1")
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let line = BufReader::new(child.stdout.take().unwrap())
            .lines()
            .map_while(Result::ok)
            .find(|line| line.starts_with("cluster "))
            .expect("the child reports its cluster");
        let mut fields = line.split(' ').skip(1);
        let port: u16 = fields.next().unwrap().parse().unwrap();
        let root = PathBuf::from(fields.next().unwrap());
        assert!(accepts(port) && root.exists());
        child.kill().unwrap();
        child.wait().unwrap();
        wait_until_gone(&root, port);
    }
}

/// Runs shared by replicas: two stores on one database stand for two replicas.
mod runs_across_replicas {
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use conversation_tree::runs::{RunChange, RunStatus, RunStore, RunUpdate};
    use conversation_tree::testing::fresh_postgres_database;
    use conversation_tree::{PostgresStore, Store, StoreError};
    use futures::StreamExt as _;

    use crate::common::Harness as _;
    use crate::common::runs::{batch, new_run, next_change};

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_short_real_lease_expires_and_another_replica_takes_the_run_over() {
        let url = fresh_postgres_database().await;
        let a = PostgresStore::connect(&url).await.unwrap();
        let b = PostgresStore::connect(&url).await.unwrap();
        let ttl = Duration::from_millis(400);
        a.create_run(new_run("resp_1").leased_to("replica-a", ttl))
            .await
            .unwrap();
        a.update_run("resp_1", RunUpdate::new().status(RunStatus::InProgress))
            .await
            .unwrap();
        a.append_events("resp_1", &batch(0..2)).await.unwrap();
        let held = a.run("resp_1").await.unwrap().unwrap().lease.unwrap();
        assert_eq!(b.claim_orphaned_run("replica-b", ttl).await.unwrap(), None);

        // Replica A stops renewing (killed): after the TTL, B takes the run over where it was.
        tokio::time::sleep(ttl + Duration::from_millis(200)).await;
        let taken = b
            .claim_orphaned_run("replica-b", Duration::from_secs(30))
            .await
            .unwrap()
            .expect("the expired run is orphaned");
        assert_eq!(
            (taken.id.as_str(), taken.status, taken.last_seq),
            ("resp_1", RunStatus::InProgress, Some(1))
        );
        assert_eq!(taken.lease.as_ref().map(|lease| lease.epoch), Some(2));
        let lost = a.renew_lease(&held, ttl).await.unwrap_err();
        assert!(matches!(lost, StoreError::LeaseLost { .. }), "{lost}");
        b.append_events("resp_1", &batch(2..3)).await.unwrap();
        let late = a.append_events("resp_1", &batch(2..3)).await.unwrap_err();
        assert!(matches!(late, StoreError::DuplicateEvent { .. }), "{late}");
    }

    /// Replica B follows a run replica A writes, through NOTIFY; prints the added delay
    /// (from A's commit to B's notification) without asserting on it.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn another_replica_follows_a_run_live_and_the_notify_delay_is_printed() {
        let url = fresh_postgres_database().await;
        let a = PostgresStore::connect(&url).await.unwrap();
        let b = PostgresStore::connect(&url).await.unwrap();
        a.create_run(new_run("resp_live")).await.unwrap();
        let mut changes = b.watch_run("resp_live");
        super::PostgresHarness::ready_to_follow(&mut changes).await;

        // From the call to append (its commit included) and from its return.
        let (mut from_call, mut from_commit) = (Vec::new(), Vec::new());
        for seq in 0..50 {
            let called = Instant::now();
            a.append_events("resp_live", &batch(seq..seq + 1))
                .await
                .unwrap();
            let committed = Instant::now();
            assert_eq!(
                next_change(&mut changes).await,
                RunChange::Events {
                    run: "resp_live".to_owned(),
                    last_seq: seq
                }
            );
            from_call.push(called.elapsed());
            from_commit.push(committed.elapsed());
        }
        for (what, delays) in [
            ("append called", &mut from_call),
            ("append returned", &mut from_commit),
        ] {
            delays.sort();
            println!(
                "NOTIFY on the local cluster, {what} -> notified on another connection (50 appends): \
                 p50 {:?}, p99 {:?}, max {:?}",
                delays[delays.len() / 2],
                delays[delays.len() * 99 / 100],
                delays[delays.len() - 1]
            );
        }
        // What B was told it can read: the events as A stored them.
        assert_eq!(
            b.events_after("resp_live", Some(47), 10).await.unwrap(),
            batch(48..50)
        );
        a.request_cancel("resp_live").await.unwrap();
        assert_eq!(
            next_change(&mut changes).await,
            RunChange::CancelRequested {
                run: "resp_live".to_owned()
            }
        );
    }

    #[tokio::test]
    async fn a_store_from_a_pool_polls_instead_of_listening() {
        let url = fresh_postgres_database().await;
        let config: tokio_postgres::Config = url.parse().unwrap();
        let manager = deadpool_postgres::Manager::new(config, tokio_postgres::NoTls);
        let pool = deadpool_postgres::Pool::builder(manager)
            .max_size(2)
            .build()
            .unwrap();
        let store = PostgresStore::from_pool(pool).await.unwrap();
        let mut changes = store.run_changes();
        let missed = tokio::time::timeout(Duration::from_secs(3), changes.next())
            .await
            .unwrap();
        assert_eq!(missed, Some(RunChange::Missed));
    }

    mod property {
        use super::*;
        use crate::common::runs::{Append, readers_see_a_prefix_and_never_a_hole};
        use proptest::prelude::*;

        fn append() -> impl Strategy<Value = Append> {
            (
                1u64..8,
                prop_oneof![6 => Just(0i8), 1 => -3i8..0, 1 => 1i8..3],
            )
                .prop_map(|(len, shift)| Append { len, shift })
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(8))]
            #[test]
            fn interleaved_readers_see_a_prefix(appends in proptest::collection::vec(append(), 1..20)) {
                let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
                runtime.block_on(async {
                    let url = fresh_postgres_database().await;
                    let store: Arc<dyn Store> = Arc::new(PostgresStore::connect(&url).await.unwrap());
                    readers_see_a_prefix_and_never_a_hole(store, appends).await;
                });
            }
        }
    }
}

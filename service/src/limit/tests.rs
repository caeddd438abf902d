use super::*;

#[tokio::test]
async fn each_caller_has_its_own_slots_in_process() {
    let limit = ConcurrencyLimit::in_process(2);
    let a1 = limit.try_acquire(Principal::token(0)).await.unwrap();
    let _a2 = limit.try_acquire(Principal::token(0)).await.unwrap();
    let refused = limit.try_acquire(Principal::token(0)).await.unwrap_err();
    assert!(
        matches!(refused, LimitError::Reached { limit: 2 }),
        "{refused}"
    );
    // Another caller is not affected.
    let _b = limit.try_acquire(Principal::token(1)).await.unwrap();
    // A finished response frees its slot.
    drop(a1);
    assert!(limit.try_acquire(Principal::token(0)).await.is_ok());
}

#[cfg(feature = "postgres")]
mod postgres {
    use std::sync::Arc;

    use conversation_tree::PostgresStore;
    use conversation_tree::testing::fresh_postgres_database;

    use super::*;
    use crate::store::StoreKind;
    use crate::{Secret, Service, ServiceConfig};

    /// How long a slot outlives a replica that dies holding it, as `runs.lease_ttl` by
    /// default.
    const DEFAULT_SLOT_TTL: Duration = Duration::from_secs(10);

    /// A replica: a service of its own on the database at `url`, with tokens alpha and beta.
    async fn replica(url: &str) -> Service {
        let store = PostgresStore::connect(url).await.unwrap();
        let tokens = [Secret::new("alpha"), Secret::new("beta")];
        Service::with_store(
            ServiceConfig::default(),
            &tokens,
            Arc::new(store),
            StoreKind::Postgres,
        )
        .unwrap()
    }

    /// `requests` admissions of `caller` at once, alternately on each limit.
    async fn race(
        limits: &[Arc<ConcurrencyLimit>],
        caller: Principal,
        requests: usize,
    ) -> (Vec<Slot>, usize) {
        let tasks = (0..requests).map(|i| {
            let limit = Arc::clone(&limits[i % limits.len()]);
            tokio::spawn(async move { limit.try_acquire(caller).await })
        });
        let mut admitted = Vec::new();
        let mut refused = 0;
        for result in futures::future::join_all(tasks).await {
            match result.unwrap() {
                Ok(slot) => admitted.push(slot),
                Err(LimitError::Reached { limit }) => {
                    assert_eq!(limit, limits[0].per_caller());
                    refused += 1;
                }
                Err(err) => panic!("{err}"),
            }
        }
        (admitted, refused)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_limit_is_exact_across_two_replicas() {
        let url = fresh_postgres_database().await;
        let (a, b) = (replica(&url).await, replica(&url).await);
        let limits = [
            Arc::new(a.concurrency_limit(3, DEFAULT_SLOT_TTL)),
            Arc::new(b.concurrency_limit(3, DEFAULT_SLOT_TTL)),
        ];
        let (admitted, refused) = race(&limits, Principal::token(0), 20).await;
        assert_eq!((admitted.len(), refused), (3, 17));
        // The other token has its own slots.
        let (other, _) = race(&limits, Principal::token(1), 4).await;
        assert_eq!(other.len(), 3);
        // Answers that end free their slots, on whichever replica asks next.
        drop(admitted);
        let mut again = (Vec::new(), 0);
        for _ in 0..50 {
            again = race(&limits, Principal::token(0), 6).await;
            if again.0.len() == 3 {
                break;
            }
            drop(std::mem::take(&mut again.0));
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!((again.0.len(), again.1), (3, 3));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_dead_replicas_slots_free_themselves_after_their_ttl() {
        let url = fresh_postgres_database().await;
        let ttl = Duration::from_millis(600);
        let (a, b) = (replica(&url).await, replica(&url).await);
        let dying = a.concurrency_limit(2, ttl);
        let survivor = b.concurrency_limit(2, ttl);
        let held = [
            dying.try_acquire(Principal::token(0)).await.unwrap(),
            dying.try_acquire(Principal::token(0)).await.unwrap(),
        ];
        // While replica A lives it renews its slots past their first ttl.
        tokio::time::sleep(ttl * 2).await;
        assert!(matches!(
            survivor.try_acquire(Principal::token(0)).await,
            Err(LimitError::Reached { .. })
        ));
        // A dies: no release, no renewal.
        std::mem::forget(held);
        drop(dying);
        drop(a);
        let died = std::time::Instant::now();
        let mut freed = Vec::new();
        while freed.len() < 2 {
            assert!(
                died.elapsed() < ttl * 4,
                "the dead replica's slots were not freed"
            );
            match survivor.try_acquire(Principal::token(0)).await {
                Ok(slot) => freed.push(slot),
                Err(LimitError::Reached { .. }) => {
                    tokio::time::sleep(Duration::from_millis(50)).await
                }
                Err(err) => panic!("{err}"),
            }
        }
        assert!(
            died.elapsed() >= ttl / 3,
            "freed before the ttl: {:?}",
            died.elapsed()
        );
    }

    #[tokio::test]
    async fn sqlite_and_memory_stores_count_in_process() {
        let service = Service::open(ServiceConfig::default(), &[]).await.unwrap();
        let limit = service.concurrency_limit(1, DEFAULT_SLOT_TTL);
        assert!(format!("{limit:?}").contains("in process"));
    }
}

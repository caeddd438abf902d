//! Concurrency slots (schema version 10): exact under races across store handles (replicas),
//! freed on release and on expiry, and a late release never frees a newer claim, on both stores.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use conversation_tree::{Store, StoreError};

use super::Harness;

const TTL: Duration = Duration::from_secs(60);
const OWNER: &str = "token-sha256:0123abcd";

/// Claims of one owner at once through `stores` in turn, each as its store's replica.
async fn race(stores: &[Arc<dyn Store>], claims: usize, limit: u32) -> Vec<u32> {
    let tasks = (0..claims).map(|i| {
        let store = Arc::clone(&stores[i % stores.len()]);
        let holder = format!("replica-{}", i % stores.len());
        tokio::spawn(async move { store.claim_slot(OWNER, limit, &holder, TTL).await })
    });
    futures::future::join_all(tasks)
        .await
        .into_iter()
        .filter_map(|claim| claim.unwrap().unwrap())
        .map(|slot| slot.index)
        .collect()
}

pub(crate) async fn racing_claims_across_replicas_win_exactly_the_limit(harness: &impl Harness) {
    // Two handles on one database: two replicas.
    let stores = [harness.open().await, harness.open().await];
    // The owner's first admissions race too: its slots do not exist yet.
    let won = race(&stores, 24, 5).await;
    assert_eq!(won.len(), 5, "{won:?}");
    assert_eq!(won.iter().collect::<HashSet<_>>().len(), 5, "{won:?}");
    assert!(won.iter().all(|index| *index < 5), "{won:?}");
    // All held: nobody else gets one, on either replica.
    assert!(race(&stores, 8, 5).await.is_empty());
    // A raised limit offers the new slots only.
    let more = race(&stores, 8, 7).await;
    assert_eq!(more.iter().collect::<HashSet<_>>(), HashSet::from([&5, &6]));
    // Another owner is not affected.
    let other = stores[1]
        .claim_slot("token-sha256:ffff", 1, "replica-1", TTL)
        .await
        .unwrap();
    assert_eq!(other.map(|slot| slot.index), Some(0));
}

pub(crate) async fn slots_free_on_release_and_on_expiry_and_stay_fenced(harness: &impl Harness) {
    let store = harness.open().await;
    let short = Duration::from_millis(300);
    let held = store
        .claim_slot(OWNER, 1, "replica-a", TTL)
        .await
        .unwrap()
        .expect("free");
    assert_eq!(held.index, 0);
    assert!(
        store
            .claim_slot(OWNER, 1, "replica-b", TTL)
            .await
            .unwrap()
            .is_none()
    );
    store.release_slot(&held).await.unwrap();

    // A replica that dies holding a slot stops renewing: the slot frees itself.
    let dead = store
        .claim_slot(OWNER, 1, "replica-a", short)
        .await
        .unwrap()
        .expect("released");
    assert!(
        store
            .claim_slot(OWNER, 1, "replica-b", TTL)
            .await
            .unwrap()
            .is_none()
    );
    tokio::time::sleep(short * 2).await;
    let taken = store
        .claim_slot(OWNER, 1, "replica-b", TTL)
        .await
        .unwrap()
        .expect("expired");
    // The dead claim's late release and renewal leave the new claim alone.
    store.release_slot(&dead).await.unwrap();
    assert_eq!(store.renew_slots("replica-a", TTL).await.unwrap(), 0);
    assert!(
        store
            .claim_slot(OWNER, 1, "replica-a", TTL)
            .await
            .unwrap()
            .is_none()
    );

    // A renewed slot outlives its first time to live.
    let renewed = store
        .claim_slot("token-sha256:renew", 1, "replica-c", short)
        .await
        .unwrap()
        .expect("free");
    for _ in 0..3 {
        tokio::time::sleep(short / 2).await;
        assert_eq!(store.renew_slots("replica-c", short).await.unwrap(), 1);
    }
    assert!(
        store
            .claim_slot("token-sha256:renew", 1, "replica-d", TTL)
            .await
            .unwrap()
            .is_none()
    );
    store.release_slot(&renewed).await.unwrap();
    store.release_slot(&taken).await.unwrap();
}

pub(crate) async fn unusable_slot_names_are_refused(harness: &impl Harness) {
    let store = harness.open().await;
    assert!(matches!(
        store.claim_slot("", 1, "replica-a", TTL).await,
        Err(StoreError::InvalidOwner { .. })
    ));
    assert!(matches!(
        store.claim_slot(OWNER, 1, "", TTL).await,
        Err(StoreError::InvalidRunName { .. })
    ));
    // A limit of 0 admits nobody.
    assert!(
        store
            .claim_slot(OWNER, 0, "replica-a", TTL)
            .await
            .unwrap()
            .is_none()
    );
}

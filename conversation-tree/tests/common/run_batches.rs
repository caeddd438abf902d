//! Many runs' events in one transaction ([`RunStore::append_event_batches`]): each run's batch
//! stands or fails alone, followers hear of every run written, and interleaved batches of many
//! runs are stored complete and in order.

use conversation_tree::StoreError;
use conversation_tree::runs::{EventBatch, RunChange, RunEvent};

use super::Harness;
use super::runs::{batch, new_run, next_change, sse};

pub(crate) async fn one_call_stores_many_runs_and_a_bad_batch_fails_alone<H: Harness>(harness: &H) {
    let store = harness.open().await;
    for id in ["resp_a", "resp_gap", "resp_c", "resp_empty", "resp_dup"] {
        store.create_run(new_run(id)).await.unwrap();
    }
    store.append_events("resp_a", &batch(0..2)).await.unwrap();
    store.append_events("resp_dup", &batch(0..3)).await.unwrap();
    let mut changes = store.run_changes();
    H::ready_to_follow(&mut changes).await;

    let a = batch(2..5);
    let gap = batch(1..3);
    let c = batch(0..3);
    let unknown = batch(0..1);
    let dup = batch(2..4);
    let results = store
        .append_event_batches(&[
            EventBatch::new("resp_a", &a),
            EventBatch::new("resp_gap", &gap),
            EventBatch::new("resp_c", &c),
            EventBatch::new("resp_unknown", &unknown),
            EventBatch::new("resp_empty", &[]),
            EventBatch::new("resp\ndup", &dup),
            EventBatch::new("resp_dup", &dup),
        ])
        .await
        .unwrap();
    assert_eq!(results.len(), 7);
    assert_eq!(results[0].as_ref().unwrap(), &Some(4));
    assert!(
        matches!(
            &results[1],
            Err(StoreError::EventGap { run, found: 1, expected: 0 }) if run == "resp_gap"
        ),
        "{:?}",
        results[1]
    );
    assert_eq!(results[2].as_ref().unwrap(), &Some(2));
    assert!(
        matches!(&results[3], Err(StoreError::UnknownRun { run }) if run == "resp_unknown"),
        "{:?}",
        results[3]
    );
    assert_eq!(results[4].as_ref().unwrap(), &None);
    assert!(
        matches!(&results[5], Err(StoreError::InvalidRunName { .. })),
        "{:?}",
        results[5]
    );
    assert!(
        matches!(
            &results[6],
            Err(StoreError::DuplicateEvent { run, seq: 2, expected: 3 }) if run == "resp_dup"
        ),
        "{:?}",
        results[6]
    );

    // What was accepted is stored; nothing of a refused batch is.
    assert_eq!(
        store.events_after("resp_a", None, 100).await.unwrap(),
        batch(0..5)
    );
    assert_eq!(
        store.events_after("resp_c", None, 100).await.unwrap(),
        batch(0..3)
    );
    assert_eq!(store.last_seq("resp_gap").await.unwrap(), None);
    assert!(
        store
            .events_after("resp_gap", None, 100)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        store.events_after("resp_dup", None, 100).await.unwrap(),
        batch(0..3)
    );

    // Followers hear of both runs written, and of nothing else: the next change after them is
    // a later write's.
    let mut heard = [
        next_change(&mut changes).await,
        next_change(&mut changes).await,
    ];
    heard.sort_by_key(|change| change.run().map(str::to_owned));
    assert_eq!(
        heard,
        [
            RunChange::Events {
                run: "resp_a".to_owned(),
                last_seq: 4
            },
            RunChange::Events {
                run: "resp_c".to_owned(),
                last_seq: 2
            },
        ]
    );
    store.append_events("resp_gap", &batch(0..1)).await.unwrap();
    assert_eq!(
        next_change(&mut changes).await,
        RunChange::Events {
            run: "resp_gap".to_owned(),
            last_seq: 0
        }
    );
}

pub(crate) async fn a_run_whose_events_cannot_be_written_fails_alone<H: Harness>(harness: &H) {
    let store = harness.open().await;
    for id in ["resp_ok", "resp_poison", "resp_after"] {
        store.create_run(new_run(id)).await.unwrap();
    }
    harness
        .execute(&H::failing_event_insert_for("resp_poison"))
        .await;
    let store = harness.open().await;
    let events = batch(0..3);
    let more = batch(3..5);
    let results = store
        .append_event_batches(&[
            EventBatch::new("resp_ok", &events),
            EventBatch::new("resp_poison", &events),
            EventBatch::new("resp_poison", &more),
            EventBatch::new("resp_after", &events),
        ])
        .await
        .unwrap();
    assert_eq!(results[0].as_ref().unwrap(), &Some(2));
    assert!(results[1].is_err(), "{:?}", results[1]);
    assert!(results[2].is_err(), "{:?}", results[2]);
    assert_eq!(results[3].as_ref().unwrap(), &Some(2));
    assert_eq!(store.last_seq("resp_poison").await.unwrap(), None);
    assert!(
        store
            .events_after("resp_poison", None, 100)
            .await
            .unwrap()
            .is_empty()
    );
    for id in ["resp_ok", "resp_after"] {
        assert_eq!(
            store.events_after(id, None, 100).await.unwrap(),
            batch(0..3),
            "{id}"
        );
    }
}

/// A small deterministic generator (xorshift): the same interleaving on every run of the test.
struct Shuffle(u64);

impl Shuffle {
    fn below(&mut self, bound: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % bound
    }
}

pub(crate) async fn interleaved_batches_of_many_runs_are_stored_complete_and_in_order(
    harness: &impl Harness,
) {
    const RUNS: usize = 12;
    let store = harness.open().await;
    let ids: Vec<String> = (0..RUNS).map(|run| format!("resp_mix{run}")).collect();
    for id in &ids {
        store.create_run(new_run(id)).await.unwrap();
    }
    let mut next = [0_u64; RUNS];
    let mut shuffle = Shuffle(0x9E37_79B9_7F4A_7C15);
    for _ in 0..60 {
        // A call holds a few batches of random runs (a run may come twice, a batch may be
        // empty), each continuing its run's events: as a replica's writer sends what its runs
        // pushed in one window. Each returns its run's last number after it.
        let mut call: Vec<(usize, Vec<RunEvent>, Option<u64>)> = Vec::new();
        for _ in 0..=shuffle.below(6) {
            let run = usize::try_from(shuffle.below(RUNS as u64)).unwrap();
            let len = shuffle.below(5);
            let events = (next[run]..next[run] + len)
                .map(|seq| RunEvent::new(seq, sse(seq)))
                .collect();
            next[run] += len;
            call.push((run, events, next[run].checked_sub(1)));
        }
        let batches: Vec<EventBatch<'_>> = call
            .iter()
            .map(|(run, events, _)| EventBatch::new(&ids[*run], events))
            .collect();
        let results = store.append_event_batches(&batches).await.unwrap();
        assert_eq!(results.len(), call.len());
        for ((run, _, last), result) in call.iter().zip(results) {
            assert_eq!(result.unwrap(), *last, "{}", ids[*run]);
        }
    }
    assert!(next.iter().sum::<u64>() > 200, "{next:?}");
    for (run, id) in ids.iter().enumerate() {
        assert_eq!(
            store.events_after(id, None, 1000).await.unwrap(),
            batch(0..next[run]),
            "{id}"
        );
    }
}

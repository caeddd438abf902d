//! Run records (schema version 9): records, transitions, stored events, leases, change
//! notifications and retention, on both stores.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use conversation_tree::runs::{
    NewRun, RunChange, RunChanges, RunEvent, RunMode, RunProtocol, RunStatus, RunUpdate,
};
use conversation_tree::{ConversationId, Message, Store, StoreError};
use futures::StreamExt as _;

use super::{Harness, deterministic, step};

const TTL: Duration = Duration::from_secs(60);

pub(crate) fn new_run(id: &str) -> NewRun {
    NewRun::new(
        id,
        "token:alice",
        RunProtocol::Responses,
        RunMode::Background,
        serde_json::json!({"model": "echo", "input": [{"role": "user", "content": "Hi"}], "background": true}),
    )
}

/// SSE bytes as a live client got them: event `seq` of a stream.
pub(crate) fn sse(seq: u64) -> Vec<u8> {
    format!(
        "event: response.output_text.delta\ndata: {{\"sequence_number\":{seq},\"delta\":\"é\"}}\n\n"
    )
    .into_bytes()
}

pub(crate) fn batch(seqs: std::ops::Range<u64>) -> Vec<RunEvent> {
    seqs.map(|seq| RunEvent::new(seq, sse(seq))).collect()
}

/// The next change that is not [`RunChange::Missed`], within 10 s.
pub(crate) async fn next_change(changes: &mut RunChanges) -> RunChange {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let change = tokio::time::timeout_at(deadline, changes.next())
            .await
            .expect("a change within 10 s")
            .expect("the change stream stays open");
        if change != RunChange::Missed {
            return change;
        }
    }
}

pub(crate) async fn a_run_is_created_read_and_owner_checked(harness: &impl Harness) {
    let store = harness.open().await;
    let conversation = ConversationId::random();
    let (_, node) = step(
        &*store,
        &conversation,
        &[Message::human("Hi")],
        Message::ai("Hello"),
        &deterministic(),
    )
    .await;
    let created = store
        .create_run(new_run("resp_1").continues_from(node.id()))
        .await
        .unwrap();
    assert_eq!(created.status, RunStatus::Queued);
    let started = store
        .create_run(new_run("resp_started").in_progress())
        .await
        .unwrap();
    assert_eq!(started.status, RunStatus::InProgress);
    assert_eq!(store.run("resp_started").await.unwrap(), Some(started));
    assert_eq!(created.protocol, RunProtocol::Responses);
    assert_eq!(created.mode, RunMode::Background);
    assert_eq!(created.continues_from, Some(node.id()));
    assert_eq!(created.spec["input"][0]["content"], "Hi");
    assert_eq!(
        (created.last_node, created.last_seq, created.lease.clone()),
        (None, None, None)
    );
    assert!(!created.cancel_requested && created.finished.is_none());
    assert_eq!(store.run("resp_1").await.unwrap(), Some(created.clone()));
    assert_eq!(
        store.run_of("resp_1", "token:alice").await.unwrap(),
        Some(created)
    );
    // Another principal's run is as absent as a missing one.
    assert_eq!(store.run_of("resp_1", "token:bob").await.unwrap(), None);
    assert_eq!(store.run("resp_missing").await.unwrap(), None);

    // The same id twice, an unusable id or owner, a node the store does not hold: refused.
    let again = store.create_run(new_run("resp_1")).await.unwrap_err();
    assert!(
        matches!(&again, StoreError::RunExists { run } if run == "resp_1"),
        "{again}"
    );
    let bad_id = store.create_run(new_run("")).await.unwrap_err();
    assert!(
        matches!(bad_id, StoreError::InvalidRunName { what: "run id", .. }),
        "{bad_id}"
    );
    let bad_owner = NewRun::new(
        "resp_2",
        "a\nb",
        RunProtocol::ChatShell,
        RunMode::Foreground,
        serde_json::Value::Null,
    );
    assert!(matches!(
        store.create_run(bad_owner).await.unwrap_err(),
        StoreError::InvalidOwner { .. }
    ));
    let unknown_node: conversation_tree::NodeId =
        (node.id().get() + 1000).to_string().parse().unwrap();
    let dangling = store
        .create_run(new_run("resp_3").continues_from(unknown_node))
        .await
        .unwrap_err();
    assert!(
        matches!(dangling, StoreError::UnknownNode { .. }),
        "{dangling}"
    );
    assert_eq!(store.run("resp_3").await.unwrap(), None);
    // The store reopens with its runs.
    drop(store);
    let reopened = harness.open().await;
    assert_eq!(
        reopened.run("resp_1").await.unwrap().map(|run| run.owner),
        Some("token:alice".to_owned())
    );
}

/// The transitions a run may make by a status alone (a finished run stays finished, so a late
/// writer cannot reopen it; a run pauses only with the document that resumes it), written out
/// independently of `RunStatus::can_become`.
fn legal(from: RunStatus, to: RunStatus) -> bool {
    use RunStatus::*;
    matches!(
        (from, to),
        (Queued | Paused, InProgress | Failed | Cancelled)
            | (InProgress, Completed | Failed | Cancelled | Incomplete)
    )
}

fn pause_document() -> serde_json::Value {
    serde_json::json!({"pending": [{"id": "call_1", "name": "http_get", "arguments": "{\"url\":\"https://example.com/\"}"}]})
}

/// A run brought to `status` by legal steps.
async fn run_in(store: &dyn Store, id: &str, status: RunStatus) {
    store
        .create_run(new_run(id).leased_to("replica-a", TTL))
        .await
        .unwrap();
    let path: &[RunStatus] = match status {
        RunStatus::Queued => &[],
        RunStatus::InProgress | RunStatus::Paused => &[RunStatus::InProgress],
        other => &[RunStatus::InProgress, other],
    };
    for &step in path {
        store
            .update_run(id, RunUpdate::new().status(step))
            .await
            .unwrap();
    }
    if status == RunStatus::Paused {
        store
            .update_run(
                id,
                RunUpdate::new().paused(pause_document(), Duration::from_secs(3600)),
            )
            .await
            .unwrap();
    }
}

pub(crate) async fn a_paused_run_waits_unheld_and_is_taken_once(harness: &impl Harness) {
    let store = harness.open().await;
    run_in(&*store, "resp_pause", RunStatus::InProgress).await;
    let hour = Duration::from_secs(3600);
    let paused = store
        .update_run(
            "resp_pause",
            RunUpdate::new().paused(pause_document(), hour),
        )
        .await
        .unwrap();
    assert_eq!(paused.status, RunStatus::Paused);
    assert_eq!(paused.paused, Some(pause_document()));
    assert!(paused.lease.is_none(), "a paused run is no replica's");
    assert!(paused.finished.is_none(), "a paused run is not over");
    let decide_by = paused.decide_by.expect("a time to decide by");
    let wait = decide_by.duration_since(paused.updated).as_secs();
    assert!((3599..=3601).contains(&wait), "{wait} s to decide");
    assert_eq!(store.run("resp_pause").await.unwrap().unwrap(), paused);

    // Nobody takes it over, retention keeps it and its events, no sweep takes it early.
    store
        .append_events("resp_pause", &batch(0..2))
        .await
        .unwrap();
    assert!(store.orphaned_runs(10).await.unwrap().is_empty());
    assert!(
        store
            .claim_orphaned_run("replica-x", TTL)
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        store
            .claim_run("resp_pause", "replica-x", TTL)
            .await
            .unwrap()
            .is_none()
    );
    let purged = store.purge_runs(Duration::ZERO).await.unwrap();
    assert_eq!(purged.events, 0, "{purged:?}");
    assert_eq!(
        store
            .events_after("resp_pause", None, 10)
            .await
            .unwrap()
            .len(),
        2
    );
    assert!(
        store
            .take_expired_pause("replica-x", TTL)
            .await
            .unwrap()
            .is_none()
    );

    // Deciders racing for it: one takes it, leased, its document and events as they were.
    let takers = (0..8).map(|i| {
        let store = Arc::clone(&store);
        tokio::spawn(async move {
            store
                .take_paused("resp_pause", &format!("replica-{i}"), TTL)
                .await
        })
    });
    let taken: Vec<_> = futures::future::join_all(takers)
        .await
        .into_iter()
        .filter_map(|taken| taken.unwrap().unwrap())
        .collect();
    assert_eq!(taken.len(), 1, "{taken:?}");
    let run = &taken[0];
    assert_eq!(run.status, RunStatus::InProgress);
    assert_eq!(run.paused, Some(pause_document()));
    assert_eq!(run.last_seq, Some(1));
    let lease = run.lease.clone().expect("the taker holds it");
    store.renew_lease(&lease, TTL).await.unwrap();
    assert!(
        store
            .take_paused("resp_pause", "replica-late", TTL)
            .await
            .unwrap()
            .is_none()
    );
    // It goes on and may pause again; then it ends.
    store
        .update_run(
            "resp_pause",
            RunUpdate::new().paused(pause_document(), hour),
        )
        .await
        .unwrap();
    let again = store
        .take_paused("resp_pause", "replica-b", TTL)
        .await
        .unwrap()
        .expect("paused again");
    assert_eq!(again.lease.unwrap().epoch, lease.epoch + 1);
    store
        .update_run("resp_pause", RunUpdate::new().status(RunStatus::Completed))
        .await
        .unwrap();
    assert!(
        store
            .take_paused("resp_pause", "replica-c", TTL)
            .await
            .unwrap()
            .is_none()
    );
    let unknown = store
        .take_paused("resp_nope", "replica-c", TTL)
        .await
        .unwrap_err();
    assert!(
        matches!(unknown, StoreError::UnknownRun { .. }),
        "{unknown}"
    );

    // A pause nobody decided about in time is taken by one sweeper.
    run_in(&*store, "resp_late", RunStatus::InProgress).await;
    run_in(&*store, "resp_waiting", RunStatus::InProgress).await;
    store
        .update_run(
            "resp_late",
            RunUpdate::new().paused(pause_document(), Duration::ZERO),
        )
        .await
        .unwrap();
    store
        .update_run(
            "resp_waiting",
            RunUpdate::new().paused(pause_document(), hour),
        )
        .await
        .unwrap();
    let sweepers = (0..4).map(|i| {
        let store = Arc::clone(&store);
        tokio::spawn(async move { store.take_expired_pause(&format!("replica-{i}"), TTL).await })
    });
    let swept: Vec<String> = futures::future::join_all(sweepers)
        .await
        .into_iter()
        .filter_map(|taken| taken.unwrap().unwrap())
        .map(|run| run.id)
        .collect();
    assert_eq!(swept, ["resp_late"]);
    let waiting = store.run("resp_waiting").await.unwrap().unwrap();
    assert_eq!(waiting.status, RunStatus::Paused);
}

pub(crate) async fn status_moves_only_by_legal_transitions(harness: &impl Harness) {
    let store = harness.open().await;
    for (i, from) in RunStatus::ALL.into_iter().enumerate() {
        for (j, to) in RunStatus::ALL.into_iter().enumerate() {
            let id = format!("resp_{i}_{j}");
            run_in(&*store, &id, from).await;
            let result = store.update_run(&id, RunUpdate::new().status(to)).await;
            let stored = store.run(&id).await.unwrap().unwrap();
            if legal(from, to) {
                let run = result.unwrap_or_else(|err| panic!("{from} -> {to}: {err}"));
                assert_eq!(run, stored);
                assert_eq!(stored.status, to);
                // Finishing frees the lease and records when.
                assert_eq!(
                    stored.finished.is_some(),
                    to.is_terminal(),
                    "{from} -> {to}"
                );
                // A paused run held none, and a status alone leases nothing.
                assert_eq!(
                    stored.lease.is_none(),
                    to.is_terminal() || from == RunStatus::Paused,
                    "{from} -> {to}"
                );
            } else {
                let err = result.expect_err(&format!("{from} -> {to} must be refused"));
                assert!(
                    matches!(&err, StoreError::IllegalRunTransition { run, from: f, to: t }
                        if *run == id && *f == from && *t == to),
                    "{err}"
                );
                assert!(
                    err.to_string().contains(&format!("from {from} to {to}")),
                    "{err}"
                );
                assert_eq!(stored.status, from, "a refused change writes nothing");
            }
        }
    }
    // Error text and the last node ride along; an unknown run is a typed error.
    let conversation = ConversationId::random();
    let (_, node) = step(
        &*store,
        &conversation,
        &[Message::human("Hi")],
        Message::ai("Hello"),
        &deterministic(),
    )
    .await;
    run_in(&*store, "resp_fail", RunStatus::InProgress).await;
    let failed = store
        .update_run("resp_fail", RunUpdate::new().last_node(node.id()))
        .await
        .unwrap();
    assert_eq!(
        (failed.status, failed.last_node),
        (RunStatus::InProgress, Some(node.id()))
    );
    let failed = store
        .update_run(
            "resp_fail",
            RunUpdate::new()
                .status(RunStatus::Failed)
                .error("provider answered 500"),
        )
        .await
        .unwrap();
    assert_eq!(failed.error.as_deref(), Some("provider answered 500"));
    assert_eq!(failed.last_node, Some(node.id()));
    let unknown = store
        .update_run("resp_nope", RunUpdate::new().status(RunStatus::InProgress))
        .await
        .unwrap_err();
    assert!(
        matches!(unknown, StoreError::UnknownRun { .. }),
        "{unknown}"
    );
}

pub(crate) async fn events_continue_without_gaps_or_duplicates(harness: &impl Harness) {
    let store = harness.open().await;
    store.create_run(new_run("resp_ev")).await.unwrap();
    assert_eq!(store.last_seq("resp_ev").await.unwrap(), None);
    assert_eq!(store.append_events("resp_ev", &[]).await.unwrap(), None);
    assert_eq!(
        store.append_events("resp_ev", &batch(0..3)).await.unwrap(),
        Some(2)
    );
    assert_eq!(
        store.append_events("resp_ev", &batch(3..4)).await.unwrap(),
        Some(3)
    );

    // A repeated number (a second worker) and a gap are refused, and nothing of the batch is
    // written.
    let dup = store
        .append_events("resp_ev", &batch(3..6))
        .await
        .unwrap_err();
    assert!(
        matches!(
            dup,
            StoreError::DuplicateEvent {
                seq: 3,
                expected: 4,
                ..
            }
        ),
        "{dup}"
    );
    let mut gappy = batch(4..6);
    gappy.push(RunEvent::new(7, sse(7)));
    let gap = store.append_events("resp_ev", &gappy).await.unwrap_err();
    assert!(
        matches!(
            gap,
            StoreError::EventGap {
                found: 7,
                expected: 6,
                ..
            }
        ),
        "{gap}"
    );
    assert_eq!(store.last_seq("resp_ev").await.unwrap(), Some(3));

    // Reads after N return the bytes as given, in pages.
    let all = store.events_after("resp_ev", None, 100).await.unwrap();
    assert_eq!(all, batch(0..4));
    assert_eq!(
        store.events_after("resp_ev", Some(1), 100).await.unwrap(),
        batch(2..4)
    );
    assert_eq!(
        store.events_after("resp_ev", Some(0), 2).await.unwrap(),
        batch(1..3)
    );
    assert!(
        store
            .events_after("resp_ev", Some(3), 100)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        store
            .events_after("resp_ev", Some(99), 100)
            .await
            .unwrap()
            .is_empty()
    );

    // Arbitrary bytes, not only text.
    let binary = RunEvent::new(4, vec![0, 255, 10, 13, 0xC3]);
    store
        .append_events("resp_ev", std::slice::from_ref(&binary))
        .await
        .unwrap();
    assert_eq!(
        store.events_after("resp_ev", Some(3), 1).await.unwrap(),
        [binary]
    );

    // Pages are bounded.
    store.create_run(new_run("resp_long")).await.unwrap();
    store
        .append_events("resp_long", &batch(0..1200))
        .await
        .unwrap();
    let page = store
        .events_after("resp_long", None, usize::MAX)
        .await
        .unwrap();
    assert_eq!(page.len(), conversation_tree::runs::MAX_EVENT_PAGE);
    assert_eq!(page.last().map(|event| event.seq), Some(999));

    for unknown in [
        store
            .append_events("resp_nope", &batch(0..1))
            .await
            .unwrap_err(),
        store.events_after("resp_nope", None, 10).await.unwrap_err(),
        store.last_seq("resp_nope").await.unwrap_err(),
    ] {
        assert!(
            matches!(unknown, StoreError::UnknownRun { .. }),
            "{unknown}"
        );
    }
}

pub(crate) async fn a_failed_batch_leaves_no_event<H: Harness>(harness: &H) {
    let store = harness.open().await;
    store.create_run(new_run("resp_atomic")).await.unwrap();
    store
        .append_events("resp_atomic", &batch(0..2))
        .await
        .unwrap();
    harness.execute(&H::failing_event_insert()).await;
    let store = harness.open().await;
    assert!(
        store
            .append_events("resp_atomic", &batch(2..6))
            .await
            .is_err()
    );
    assert_eq!(store.last_seq("resp_atomic").await.unwrap(), Some(1));
    assert_eq!(
        store.events_after("resp_atomic", None, 100).await.unwrap(),
        batch(0..2)
    );
}

pub(crate) async fn racing_claimants_have_one_winner(harness: &impl Harness) {
    let store = harness.open().await;
    store.create_run(new_run("resp_race")).await.unwrap();
    let claims = (0..16).map(|i| {
        let store = Arc::clone(&store);
        tokio::spawn(async move {
            store
                .claim_run("resp_race", &format!("replica-{i}"), TTL)
                .await
        })
    });
    let winners: Vec<_> = futures::future::join_all(claims)
        .await
        .into_iter()
        .filter_map(|claim| claim.unwrap().unwrap())
        .collect();
    assert_eq!(winners.len(), 1, "{winners:?}");
    let held = store
        .run("resp_race")
        .await
        .unwrap()
        .unwrap()
        .lease
        .unwrap();
    assert_eq!(held, winners[0]);
    assert_eq!(held.epoch, 1);

    // Takeovers racing for orphaned runs each get a different one.
    for i in 0..6 {
        store
            .create_run(new_run(&format!("resp_orphan_{i}")))
            .await
            .unwrap();
    }
    let takeovers = (0..12).map(|i| {
        let store = Arc::clone(&store);
        tokio::spawn(async move { store.claim_orphaned_run(&format!("replica-{i}"), TTL).await })
    });
    let taken: Vec<String> = futures::future::join_all(takeovers)
        .await
        .into_iter()
        .filter_map(|taken| taken.unwrap().unwrap())
        .map(|run| run.id)
        .collect();
    assert_eq!(taken.len(), 6, "{taken:?}");
    assert_eq!(taken.iter().collect::<HashSet<_>>().len(), 6, "{taken:?}");
    assert!(store.orphaned_runs(10).await.unwrap().is_empty());
}

pub(crate) async fn leases_are_held_renewed_released_and_fenced(harness: &impl Harness) {
    let store = harness.open().await;
    let created = store
        .create_run(new_run("resp_lease").leased_to("replica-a", TTL))
        .await
        .unwrap();
    let first = created.lease.clone().unwrap();
    assert_eq!((first.holder.as_str(), first.epoch), ("replica-a", 1));
    // Created leased: nobody else can take it, and it is not orphaned.
    assert_eq!(
        store
            .claim_run("resp_lease", "replica-b", TTL)
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        store
            .claim_run("resp_lease", "replica-a", TTL)
            .await
            .unwrap(),
        None
    );
    assert!(store.orphaned_runs(10).await.unwrap().is_empty());
    let renewed = store.renew_lease(&first, TTL).await.unwrap();
    assert!(renewed.expires >= first.expires);

    // Released: another replica claims it at once; the old lease is dead for good.
    store.release_lease(&renewed).await.unwrap();
    assert_eq!(store.run("resp_lease").await.unwrap().unwrap().lease, None);
    let second = store
        .claim_run("resp_lease", "replica-b", TTL)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(second.epoch, 2);
    let lost = store.renew_lease(&renewed, TTL).await.unwrap_err();
    assert!(
        matches!(&lost, StoreError::LeaseLost { holder, .. } if holder == "replica-a"),
        "{lost}"
    );
    // The old holder releasing does not free the new holder's lease.
    store.release_lease(&renewed).await.unwrap();
    assert_eq!(
        store.run("resp_lease").await.unwrap().unwrap().lease,
        Some(second.clone())
    );

    // A finished run has no lease to renew or claim.
    store
        .update_run("resp_lease", RunUpdate::new().status(RunStatus::Cancelled))
        .await
        .unwrap();
    assert!(matches!(
        store.renew_lease(&second, TTL).await,
        Err(StoreError::LeaseLost { .. })
    ));
    assert_eq!(
        store
            .claim_run("resp_lease", "replica-c", TTL)
            .await
            .unwrap(),
        None
    );
    let unknown = store
        .claim_run("resp_nope", "replica-c", TTL)
        .await
        .unwrap_err();
    assert!(
        matches!(unknown, StoreError::UnknownRun { .. }),
        "{unknown}"
    );
    let bad = store.claim_run("resp_lease", "", TTL).await.unwrap_err();
    assert!(
        matches!(
            bad,
            StoreError::InvalidRunName {
                what: "replica name",
                ..
            }
        ),
        "{bad}"
    );
}

pub(crate) async fn followers_see_events_status_and_cancels<H: Harness>(harness: &H) {
    let store = harness.open().await;
    store.create_run(new_run("resp_follow")).await.unwrap();
    store.create_run(new_run("resp_other")).await.unwrap();
    let mut changes = store.watch_run("resp_follow");
    H::ready_to_follow(&mut changes).await;

    store
        .append_events("resp_other", &batch(0..1))
        .await
        .unwrap();
    store
        .append_events("resp_follow", &batch(0..3))
        .await
        .unwrap();
    assert_eq!(
        next_change(&mut changes).await,
        RunChange::Events {
            run: "resp_follow".to_owned(),
            last_seq: 2
        }
    );
    store
        .update_run(
            "resp_follow",
            RunUpdate::new().status(RunStatus::InProgress),
        )
        .await
        .unwrap();
    assert_eq!(
        next_change(&mut changes).await,
        RunChange::Status {
            run: "resp_follow".to_owned(),
            status: RunStatus::InProgress
        }
    );
    let asked = store.request_cancel("resp_follow").await.unwrap();
    assert!(asked.cancel_requested);
    assert_eq!(
        next_change(&mut changes).await,
        RunChange::CancelRequested {
            run: "resp_follow".to_owned()
        }
    );
    store
        .update_run("resp_follow", RunUpdate::new().status(RunStatus::Cancelled))
        .await
        .unwrap();
    assert_eq!(
        next_change(&mut changes).await,
        RunChange::Status {
            run: "resp_follow".to_owned(),
            status: RunStatus::Cancelled
        }
    );
    // A finished run is returned unchanged by a cancel.
    let finished = store.request_cancel("resp_follow").await.unwrap();
    assert_eq!(finished.status, RunStatus::Cancelled);
    let unknown = store.request_cancel("resp_nope").await.unwrap_err();
    assert!(
        matches!(unknown, StoreError::UnknownRun { .. }),
        "{unknown}"
    );
}

pub(crate) async fn purge_deletes_old_events_and_finished_runs(harness: &impl Harness) {
    let store = harness.open().await;
    store.create_run(new_run("resp_done")).await.unwrap();
    store
        .append_events("resp_done", &batch(0..3))
        .await
        .unwrap();
    store
        .update_run("resp_done", RunUpdate::new().status(RunStatus::Cancelled))
        .await
        .unwrap();
    store.create_run(new_run("resp_live")).await.unwrap();
    store
        .append_events("resp_live", &batch(0..2))
        .await
        .unwrap();

    // Nothing is that old yet.
    let report = store.purge_runs(Duration::from_secs(3600)).await.unwrap();
    assert_eq!((report.runs, report.events), (0, 0));

    tokio::time::sleep(Duration::from_millis(20)).await;
    let report = store.purge_runs(Duration::from_millis(5)).await.unwrap();
    assert_eq!((report.runs, report.events), (1, 5));
    assert_eq!(store.run("resp_done").await.unwrap(), None);
    // An unfinished run stays, without its old events; its numbering goes on.
    let live = store.run("resp_live").await.unwrap().unwrap();
    assert_eq!(live.last_seq, Some(1));
    assert!(
        store
            .events_after("resp_live", None, 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        store
            .append_events("resp_live", &batch(2..3))
            .await
            .unwrap(),
        Some(2)
    );
}

/// One write of the append property: a batch of `len` events numbered from the next one, or
/// shifted by `shift` (a repeat when negative, a gap when positive) to be refused whole.
#[derive(Clone, Debug)]
pub(crate) struct Append {
    pub(crate) len: u64,
    pub(crate) shift: i8,
}

/// Writes `appends` to a new run while two readers read it over and over: every read is a
/// prefix of the stream (numbers from 0 without a hole, bytes as written) that never shrinks,
/// refused batches leave no trace, and the last read is the whole stream.
pub(crate) async fn readers_see_a_prefix_and_never_a_hole(
    store: Arc<dyn Store>,
    appends: Vec<Append>,
) {
    let id = format!("resp_prop_{}", uuid_like());
    store.create_run(new_run(&id)).await.unwrap();
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (store, id, done) = (Arc::clone(&store), id.clone(), Arc::clone(&done));
            tokio::spawn(async move {
                let mut seen = 0;
                loop {
                    let finished = done.load(std::sync::atomic::Ordering::SeqCst);
                    let events = store.events_after(&id, None, usize::MAX).await.unwrap();
                    assert!(
                        events.len() >= seen,
                        "a read shrank from {seen} to {}",
                        events.len()
                    );
                    for (i, event) in events.iter().enumerate() {
                        assert_eq!(event.seq, i as u64, "a hole before event {}", event.seq);
                        assert_eq!(event.data, sse(event.seq));
                    }
                    seen = events.len();
                    if finished {
                        return seen;
                    }
                    tokio::task::yield_now().await;
                }
            })
        })
        .collect();
    let mut next = 0u64;
    for append in appends {
        let start = next.saturating_add_signed(i64::from(append.shift));
        let written = store
            .append_events(&id, &batch(start..start + append.len))
            .await;
        match written {
            Ok(last) if start == next => {
                next += append.len;
                assert_eq!(last, next.checked_sub(1));
            }
            Err(StoreError::DuplicateEvent { .. }) if start < next => {}
            Err(StoreError::EventGap { .. }) if start > next => {}
            other => panic!("a batch from {start} after {next} stored: {other:?}"),
        }
    }
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    for reader in readers {
        assert_eq!(reader.await.unwrap() as u64, next.min(MAX_PAGE));
    }
    assert_eq!(store.last_seq(&id).await.unwrap(), next.checked_sub(1));
}

const MAX_PAGE: u64 = conversation_tree::runs::MAX_EVENT_PAGE as u64;

fn uuid_like() -> String {
    ConversationId::random().as_str().to_owned()
}

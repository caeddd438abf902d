//! Concurrency, atomicity and verification.

use std::collections::HashSet;
use std::io::{BufRead as _, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use conversation_tree::{CallKind, ConversationId, Message, NewResponse, ProblemKind, Store};

use super::{Harness, assert_consistent, sampling, step};

pub(crate) async fn eight_concurrent_tasks_lose_nothing(harness: &impl Harness) {
    const TASKS: usize = 8;
    const ROUNDS: usize = 6;
    // Two handles on one store: two processes, or two server replicas.
    let stores = [harness.open().await, harness.open().await];
    let conversation = ConversationId::random();
    // Every task sends the same supplied opening; they race to create it, and must create it
    // once. Then each continues on its own branch.
    let opening = vec![
        Message::system("You are helpful"),
        Message::human("Hello"),
        Message::ai("Hi! (supplied by the client)"),
    ];
    let tasks: Vec<_> = (0..TASKS)
        .map(|task| {
            let store = stores[task % 2].clone();
            let conversation = conversation.clone();
            let mut messages = opening.clone();
            tokio::spawn(async move {
                let mut last = None;
                for round in 0..ROUNDS {
                    messages.push(Message::human(format!("task {task}, question {round}")));
                    let answer = Message::ai(format!("task {task}, answer {round}"));
                    let (_, node) = step(
                        &*store,
                        &conversation,
                        &messages,
                        answer.clone(),
                        &sampling(),
                    )
                    .await;
                    messages.push(answer);
                    last = Some(node);
                }
                (last, messages)
            })
        })
        .collect();

    let store = &stores[0];
    let mut leaves = Vec::new();
    for task in tasks {
        let (leaf, messages) = task.await.expect("task panicked");
        let leaf = leaf.expect("each task logs");
        // Each task's whole conversation reads back from its last node, in order.
        assert_eq!(store.messages_for_path(leaf.id()).await.unwrap(), messages);
        leaves.push(leaf);
    }
    let nodes = store.conversation_nodes(&conversation).await.unwrap();
    let supplied: Vec<_> = nodes.iter().filter(|node| node.is_supplied()).collect();
    assert_eq!(supplied.len(), 1, "the shared opening was stored once");
    assert_eq!(nodes.len(), 1 + TASKS * ROUNDS, "no response was lost");
    let ids: HashSet<_> = nodes.iter().map(|node| node.id()).collect();
    assert_eq!(ids.len(), nodes.len());
    let calls = store.calls(&conversation).await.unwrap();
    let generated = calls
        .iter()
        .filter(|call| call.kind == CallKind::Generated)
        .count();
    assert_eq!(generated, TASKS * ROUNDS);
    assert_eq!(store.children(supplied[0].id()).await.unwrap().len(), TASKS);
    assert_consistent(&**store).await;
}

pub(crate) async fn a_failed_write_leaves_no_half_node<H: Harness>(harness: &H) {
    let store = harness.open().await;
    let conversation = ConversationId::random();
    let options = sampling();
    let (_, root) = step(
        &*store,
        &conversation,
        &[Message::human("Hi")],
        Message::ai("Hello"),
        &options,
    )
    .await;
    // Every write inserts its node, then its call: fail the call insert.
    harness.execute(&H::failing_insert_trigger("calls")).await;

    let logged = store
        .log_response(
            NewResponse::new(
                conversation.clone(),
                Some(root.id()),
                vec![Message::human("More")],
                Message::ai("Sure"),
                &options,
            )
            .label("resp_failed"),
        )
        .await;
    assert!(logged.is_err(), "the injected failure surfaces");
    let branched = store
        .find_or_create_path(
            &conversation,
            &[
                Message::human("Hi"),
                Message::ai("Hey (supplied)"),
                Message::human("?"),
            ],
            &options,
        )
        .await;
    assert!(branched.is_err());
    let fresh = ConversationId::random();
    let created = store
        .log_response(
            NewResponse::new(
                fresh.clone(),
                None,
                vec![Message::human("New")],
                Message::ai("Conversation"),
                &options,
            )
            .label("resp_failed_new")
            .owner("alice"),
        )
        .await;
    assert!(created.is_err());
    for label in ["resp_failed", "resp_failed_new"] {
        assert_eq!(store.node_by_label(label).await.unwrap(), None, "{label}");
    }

    assert_eq!(
        store.conversation_nodes(&conversation).await.unwrap(),
        vec![root]
    );
    assert!(
        store.conversation(&fresh).await.unwrap().is_none(),
        "no half conversation"
    );
    assert_consistent(&*store).await;
}

pub(crate) async fn dropped_writes_leave_no_half_node(harness: &impl Harness) {
    const WRITES: u32 = 40;
    let store = harness.open().await;
    let conversation = ConversationId::random();
    let options = sampling();
    let (_, root) = step(
        &*store,
        &conversation,
        &[Message::human("Hi")],
        Message::ai("Hello"),
        &options,
    )
    .await;
    let big = "x".repeat(64 * 1024);
    let entry = |write: u32| {
        NewResponse::new(
            conversation.clone(),
            Some(root.id()),
            vec![Message::human(format!("{write}: {big}"))],
            Message::ai(format!("answer {write}")),
            &options,
        )
    };
    // How long one such write takes here, so the deadlines below fall before, during and
    // after the writes' transactions.
    let started = std::time::Instant::now();
    store.log_response(entry(WRITES)).await.unwrap();
    let typical = started.elapsed();
    let mut finished = 0;
    for write in 0..WRITES {
        // The future is dropped wherever it is when its deadline passes.
        let deadline = typical * 2 * write / WRITES;
        match tokio::time::timeout(deadline, store.log_response(entry(write))).await {
            Ok(logged) => {
                logged.unwrap();
                finished += 1;
            }
            // A SQLite write outlives its future on the blocking pool: let it settle so the
            // next write starts on an idle store.
            Err(_) => tokio::time::sleep(typical * 3).await,
        }
    }
    assert!(
        finished > 0 && finished < WRITES,
        "{finished} of {WRITES} writes finished"
    );
    let children = store.children(root.id()).await.unwrap();
    let stored = children.len() - 1; // the timing write
    assert!(stored <= WRITES as usize);
    assert!(
        stored >= finished as usize,
        "every write that returned Ok is stored"
    );
    for child in &children {
        let turn = store.turn(child.id()).await.unwrap();
        assert!(turn.input[0].text().ends_with(&big), "no truncated turn");
    }
    assert_consistent(&*store).await;
}

pub(crate) async fn verify_finds_a_tampered_row(harness: &impl Harness) {
    let store = harness.open().await;
    let conversation = ConversationId::random();
    let (_, node) = step(
        &*store,
        &conversation,
        &[Message::human("Hi")],
        Message::ai("Hello"),
        &sampling(),
    )
    .await;
    assert!(store.verify().await.unwrap().is_ok());
    let forged = messages::transcript::to_json(&[Message::ai("Forged")]).replace('\'', "''");
    harness
        .execute(&format!(
            "UPDATE responses SET response_json = '{forged}' WHERE id = {}",
            node.id()
        ))
        .await;
    let report = store.verify().await.unwrap();
    assert_eq!(report.checked, 1);
    assert_eq!(report.problems.len(), 1);
    assert_eq!(report.problems[0].node, node.id());
    assert!(matches!(
        report.problems[0].kind,
        ProblemKind::ResponseHash { .. }
    ));
}

/// Environment variable that turns the test into the child that gets killed.
const CHILD_ENV: &str = "SKEIN_TREE_KILLED_WRITER";

/// A child process writes nodes in a loop and is killed with SIGKILL mid-stream; every node
/// it left is whole.
pub(crate) async fn killed_writer_leaves_no_half_node<H: Harness>(test_name: &str) {
    if let Ok(spec) = std::env::var(CHILD_ENV) {
        return write_until_killed(H::open_spec(&spec).await).await;
    }
    let harness = H::new().await;
    harness.open().await; // creates the schema
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([test_name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, harness.spec())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let committed = tokio::task::spawn_blocking(move || {
        let mut committed = 0;
        for line in BufReader::new(stdout).lines() {
            if line.unwrap_or_default().starts_with("committed ") {
                committed += 1;
                if committed == 25 {
                    break;
                }
            }
        }
        committed
    })
    .await
    .unwrap();
    assert_eq!(committed, 25, "the child wrote");
    // Land the kill at some point of a later write.
    tokio::time::sleep(Duration::from_millis(7)).await;
    child.kill().unwrap();
    child.wait().unwrap();

    let store = harness.open().await;
    let conversations = store.conversations(10).await.unwrap();
    assert_eq!(conversations.len(), 1);
    let nodes = store
        .conversation_nodes(&conversations[0].id)
        .await
        .unwrap();
    assert!(
        nodes.len() >= 25,
        "committed nodes survive: {}",
        nodes.len()
    );
    let leaf = nodes.last().unwrap();
    let messages = store.messages_for_path(leaf.id()).await.unwrap();
    assert_eq!(
        messages.len(),
        2 * nodes.len(),
        "one chain, every turn whole"
    );
    assert_consistent(&*store).await;
}

/// The child's side: a chain of large nodes, one line on stdout per commit.
async fn write_until_killed(store: Arc<dyn Store>) {
    let conversation = ConversationId::new("killed-writer").unwrap();
    let filler = "y".repeat(128 * 1024);
    let mut messages = Vec::new();
    for round in 0.. {
        messages.push(Message::human(format!("{round} {filler}")));
        let answer = Message::ai(format!("answer {round}"));
        let (_, node) = step(
            &*store,
            &conversation,
            &messages,
            answer.clone(),
            &sampling(),
        )
        .await;
        messages.push(answer);
        println!("committed {}", node.id());
    }
}

//! Conversations survive every way a `skein run` process can stop: `kill -9` at every event
//! boundary and at random instants, Ctrl-C and SIGTERM mid-answer and mid-tool, many
//! processes continuing one conversation at once, and option changes between turns. Each
//! case runs the real binary on the offline echo model; SQLite always, PostgreSQL with the
//! `postgres` feature (a throwaway cluster, or `SKEIN_PG_URL`).

use std::io::{BufRead as _, BufReader, Read as _};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use chain_ast::ChainAst;
use conversation_tree::{NodeId, ResponseStatus, Store};
use serde_json::Value;

use crate::support;

/// Where the processes log: a SQLite file or a PostgreSQL URL.
struct Db {
    location: String,
    sqlite: Option<std::path::PathBuf>,
}

impl Db {
    fn sqlite(dir: &Path) -> Db {
        let path = dir.join("logs.db");
        Db {
            location: path.display().to_string(),
            sqlite: Some(path),
        }
    }

    #[cfg(feature = "postgres")]
    fn postgres() -> Db {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let url = runtime.block_on(conversation_tree::testing::fresh_postgres_database());
        Db {
            location: url,
            sqlite: None,
        }
    }

    /// A `skein` process logging here on the echo model, with no keys and piped output.
    fn skein(&self, args: &[&str]) -> Command {
        let mut command = support::skein_logging_to(&self.location);
        command
            .args(args)
            .env("SKEIN_MODEL", "echo")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        command
    }

    /// Runs `skein args` to its end; panics with its stderr unless it succeeds.
    fn ok(&self, args: &[&str]) -> String {
        let output = self.skein(args).output().unwrap();
        assert!(
            output.status.success(),
            "skein {args:?} failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).unwrap()
    }

    fn store(&self, runtime: &tokio::runtime::Runtime) -> Arc<dyn Store> {
        runtime.block_on(async {
            service::store::open_store(&self.location)
                .await
                .expect("the log database opens")
        })
    }

    /// SQLite's own check of the file.
    fn integrity(&self) {
        if let Some(path) = &self.sqlite {
            let conn = rusqlite::Connection::open(path).unwrap();
            let result: String = conn
                .query_row("PRAGMA integrity_check", [], |row| row.get(0))
                .unwrap();
            assert_eq!(result, "ok");
        }
    }
}

/// The events a `--json` run printed so far, one JSON object a line.
struct Events {
    lines: std::io::Lines<BufReader<std::process::ChildStdout>>,
    seen: Vec<Value>,
}

impl Events {
    fn of(child: &mut Child) -> Events {
        Events {
            lines: BufReader::new(child.stdout.take().unwrap()).lines(),
            seen: Vec::new(),
        }
    }

    /// Reads events until one named `name` (or the end); returns whether it came.
    fn until(&mut self, name: &str) -> bool {
        for line in self.lines.by_ref() {
            let Ok(line) = line else { return false };
            let event: Value = serde_json::from_str(&line).unwrap();
            let found = event["event"] == name;
            self.seen.push(event);
            if found {
                return true;
            }
        }
        false
    }

    /// Reads `n` more events; returns how many came.
    fn next(&mut self, n: usize) -> usize {
        let mut read = 0;
        while read < n {
            match self.lines.next() {
                Some(Ok(line)) => {
                    self.seen
                        .push(serde_json::from_str(&line).unwrap_or(Value::Null));
                    read += 1;
                }
                _ => break,
            }
        }
        read
    }

    /// The answer text streamed so far.
    fn content(&self) -> String {
        self.seen
            .iter()
            .filter(|event| event["event"] == "content.delta")
            .filter_map(|event| event["data"]["text"].as_str())
            .collect()
    }
}

/// Waits (at most 20 s) for `child` to exit.
fn wait(child: &mut Child) -> std::process::ExitStatus {
    support::wait_within(child, Duration::from_secs(20)).expect("skein did not stop")
}

/// Every conversation's every node: its stored path continues as a valid chain, and after
/// repair only tails may differ. Also checks every hash.
fn assert_store_sound(db: &Db, runtime: &tokio::runtime::Runtime) -> usize {
    let store = db.store(runtime);
    runtime.block_on(async {
        let report = store.verify().await.unwrap();
        assert!(report.is_ok(), "{:?}", report.problems);
        let mut nodes = 0;
        for summary in store.conversations(usize::MAX).await.unwrap() {
            for node in store.conversation_nodes(&summary.id).await.unwrap() {
                nodes += 1;
                let loaded = agent_loop::history::continuation(store.as_ref(), node.id())
                    .await
                    .unwrap();
                ChainAst::new(&loaded.messages, false)
                    .unwrap_or_else(|err| panic!("node {} does not continue: {err}", node.id()));
            }
        }
        nodes
    });
    db.integrity();
    runtime.block_on(async { store.verify().await.unwrap().checked as usize })
}

/// The latest node of the most recent conversation, and its stored path checked strictly:
/// what a continuation wrote must be a valid chain as stored, without repair.
fn latest_path_is_strictly_valid(db: &Db, runtime: &tokio::runtime::Runtime) -> NodeId {
    let store = db.store(runtime);
    runtime.block_on(async {
        let summary = store.conversations(1).await.unwrap().remove(0);
        let latest = store.latest_node(&summary.id).await.unwrap().unwrap();
        let messages = store.messages_for_path(latest.id()).await.unwrap();
        ChainAst::new(&messages, false)
            .unwrap_or_else(|err| panic!("the continued path is not a valid chain: {err}"));
        latest.id()
    })
}

/// A two-round tool run: the echo model calls the calculator, then streams its report word
/// by word, `delay_ms` apart.
fn tool_run(delay_ms: u64) -> String {
    format!(
        r#"{{"tool_calls": [{{"name": "calculator", "arguments": {{"expression": "6 * 7"}}}}], "delay_ms": {delay_ms}}}"#
    )
}

/// What a chaos run counted.
struct Chaos {
    kills: usize,
    continuations: usize,
    /// Kills after which the latest node had open tool calls that loading had to answer.
    repaired: usize,
}

/// Whether the latest node of the most recent conversation needs repair to continue.
fn needs_repair(db: &Db, runtime: &tokio::runtime::Runtime) -> bool {
    let store = db.store(runtime);
    runtime.block_on(async {
        let summary = store.conversations(1).await.unwrap().remove(0);
        let latest = store.latest_node(&summary.id).await.unwrap().unwrap();
        let loaded = agent_loop::history::continuation(store.as_ref(), latest.id())
            .await
            .unwrap();
        !loaded.repaired.is_empty()
    })
}

/// Kills a run at every event boundary in turn, then at random instants, and continues the
/// conversation after each kill.
fn chaos(db: &Db, random_kills: usize) -> Chaos {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    db.ok(&["run", r#"{"raw": "Let us begin."}"#]);
    let prompt = tool_run(15);
    let run = [
        "run",
        "-c",
        "--tool",
        "calculator",
        "--json",
        prompt.as_str(),
    ];

    // A whole run first, to count its events.
    let mut whole = db.skein(&run).spawn().unwrap();
    let mut events = Events::of(&mut whole);
    assert!(events.until("response.done"), "{:?}", events.seen);
    assert!(wait(&mut whole).success());
    let boundaries = events.seen.len();
    assert!(boundaries > 10, "a run has few events: {:?}", events.seen);

    let mut kills = 0;
    let mut continuations = 0;
    let mut repaired = 0;
    let mut seed: u64 = 0x5EED_CAFE;
    let mut random = move |below: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % below
    };
    let instants = (0..boundaries)
        .map(Some)
        .chain((0..random_kills).map(|_| None));
    for boundary in instants {
        let mut child = db.skein(&run).spawn().unwrap();
        let mut events = Events::of(&mut child);
        match boundary {
            // Right after event `k`: between two events of the run.
            Some(k) => {
                events.next(k + 1);
            }
            // Anywhere, from process start to the end of the run (~0.6 s).
            None => std::thread::sleep(Duration::from_millis(random(700))),
        }
        child.kill().unwrap();
        let _ = wait(&mut child);
        kills += 1;
        repaired += usize::from(needs_repair(db, &runtime));

        let marker = format!("continued after kill {kills}");
        let out = db.ok(&["run", "-c", &format!(r#"{{"raw": "{marker}"}}"#)]);
        assert_eq!(out.trim_end(), marker);
        continuations += 1;
        latest_path_is_strictly_valid(db, &runtime);
        db.integrity();
    }
    assert_store_sound(db, &runtime);
    Chaos {
        kills,
        continuations,
        repaired,
    }
}

#[test]
fn kill_9_at_any_instant_never_leaves_a_conversation_that_cannot_continue() {
    let dir = tempfile::tempdir().unwrap();
    let Chaos {
        kills,
        continuations,
        repaired,
    } = chaos(&Db::sqlite(dir.path()), 30);
    assert!(kills >= 50, "only {kills} kills");
    assert_eq!(continuations, kills);
    assert!(repaired > 0, "no kill landed inside a tool round");
    eprintln!(
        "sqlite chaos: {kills} kills ({repaired} inside a tool round), {continuations} \
         continuations, 0 failures"
    );
}

#[cfg(feature = "postgres")]
#[test]
fn kill_9_at_any_instant_never_leaves_a_postgres_conversation_that_cannot_continue() {
    let Chaos {
        kills,
        continuations,
        repaired,
    } = chaos(&Db::postgres(), 30);
    assert!(kills >= 50, "only {kills} kills");
    assert_eq!(continuations, kills);
    assert!(repaired > 0, "no kill landed inside a tool round");
    eprintln!(
        "postgres chaos: {kills} kills ({repaired} inside a tool round), {continuations} \
         continuations, 0 failures"
    );
}

/// The node holding the cancelled answer: the latest of the latest conversation.
fn latest_node(
    db: &Db,
    runtime: &tokio::runtime::Runtime,
) -> (conversation_tree::Node, conversation_tree::Turn) {
    let store = db.store(runtime);
    runtime.block_on(async {
        let summary = store.conversations(1).await.unwrap().remove(0);
        let node = store.latest_node(&summary.id).await.unwrap().unwrap();
        let turn = store.turn(node.id()).await.unwrap();
        (node, turn)
    })
}

fn interrupt_mid_answer(db: &Db, signal_name: &str) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let mut child = db
        .skein(&[
            "run",
            "--json",
            r#"{"raw": "one two three four five six seven eight", "reasoning": "Let me count.", "delay_ms": 150}"#,
        ])
        .spawn()
        .unwrap();
    let mut events = Events::of(&mut child);
    assert!(events.until("content.delta"));
    assert!(events.until("content.delta"));
    support::signal(child.id(), signal_name);
    assert!(events.until("response.cancelled"), "{:?}", events.seen);
    let status = wait(&mut child);
    assert_eq!(status.code(), Some(130), "{signal_name}");
    let shown = events.content();
    assert!(shown.starts_with("one two"), "{shown}");

    let (node, turn) = latest_node(db, &runtime);
    assert_eq!(node.status(), ResponseStatus::Cancelled);
    assert_eq!(turn.response.text(), shown, "the log holds what was shown");
    let continued = db.ok(&["run", "-c", r#"{"raw": "and now?"}"#]);
    assert_eq!(continued, "and now?\n");
    let (next, _) = latest_node(db, &runtime);
    assert_eq!(next.parent(), Some(node.id()));
    latest_path_is_strictly_valid(db, &runtime);
}

/// A loopback HTTP server that accepts and never answers: a tool call to it runs until
/// cancelled.
fn silent_server() -> (TcpListener, String) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/slow", listener.local_addr().unwrap());
    (listener, url)
}

fn interrupt_mid_tool(db: &Db, signal_name: &str) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (_listener, url) = silent_server();
    let prompt = format!(
        r#"{{"tool_calls": [{{"name": "calculator", "arguments": {{"expression": "2 + 2"}}}}, {{"name": "http_get", "arguments": {{"url": "{url}"}}}}]}}"#
    );
    let mut child = db
        .skein(&[
            "run",
            "--json",
            "--tool",
            "calculator",
            "--tool",
            "http_get",
            "--allow-host",
            "127.0.0.1",
            &prompt,
        ])
        .spawn()
        .unwrap();
    let mut events = Events::of(&mut child);
    // The calculator is done and http_get is waiting on the silent server.
    loop {
        assert!(events.until("tool.done"), "{:?}", events.seen);
        if events.seen.last().unwrap()["data"]["name"] == "calculator" {
            break;
        }
    }
    std::thread::sleep(Duration::from_millis(100));
    support::signal(child.id(), signal_name);
    assert!(events.until("response.cancelled"), "{:?}", events.seen);
    assert_eq!(wait(&mut child).code(), Some(130));

    let (node, turn) = latest_node(db, &runtime);
    assert_eq!(node.status(), ResponseStatus::Cancelled);
    assert!(turn.response.parts.is_empty());
    let results: Vec<(String, String)> = turn
        .input
        .iter()
        .flat_map(messages::Message::tool_responses)
        .map(|response| (response.name.clone(), response.content.clone()))
        .collect();
    assert_eq!(results.len(), 2, "{results:?}");
    assert_eq!(results[0].0, "calculator");
    assert!(
        results[0].1.contains('4'),
        "the finished result is kept: {results:?}"
    );
    assert_eq!(results[1].0, "http_get");

    let continued = db.ok(&["run", "-c", r#"{"raw": "still here"}"#]);
    assert_eq!(continued, "still here\n");
    latest_path_is_strictly_valid(db, &runtime);
}

#[test]
fn ctrl_c_and_sigterm_mid_answer_log_the_partial_text_and_the_conversation_continues() {
    for signal_name in ["INT", "TERM"] {
        let dir = tempfile::tempdir().unwrap();
        interrupt_mid_answer(&Db::sqlite(dir.path()), signal_name);
    }
}

#[test]
fn ctrl_c_and_sigterm_mid_tool_keep_the_finished_results_and_the_conversation_continues() {
    for signal_name in ["INT", "TERM"] {
        let dir = tempfile::tempdir().unwrap();
        interrupt_mid_tool(&Db::sqlite(dir.path()), signal_name);
    }
}

#[cfg(feature = "postgres")]
#[test]
fn interruptions_on_postgres_are_logged_and_continue() {
    let db = Db::postgres();
    interrupt_mid_answer(&db, "INT");
    interrupt_mid_tool(&db, "TERM");
}

fn concurrent_continuations(db: &Db, processes: usize) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    db.ok(&["run", r#"{"raw": "One conversation, many writers."}"#]);
    let prompt = tool_run(5);
    let children: Vec<Child> = (0..processes)
        .map(|_| {
            db.skein(&["run", "-c", "--tool", "calculator", &prompt])
                .spawn()
                .unwrap()
        })
        .collect();
    let mut failures = Vec::new();
    for mut child in children {
        let status = wait(&mut child);
        if !status.success() {
            let mut err = String::new();
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut err)
                .unwrap();
            failures.push(err);
        }
    }
    assert!(
        failures.is_empty(),
        "{} failed: {failures:?}",
        failures.len()
    );

    let store = db.store(&runtime);
    runtime.block_on(async {
        let conversations = store.conversations(10).await.unwrap();
        assert_eq!(conversations.len(), 1);
        let conversation = &conversations[0].id;
        let nodes = store.conversation_nodes(conversation).await.unwrap();
        // The first answer, then each run's call and final answer: nothing lost, nothing twice.
        assert_eq!(nodes.len(), 1 + 2 * processes);
        assert!(nodes.iter().all(|node| !node.is_supplied()));
        let calls = store.calls(conversation).await.unwrap();
        assert_eq!(calls.len(), nodes.len());
        // Each run: one node calling the calculator, and its final answer right below it. (A
        // run that started while another was inside its tool round branches from that run's
        // call node, its open call answered with the fallback: so call nodes may have other
        // call nodes as children too.)
        let mut callers = std::collections::HashSet::new();
        for node in &nodes {
            if store
                .turn(node.id())
                .await
                .unwrap()
                .response
                .tool_calls()
                .next()
                .is_some()
            {
                callers.insert(node.id());
            }
        }
        assert_eq!(callers.len(), processes);
        for caller in &callers {
            let answers = nodes
                .iter()
                .filter(|node| node.parent() == Some(*caller) && !callers.contains(&node.id()))
                .count();
            assert_eq!(answers, 1, "call node {caller} has {answers} final answers");
        }
    });
    assert_store_sound(db, &runtime);
}

#[test]
fn eighty_processes_continuing_one_sqlite_conversation_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    concurrent_continuations(&Db::sqlite(dir.path()), 80);
}

#[test]
fn option_changes_between_turns_keep_one_path_and_from_branches_after_a_node() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::sqlite(dir.path());
    let runtime = tokio::runtime::Runtime::new().unwrap();
    db.ok(&["run", r#"{"raw": "one"}"#]);
    db.ok(&["run", "-c", "--temperature", "0", r#"{"raw": "two"}"#]);
    db.ok(&["run", "-c", "--max-tokens", "50", r#"{"raw": "three"}"#]);
    db.ok(&["run", "-c", "--tool", "calculator", r#"{"raw": "four"}"#]);
    db.ok(&[
        "run",
        "-c",
        "--temperature",
        "0.7",
        "--max-tokens",
        "9",
        r#"{"raw": "five"}"#,
    ]);
    let store = db.store(&runtime);
    let nodes = runtime.block_on(async {
        let summary = store.conversations(1).await.unwrap().remove(0);
        assert_eq!(summary.responses, 5);
        store.conversation_nodes(&summary.id).await.unwrap()
    });
    for pair in nodes.windows(2) {
        assert_eq!(pair[1].parent(), Some(pair[0].id()), "one linear path");
    }

    // --from #2 branches after it, at another temperature still.
    let from = nodes[1].id().to_string();
    let out = db.ok(&[
        "run",
        "--from",
        &from,
        "--temperature",
        "0.3",
        r#"{"raw": "branch"}"#,
    ]);
    assert_eq!(out, "branch\n");
    let (node, _) = latest_node(&db, &runtime);
    assert_eq!(node.parent(), Some(nodes[1].id()));
    let tree = db.ok(&["logs", "--tree"]);
    assert!(tree.contains("1 branch point"), "{tree}");
    assert!(!tree.contains("supplied"), "{tree}");
}

/// `skein serve` killed with SIGKILL the instant a client has read the end of an answer, on
/// every endpoint, streamed and not: whatever a client was told had ended is in the store.
mod acknowledged {
    use std::io::{Read as _, Write as _};
    use std::net::TcpStream;
    use std::time::{Duration, Instant};

    use conversation_tree::ResponseStatus;
    use serde_json::json;

    use super::{Db, wait};
    use crate::support::{self, Served, Stderr};

    #[derive(Clone, Copy, Debug)]
    enum Endpoint {
        ChatShell,
        ChatCompletions,
        Responses,
    }

    impl Endpoint {
        const ALL: [Endpoint; 3] = [
            Endpoint::ChatShell,
            Endpoint::ChatCompletions,
            Endpoint::Responses,
        ];

        /// The path and body asking the echo model for `prompt`.
        fn request(self, stream: bool, prompt: &str) -> (&'static str, String) {
            match self {
                Endpoint::ChatShell => (
                    "/v1/response",
                    json!({"model_config": {"model_id": "echo"}, "input": {"text": prompt},
                           "features": {"streaming": stream}})
                    .to_string(),
                ),
                Endpoint::ChatCompletions => (
                    "/v1/chat/completions",
                    json!({"model": "echo", "stream": stream,
                           "messages": [{"role": "user", "content": prompt}]})
                    .to_string(),
                ),
                Endpoint::Responses => (
                    "/v1/responses",
                    json!({"model": "echo", "stream": stream, "input": prompt}).to_string(),
                ),
            }
        }

        /// What says, on the wire, that a streamed answer ended whole.
        fn end(self) -> &'static str {
            match self {
                Endpoint::ChatShell => "event: response.done",
                Endpoint::ChatCompletions => "data: [DONE]",
                Endpoint::Responses => "event: response.completed",
            }
        }
    }

    /// The write lock of the SQLite store, held until dropped: the server's writes wait.
    struct WriteLock(rusqlite::Connection);

    impl WriteLock {
        fn take(db: &Db) -> WriteLock {
            let conn = rusqlite::Connection::open(db.sqlite.as_ref().unwrap()).unwrap();
            conn.busy_timeout(Duration::from_secs(10)).unwrap();
            conn.execute_batch("BEGIN IMMEDIATE").unwrap();
            WriteLock(conn)
        }
    }

    impl Drop for WriteLock {
        fn drop(&mut self) {
            let _ = self.0.execute_batch("ROLLBACK");
        }
    }

    /// An answer being read from its connection.
    struct Answer {
        stream: TcpStream,
        seen: String,
        closed: bool,
    }

    impl Answer {
        fn post(served: &Served, (path, body): (&str, String)) -> Answer {
            let stream =
                support::post_json(&served.address, path, &body, Duration::from_millis(20));
            Answer {
                stream,
                seen: String::new(),
                closed: false,
            }
        }

        /// Reads until `found` holds of what was read (or the server closed the connection),
        /// for at most `limit`; whether it held.
        fn read_until(&mut self, limit: Duration, found: impl Fn(&Answer) -> bool) -> bool {
            let deadline = Instant::now() + limit;
            let mut buffer = [0_u8; 4096];
            while !found(self) && !self.closed && Instant::now() < deadline {
                match self.stream.read(&mut buffer) {
                    Ok(0) => self.closed = true,
                    Ok(read) => self
                        .seen
                        .push_str(&String::from_utf8_lossy(&buffer[..read])),
                    Err(error)
                        if matches!(
                            error.kind(),
                            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                        ) => {}
                    Err(error) => panic!("reading the answer: {error}"),
                }
            }
            found(self)
        }

        /// Whether the answer was told to have ended whole: its end event when streamed, the
        /// whole body when not.
        fn ended(&self, endpoint: Endpoint, stream: bool) -> bool {
            if stream {
                self.seen.contains(endpoint.end())
            } else {
                self.closed && self.seen.starts_with("HTTP/1.1 200")
            }
        }

        /// The `resp_…` id the answer names.
        fn response_id(&self) -> String {
            let start = self.seen.find("resp_").expect("a response id");
            self.seen[start..].split('"').next().unwrap().to_owned()
        }
    }

    fn serve(db: &Db) -> Served {
        support::serve_command(db.skein(&[]), &[], Stderr::Keep)
    }

    /// The stored answer whose text is `text`: its status.
    fn stored(db: &Db, runtime: &tokio::runtime::Runtime, text: &str) -> Option<ResponseStatus> {
        let store = db.store(runtime);
        runtime.block_on(async {
            for summary in store.conversations(usize::MAX).await.unwrap() {
                for node in store.conversation_nodes(&summary.id).await.unwrap() {
                    if store.turn(node.id()).await.unwrap().response.text() == text {
                        return Some(node.status());
                    }
                }
            }
            None
        })
    }

    /// After the kill, a new process reads the Responses answer back by its id, whole.
    fn read_back(db: &Db, id: &str, text: &str) {
        let served = serve(db);
        let mut stream = TcpStream::connect(&served.address).unwrap();
        write!(
            stream,
            "GET /v1/responses/{id} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            served.address
        )
        .unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert!(answer.contains(r#""status":"completed""#), "{answer}");
        assert!(answer.contains(text), "{answer}");
    }

    /// One answer, the server killed the instant the client read its end; `lock` holds the
    /// store's write lock from the answer's first word (or before a one-body request) until
    /// well after its last, asserting that no end is told while the store cannot commit.
    fn kill_at_the_end(db: &Db, endpoint: Endpoint, stream: bool, text: &str, lock: bool) -> bool {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let mut served = serve(db);
        let prompt = json!({"raw": text, "delay_ms": if lock { 100 } else { 0 }}).to_string();
        let request = endpoint.request(stream, &prompt);
        let mut held = None;
        if lock && !stream {
            held = Some(WriteLock::take(db));
        }
        let mut answer = Answer::post(&served, request);
        if lock && stream {
            let first = text.split(' ').next().unwrap();
            assert!(
                answer.read_until(Duration::from_secs(15), |answer| answer
                    .seen
                    .contains(first)),
                "{endpoint:?}: no first word: {}",
                answer.seen
            );
            held = Some(WriteLock::take(db));
        }
        if held.is_some() {
            // The rest of the answer takes about 0.5 s; its log waits for the lock.
            let told = answer.read_until(Duration::from_millis(1500), |answer| {
                answer.ended(endpoint, stream)
            });
            assert!(
                !told,
                "{endpoint:?} (stream: {stream}) told the client its answer ended before the \
                 answer was stored: {}",
                answer.seen
            );
            drop(held);
        }
        assert!(
            answer.read_until(Duration::from_secs(15), |answer| answer
                .ended(endpoint, stream)),
            "{endpoint:?} (stream: {stream}): no end: {}",
            answer.seen
        );
        served.child.kill().unwrap();
        let _ = wait(&mut served.child);
        let id = matches!(endpoint, Endpoint::Responses).then(|| answer.response_id());
        drop(served);
        let kept = stored(db, &runtime, text);
        if let (Some(id), Some(_)) = (&id, kept) {
            read_back(db, id, text);
        }
        assert!(
            kept.is_none_or(|status| status == ResponseStatus::Completed),
            "{endpoint:?}: stored as {kept:?}"
        );
        kept.is_some()
    }

    #[test]
    fn kill_9_the_instant_an_answer_ended_never_loses_it_on_any_endpoint() {
        const KILLS: usize = 5;
        let dir = tempfile::tempdir().unwrap();
        let db = Db::sqlite(dir.path());
        let mut kills = 0;
        let mut lost = Vec::new();
        for endpoint in Endpoint::ALL {
            for stream in [true, false] {
                // Held at the instant between the answer's end and its log.
                let text = format!("{endpoint:?} {stream} held: one two three four");
                kills += 1;
                if !kill_at_the_end(&db, endpoint, stream, &text, true) {
                    lost.push(text);
                }
                // At full speed, the kill right after the end arrived.
                for kill in 0..KILLS {
                    let text = format!("{endpoint:?} {stream} {kill}: one two three");
                    kills += 1;
                    if !kill_at_the_end(&db, endpoint, stream, &text, false) {
                        lost.push(text);
                    }
                }
            }
        }
        assert!(
            lost.is_empty(),
            "{} of {kills} answers lost: {lost:#?}",
            lost.len()
        );
        db.integrity();
        eprintln!("{kills} kills at the end of an answer, on 3 endpoints streamed and not: 0 lost");
    }
}

/// Two `skein serve` processes sharing one PostgreSQL database.
#[cfg(feature = "postgres")]
mod two_servers {
    use std::io::Read as _;
    use std::net::TcpStream;
    use std::time::{Duration, Instant};

    use conversation_tree::ResponseStatus;

    use super::{Db, assert_store_sound, latest_node, latest_path_is_strictly_valid, tool_run};
    use crate::support::{self, Served, Stderr};

    /// A `skein serve` process on loopback logging into `db`, many requests at once.
    fn serve(db: &Db) -> Served {
        support::serve_command(db.skein(&[]), &["--concurrency", "200"], Stderr::Keep)
    }

    /// Sends `body` to `path` and returns the connection, the request written.
    fn post(served: &Served, path: &str, body: &str) -> TcpStream {
        support::post_json(&served.address, path, body, Duration::from_secs(60))
    }

    /// The whole answer to a request.
    fn answer(served: &Served, path: &str, body: &str) -> String {
        let mut answer = String::new();
        post(served, path, body)
            .read_to_string(&mut answer)
            .unwrap();
        answer
    }

    /// A Chat Shell request in conversation `session` with the calculator on.
    fn chat_request(session: &str, prompt: &str) -> String {
        serde_json::json!({
            "model_config": {"model_id": "echo"},
            "session_id": session,
            "tools": {"builtin": {"calculator": {"enabled": true}}},
            "input": {"text": prompt},
        })
        .to_string()
    }

    /// Reads SSE from `stream` until an event named `name`; returns everything read.
    fn read_until_event(stream: &mut TcpStream, name: &str) -> String {
        let mut seen = String::new();
        let mut buffer = [0_u8; 4096];
        while !seen.contains(&format!("event: {name}")) {
            let read = stream.read(&mut buffer).unwrap();
            assert!(read > 0, "the stream ended before {name}: {seen}");
            seen.push_str(&String::from_utf8_lossy(&buffer[..read]));
        }
        seen
    }

    /// Polls the store until the latest node of the only conversation is `status`.
    fn wait_for_status(
        db: &Db,
        runtime: &tokio::runtime::Runtime,
        status: ResponseStatus,
    ) -> String {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let (node, turn) = latest_node(db, runtime);
            if node.status() == status {
                return turn.response.text();
            }
            assert!(Instant::now() < deadline, "no {status} node: {node:?}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    #[test]
    fn two_server_processes_on_one_postgres_continue_one_conversation() {
        const RUNS: usize = 80;
        let db = Db::postgres();
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let servers = [serve(&db), serve(&db)];
        let first = answer(
            &servers[0],
            "/v1/response",
            &chat_request("shared", r#"{"raw": "start"}"#),
        );
        assert!(first.contains("event: response.done"), "{first}");

        // 80 continuations at once, alternating between the two processes, each a tool round.
        let prompt = tool_run(5);
        let failures: Vec<String> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..RUNS)
                .map(|run| {
                    let server = &servers[run % 2];
                    let body = chat_request("shared", &prompt);
                    scope.spawn(move || answer(server, "/v1/response", &body))
                })
                .collect();
            handles
                .into_iter()
                .map(|handle| handle.join().unwrap())
                .filter(|answer| !answer.contains("event: response.done"))
                .collect()
        });
        assert!(
            failures.is_empty(),
            "{} failed: {failures:?}",
            failures.len()
        );
        let store = db.store(&runtime);
        runtime.block_on(async {
            let conversations = store.conversations(10).await.unwrap();
            assert_eq!(conversations.len(), 1);
            let nodes = store
                .conversation_nodes(&conversations[0].id)
                .await
                .unwrap();
            assert_eq!(nodes.len(), 1 + 2 * RUNS, "nothing lost, nothing twice");
            assert!(nodes.iter().all(|node| !node.is_supplied()));
        });
        assert_store_sound(&db, &runtime);

        // A client that disconnects mid-answer, on one process; the other continues.
        let slow = r#"{"raw": "one two three four five six seven eight", "delay_ms": 150}"#;
        let mut stream = post(&servers[0], "/v1/response", &chat_request("shared", slow));
        read_until_event(&mut stream, "content.delta");
        drop(stream);
        let partial = wait_for_status(&db, &runtime, ResponseStatus::Cancelled);
        assert!(partial.starts_with("one"), "{partial}");
        let next = answer(
            &servers[1],
            "/v1/response",
            &chat_request("shared", r#"{"raw": "on"}"#),
        );
        assert!(next.contains("event: response.done"), "{next}");

        // The cancel route, called on the process that streams.
        let mut stream = post(&servers[1], "/v1/response", &chat_request("shared", slow));
        let seen = read_until_event(&mut stream, "content.delta");
        let id = seen
            .split("\"id\":\"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .unwrap_or_else(|| panic!("no response id in {seen}"))
            .to_owned();
        let cancelled = answer(&servers[1], &format!("/v1/response/{id}/cancel"), "{}");
        assert!(cancelled.starts_with("HTTP/1.1 2"), "{cancelled}");
        let rest = read_until_event(&mut stream, "response.cancelled");
        assert!(rest.contains("event: response.cancelled"));
        wait_for_status(&db, &runtime, ResponseStatus::Cancelled);
        let last = answer(
            &servers[0],
            "/v1/response",
            &chat_request("shared", r#"{"raw": "end"}"#),
        );
        assert!(last.contains("event: response.done"), "{last}");
        latest_path_is_strictly_valid(&db, &runtime);
        assert_store_sound(&db, &runtime);
    }
}

//! Every `skein` command, run as a process (assert_cmd), offline on the echo model, with the
//! log database in a temporary directory and no provider keys.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::{Value, json};

use crate::support::skein;

fn stdout_of(command: &mut Command) -> String {
    let output = command.output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// The echo model's JSON report from a run's stdout.
fn report(stdout: &str) -> Value {
    serde_json::from_str(stdout).unwrap_or_else(|err| panic!("{err}: {stdout}"))
}

#[test]
fn run_works_offline_on_the_echo_model() {
    let dir = tempfile::tempdir().unwrap();
    skein(dir.path())
        .args(["run", r#"{"raw": "Hello from echo"}"#])
        .assert()
        .success()
        .stdout("Hello from echo\n")
        .stderr(predicate::str::contains("using the offline `echo` model"));

    // Piped stdin comes before the prompt; -s sets the system prompt.
    let out = stdout_of(
        skein(dir.path())
            .args(["run", "-m", "echo", "-s", "Be brief.", "Summarise."])
            .write_stdin("Some notes.\n"),
    );
    let echoed = report(&out);
    assert_eq!(echoed["prompt"], "Some notes.\n\nSummarise.");
    assert_eq!(echoed["system"], "Be brief.");
}

#[test]
fn run_streams_tools_and_json_events() {
    let dir = tempfile::tempdir().unwrap();
    let prompt =
        r#"{"tool_calls": [{"name": "calculator", "arguments": {"expression": "1231 * 2331"}}]}"#;
    let output = skein(dir.path())
        .args(["run", "--tool", "calculator", prompt])
        .output()
        .unwrap();
    assert!(output.status.success());
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.contains("[calculator] {\"expression\":\"1231 * 2331\"}"),
        "{stderr}"
    );
    assert!(stderr.contains("2869461"), "{stderr}");
    let echoed = report(&String::from_utf8(output.stdout).unwrap());
    assert_eq!(echoed["tool_results"][0]["name"], "calculator");

    let out = stdout_of(skein(dir.path()).args(["run", "--json", r#"{"raw": "a b"}"#]));
    let events: Vec<Value> = out
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let names: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "response.start",
            "content.delta",
            "content.delta",
            "response.done"
        ]
    );
    assert_eq!(events[0]["data"]["model"], "echo");
    assert_eq!(events[3]["data"]["stop_reason"], "end_turn");

    // A tool that is not configured is refused with what to do.
    skein(dir.path())
        .args(["run", "--tool", "read_file", "hi"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("--root DIR"));
    // --max-rounds 0: the model must answer without the tool having run.
    let output = skein(dir.path())
        .args(["run", "--tool", "calculator", "--max-rounds", "0", prompt])
        .output()
        .unwrap();
    assert!(output.status.success());
    assert!(!String::from_utf8_lossy(&output.stdout).contains("2869461"));
    assert!(!String::from_utf8_lossy(&output.stderr).contains("2869461"));
}

#[test]
fn run_continues_conversations() {
    let dir = tempfile::tempdir().unwrap();
    stdout_of(skein(dir.path()).args(["run", "My name is Ada."]));
    let second = report(&stdout_of(skein(dir.path()).args([
        "run",
        "-c",
        "What is my name?",
    ])));
    assert_eq!(second["previous"][0]["prompt"], "My name is Ada.");

    // --cid names one; an unknown one is a usage error.
    let listed = stdout_of(skein(dir.path()).args(["logs", "--json"]));
    let cid = report(&listed)[0]["id"].as_str().unwrap().to_owned();
    let third = report(&stdout_of(
        skein(dir.path()).args(["run", "--cid", &cid, "Again?"]),
    ));
    assert_eq!(third["previous"].as_array().unwrap().len(), 2);
    skein(dir.path())
        .args(["run", "--cid", "no-such-conversation", "hi"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "no conversation `no-such-conversation`",
        ));

    // The history is found in the tree by what was said: continuing at another temperature
    // (here the model's default) continues the same path, with no supplied copy.
    let deterministic = tempfile::tempdir().unwrap();
    stdout_of(skein(deterministic.path()).args(["run", "--temperature", "0", "One"]));
    let next = report(&stdout_of(
        skein(deterministic.path()).args(["run", "-c", "Two"]),
    ));
    assert_eq!(next["options"]["temperature"], Value::Null);
    let tree = stdout_of(skein(deterministic.path()).args(["logs", "--tree"]));
    assert!(tree.contains("(2 responses, 0 branch points"), "{tree}");
    assert!(!tree.contains("supplied"), "{tree}");

    // --no-log leaves nothing behind.
    let other = tempfile::tempdir().unwrap();
    stdout_of(skein(other.path()).args(["run", "--no-log", "secret plans"]));
    let listed = stdout_of(skein(other.path()).args(["logs", "--json"]));
    assert_eq!(report(&listed), serde_json::json!([]));
}

#[test]
fn chat_keeps_the_conversation() {
    let dir = tempfile::tempdir().unwrap();
    let output = skein(dir.path())
        .args(["chat", "-m", "echo"])
        .write_stdin("My name is Ada.\n!multi\nfirst line\nsecond line\n!end\nexit\nnever sent\n")
        .output()
        .unwrap();
    assert!(output.status.success());
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.starts_with("Chatting with echo (conversation "),
        "{stderr}"
    );
    let stdout = String::from_utf8(output.stdout).unwrap();
    // Two answers, each the echo model's report; the second saw the first.
    let answers: Vec<Value> = serde_json::Deserializer::from_str(&stdout)
        .into_iter::<Value>()
        .map(Result::unwrap)
        .collect();
    assert_eq!(answers.len(), 2);
    assert_eq!(answers[1]["prompt"], "first line\nsecond line");
    assert_eq!(answers[1]["previous"][0]["prompt"], "My name is Ada.");

    let listed = report(&stdout_of(skein(dir.path()).args(["logs", "--json"])));
    assert_eq!(listed.as_array().unwrap().len(), 1);
    assert_eq!(listed[0]["responses"], 2);
}

#[test]
fn logs_list_show_and_tree() {
    let dir = tempfile::tempdir().unwrap();
    skein(dir.path())
        .args(["logs"])
        .assert()
        .success()
        .stdout(predicate::str::contains("No conversations logged yet"));
    stdout_of(skein(dir.path()).args(["run", "Pick a colour."]));
    stdout_of(skein(dir.path()).args(["run", "-c", "Another?"]));
    let cid = report(&stdout_of(skein(dir.path()).args(["logs", "--json"])))[0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let history = report(&stdout_of(
        skein(dir.path()).args(["logs", "show", "--json"]),
    ));
    assert_eq!(history["responses"].as_array().unwrap().len(), 2);
    assert_eq!(history["messages"].as_array().unwrap().len(), 4);

    let listed = stdout_of(skein(dir.path()).args(["logs"]));
    assert!(
        listed.contains(&cid) && listed.contains("Pick a colour."),
        "{listed}"
    );

    let shown = stdout_of(skein(dir.path()).args(["logs", "show", &cid, "-u"]));
    assert!(
        shown.contains(&format!("conversation: {cid} id: 1")),
        "{shown}"
    );
    assert!(shown.contains("Model: **echo**"));
    assert!(shown.contains("## Prompt\n\nPick a colour."));
    assert!(shown.contains("## Token usage"));
    // Each response shows its hashes, the second's path chained from the first's, and how
    // long its model call took to start answering.
    let responses = history["responses"].as_array().unwrap();
    let hash = |response: &Value, key: &str| response[key].as_str().unwrap().to_owned();
    for response in responses {
        for (key, label) in [
            ("prompt_hash", "Prompt hash"),
            ("response_hash", "Response hash"),
            ("path_hash", "Path hash"),
        ] {
            let value = hash(response, key);
            assert_eq!(value.len(), 64, "{response}");
            assert!(shown.contains(&format!("- {label}: `{value}`")), "{shown}");
        }
        assert!(response["ttft_ms"].is_u64(), "{response}");
        assert!(response["duration_ms"].is_u64(), "{response}");
    }
    assert_eq!(
        hash(&responses[1], "path_hash"),
        conversation_tree::path_hash(
            Some(&hash(&responses[0], "path_hash")),
            &hash(&responses[1], "prompt_hash")
        )
    );
    assert!(shown.contains("- Time to first token: "), "{shown}");

    let tree = stdout_of(skein(dir.path()).args(["logs", "--tree"]));
    let lines: Vec<&str> = tree.lines().collect();
    assert!(
        lines[0].starts_with(&format!("Conversation {cid} (2 responses")),
        "{tree}"
    );
    assert!(
        lines[1].starts_with("└── #1 echo: \"Pick a colour.\" → "),
        "{tree}"
    );
    assert!(
        lines[2].starts_with("    └── #2 echo: \"Another?\" → "),
        "{tree}"
    );

    let tree_json = report(&stdout_of(
        skein(dir.path()).args(["logs", "tree", &cid, "--json"]),
    ));
    assert_eq!(tree_json["nodes"][1]["parent"], 1);
}

#[test]
fn logs_tree_draws_branches_and_cache_hits() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        stdout_of(
            skein(dir.path())
                .arg("run")
                .args(["--temperature", "0"])
                .args(args),
        )
    };
    run(&["Capital of France?"]);
    run(&["--from", "1", "And Germany?"]);
    // Another follow-up from #1: a branch.
    run(&["--from", "1", "And Spain?"]);
    // The same deterministic question at the same place: answered from the log.
    let again = run(&["--from", "1", "And Germany?"]);
    let logged = report(&stdout_of(
        skein(dir.path()).args(["logs", "show", "--json"]),
    ));
    let germany = logged["responses"][1]["response"]["parts"][0]["text"]
        .as_str()
        .unwrap();
    assert_eq!(report(&again), report(germany));

    let tree = stdout_of(skein(dir.path()).args(["logs", "--tree"]));
    let lines: Vec<&str> = tree.lines().collect();
    assert!(
        lines[0].contains("(3 responses, 1 branch point, 1 cache hit;"),
        "{tree}"
    );
    assert!(
        lines[1].starts_with("└── #1 echo: \"Capital of France?\" → "),
        "{tree}"
    );
    assert!(
        lines[2].starts_with("    ├── #2 echo: \"And Germany?\" → "),
        "{tree}"
    );
    assert!(lines[2].ends_with("[cache hit ×1]"), "{tree}");
    assert!(
        lines[3].starts_with("    └── #3 echo: \"And Spain?\" → "),
        "{tree}"
    );
}

#[test]
fn models_lists_the_registry_and_keys_without_showing_them() {
    let dir = tempfile::tempdir().unwrap();
    let out = stdout_of(skein(dir.path()).arg("models"));
    assert!(out.starts_with(
        "Keys: OPENAI_API_KEY not set, ANTHROPIC_API_KEY not set, GEMINI_API_KEY not set"
    ));
    let gpt4o = out.lines().find(|line| line.contains(" gpt-4o ")).unwrap();
    assert!(
        gpt4o.contains("128,000") && gpt4o.contains("16,384"),
        "{gpt4o}"
    );
    assert!(
        out.lines()
            .any(|line| line.starts_with("debug") && line.contains("echo"))
    );

    let secret = "sk-test-never-print-me";
    let out = stdout_of(
        skein(dir.path())
            .args(["models", "--json"])
            .env("OPENAI_API_KEY", secret),
    );
    assert!(!out.contains(secret));
    let document = report(&out);
    assert_eq!(document["keys"]["OPENAI_API_KEY"], true);
    assert_eq!(document["keys"]["GEMINI_API_KEY"], false);
    let gemini = document["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"] == "gemini-1.5-pro")
        .unwrap();
    assert_eq!(gemini["context_window"], 2_097_152);

    // With a key the default model is that provider's.
    let out = stdout_of(skein(dir.path()).args(["models", "--provider", "anthropic"]));
    assert!(
        out.lines().skip(3).all(|line| line.is_empty()
            || line.starts_with("anthropic")
            || line.starts_with("Any other")),
        "{out}"
    );
}

/// With only an OpenRouter key, `skein models` says how to reach OpenRouter's models (the
/// registry lists the vendors' ids, which OpenRouter takes as `vendor/model`), and `skein run`
/// says why it falls back to echo.
#[test]
fn openrouter_key_is_explained() {
    let dir = tempfile::tempdir().unwrap();
    let out = stdout_of(
        skein(dir.path())
            .arg("models")
            .env("OPENROUTER_API_KEY", "sk-or-secret"),
    );
    assert!(out.contains("OPENROUTER_API_KEY set"), "{out}");
    assert!(out.contains("--provider openrouter"), "{out}");
    assert!(!out.contains("sk-or-secret"));

    skein(dir.path())
        .args(["run", "--no-log", r#"{"raw": "hi"}"#])
        .env("OPENROUTER_API_KEY", "sk-or-secret")
        .assert()
        .success()
        .stdout("hi\n")
        .stderr(predicate::str::contains("--provider openrouter"));
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

const BROKEN: &str = r#"[
  {"role": "system", "parts": [{"type": "text", "text": "You are helpful."}]},
  {"role": "human", "parts": [{"type": "text", "text": "Weather in Paris?"}]},
  {"role": "ai", "parts": [{"type": "tool_call", "id": "call_1", "name": "get_weather", "arguments": "{}"}]},
  {"role": "human", "parts": [{"type": "text", "text": "Hello?"}]}
]"#;

#[test]
fn chain_check_names_the_broken_rule() {
    let dir = tempfile::tempdir().unwrap();
    let broken = write(dir.path(), "broken.json", BROKEN);
    skein(dir.path())
        .args(["chain", "check"])
        .arg(&broken)
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "is not a valid chain: rule 3 (every tool call has a response): tool calls [call_1] of the AI message at index 2 have no response",
        ))
        .stderr(predicate::str::contains("--repair"));

    let report_json = skein(dir.path())
        .args(["chain", "check", "--json"])
        .arg(&broken)
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    let document: Value = serde_json::from_slice(&report_json).unwrap();
    assert_eq!(document["valid"], false);
    assert_eq!(document["problems"][0]["rule"], 3);
    assert_eq!(document["problems"][0]["index"], 2);

    // --repair prints a valid transcript, which then checks clean, with its tree.
    let output = skein(dir.path())
        .args(["chain", "check", "--repair"])
        .arg(&broken)
        .output()
        .unwrap();
    assert!(output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("1 problem(s) repaired"));
    let fixed = write(
        dir.path(),
        "fixed.json",
        &String::from_utf8(output.stdout).unwrap(),
    );
    let out = stdout_of(skein(dir.path()).args(["chain", "check"]).arg(&fixed));
    assert!(
        out.starts_with("valid chain: 5 messages, 2 section(s)"),
        "{out}"
    );
    assert!(
        out.contains("└── Tool: 59 bytes, answers get_weather#call_1"),
        "{out}"
    );

    // Not a transcript at all: a clear error with the position.
    let junk = write(dir.path(), "junk.json", "[{\"role\": \"robot\"}]");
    skein(dir.path())
        .args(["chain", "check"])
        .arg(&junk)
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "is not a transcript: invalid transcript at line 1",
        ));
}

#[test]
fn every_command_has_help_with_examples() {
    let dir = tempfile::tempdir().unwrap();
    for command in [
        vec!["--help"],
        vec!["run", "--help"],
        vec!["chat", "--help"],
        vec!["serve", "--help"],
        vec!["logs", "--help"],
        vec!["models", "--help"],
        vec!["chain", "check", "--help"],
    ] {
        skein(dir.path())
            .args(&command)
            .assert()
            .success()
            .stdout(predicate::str::contains("Examples:"));
    }
}

#[cfg(target_os = "linux")]
#[test]
fn an_empty_skein_db_logs_to_the_default_database() {
    let dir = tempfile::tempdir().unwrap();
    // The default database lies under $XDG_DATA_HOME on Linux.
    let data = dir.path().join("data");
    let with_empty_db = || {
        let mut command = skein(dir.path());
        command.env("SKEIN_DB", "").env("XDG_DATA_HOME", &data);
        command
    };
    with_empty_db()
        .args(["run", "-m", "echo", "kept for later"])
        .assert()
        .success();
    assert!(data.join("skein/logs.db").is_file());
    // A second command finds the conversation: it was not logged into a temporary file.
    with_empty_db()
        .args(["logs", "--json"])
        .assert()
        .success()
        .stdout(predicate::str::contains("kept for later"));
}

#[cfg(unix)]
#[test]
fn serve_answers_http_and_stops_gracefully() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("skein"))
        .env("SKEIN_DB", dir.path().join("logs.db"))
        .env_remove("SKEIN_TOKENS")
        .args(["serve", "--listen", "127.0.0.1:0"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let address = line
        .strip_prefix("skein: serving http://")
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("unexpected first line: {line}"))
        .to_owned();

    let body =
        r#"{"model_config": {"model_id": "echo"}, "input": {"text": "{\"raw\": \"served\"}"}}"#;
    let mut stream = TcpStream::connect(&address).unwrap();
    write!(
        stream,
        "POST /v1/response HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200 OK"), "{answer}");
    assert!(
        answer.contains("content-type: text/event-stream"),
        "{answer}"
    );
    assert!(answer.contains("event: response.start"), "{answer}");
    assert!(answer.contains("\"text\":\"served\""), "{answer}");
    assert!(answer.contains("event: response.done"), "{answer}");

    let status = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let exit = child.wait().unwrap();
    assert!(exit.success(), "{exit:?}");
    let mut rest = String::new();
    stderr.read_to_string(&mut rest).unwrap();
    assert!(rest.contains("skein: stopped"), "{rest}");

    // What was served is in the log.
    let listed = report(&stdout_of(skein(dir.path()).args(["logs", "--json"])));
    assert_eq!(listed[0]["name"], "{\"raw\": \"served\"}");
}

/// The log database's bytes and modification time, and which of its `-wal`/`-shm`/`-journal`
/// files exist: what a reader must leave as it was.
fn db_state(path: &Path) -> (Vec<u8>, std::time::SystemTime, Vec<&'static str>) {
    let sidecars = ["-wal", "-shm", "-journal"]
        .into_iter()
        .filter(|suffix| {
            let mut name = path.as_os_str().to_owned();
            name.push(suffix);
            Path::new(&name).exists()
        })
        .collect();
    (
        std::fs::read(path).unwrap(),
        std::fs::metadata(path).unwrap().modified().unwrap(),
        sidecars,
    )
}

/// The id of the conversation `skein logs --json` lists whose name is `name`.
fn conversation_named(dir: &Path, name: &str) -> String {
    let listed = report(&stdout_of(skein(dir).args(["logs", "-n", "0", "--json"])));
    listed
        .as_array()
        .unwrap()
        .iter()
        .find(|summary| summary["name"] == name)
        .unwrap_or_else(|| panic!("no conversation named {name:?} in {listed}"))["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn reading_commands_never_create_the_log_database() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("logs.db");
    skein(dir.path())
        .args(["logs"])
        .assert()
        .success()
        .stdout(predicate::str::contains("No conversations logged yet"));
    skein(dir.path())
        .args(["logs", "--tree"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no conversations logged yet"));
    skein(dir.path()).args(["models"]).assert().success();
    let chain = write(
        dir.path(),
        "chain.json",
        r#"[{"role": "human", "parts": [{"type": "text", "text": "Hi"}]}]"#,
    );
    skein(dir.path())
        .args(["chain", "check"])
        .arg(&chain)
        .assert()
        .success();
    let created: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name())
        .filter(|name| name != "chain.json")
        .collect();
    assert!(created.is_empty(), "created {created:?}");
    assert!(!db.exists());
}

/// `skein logs` on a read-only file in a read-only directory: it lists, shows and draws, and
/// the file is left byte for byte as it was, with no `-wal`/`-shm` created. Root ignores
/// permission bits, so then the commands also run as user `nobody` (via `setpriv`, when
/// present), for whom they are enforced.
#[cfg(unix)]
#[test]
fn logs_reads_a_read_only_database_in_a_read_only_directory() {
    use std::os::unix::fs::PermissionsExt as _;

    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("logs.db");
    stdout_of(skein(dir.path()).args(["run", "Read me later."]));
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o444)).unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o555)).unwrap();
    let before = db_state(&db);
    assert!(before.2.is_empty(), "{:?}", before.2);
    let enforced = std::fs::OpenOptions::new().write(true).open(&db).is_err();

    let check = |run: &dyn Fn(&[&str]) -> std::process::Output| {
        let listed = run(&["logs"]);
        let listed_out = String::from_utf8_lossy(&listed.stdout);
        assert!(
            listed.status.success() && listed_out.contains("Read me later."),
            "{listed_out}{}",
            String::from_utf8_lossy(&listed.stderr)
        );
        for args in [&["logs", "--tree"][..], &["logs", "show", "--json"]] {
            let output = run(args);
            assert!(
                output.status.success(),
                "{args:?}: {}",
                String::from_utf8_lossy(&output.stderr)
            );
            assert!(String::from_utf8_lossy(&output.stdout).contains("Read me later."));
        }
        assert_eq!(db_state(&db), before);
    };
    check(&|args| skein(dir.path()).args(args).output().unwrap());
    let setpriv = Path::new("/usr/bin/setpriv");
    let as_nobody = !enforced && setpriv.exists();
    if as_nobody {
        check(&|args| {
            std::process::Command::new(setpriv)
                .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
                .arg(assert_cmd::cargo::cargo_bin("skein"))
                .args(args)
                .env("SKEIN_DB", &db)
                .env_remove("SKEIN_TOKENS")
                .output()
                .unwrap()
        });
        // The permissions do hold for that user: a writing command is refused.
        let run = std::process::Command::new(setpriv)
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(assert_cmd::cargo::cargo_bin("skein"))
            .args(["run", "-m", "echo", "Write me."])
            .env("SKEIN_DB", &db)
            .output()
            .unwrap();
        assert!(
            !run.status.success()
                && String::from_utf8_lossy(&run.stderr).contains("readonly database"),
            "a write as nobody was not refused for want of permission: {}",
            String::from_utf8_lossy(&run.stderr)
        );
        assert_eq!(db_state(&db), before);
    }
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    assert!(
        enforced || as_nobody,
        "permissions are not enforced and setpriv is missing: nothing checked them"
    );
}

/// Another process holds the write lock (`BEGIN IMMEDIATE`, uncommitted) for 1.5 s: `skein
/// logs` lists what is committed instead of failing with "database is locked".
#[test]
fn logs_reads_while_a_writer_holds_the_write_lock() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("logs.db");
    stdout_of(skein(dir.path()).args(["run", "Committed before."]));
    let (locked_tx, locked_rx) = std::sync::mpsc::channel();
    let path = db.clone();
    let holder = std::thread::spawn(move || {
        let conn = rusqlite::Connection::open(path).unwrap();
        conn.execute_batch(
            "BEGIN IMMEDIATE;
             INSERT INTO conversations (id, name, created_utc, updated_utc)
                 VALUES ('uncommitted', 'Not yet', '2999-01-01T00:00:00.000000Z',
                         '2999-01-01T00:00:00.000000Z');",
        )
        .unwrap();
        locked_tx.send(()).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(1500));
        conn.execute_batch("COMMIT").unwrap();
    });
    locked_rx.recv().unwrap();
    let listed = skein(dir.path()).args(["logs"]).output().unwrap();
    let still_locked = !holder.is_finished();
    holder.join().unwrap();
    let stdout = String::from_utf8_lossy(&listed.stdout);
    let stderr = String::from_utf8_lossy(&listed.stderr);
    assert!(listed.status.success(), "{stderr}");
    assert!(!stderr.contains("locked"), "{stderr}");
    assert!(stdout.contains("Committed before."), "{stdout}");
    assert!(!stdout.contains("Not yet"), "{stdout}");
    assert!(
        still_locked,
        "the lock was released before `skein logs` ended"
    );
    // Once committed, it is listed.
    let listed = stdout_of(skein(dir.path()).args(["logs"]));
    assert!(listed.contains("Not yet"), "{listed}");
}

/// A writer in exclusive locking mode keeps every reader out for 1.5 s: `skein logs` waits for
/// it (busy timeout) and then lists, instead of failing with "database is locked".
#[test]
fn logs_waits_for_an_exclusive_writer() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("logs.db");
    stdout_of(skein(dir.path()).args(["run", "Committed before."]));
    let (locked_tx, locked_rx) = std::sync::mpsc::channel();
    let path = db.clone();
    let hold = std::time::Duration::from_millis(1500);
    let holder = std::thread::spawn(move || {
        let conn = rusqlite::Connection::open(path).unwrap();
        conn.execute_batch(
            "PRAGMA locking_mode = EXCLUSIVE;
             BEGIN IMMEDIATE;
             INSERT INTO conversations (id, name, created_utc, updated_utc)
                 VALUES ('exclusive', 'Written under the lock', '2999-01-01T00:00:00.000000Z',
                         '2999-01-01T00:00:00.000000Z');
             COMMIT;",
        )
        .unwrap();
        locked_tx.send(std::time::Instant::now()).unwrap();
        std::thread::sleep(hold);
    });
    let locked_at = locked_rx.recv().unwrap();
    let listed = skein(dir.path()).args(["logs"]).output().unwrap();
    let waited = locked_at.elapsed();
    holder.join().unwrap();
    let stdout = String::from_utf8_lossy(&listed.stdout);
    assert!(
        listed.status.success(),
        "{}",
        String::from_utf8_lossy(&listed.stderr)
    );
    assert!(
        stdout.contains("Committed before.") && stdout.contains("Written under the lock"),
        "{stdout}"
    );
    assert!(
        waited >= hold - std::time::Duration::from_millis(200),
        "listed after {waited:?} while the lock was held for {hold:?}"
    );
}

/// One conversation's stored row made unreadable (invalid JSON written with SQL): `skein logs`
/// lists it as damaged and still lists the other; showing or drawing it is an error naming the
/// conversation and the response, and the other still shows.
#[test]
fn logs_lists_a_damaged_conversation_beside_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("logs.db");
    stdout_of(skein(dir.path()).args(["run", "Damaged one."]));
    stdout_of(skein(dir.path()).args(["run", "Intact one."]));
    let damaged = conversation_named(dir.path(), "Damaged one.");
    let intact = conversation_named(dir.path(), "Intact one.");
    let conn = rusqlite::Connection::open(&db).unwrap();
    let node: i64 = conn
        .query_row(
            "SELECT id FROM responses WHERE conversation_id = ?1",
            [&damaged],
            |row| row.get(0),
        )
        .unwrap();
    conn.execute(
        "UPDATE responses SET input_json = '[{\"role\": \"human\", \"parts\": [' WHERE id = ?1",
        [node],
    )
    .unwrap();
    drop(conn);

    let listed = stdout_of(skein(dir.path()).args(["logs"]));
    let line = |id: &str| {
        listed
            .lines()
            .find(|line| line.starts_with(id))
            .unwrap_or_else(|| panic!("{id} is not listed: {listed}"))
            .to_owned()
    };
    assert!(
        line(&damaged).contains(&format!(
            "[damaged: response {node}: its input_json is not valid JSON] Damaged one."
        )),
        "{listed}"
    );
    assert!(
        line(&intact).ends_with("Intact one.") && !line(&intact).contains("damaged"),
        "{listed}"
    );
    assert!(listed.contains("1 conversation is damaged"), "{listed}");

    let json = report(&stdout_of(skein(dir.path()).args(["logs", "--json"])));
    let summaries = json.as_array().unwrap();
    let of = |id: &str| summaries.iter().find(|s| s["id"] == id).unwrap().clone();
    assert_eq!(
        of(&damaged)["damaged"],
        format!("response {node}: its input_json is not valid JSON")
    );
    assert!(of(&intact).get("damaged").is_none(), "{json}");

    for args in [
        vec!["logs", "show", damaged.as_str()],
        vec!["logs", "--tree", "--cid", damaged.as_str()],
        vec!["logs", "tree", damaged.as_str(), "--json"],
    ] {
        skein(dir.path())
            .args(&args)
            .assert()
            .code(1)
            .stderr(predicate::str::contains(format!(
                "conversation {damaged} in the log database is damaged: stored response {node} \
                 cannot be read"
            )))
            .stderr(predicate::str::contains("panicked").not());
    }
    let tree = stdout_of(skein(dir.path()).args(["logs", "--tree", "--cid", &intact]));
    assert!(tree.contains("\"Intact one.\""), "{tree}");
}

/// A log database as a Skein of schema version 2 (before response statuses) wrote it, with one
/// answered question.
fn version_2_log(path: &Path) {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute_batch(include_str!(
        "../../conversation-tree/src/sqlite/migrations/001_tree.sql"
    ))
    .unwrap();
    conn.execute_batch(include_str!(
        "../../conversation-tree/src/sqlite/migrations/002_calls.sql"
    ))
    .unwrap();
    conn.execute_batch(
        "PRAGMA application_id = 1397441870; PRAGMA user_version = 2; PRAGMA journal_mode = wal;
         INSERT INTO conversations VALUES ('old-one', 'From before', '2026-01-01T00:00:00.000000Z',
             '2026-01-01T00:00:00.000000Z');
         INSERT INTO responses (conversation_id, prompt_hash, response_hash, path_hash, input_json,
             response_json, model, datetime_utc)
         VALUES ('old-one', 'p', 'r', 'p',
             '[{\"role\": \"human\", \"parts\": [{\"type\": \"text\", \"text\": \"From before\"}]}]',
             '[{\"role\": \"ai\", \"parts\": [{\"type\": \"text\", \"text\": \"Still here\"}]}]',
             'echo', '2026-01-01T00:00:00.000000Z');
         INSERT INTO calls (response_id, conversation_id, kind, model, datetime_utc)
         VALUES (1, 'old-one', 'generated', 'echo', '2026-01-01T00:00:00.000000Z');",
    )
    .unwrap();
}

#[test]
fn logs_upgrades_a_log_from_an_older_skein_once_and_lists_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("logs.db");
    version_2_log(&db);
    let listed = stdout_of(skein(dir.path()).args(["logs"]));
    assert!(
        listed.contains("old-one") && listed.contains("From before"),
        "{listed}"
    );
    let version: i64 = rusqlite::Connection::open(&db)
        .unwrap()
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .unwrap();
    assert_eq!(version, 12);
    // Its answers read back as completed ones, without a time to first token (none was
    // recorded then), and it continues.
    let shown = stdout_of(skein(dir.path()).args(["logs", "show", "old-one"]));
    assert!(
        shown.contains("Still here")
            && !shown.contains("cancelled")
            && !shown.contains("Time to first token"),
        "{shown}"
    );
    let out =
        stdout_of(skein(dir.path()).args(["run", "--cid", "old-one", r#"{"raw": "Onwards"}"#]));
    assert_eq!(out, "Onwards\n");
}

#[test]
fn run_schema_prints_the_json_answer() {
    let dir = tempfile::tempdir().unwrap();
    // llm's concise form.
    let out = stdout_of(skein(dir.path()).args(["run", "--schema", "name, age int", "Ada"]));
    assert_eq!(report(&out), json!({"name": "Ada", "age": 0}));

    // A JSON Schema in a file, with a tool called first.
    let schema = dir.path().join("person.schema.json");
    std::fs::write(
        &schema,
        r#"{"type": "object", "properties": {"name": {"type": "string"}, "tags": {"type": "array", "items": {"enum": ["a", "b"]}}}, "required": ["name", "tags"]}"#,
    )
    .unwrap();
    let out = stdout_of(skein(dir.path()).args([
        "run",
        "--tool",
        "calculator",
        "--schema",
        schema.to_str().unwrap(),
        "Grace",
    ]));
    assert_eq!(report(&out), json!({"name": "Grace", "tags": ["a"]}));

    // A schema that cannot be read is a usage error naming what is wrong.
    skein(dir.path())
        .args(["run", "--schema", "{not json", "hi"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("--schema"));
}

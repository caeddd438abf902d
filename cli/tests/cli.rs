//! Every `skein` command, run as a process (assert_cmd), offline on the echo model, with the
//! log database in a temporary directory and no provider keys.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;

/// A `skein` command logging into `dir/logs.db`, with no provider keys.
fn skein(dir: &Path) -> Command {
    let mut command = Command::cargo_bin("skein").unwrap();
    command
        .env("SKEIN_DB", dir.join("logs.db"))
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("GEMINI_API_KEY")
        .env_remove("SKEIN_MODEL")
        .env_remove("SKEIN_TOKENS");
    command
}

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

    // Continuing keeps the conversation's temperature, so the history is found in the tree
    // as it was logged (another temperature would branch it off as a supplied copy).
    let deterministic = tempfile::tempdir().unwrap();
    stdout_of(skein(deterministic.path()).args(["run", "--temperature", "0", "One"]));
    let next = report(&stdout_of(
        skein(deterministic.path()).args(["run", "-c", "Two"]),
    ));
    assert_eq!(next["options"]["temperature"], 0.0);
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

//! The CLI against hostile endpoints and hostile text (issue 11): environment keys stay with
//! their providers, options are refused as the server refuses them, and escape sequences from
//! models and logs never reach a terminal. Loopback only.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use assert_cmd::Command;
use serde_json::{Value, json};

use crate::support::{self, chat_stream};

/// A `skein` command logging into `dir/logs.db`, with `OPENAI_API_KEY` set to a secret that
/// must never leave for another host.
fn skein(dir: &Path) -> Command {
    let mut command = support::skein(dir);
    command.env("OPENAI_API_KEY", "sk-real-secret");
    command
}

/// An OpenAI-compatible provider on loopback that records the `Authorization` header of every
/// request and streams `answer`.
struct FakeProvider {
    base_url: String,
    requests: Arc<Mutex<Vec<support::Request>>>,
}

impl FakeProvider {
    fn start(answer: &'static str) -> Self {
        let (url, requests) = support::serve(move |_, _| {
            chat_stream(json!({"role": "assistant", "content": answer}), "stop")
        });
        FakeProvider {
            base_url: format!("{url}/v1"),
            requests,
        }
    }

    fn authorizations(&self) -> Vec<String> {
        self.requests
            .lock()
            .unwrap()
            .iter()
            .map(|request| {
                request
                    .header("authorization")
                    .unwrap_or("<none>")
                    .to_owned()
            })
            .collect()
    }
}

#[test]
fn a_provider_redirect_carries_neither_key_nor_prompt_elsewhere() {
    let dir = tempfile::tempdir().unwrap();
    let elsewhere = FakeProvider::start("answered by another origin");
    let location = format!("{}/chat/completions", elsewhere.base_url);
    let redirect = format!(
        "HTTP/1.1 307 Temporary Redirect\r\nLocation: {location}\r\nContent-Length: 0\r\n\
         Connection: close\r\n\r\n"
    );
    let (url, asked) = support::serve(move |_, _| redirect.clone().into_bytes());
    let output = skein(dir.path())
        .args(["run", "--no-log", "-m", "gpt-4o-mini", "--base-url"])
        .arg(format!("{url}/v1"))
        .args(["--api-key", "sk-for-this-endpoint", "a secret prompt"])
        .output()
        .unwrap();
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(!output.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!("redirect to `{location}`")),
        "names where it pointed: {stderr}"
    );
    assert!(!stderr.contains("sk-for-this-endpoint"), "{stderr}");
    assert_eq!(elsewhere.authorizations(), Vec::<String>::new());
    assert_eq!(asked.lock().unwrap().len(), 1, "a redirect is not retried");
}

#[test]
fn the_environment_key_never_goes_to_a_custom_base_url() {
    let dir = tempfile::tempdir().unwrap();
    let provider = FakeProvider::start("from the fake");
    let run = |extra: &[&str], env_key: Option<&str>| {
        let mut command = skein(dir.path());
        command.args([
            "run",
            "--no-log",
            "-m",
            "gpt-4o-mini",
            "--base-url",
            &provider.base_url,
        ]);
        command.args(extra);
        if let Some(key) = env_key {
            command.env("SKEIN_API_KEY", key);
        }
        let output = command.arg("Hi").output().unwrap();
        let stderr = String::from_utf8(output.stderr).unwrap();
        assert!(output.status.success(), "{stderr}");
        assert_eq!(String::from_utf8(output.stdout).unwrap(), "from the fake\n");
        assert!(!stderr.contains("sk-real-secret"), "{stderr}");
        stderr
    };

    // No key given: a dummy goes, and stderr says why and how to send one.
    let stderr = run(&[], None);
    assert_eq!(provider.authorizations(), ["Bearer dummy"]);
    assert!(
        stderr.contains("OPENAI_API_KEY is not sent to --base-url, which is not api.openai.com"),
        "{stderr}"
    );
    assert!(
        stderr.contains("--api-key") && stderr.contains("--send-env-key"),
        "{stderr}"
    );

    // --api-key, or SKEIN_API_KEY: that key, and no note.
    let stderr = run(&["--api-key", "sk-for-this-endpoint"], None);
    assert!(!stderr.contains("not sent"), "{stderr}");
    let stderr = run(&[], Some("sk-from-skein-api-key"));
    assert!(!stderr.contains("sk-from-skein-api-key"), "{stderr}");
    // Sending the environment key there is an explicit choice.
    run(&["--send-env-key"], None);
    assert_eq!(
        provider.authorizations(),
        [
            "Bearer dummy",
            "Bearer sk-for-this-endpoint",
            "Bearer sk-from-skein-api-key",
            "Bearer sk-real-secret",
        ]
    );

    // The key is never echoed by the help either.
    let help = skein(dir.path())
        .env("SKEIN_API_KEY", "sk-in-help")
        .args(["run", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8(help.stdout).unwrap();
    assert!(help.contains("--api-key"), "{help}");
    assert!(!help.contains("sk-in-help"), "{help}");
}

/// The 422 `details.fields` reasons `skein serve` gives for `body`, by field.
fn served_reasons(body: &str) -> Vec<(String, String)> {
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
    let mut stream = TcpStream::connect(&address).unwrap();
    write!(
        stream,
        "POST /v1/response HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert!(answer.starts_with("HTTP/1.1 422"), "{answer}");
    let json = &answer[answer.find("\r\n\r\n").unwrap() + 4..];
    let error: Value = serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {json}"));
    let fields = error
        .pointer("/details/fields")
        .or_else(|| error.pointer("/error/details/fields"))
        .and_then(Value::as_array)
        .unwrap_or_else(|| panic!("no fields: {error}"));
    fields
        .iter()
        .map(|field| {
            (
                field["field"].as_str().unwrap().to_owned(),
                field["reason"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[test]
fn the_cli_refuses_the_options_the_server_refuses_with_the_same_reasons() {
    let served = served_reasons(
        r#"{"model_config": {"model_id": "echo"}, "input": {"text": "hi"},
            "temperature": 3.5, "max_tokens": 0, "tools": {"max_tool_calls": 51}}"#,
    );
    let reason = |field: &str| {
        served
            .iter()
            .find(|(name, _)| name == field)
            .unwrap_or_else(|| panic!("{field} not refused: {served:?}"))
            .1
            .clone()
    };
    let dir = tempfile::tempdir().unwrap();
    for (args, flag, field) in [
        (
            &["--temperature", "NaN"][..],
            "--temperature",
            "temperature",
        ),
        (
            &["--temperature", "3.5"][..],
            "--temperature",
            "temperature",
        ),
        (&["--max-tokens", "0"][..], "--max-tokens", "max_tokens"),
        (
            &["--max-rounds", "51"][..],
            "--max-rounds",
            "tools.max_tool_calls",
        ),
    ] {
        let output = skein(dir.path())
            .env_remove("OPENAI_API_KEY")
            .args(["run", "-m", "echo"])
            .args(args)
            .arg("hi")
            .output()
            .unwrap();
        let stderr = String::from_utf8(output.stderr).unwrap();
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(
            stderr.trim_end(),
            format!("skein: error: {flag}: {}", reason(field)),
            "{args:?}"
        );
        // Nothing ran, nothing was logged.
        assert!(output.stdout.is_empty());
    }
    // The chat refuses them before the first turn too.
    let output = skein(dir.path())
        .env_remove("OPENAI_API_KEY")
        .args(["chat", "-m", "echo", "--max-tokens", "0"])
        .write_stdin("hi\n")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(
        String::from_utf8(output.stderr)
            .unwrap()
            .contains("--max-tokens: must be at least 1")
    );
}

/// Runs `command` (a shell command line) with a pseudo-terminal as its stdout and stderr,
/// through util-linux's `script`, and returns what the terminal received. `None` when `script`
/// is not installed.
fn on_a_terminal(command: &str, env: &[(&str, &str)]) -> Option<Vec<u8>> {
    let mut script = std::process::Command::new("script");
    script
        .args(["-qec", command, "/dev/null"])
        .env("SKEIN", assert_cmd::cargo::cargo_bin("skein"))
        .env_remove("OPENAI_API_KEY")
        .env_remove("SKEIN_MODEL")
        .stdin(Stdio::null());
    for (name, value) in env {
        script.env(name, value);
    }
    let output = script.output().ok()?;
    assert!(output.status.success(), "{output:?}");
    Some(output.stdout)
}

const HOSTILE: [&[u8]; 4] = [b"\x1b]0;pwned\x07", b"\x1b[2J", b"\x1b]", b"\x9b"];

fn assert_harmless(shown: &[u8]) {
    for sequence in HOSTILE {
        assert!(
            !shown.windows(sequence.len()).any(|w| w == sequence),
            "{sequence:?} reached the terminal: {:?}",
            String::from_utf8_lossy(shown)
        );
    }
    let text = String::from_utf8_lossy(shown);
    assert!(
        !text
            .chars()
            .any(|c| c.is_control() && !matches!(c, '\n' | '\t' | '\r')),
        "a control character reached the terminal: {text:?}"
    );
}

#[test]
fn escape_sequences_from_models_and_logs_never_reach_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("logs.db");
    let db = db.to_str().unwrap();
    // The echo model answers `raw` verbatim: a model that sends escape sequences.
    let prompt = r#"{"raw": "\u001b]0;pwned\u0007hi \u001b[2Jthere\u009b2J"}"#;
    let Some(shown) = on_a_terminal(
        r#""$SKEIN" run -m echo "$PROMPT""#,
        &[("SKEIN_DB", db), ("PROMPT", prompt)],
    ) else {
        eprintln!("`script` is not installed: the terminal test cannot run here");
        return;
    };
    assert_harmless(&shown);
    assert!(
        String::from_utf8_lossy(&shown).contains("hi there"),
        "{shown:?}"
    );

    // Piped, the answer is the model's exact text (documented in `sanitize.rs`).
    let piped = skein(dir.path())
        .env_remove("OPENAI_API_KEY")
        .args(["run", "-m", "echo", prompt])
        .output()
        .unwrap();
    assert_eq!(
        piped.stdout,
        "\x1b]0;pwned\x07hi \x1b[2Jthere\u{9b}2J\n".as_bytes()
    );

    // A prompt with raw escape sequences, logged, then shown from the log on a terminal.
    skein(dir.path())
        .env_remove("OPENAI_API_KEY")
        .args(["run", "-m", "echo", "\x1b]0;pwned\x07 typed \x1b[2J prompt"])
        .assert()
        .success();
    for command in [
        r#""$SKEIN" logs show"#,
        r#""$SKEIN" logs --tree"#,
        r#""$SKEIN" logs list"#,
        r#""$SKEIN" logs show --json"#,
    ] {
        let shown = on_a_terminal(command, &[("SKEIN_DB", db)]).unwrap();
        assert_harmless(&shown);
        assert!(
            String::from_utf8_lossy(&shown).contains("typed"),
            "{command}: {shown:?}"
        );
    }
    // JSON keeps the text (escaped): it parses back to the logged prompt.
    let json = skein(dir.path())
        .args(["logs", "show", "--json"])
        .output()
        .unwrap();
    let document: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert!(document.to_string().contains(r"\u001b]0;pwned\u0007 typed"));

    // Tool activity on stderr is sanitised even when stderr is not a terminal.
    let tool_call = r#"{"tool_calls": [{"name": "calculator", "arguments": {"expression": "1+1\u001b]0;pwned\u0007\u009b2J"}}]}"#;
    let output = skein(dir.path())
        .env_remove("OPENAI_API_KEY")
        .args(["run", "-m", "echo", "--tool", "calculator", tool_call])
        .output()
        .unwrap();
    assert!(output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("[calculator]"));
    assert_harmless(&output.stderr);
}

#[test]
fn a_prompt_cut_to_fit_the_context_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    // Far over the echo model's context window (128K tokens): compression must cut it.
    let prompt: String = (0..90_000).map(|n| format!("w{n} ")).collect();
    let output = skein(dir.path())
        .env_remove("OPENAI_API_KEY")
        .args(["run", "--no-log", "-m", "echo"])
        .write_stdin(prompt.clone())
        .output()
        .unwrap();
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains("skein: note: the prompt did not fit the model's context"),
        "{stderr}"
    );

    // `--json` prints the events as the server streams them: `response.done` says so too.
    let output = skein(dir.path())
        .env_remove("OPENAI_API_KEY")
        .args(["run", "--no-log", "-m", "echo", "--json"])
        .write_stdin(prompt)
        .output()
        .unwrap();
    assert!(output.status.success());
    let done: Value = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .find(|event| event["event"] == "response.done")
        .unwrap();
    assert_eq!(
        done["data"]["compression"]["prompt_truncated"], true,
        "{done}"
    );

    // A short prompt: no note, no `compression`.
    let output = skein(dir.path())
        .env_remove("OPENAI_API_KEY")
        .args(["run", "--no-log", "-m", "echo", "--json", "Hi"])
        .output()
        .unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(!stdout.contains("compression"), "{stdout}");
}

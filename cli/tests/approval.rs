//! `--ask`: the approval prompt at a real (pseudo-)terminal, with the echo model calling the
//! calculator; and what happens without a terminal.

use std::time::Duration;

use expectrl::{Eof, Session};

use crate::support::{skein, skein_process};

/// The echo model calls the calculator with `expression`.
fn calling(expression: &str) -> String {
    serde_json::json!({"tool_calls": [{"name": "calculator", "arguments": {"expression": expression}}]})
        .to_string()
}

fn session(command: std::process::Command) -> Session {
    let mut session = Session::spawn(command).expect("a pseudo-terminal");
    session.set_expect_timeout(Some(Duration::from_secs(60)));
    session
}

#[test]
fn yes_at_the_prompt_runs_the_call() {
    let dir = tempfile::tempdir().unwrap();
    let mut command = skein_process(dir.path());
    command.args([
        "run",
        "-m",
        "echo",
        "--tool",
        "calculator",
        "--ask",
        "calculator",
    ]);
    command.arg(calling("6*7"));
    let mut session = session(command);
    session
        .expect(r#"skein: the model wants to run calculator with {"expression":"6*7"}"#)
        .unwrap();
    session
        .expect("Run it? [y]es, [n]o (a reason may follow), [a]lways for calculator in this conversation: ")
        .unwrap();
    session.send_line("y").unwrap();
    session.expect(r#"\"result\":42.0"#).unwrap();
    session.expect(Eof).unwrap();
}

#[test]
fn no_with_a_reason_tells_the_model_why() {
    let dir = tempfile::tempdir().unwrap();
    let mut command = skein_process(dir.path());
    command.args([
        "run",
        "-m",
        "echo",
        "--tool",
        "calculator",
        "--ask",
        "mcp:*",
        "--ask",
        "calc*",
    ]);
    command.arg(calling("6*7"));
    let mut session = session(command);
    session.expect("Run it?").unwrap();
    // An answer that is not y, n or a is asked again.
    session.send_line("perhaps").unwrap();
    session.expect("Run it?").unwrap();
    session.send_line("n too expensive").unwrap();
    session
        .expect("The user declined this tool call. Reason: too expensive")
        .unwrap();
    session.expect(Eof).unwrap();
}

#[test]
fn always_is_not_asked_again_in_the_chat() {
    let dir = tempfile::tempdir().unwrap();
    let mut command = skein_process(dir.path());
    command.args([
        "chat",
        "-m",
        "echo",
        "--tool",
        "calculator",
        "--ask",
        "calculator",
    ]);
    let mut session = session(command);
    session.expect("> ").unwrap();
    session.send_line(calling("1+1")).unwrap();
    session.expect("Run it?").unwrap();
    session.send_line("a").unwrap();
    session.expect(r#"\"result\":2.0"#).unwrap();
    session.expect("> ").unwrap();
    session.send_line(calling("2+3")).unwrap();
    // Straight to the answer: the calculator was approved for the conversation.
    let seen = session.expect(r#"\"result\":5.0"#).unwrap();
    assert!(
        !String::from_utf8_lossy(seen.before()).contains("Run it?"),
        "asked again: {}",
        String::from_utf8_lossy(seen.before())
    );
    session.expect("> ").unwrap();
    session.send_line("exit").unwrap();
    session.expect(Eof).unwrap();
}

#[test]
fn without_a_terminal_the_call_is_declined_and_the_user_told_how_to_allow_it() {
    let dir = tempfile::tempdir().unwrap();
    let output = skein(dir.path())
        .args([
            "run",
            "-m",
            "echo",
            "--tool",
            "calculator",
            "--ask",
            "calculator",
        ])
        .arg(calling("6*7"))
        .write_stdin("")
        .output()
        .unwrap();
    assert!(output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("calculator needs approval and there is no terminal to ask at, so it was declined; run skein in a terminal to answer, or pass --yes-tools"),
        "{stderr}"
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("The user declined this tool call. Reason: no one could approve it"),
        "{stdout}"
    );

    // --yes-tools trusts every tool.
    let output = skein(dir.path())
        .args([
            "run",
            "-m",
            "echo",
            "--tool",
            "calculator",
            "--ask",
            "calculator",
            "--yes-tools",
        ])
        .arg(calling("6*7"))
        .write_stdin("")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&output.stdout).contains(r#"\"result\":42.0"#));
}

#[test]
fn a_bad_selector_is_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let output = skein(dir.path())
        .args(["run", "-m", "echo", "--ask", "mcp:", "--ask", "x:y", "hi"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--ask mcp:") && stderr.contains("--ask x:y"),
        "{stderr}"
    );
}

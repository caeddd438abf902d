//! `--tool-mode`, `--format` and `--cache` through the `skein` binary: the text protocol runs end
//! to end on the offline echo model, and prompt caching reaches an Anthropic endpoint on
//! loopback as cache breakpoints.

use std::path::Path;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::support::{self, ok, skein};

/// The echo model's report of the last request: the JSON object its answer ends with.
fn last_report(stdout: &str) -> Value {
    let start = stdout
        .rfind("{\n  \"attachments\"")
        .expect("an echo report");
    serde_json::from_str(&stdout[start..]).expect("the report is JSON")
}

/// A one-round run of the echo model with the calculator under `--tool-mode mode` and `flags`,
/// the model answering the first request with `reply` verbatim: the report of the last request,
/// and stderr.
fn text_protocol_run(mode: &str, flags: &[&str], reply: &str) -> (Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let prompt = serde_json::json!({ "raw": reply }).to_string();
    let output = skein(dir.path())
        .args([
            "run",
            "-m",
            "echo",
            "--tool",
            "calculator",
            "--tool-mode",
            mode,
        ])
        .args(flags)
        .args(["--max-rounds", "1", &prompt])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let report = last_report(&String::from_utf8(output.stdout).unwrap());
    (report, String::from_utf8(output.stderr).unwrap())
}

#[test]
fn a_json_tool_call_in_markdown_sections_runs_and_its_observation_comes_back_in_markdown() {
    // The model's first answer: an action section.
    let reply = "# thinking\nI will compute.\n\n# action\n```json\n\
                 {\"tool\": \"calculator\", \"args\": {\"expression\": \"6*7\"}}\n```";
    let (report, stderr) = text_protocol_run("json", &[], reply);
    // What the model read after its action: the calculator's result, in Markdown sections.
    let observation = report["previous"][1]["prompt"].as_str().unwrap();
    assert_eq!(
        observation,
        "# calculator\n{\"expression\":\"6*7\",\"result\":42.0}"
    );
    // Text protocol: no tools are offered as function specs.
    assert_eq!(report["options"]["tools"], serde_json::json!([]));
    assert!(stderr.contains("[calculator]"), "{stderr}");
}

#[test]
fn a_yaml_tool_call_in_xml_sections_comes_back_as_an_xml_observation() {
    let reply = "<thinking>I will compute.</thinking>\n<action>\ntool: calculator\nargs:\n  \
                 expression: 6*7\n</action>";
    let (report, _) = text_protocol_run("yaml", &["--format", "xml"], reply);
    assert_eq!(
        report["previous"][1]["prompt"],
        "<observation>\n<calculator>\nexpression: 6*7\nresult: 42.0\n</calculator>\n</observation>"
    );
}

#[test]
fn a_section_format_without_a_text_protocol_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let output = skein(dir.path())
        .args(["run", "-m", "echo", "--format", "xml", "hi"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(stderr.contains("--tool-mode"), "{stderr}");
    assert!(
        !dir.path().join("logs.db").exists(),
        "refused before the log was opened"
    );
}

/// An Anthropic endpoint on loopback: records each request and streams a recorded answer.
fn fake_anthropic() -> (String, Arc<Mutex<Vec<support::Request>>>) {
    let answer = std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../providers/tests/fixtures/anthropic/stream_text.sse"),
    )
    .unwrap();
    support::serve(move |_, _| ok("text/event-stream", &answer))
}

#[test]
fn cache_marks_the_tools_the_system_prompt_and_the_conversation_for_anthropic() {
    let dir = tempfile::tempdir().unwrap();
    let (base_url, bodies) = fake_anthropic();
    let run = |cache: bool| {
        let mut command = skein(dir.path());
        command
            .args(["run", "--provider", "anthropic", "-m", "claude-haiku-4-5"])
            .args([
                "--base-url",
                &base_url,
                "--api-key",
                "sk-ant-test",
                "--no-log",
            ])
            .args(["--tool", "calculator", "--system", "Be brief."]);
        if cache {
            command.arg("--cache");
        }
        let output = command.arg("Say hi.").output().unwrap();
        assert!(output.status.success(), "{output:?}");
    };
    run(false);
    run(true);
    let bodies = support::bodies(&bodies);
    assert_eq!(bodies.len(), 2);
    let marked = |body: &Value| body.to_string().matches("\"cache_control\"").count();
    assert_eq!(marked(&bodies[0]), 0, "no breakpoints without --cache");
    let cached = &bodies[1];
    assert_eq!(cached["tools"][0]["cache_control"]["type"], "ephemeral");
    let system = cached["system"].as_array().expect("system blocks");
    assert_eq!(system.last().unwrap()["cache_control"]["type"], "ephemeral");
    let last = cached["messages"].as_array().unwrap().last().unwrap();
    let block = last["content"].as_array().unwrap().last().unwrap();
    assert_eq!(block["cache_control"]["type"], "ephemeral");
}

//! `skein run --skills DIR`: a two-round run in which the model loads a skill and then uses
//! the tool it brings, against an OpenAI-compatible endpoint on loopback that records every
//! request body (tools are bound, and the instructions added, only after loading).

use std::path::Path;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::support::{self, chat_stream, skein};

/// Streams each answer in turn (one per request), recording the requests; the base URL ends
/// in `/v1`.
fn fake_openai(answers: Vec<Value>) -> (String, Arc<Mutex<Vec<support::Request>>>) {
    let (url, requests) = support::serve(move |turn, _| {
        let delta = answers[turn.min(answers.len() - 1)].clone();
        let finish = if delta.get("tool_calls").is_some() {
            "tool_calls"
        } else {
            "stop"
        };
        chat_stream(delta, finish)
    });
    (format!("{url}/v1"), requests)
}

fn call(id: &str, name: &str, arguments: Value) -> Value {
    json!({"role": "assistant", "tool_calls": [{"index": 0, "id": id, "type": "function",
           "function": {"name": name, "arguments": arguments.to_string()}}]})
}

fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|tool| tool["function"]["name"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Writes `dir/name/SKILL.md`: `front` (what the skill brings, as `tools: […]` or
/// `mcp_servers: […]`) after its name and description, then `body`.
fn write_skill(dir: &Path, name: &str, front: &str, body: &str) {
    std::fs::create_dir_all(dir.join(name)).unwrap();
    std::fs::write(
        dir.join(name).join("SKILL.md"),
        format!("---\nname: {name}\ndescription: Use for {name}.\n{front}\n---\n{body}\n"),
    )
    .unwrap();
}

#[test]
fn the_model_loads_a_skill_and_uses_its_tool_in_the_next_round() {
    let dir = tempfile::tempdir().unwrap();
    let skills = dir.path().join("skills");
    write_skill(
        &skills,
        "arithmetic",
        "tools: [calculator]",
        "Check every sum with the calculator.",
    );
    write_skill(&skills, "style", "tools: []", "Answer in one line.");
    let (base_url, bodies) = fake_openai(vec![
        call("call_1", "load_skill", json!({"name": "arithmetic"})),
        call("call_2", "calculator", json!({"expression": "6*7"})),
        json!({"role": "assistant", "content": "6*7 is 42."}),
    ]);
    let output = skein(dir.path())
        .args([
            "run",
            "-m",
            "gpt-4o-mini",
            "--base-url",
            &base_url,
            "--api-key",
            "sk-test",
        ])
        .args(["--system", "You are careful.", "--skills"])
        .arg(&skills)
        .arg("What is 6*7?")
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "6*7 is 42.");

    let bodies = support::bodies(&bodies);
    assert_eq!(bodies.len(), 3);
    // Before loading: only load_skill, which lists both skills; the system prompt as given.
    assert_eq!(tool_names(&bodies[0]), ["load_skill"]);
    let description = bodies[0]["tools"][0]["function"]["description"]
        .as_str()
        .unwrap();
    assert!(
        description.contains("- arithmetic: Use for arithmetic."),
        "{description}"
    );
    assert!(
        description.contains("- style: Use for style."),
        "{description}"
    );
    assert_eq!(bodies[0]["messages"][0]["content"], "You are careful.");
    // After loading: the skill's tool is bound and its instructions follow the system prompt.
    for body in &bodies[1..] {
        assert_eq!(tool_names(body), ["load_skill", "calculator"]);
        assert_eq!(
            body["messages"][0]["content"],
            "You are careful.\n\n# Skill: arithmetic\nCheck every sum with the calculator."
        );
    }
    // The calculator really ran: its result is in the last request.
    let last = bodies[2]["messages"].as_array().unwrap();
    let result = last.last().unwrap();
    assert_eq!(result["role"], "tool");
    assert_eq!(result["tool_call_id"], "call_2");
    let value: Value = serde_json::from_str(result["content"].as_str().unwrap()).unwrap();
    assert_eq!(value["result"], 42.0);

    // The tree logged each round with the tools it really had: the tool set's hash (the
    // node's cache key) changes once the skill is loaded.
    let db = rusqlite::Connection::open(dir.path().join("logs.db")).unwrap();
    let keys: Vec<String> = db
        .prepare("SELECT cache_key FROM responses ORDER BY id")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(keys.len(), 3, "{keys:?}");
    assert_ne!(keys[0], keys[1], "round 2 offered more tools than round 1");
    assert_eq!(keys[1], keys[2]);
}

#[test]
fn an_unreadable_skill_is_refused_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("broken")).unwrap();
    std::fs::write(dir.path().join("broken/SKILL.md"), "no front matter").unwrap();
    let output = skein(dir.path())
        .args(["run", "-m", "echo", "--skills"])
        .arg(dir.path())
        .arg("hi")
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("SKILL.md") && stderr.contains("front matter"),
        "{stderr}"
    );
}

#[test]
fn a_skill_brings_its_mcp_servers_tools_once_loaded() {
    let dir = tempfile::tempdir().unwrap();
    let skills = dir.path().join("skills");
    write_skill(
        &skills,
        "sums",
        "mcp_servers: [everything]",
        "Add with everything__get-sum.",
    );
    let (base_url, bodies) = fake_openai(vec![
        call("call_1", "load_skill", json!({"name": "sums"})),
        call("call_2", "everything__get-sum", json!({"a": 2, "b": 40})),
        json!({"role": "assistant", "content": "42."}),
    ]);
    let everything = ::mcp::testing::everything_spec("everything");
    let output = skein(dir.path())
        .args(["run", "-m", "gpt-4o-mini", "--base-url", &base_url])
        .args(["--api-key", "sk-test", "--mcp", &everything, "--skills"])
        .arg(&skills)
        .arg("What is 2+40?")
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");

    let bodies = support::bodies(&bodies);
    assert_eq!(bodies.len(), 3);
    // The server's tools wait for the skill.
    assert_eq!(tool_names(&bodies[0]), ["load_skill"]);
    for body in &bodies[1..] {
        let names = tool_names(body);
        assert_eq!(names[0], "load_skill");
        // Tools server-everything publishes, namespaced by the server's name.
        for tool in ["everything__get-sum", "everything__echo"] {
            assert!(names.iter().any(|name| name == tool), "{tool}: {names:?}");
        }
        assert!(
            names[1..]
                .iter()
                .all(|name| name.starts_with("everything__"))
        );
    }
    // The loaded skill says which tools it brought, and the server answered the call.
    let messages = bodies[2]["messages"].as_array().unwrap();
    let loaded: Value = serde_json::from_str(messages[3]["content"].as_str().unwrap()).unwrap();
    assert!(
        loaded["tools"]
            .as_array()
            .unwrap()
            .contains(&json!("everything__get-sum")),
        "{loaded}"
    );
    let result = messages.last().unwrap();
    assert_eq!(result["tool_call_id"], "call_2");
    assert_eq!(result["content"], "The sum of 2 and 40 is 42.");
}

#[test]
fn a_skill_naming_an_unconfigured_mcp_server_says_so_when_loaded() {
    let dir = tempfile::tempdir().unwrap();
    let skills = dir.path().join("skills");
    write_skill(&skills, "remote", "mcp_servers: [ghost]", "");
    let calls = json!({"tool_calls": [{"name": "load_skill", "arguments": {"name": "remote"}}]});
    let output = skein(dir.path())
        .args(["run", "-m", "echo", "--skills"])
        .arg(&skills)
        .arg(calls.to_string())
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    let report: Value = serde_json::from_str(&stdout[stdout.find('{').unwrap()..]).unwrap();
    let error = report["tool_results"][0]["output"].as_str().unwrap();
    assert!(
        error.contains("`ghost`") && error.contains("not configured"),
        "{report}"
    );
}

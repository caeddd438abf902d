//! `skein mcp list` and `skein run --mcp` against the reference MCP server
//! `@modelcontextprotocol/server-everything` (stdio), installed by `cargo xtask mcp-servers`.

use crate::support::skein;

/// The reference server as a `--mcp` spec.
fn everything() -> String {
    ::mcp::testing::everything_spec("everything")
}

#[test]
fn mcp_list_shows_the_servers_tools_as_a_model_sees_them() {
    let dir = tempfile::tempdir().unwrap();
    let output = skein(dir.path())
        .args(["mcp", "list", &everything()])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(stdout.starts_with("everything ("), "{stdout}");
    // Tools server-everything publishes, namespaced by the server's name.
    for tool in [
        "everything__echo",
        "everything__get-sum",
        "everything__get-tiny-image",
    ] {
        assert!(stdout.contains(tool), "{tool} missing from {stdout}");
    }
    assert!(
        stdout.contains("Returns the sum of two numbers"),
        "{stdout}"
    );

    let json = skein(dir.path())
        .args(["mcp", "list", "--json", &everything()])
        .output()
        .unwrap();
    let lines: Vec<serde_json::Value> = String::from_utf8(json.stdout)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let sum = lines
        .iter()
        .find(|tool| tool["original_name"] == "get-sum")
        .expect("get-sum is listed");
    assert_eq!(sum["name"], "everything__get-sum");
    assert_eq!(sum["input_schema"]["type"], "object");
    assert!(sum["input_schema"]["properties"]["a"].is_object());
}

#[test]
fn a_run_calls_mcp_tools_and_reads_their_text_and_image_results() {
    let dir = tempfile::tempdir().unwrap();
    let calls = serde_json::json!({"tool_calls": [
        {"name": "everything__get-sum", "arguments": {"a": 2, "b": 40}},
        {"name": "everything__get-tiny-image", "arguments": {}},
    ]});
    let output = skein(dir.path())
        .args([
            "run",
            "-m",
            "echo",
            "--mcp",
            &everything(),
            &calls.to_string(),
        ])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.contains("[everything__get-sum] → The sum of 2 and 40 is 42."),
        "{stderr}"
    );
    let stdout = String::from_utf8(output.stdout).unwrap();
    let report: serde_json::Value =
        serde_json::from_str(&stdout[stdout.find('{').unwrap()..]).unwrap();
    let results = report["tool_results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    assert_eq!(results[0]["output"], "The sum of 2 and 40 is 42.");
    // Every tool of the server was offered to the model, namespaced.
    let offered = report["options"]["tools"].as_array().unwrap();
    assert!(offered.iter().any(|tool| tool == "everything__echo"));
}

#[test]
fn an_mcp_server_that_cannot_start_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let output = skein(dir.path())
        .args([
            "run",
            "-m",
            "echo",
            "--mcp",
            "ghost=/nonexistent/mcp-server",
            "hi",
        ])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.contains("ghost") && stderr.contains("/nonexistent/mcp-server"),
        "{stderr}"
    );
    let bad = skein(dir.path())
        .args(["run", "-m", "echo", "--mcp", "no spec", "hi"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2), "{bad:?}");
}

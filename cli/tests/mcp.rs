//! `skein mcp list` and `skein run --mcp` against real MCP servers installed by
//! `cargo xtask mcp-servers`: the reference server `@modelcontextprotocol/server-everything`
//! (stdio) and the Python SDK's server `xtask/mcp/fastmcp_server.py` (streamable HTTP). The
//! offline `echo` model calls their tools: results, errors, images, Ctrl-C mid-call and a
//! server killed mid-call.

use std::process::{Child, ExitStatus, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use ::mcp::testing::FastMcp;
use serde_json::{Value, json};

use crate::support::{
    children_running, exited_within, line_where, logged_tool_media, read_lines, signal, skein,
    skein_process, wait_within,
};

/// The reference server as a `--mcp` spec.
fn everything() -> String {
    ::mcp::testing::everything_spec("everything")
}

/// The Python server as a `--mcp` spec.
fn py(server: &FastMcp) -> String {
    format!("py={}", server.url())
}

/// The 1x1 red PNG the Python server's `image` tool returns, base64.
pub(crate) const RED_PIXEL_PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC";

/// The PNG signature, base64: how every PNG's base64 starts.
pub(crate) const PNG_BASE64: &str = "iVBORw0KGgo";

/// How long to let a call that has started reach its server before interrupting it: the
/// `tool.start` event comes just before the request is sent.
pub(crate) const UNDER_WAY: Duration = Duration::from_millis(500);

/// Longest a stopped call may take to end the run (the slow tools run for 30 s).
const PROMPTLY: Duration = Duration::from_secs(8);

/// `{"tool_calls": [...]}` for the echo model: each `(name, arguments)` called once.
pub(crate) fn tool_calls(calls: &[(&str, Value)]) -> String {
    let calls: Vec<Value> = calls
        .iter()
        .map(|(name, arguments)| json!({"name": name, "arguments": arguments}))
        .collect();
    json!({ "tool_calls": calls }).to_string()
}

/// The echo model's report: the JSON object a run printed after its tool round.
fn report(stdout: &str) -> Value {
    let start = stdout
        .find('{')
        .unwrap_or_else(|| panic!("no report in {stdout}"));
    serde_json::from_str(&stdout[start..]).unwrap_or_else(|error| panic!("{error}: {stdout}"))
}

/// The report's result for the tool `name`.
fn result<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["tool_results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|result| result["name"] == name)
        .unwrap_or_else(|| panic!("no result for {name} in {report}"))
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
    // The long-running tool the interruption tests below call.
    let long = lines
        .iter()
        .find(|tool| tool["original_name"] == "trigger-long-running-operation")
        .expect("trigger-long-running-operation is listed");
    assert_eq!(long["name"], "everything__trigger-long-running-operation");
    for argument in ["duration", "steps"] {
        assert_eq!(
            long["input_schema"]["properties"][argument]["type"], "number",
            "{long}"
        );
    }
}

#[test]
fn a_run_calls_mcp_tools_and_reads_their_text_and_image_results() {
    let dir = tempfile::tempdir().unwrap();
    let calls = tool_calls(&[
        ("everything__get-sum", json!({"a": 2, "b": 40})),
        ("everything__get-tiny-image", json!({})),
    ]);
    let output = skein(dir.path())
        .args(["run", "-m", "echo", "--mcp", &everything(), &calls])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.contains("[everything__get-sum] → The sum of 2 and 40 is 42."),
        "{stderr}"
    );
    let report = report(&String::from_utf8(output.stdout).unwrap());
    let results = report["tool_results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    assert_eq!(results[0]["output"], "The sum of 2 and 40 is 42.");
    assert_eq!(
        results[1]["output"],
        "Here's the image you requested:\n\nThe image above is the MCP logo."
    );
    // Every tool of the server was offered to the model, namespaced.
    let offered = report["options"]["tools"].as_array().unwrap();
    assert!(offered.iter().any(|tool| tool == "everything__echo"));
    // The image went to the model with the tool's response, as the log shows.
    let media = logged_tool_media(dir.path(), None);
    assert_eq!(media.len(), 1, "{media:?}");
    assert_eq!(media[0].0, "everything__get-tiny-image");
    assert_eq!(media[0].1, "image/png");
    assert!(media[0].2.starts_with(PNG_BASE64), "{media:?}");
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

#[test]
fn a_run_lists_and_calls_the_python_sdk_servers_tools_over_http() {
    let dir = tempfile::tempdir().unwrap();
    let python = FastMcp::start(None);
    let listed = skein(dir.path())
        .args(["mcp", "list", &py(&python)])
        .output()
        .unwrap();
    assert!(listed.status.success(), "{listed:?}");
    let stdout = String::from_utf8(listed.stdout).unwrap();
    assert!(stdout.starts_with("py (skein-test-fastmcp"), "{stdout}");
    // The tools and their docstrings, as the script defines them.
    for (tool, description) in [
        ("py__add", "Adds two integers."),
        ("py__fail", "Always fails with `message`."),
        ("py__slow", "Sleeps for `seconds`, then says so."),
        (
            "py__cancellations",
            "How many `slow` calls were cancelled so far.",
        ),
        ("py__image", "Returns a 1x1 red PNG."),
    ] {
        assert!(
            stdout
                .lines()
                .any(|line| line.contains(tool) && line.ends_with(description)),
            "{tool} missing from {stdout}"
        );
    }
    let json = skein(dir.path())
        .args(["mcp", "list", "--json", &py(&python)])
        .output()
        .unwrap();
    let add = String::from_utf8(json.stdout)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .find(|tool| tool["name"] == "py__add")
        .expect("py__add is listed");
    assert_eq!(add["original_name"], "add");
    assert_eq!(add["input_schema"]["properties"]["a"]["type"], "integer");
    assert_eq!(add["input_schema"]["required"], json!(["a", "b"]));

    let calls = tool_calls(&[
        ("py__add", json!({"a": 2, "b": 3})),
        ("py__fail", json!({"message": "disk on fire"})),
        ("py__image", json!({})),
    ]);
    let output = skein(dir.path())
        .args(["run", "-m", "echo", "--mcp", &py(&python), &calls])
        .output()
        .unwrap();
    // A failed tool is the model's to read: the run itself succeeds.
    assert!(output.status.success(), "{output:?}");
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(stderr.contains("[py__add] → 5"), "{stderr}");
    assert!(
        stderr.contains("[py__fail] failed: Error executing tool fail: disk on fire"),
        "{stderr}"
    );
    let report = report(&String::from_utf8(output.stdout).unwrap());
    assert_eq!(result(&report, "py__add")["output"], "5");
    let failed = result(&report, "py__fail")["output"].as_str().unwrap();
    assert!(
        failed.contains("Error executing tool fail: disk on fire"),
        "{failed}"
    );
    // The image has no text: the model reads it as media.
    assert_eq!(result(&report, "py__image")["output"], "");
    assert_eq!(
        report["options"]["tools"],
        json!([
            "py__add",
            "py__fail",
            "py__slow",
            "py__cancellations",
            "py__image"
        ])
    );
    assert_eq!(
        logged_tool_media(dir.path(), None),
        [(
            "py__image".to_owned(),
            "image/png".to_owned(),
            RED_PIXEL_PNG.to_owned()
        )]
    );
}

/// A `skein run --json -m echo` child process, its events and stderr read on threads; killed
/// when dropped if still running.
struct Run {
    child: Child,
    events: Receiver<String>,
    stderr: Receiver<String>,
    seen: Vec<Value>,
}

impl Run {
    fn start(dir: &std::path::Path, servers: &[String], prompt: &str) -> Run {
        let mut command = skein_process(dir);
        command.args(["run", "--json", "-m", "echo"]);
        for server in servers {
            command.args(["--mcp", server]);
        }
        let mut child = command
            .arg(prompt)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        Run {
            events: read_lines(child.stdout.take().unwrap()),
            stderr: read_lines(child.stderr.take().unwrap()),
            child,
            seen: Vec::new(),
        }
    }

    /// Reads events until `tool.start` of `tool`.
    fn until_tool_start(&mut self, tool: &str) {
        let (line, before) = line_where(
            &self.events,
            Duration::from_secs(20),
            &format!("tool.start of {tool}"),
            |line| {
                serde_json::from_str::<Value>(line).is_ok_and(|event| {
                    event["event"] == "tool.start" && event["data"]["name"] == tool
                })
            },
        );
        self.seen.extend(
            before
                .iter()
                .chain([&line])
                .map(|line| serde_json::from_str::<Value>(line).unwrap()),
        );
    }

    /// Waits (at most 20 s) for the process to exit, then reads the rest of its events.
    fn finish(&mut self) -> ExitStatus {
        let status = wait_within(&mut self.child, Duration::from_secs(20));
        let stderr: Vec<String> = self.stderr.try_iter().collect();
        let status = status.unwrap_or_else(|| panic!("skein run still runs: {stderr:#?}"));
        while let Ok(line) = self.events.recv_timeout(Duration::from_secs(5)) {
            self.seen.push(serde_json::from_str(&line).unwrap());
        }
        status
    }

    /// The `tool.done` event of `tool`.
    fn done(&self, tool: &str) -> &Value {
        self.seen
            .iter()
            .find(|event| event["event"] == "tool.done" && event["data"]["name"] == tool)
            .map(|event| &event["data"])
            .unwrap_or_else(|| panic!("no tool.done of {tool} in {:#?}", self.seen))
    }

    fn last_event(&self) -> &str {
        self.seen
            .last()
            .and_then(|event| event["event"].as_str())
            .unwrap_or_default()
    }

    /// The answer text streamed (the echo model's report).
    fn content(&self) -> String {
        self.seen
            .iter()
            .filter(|event| event["event"] == "content.delta")
            .filter_map(|event| event["data"]["text"].as_str())
            .collect()
    }

    /// A run stopped by Ctrl-C while `tool` ran: it exited with 130, the call failed and the
    /// response was cancelled.
    #[track_caller]
    fn assert_interrupted(&self, status: ExitStatus, tool: &str) {
        assert_eq!(status.code(), Some(130), "{status:?}");
        let done = self.done(tool);
        assert!(done["error"].is_string(), "{done}");
        assert_eq!(self.last_event(), "response.cancelled", "{:#?}", self.seen);
    }

    /// A run whose MCP server `server` was killed while `tool` ran: the call failed naming the
    /// server, and the run went on to its answer, in which the model read that error.
    #[track_caller]
    fn assert_outlived_its_server(&self, status: ExitStatus, tool: &str, server: &str) {
        assert!(status.success(), "{status:?}: {:#?}", self.seen);
        let error = self.done(tool)["error"]
            .as_str()
            .unwrap_or_else(|| panic!("no error: {:#?}", self.seen));
        assert!(error.contains(&format!("\"{server}\"")), "{error}");
        assert_eq!(self.last_event(), "response.done", "{:#?}", self.seen);
        let report = report(&self.content());
        let output = result(&report, tool)["output"].as_str().unwrap();
        assert!(output.contains(error), "{output}");
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Asks `count` what the Python server's `cancellations` tool answers until it is `expected`
/// (again every 200 ms, for up to 10 s: the server hears of a cancellation after the client
/// stopped waiting); panics with the last answer otherwise.
pub(crate) fn until_cancellations(expected: &str, count: impl Fn() -> Value) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let count = count();
        if count == expected {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the server counted {count} cancellations, not {expected}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// [`until_cancellations`], asking through a run.
fn wait_for_cancellations(dir: &std::path::Path, python: &FastMcp, expected: &str) {
    let calls = tool_calls(&[("py__cancellations", json!({}))]);
    until_cancellations(expected, || {
        let output = skein(dir)
            .args(["run", "-m", "echo", "--mcp", &py(python), &calls])
            .output()
            .unwrap();
        assert!(output.status.success(), "{output:?}");
        let report = report(&String::from_utf8(output.stdout).unwrap());
        result(&report, "py__cancellations")["output"].clone()
    });
}

#[test]
fn ctrl_c_during_a_python_sdk_call_cancels_it_on_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let python = FastMcp::start(None);
    let mut run = Run::start(
        dir.path(),
        &[py(&python)],
        &tool_calls(&[("py__slow", json!({"seconds": 30}))]),
    );
    run.until_tool_start("py__slow");
    std::thread::sleep(UNDER_WAY);
    let interrupted = Instant::now();
    signal(run.child.id(), "INT");
    let status = run.finish();
    assert!(
        interrupted.elapsed() < PROMPTLY,
        "{:?}",
        interrupted.elapsed()
    );
    run.assert_interrupted(status, "py__slow");
    // The server was told, and stopped the sleep.
    wait_for_cancellations(dir.path(), &python, "1");
}

#[test]
fn a_python_sdk_server_killed_mid_call_fails_that_call_and_the_run_finishes() {
    let dir = tempfile::tempdir().unwrap();
    let mut python = FastMcp::start(None);
    let mut run = Run::start(
        dir.path(),
        &[py(&python)],
        &tool_calls(&[("py__slow", json!({"seconds": 30}))]),
    );
    run.until_tool_start("py__slow");
    std::thread::sleep(UNDER_WAY);
    let killed = Instant::now();
    python.kill();
    let status = run.finish();
    assert!(killed.elapsed() < PROMPTLY, "{:?}", killed.elapsed());
    run.assert_outlived_its_server(status, "py__slow", "py");
}

/// The `node` child running server-everything under `skein`.
fn everything_child(skein: u32) -> u32 {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let [node] = children_running(skein, "server-everything")[..] {
            return node;
        }
        assert!(
            Instant::now() < deadline,
            "no server-everything child of {skein}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn long_operation() -> String {
    tool_calls(&[(
        "everything__trigger-long-running-operation",
        json!({"duration": 30, "steps": 30}),
    )])
}

#[test]
fn ctrl_c_during_a_server_everything_call_ends_the_run_and_its_server() {
    let dir = tempfile::tempdir().unwrap();
    let mut run = Run::start(dir.path(), &[everything()], &long_operation());
    run.until_tool_start("everything__trigger-long-running-operation");
    let node = everything_child(run.child.id());
    std::thread::sleep(UNDER_WAY);
    let interrupted = Instant::now();
    signal(run.child.id(), "INT");
    let status = run.finish();
    assert!(
        interrupted.elapsed() < PROMPTLY,
        "{:?}",
        interrupted.elapsed()
    );
    run.assert_interrupted(status, "everything__trigger-long-running-operation");
    assert!(
        exited_within(node, Duration::from_secs(5)),
        "server-everything ({node}) outlived skein"
    );
}

#[test]
fn a_server_everything_child_killed_mid_call_fails_that_call_and_the_run_finishes() {
    let dir = tempfile::tempdir().unwrap();
    let mut run = Run::start(dir.path(), &[everything()], &long_operation());
    run.until_tool_start("everything__trigger-long-running-operation");
    let node = everything_child(run.child.id());
    std::thread::sleep(UNDER_WAY);
    let killed = Instant::now();
    signal(node, "KILL");
    let status = run.finish();
    assert!(killed.elapsed() < PROMPTLY, "{:?}", killed.elapsed());
    run.assert_outlived_its_server(
        status,
        "everything__trigger-long-running-operation",
        "everything",
    );
}

/// The bearer token the hostile MCP server below is configured with.
const MCP_TOKEN: &str = "mcp-tok-7f3a9c2e5b1d8046";

/// A streamable-HTTP MCP server on loopback that answers the handshake and lists one tool,
/// `leak`, and answers every call of it (or, with `refuse_handshake`, the handshake itself)
/// with a JSON-RPC error quoting the bearer token it was sent, without its `Bearer` scheme:
/// only a redactor that knows the token can find it.
fn token_echoing_mcp_server(refuse_handshake: bool) -> String {
    let (url, _requests) = crate::support::serve(move |_, request| {
        if !request.line.starts_with("POST") {
            return b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                .to_vec();
        }
        let body = request.json();
        let Some(id) = body.get("id").cloned() else {
            // A notification.
            return b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                .to_vec();
        };
        let token = request
            .header("authorization")
            .and_then(|value| value.strip_prefix("Bearer "))
            .unwrap_or("none");
        let echo = json!({"jsonrpc": "2.0", "id": id, "error": {
            "code": -32001,
            "message": format!("credentials {token} are not allowed to do this"),
        }});
        let answer = match body["method"].as_str().unwrap_or_default() {
            "initialize" if refuse_handshake => echo,
            "initialize" => json!({"jsonrpc": "2.0", "id": id, "result": {
                "protocolVersion": body["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "leaky", "version": "1.0.0"},
            }}),
            "tools/list" => json!({"jsonrpc": "2.0", "id": id, "result": {"tools": [
                {"name": "leak", "description": "Fails.", "inputSchema": {"type": "object"}},
            ]}}),
            _ => echo,
        };
        crate::support::ok("application/json", answer.to_string().as_bytes())
    });
    format!("{url}/mcp")
}

/// `skein serve` with the token-echoing MCP server `leaky` (its token in `LEAKY_MCP_TOKEN`).
fn serve_with_leaky_mcp(dir: &std::path::Path, refuse_handshake: bool) -> std::process::Command {
    let config = dir.join("serve.yaml");
    std::fs::write(
        &config,
        format!(
            "mcp_servers:\n  - name: leaky\n    url: {}\n    bearer_token_env: LEAKY_MCP_TOKEN\n",
            token_echoing_mcp_server(refuse_handshake)
        ),
    )
    .unwrap();
    let mut command = skein_process(dir);
    command
        .env("LEAKY_MCP_TOKEN", MCP_TOKEN)
        // Every library's debug lines too, the MCP SDK's included (it is kept at warn unless
        // named): whatever quotes the server's answer is redacted.
        .env("RUST_LOG", "debug,rmcp=debug");
    command
}

/// Every byte of the SQLite files under `dir` (the database and its write-ahead log), as text.
fn database_text(dir: &std::path::Path) -> String {
    let mut text = String::new();
    for name in ["logs.db", "logs.db-wal"] {
        if let Ok(bytes) = std::fs::read(dir.join(name)) {
            text.push_str(&String::from_utf8_lossy(&bytes));
        }
    }
    text
}

/// An HTTP MCP server that echoes its bearer token in a JSON-RPC error: the token reaches
/// neither the client (`tool.done`), nor the conversation store, nor the server's log.
#[test]
fn an_mcp_servers_echoed_token_reaches_no_client_store_or_log() {
    let dir = tempfile::tempdir().unwrap();
    let command = serve_with_leaky_mcp(dir.path(), false);
    let mut served = crate::support::serve_command(
        command,
        &[
            "--config",
            &dir.path().join("serve.yaml").display().to_string(),
        ],
        crate::support::Stderr::Keep,
    );
    let body = json!({
        "model_config": {"model_id": "echo"},
        "input": {"text": tool_calls(&[("leaky__leak", json!({}))])},
        "tools": {"mcp_servers": [{"name": "leaky"}]},
    })
    .to_string();
    let answer = crate::support::http_post(&served.address, "/v1/response", &body);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("event: tool.done"), "{answer}");
    assert!(answer.contains("[REDACTED] are not allowed"), "{answer}");
    assert!(!answer.contains(MCP_TOKEN), "{answer}");

    signal(served.child.id(), "TERM");
    let exit = wait_within(&mut served.child, Duration::from_secs(10))
        .expect("skein serve still runs 10 s after SIGTERM");
    assert!(exit.success(), "{exit:?}");
    let database = database_text(dir.path());
    assert!(
        database.contains("are not allowed"),
        "the failed call was logged"
    );
    assert!(
        !database.contains(MCP_TOKEN),
        "the token is in the database"
    );
    let log = served.stderr();
    assert!(log.contains("leaky"), "{log}");
    assert!(!log.contains(MCP_TOKEN), "{log}");
}

/// The same server refusing the handshake: `skein serve` does not start, and says why without
/// the token.
#[test]
fn a_refused_mcp_handshake_does_not_print_the_echoed_token() {
    let dir = tempfile::tempdir().unwrap();
    let output = serve_with_leaky_mcp(dir.path(), true)
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--config",
            &dir.path().join("serve.yaml").display().to_string(),
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("leaky"), "{stderr}");
    assert!(!stderr.contains(MCP_TOKEN), "{stderr}");
}

//! `skein serve` as a child process with two real MCP servers in its configuration file: the
//! Python SDK's server `xtask/mcp/fastmcp_server.py` (streamable HTTP) and the reference server
//! `@modelcontextprotocol/server-everything` (stdio, a child of `skein serve`), both installed
//! by `cargo xtask mcp-servers`. Chat Shell requests (`POST /v1/response`) name them in
//! `tools.mcp_servers` and the offline `echo` model calls their tools: results, errors, images,
//! a client that hangs up mid-call, each server killed mid-call (then connected again by the
//! next request), and `skein serve` killed mid-call (its stdio server dies with it).
#![cfg(unix)]

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{Shutdown, TcpStream};
use std::time::{Duration, Instant};

use ::mcp::testing::{FastMcp, server_everything_entry};
use serde_json::{Value, json};

use crate::mcp::{PNG_BASE64, RED_PIXEL_PNG, UNDER_WAY, tool_calls, until_cancellations};
use crate::support::{
    Served, children_running, exited_within, logged_tool_media, signal, skein_serve,
};

/// Longest a call whose server was killed may take to end (the slow tools run for 30 s).
const PROMPTLY: Duration = Duration::from_secs(8);

/// `skein serve` configured with both servers (`py` and `everything`), the Python one
/// started first.
struct Stack {
    dir: tempfile::TempDir,
    python: FastMcp,
    served: Served,
}

impl Stack {
    fn start() -> Stack {
        let dir = tempfile::tempdir().unwrap();
        let python = FastMcp::start(None);
        // The file form documented on `mcp::McpServerConfig`; the values are JSON strings,
        // which YAML reads as double-quoted scalars.
        let config = format!(
            "mcp_servers:\n  - name: py\n    url: {}\n  - name: everything\n    command: node\n    \
             args: [{}, stdio]\n",
            json!(python.url()),
            json!(server_everything_entry().to_string_lossy()),
        );
        let path = dir.path().join("skein.yaml");
        std::fs::write(&path, config).unwrap();
        let served = skein_serve(dir.path(), &["--config", path.to_str().unwrap()]);
        Stack {
            dir,
            python,
            served,
        }
    }

    /// Posts a Chat Shell request for the echo model with `prompt`, offering the tools of
    /// `servers`.
    fn post(&self, prompt: &str, servers: &[&str]) -> Events {
        let servers: Vec<Value> = servers.iter().map(|name| json!({"name": name})).collect();
        let body = json!({
            "model_config": {"model_id": "echo"},
            "input": {"text": prompt},
            "tools": {"mcp_servers": servers},
        })
        .to_string();
        Events::post(&self.served.address, &body)
    }

    /// Every event of the answer to `prompt` with the tools of `servers`.
    fn all(&self, prompt: &str, servers: &[&str]) -> Vec<Sse> {
        let all: Vec<Sse> = self.post(prompt, servers).collect();
        assert!(
            !all.is_empty(),
            "no events; the server said: {}",
            self.served.stderr()
        );
        all
    }

    /// Asserts that both servers answer a request adding `py` on the Python one and
    /// `everything` on the reference one.
    #[track_caller]
    fn assert_both_add(&self, py: (i64, i64), everything: (i64, i64)) {
        let ((x, y), (a, b)) = (py, everything);
        let events = self.all(
            &tool_calls(&[
                ("py__add", json!({"a": x, "b": y})),
                ("everything__get-sum", json!({"a": a, "b": b})),
            ]),
            &["py", "everything"],
        );
        assert_eq!(done(&events, "py__add")["output"], (x + y).to_string());
        assert_eq!(
            done(&events, "everything__get-sum")["output"],
            format!("The sum of {a} and {b} is {}.", a + b)
        );
        terminal(&events, "response.done");
    }
}

/// One server-sent event: its name and JSON data.
#[derive(Clone, Debug)]
struct Sse {
    name: String,
    data: Value,
}

/// The events of one `POST /v1/response` answer, read from the socket as they arrive (each
/// read waits at most 20 s).
struct Events {
    reader: BufReader<TcpStream>,
    chunked: bool,
    pending: Vec<u8>,
}

impl Events {
    fn post(address: &str, body: &str) -> Events {
        let mut stream = TcpStream::connect(address).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        write!(
            stream,
            "POST /v1/response HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut reader = BufReader::new(stream);
        let mut status = String::new();
        reader.read_line(&mut status).unwrap();
        let mut chunked = false;
        loop {
            let mut header = String::new();
            reader.read_line(&mut header).unwrap();
            let header = header.trim_end().to_ascii_lowercase();
            if header.is_empty() {
                break;
            }
            chunked |= header == "transfer-encoding: chunked";
        }
        if !status.starts_with("HTTP/1.1 200") {
            let mut rest = String::new();
            let _ = reader.read_to_string(&mut rest);
            panic!("{status}{rest}");
        }
        Events {
            reader,
            chunked,
            pending: Vec::new(),
        }
    }

    /// Reads events until `tool.start` of `tool`.
    fn until_tool_start(&mut self, tool: &str) {
        for event in self.by_ref() {
            if event.name == "tool.start" && event.data["name"] == tool {
                return;
            }
        }
        panic!("the answer ended before tool.start of {tool}");
    }

    /// The rest of the events.
    fn rest(&mut self) -> Vec<Sse> {
        self.by_ref().collect()
    }

    /// Appends more of the body to `pending`; false at its end.
    fn read_more(&mut self) -> bool {
        if !self.chunked {
            let mut buffer = [0; 4096];
            let read = self.reader.read(&mut buffer).expect("the answer goes on");
            self.pending.extend_from_slice(&buffer[..read]);
            return read > 0;
        }
        let mut size = String::new();
        if self.reader.read_line(&mut size).expect("a chunk size") == 0 {
            return false;
        }
        let size = size.trim_end();
        let hex = size.split(';').next().unwrap_or_default();
        let size = usize::from_str_radix(hex, 16).unwrap_or_else(|_| panic!("chunk size {size}"));
        if size == 0 {
            return false;
        }
        let mut chunk = vec![0; size + 2];
        self.reader.read_exact(&mut chunk).expect("a whole chunk");
        chunk.truncate(size);
        self.pending.extend_from_slice(&chunk);
        true
    }

    /// Hangs up: the connection is closed both ways.
    fn hang_up(self) {
        let _ = self.reader.get_ref().shutdown(Shutdown::Both);
    }
}

impl Iterator for Events {
    type Item = Sse;

    /// The next event; `None` at the end of the answer.
    fn next(&mut self) -> Option<Sse> {
        loop {
            if let Some(end) = self.pending.windows(2).position(|pair| pair == b"\n\n") {
                let block: Vec<u8> = self.pending.drain(..end + 2).collect();
                let block = String::from_utf8(block).expect("UTF-8 events");
                let mut name = "message".to_owned();
                let mut data = String::new();
                for line in block.lines() {
                    if let Some(value) = line.strip_prefix("event:") {
                        value.trim().clone_into(&mut name);
                    } else if let Some(value) = line.strip_prefix("data:") {
                        data.push_str(value.trim_start());
                    }
                }
                // Comments (keep-alives) carry no data.
                if data.is_empty() {
                    continue;
                }
                let data =
                    serde_json::from_str(&data).unwrap_or_else(|error| panic!("{error}: {data}"));
                return Some(Sse { name, data });
            }
            if !self.read_more() {
                return None;
            }
        }
    }
}

/// The `tool.done` data of `tool`.
fn done<'a>(events: &'a [Sse], tool: &str) -> &'a Value {
    events
        .iter()
        .find(|event| event.name == "tool.done" && event.data["name"] == tool)
        .map(|event| &event.data)
        .unwrap_or_else(|| panic!("no tool.done of {tool} in {events:#?}"))
}

/// Asserts the last event is `name` and returns its data.
#[track_caller]
fn terminal<'a>(events: &'a [Sse], name: &str) -> &'a Value {
    let last = events.last().expect("at least one event");
    assert_eq!(last.name, name, "{events:#?}");
    &last.data
}

/// The echo model's report: the answer's text, as JSON.
fn report(events: &[Sse]) -> Value {
    let text: String = events
        .iter()
        .filter(|event| event.name == "content.delta")
        .filter_map(|event| event.data["text"].as_str())
        .collect();
    serde_json::from_str(&text).unwrap_or_else(|error| panic!("{error}: {text}"))
}

#[test]
fn a_request_lists_and_calls_both_servers_tools() {
    let stack = Stack::start();
    let calls = tool_calls(&[
        ("py__add", json!({"a": 2, "b": 3})),
        ("everything__get-sum", json!({"a": 2, "b": 40})),
        ("py__fail", json!({"message": "disk on fire"})),
        ("py__image", json!({})),
        ("everything__get-tiny-image", json!({})),
    ]);
    let events = stack.all(&calls, &["py", "everything"]);

    let add = done(&events, "py__add");
    assert_eq!(add["output"], "5");
    assert!(add["error"].is_null(), "{add}");
    assert_eq!(
        done(&events, "everything__get-sum")["output"],
        "The sum of 2 and 40 is 42."
    );
    // The Python tool raised: an error on its event, which the model reads.
    let failed = done(&events, "py__fail");
    let error = failed["error"]
        .as_str()
        .unwrap_or_else(|| panic!("{failed}"));
    assert!(
        error.contains("Error executing tool fail: disk on fire"),
        "{error}"
    );
    // Images: the events show the tools' text only (none for the Python one).
    let image = done(&events, "py__image");
    assert_eq!(image["output"], "");
    assert!(image["error"].is_null(), "{image}");
    assert_eq!(
        done(&events, "everything__get-tiny-image")["output"],
        "Here's the image you requested:\n\nThe image above is the MCP logo."
    );
    let finished = terminal(&events, "response.done");

    let report = report(&events);
    let offered = report["options"]["tools"].as_array().unwrap();
    for tool in [
        "py__add",
        "py__fail",
        "py__slow",
        "py__cancellations",
        "py__image",
        "everything__echo",
        "everything__get-sum",
        "everything__get-tiny-image",
        "everything__trigger-long-running-operation",
    ] {
        assert!(
            offered.iter().any(|name| name == tool),
            "{tool}: {offered:?}"
        );
    }
    let results = report["tool_results"].as_array().unwrap();
    assert_eq!(results.len(), 5, "{report}");
    let failed_result = results
        .iter()
        .find(|result| result["name"] == "py__fail")
        .unwrap();
    assert!(
        failed_result["output"]
            .as_str()
            .unwrap()
            .contains("disk on fire"),
        "{report}"
    );

    // The images went to the model with the tools' responses, as the log shows.
    let conversation = finished["conversation_id"].as_str().unwrap();
    let media = logged_tool_media(stack.dir.path(), Some(conversation));
    assert_eq!(media.len(), 2, "{media:?}");
    assert!(
        media.contains(&(
            "py__image".to_owned(),
            "image/png".to_owned(),
            RED_PIXEL_PNG.to_owned()
        )),
        "{media:?}"
    );
    let tiny = media
        .iter()
        .find(|(tool, _, _)| tool == "everything__get-tiny-image")
        .unwrap_or_else(|| panic!("{media:?}"));
    assert_eq!(tiny.1, "image/png");
    assert!(tiny.2.starts_with(PNG_BASE64), "{media:?}");
}

/// [`until_cancellations`], asking through `skein serve`.
fn wait_for_cancellations(stack: &Stack, expected: &str) {
    let calls = tool_calls(&[("py__cancellations", json!({}))]);
    until_cancellations(expected, || {
        let events = stack.all(&calls, &["py"]);
        terminal(&events, "response.done");
        done(&events, "py__cancellations")["output"].clone()
    });
}

#[test]
fn a_client_that_hangs_up_mid_call_cancels_it_on_the_server() {
    let stack = Stack::start();
    wait_for_cancellations(&stack, "0");
    let mut events = stack.post(
        &tool_calls(&[("py__slow", json!({"seconds": 30}))]),
        &["py"],
    );
    events.until_tool_start("py__slow");
    std::thread::sleep(UNDER_WAY);
    events.hang_up();
    wait_for_cancellations(&stack, "1");

    // Still serving, both servers.
    stack.assert_both_add((20, 22), (1, 2));
}

#[test]
fn the_python_server_killed_mid_call_fails_that_call_and_the_answer_ends() {
    let mut stack = Stack::start();
    let mut events = stack.post(
        &tool_calls(&[("py__slow", json!({"seconds": 30}))]),
        &["py", "everything"],
    );
    events.until_tool_start("py__slow");
    std::thread::sleep(UNDER_WAY);
    let killed = Instant::now();
    stack.python.kill();
    let rest = events.rest();
    assert!(killed.elapsed() < PROMPTLY, "{:?}", killed.elapsed());
    let slow = done(&rest, "py__slow");
    let error = slow["error"].as_str().unwrap_or_else(|| panic!("{slow}"));
    assert!(error.contains("\"py\""), "{error}");
    terminal(&rest, "response.done");

    // Once the server is back, the next request connects to it again (a new session: the
    // new process knows nothing of the old one's); the other server answered throughout.
    stack.python.restart(None);
    stack.assert_both_add((2, 3), (2, 40));
}

#[test]
fn the_everything_child_killed_mid_call_fails_that_call_and_the_answer_ends() {
    let stack = Stack::start();
    let serve = stack.served.child.id();
    let node = match children_running(serve, "server-everything")[..] {
        [node] => node,
        ref others => panic!("server-everything children of {serve}: {others:?}"),
    };
    let mut events = stack.post(
        &tool_calls(&[(
            "everything__trigger-long-running-operation",
            json!({"duration": 30, "steps": 30}),
        )]),
        &["py", "everything"],
    );
    events.until_tool_start("everything__trigger-long-running-operation");
    std::thread::sleep(UNDER_WAY);
    let killed = Instant::now();
    signal(node, "KILL");
    let rest = events.rest();
    assert!(killed.elapsed() < PROMPTLY, "{:?}", killed.elapsed());
    let long = done(&rest, "everything__trigger-long-running-operation");
    let error = long["error"].as_str().unwrap_or_else(|| panic!("{long}"));
    assert!(error.contains("\"everything\""), "{error}");
    terminal(&rest, "response.done");

    // The next request starts the server again, and the other server still answers.
    stack.assert_both_add((2, 3), (1, 2));
    let restarted = children_running(serve, "server-everything");
    assert_eq!(restarted.len(), 1, "{restarted:?}");
    assert_ne!(restarted[0], node);
}

#[test]
fn skein_serve_killed_mid_call_takes_its_stdio_server_and_what_it_started_with_it() {
    let dir = tempfile::tempdir().unwrap();
    // The reference server, started by a shell that first leaves a worker running beside it
    // (as a server does that runs a tool's long command): the server itself exits when its
    // stdin closes, the worker would not.
    let script = format!(
        "sleep 300 & exec node {} stdio",
        server_everything_entry().to_string_lossy()
    );
    let config = format!(
        "mcp_servers:\n  - name: everything\n    command: sh\n    args: [\"-c\", {}]\n",
        json!(script)
    );
    let path = dir.path().join("skein.yaml");
    std::fs::write(&path, config).unwrap();
    let mut served = skein_serve(dir.path(), &["--config", path.to_str().unwrap()]);
    let serve = served.child.id();
    let node = match children_running(serve, "server-everything")[..] {
        [node] => node,
        ref others => panic!("server-everything children of {serve}: {others:?}"),
    };
    let worker = match children_running(node, "sleep")[..] {
        [worker] => worker,
        ref others => panic!("sleep children of {node}: {others:?}"),
    };
    let body = json!({
        "model_config": {"model_id": "echo"},
        "input": {"text": tool_calls(&[(
            "everything__trigger-long-running-operation",
            json!({"duration": 60, "steps": 60}),
        )])},
        "tools": {"mcp_servers": [{"name": "everything"}]},
    });
    let mut events = Events::post(&served.address, &body.to_string());
    events.until_tool_start("everything__trigger-long-running-operation");
    std::thread::sleep(UNDER_WAY);
    // No shutdown runs: nothing but the end of skein serve tells its server to stop.
    signal(serve, "KILL");
    served.child.wait().unwrap();
    let running: Vec<String> = [("server-everything", node), ("its worker", worker)]
        .into_iter()
        .filter(|(_, pid)| !exited_within(*pid, PROMPTLY))
        .map(|(what, pid)| {
            // Not left behind by a failing test.
            let _ = std::process::Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
            format!("{what} ({pid})")
        })
        .collect();
    assert!(
        running.is_empty(),
        "still running after skein serve was killed mid-call: {running:?}"
    );
}

/// A stdio MCP server (Python, standard library only) that, once its tools are listed, sends
/// `count` log notifications of 1 KB each, then creates the file `done`.
const FLOODING_SERVER: &str = r#"
import json, sys
count, done = int(sys.argv[1]), sys.argv[2]
def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()
for line in sys.stdin:
    request = json.loads(line)
    method, id = request.get("method"), request.get("id")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": id, "result": {
            "protocolVersion": request["params"]["protocolVersion"],
            "capabilities": {"tools": {}, "logging": {}},
            "serverInfo": {"name": "flood", "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": id, "result": {"tools": []}})
        data = "x" * 1000
        for _ in range(count):
            send({"jsonrpc": "2.0", "method": "notifications/message",
                  "params": {"level": "info", "data": data}})
        open(done, "w").close()
    elif id is not None:
        send({"jsonrpc": "2.0", "id": id, "result": {}})
"#;

#[test]
fn a_notification_flood_does_not_flood_the_log() {
    // 20,000 notifications of 1 KB with RUST_LOG=info used to be 20,000 log lines of the
    // whole notification (1 M of them wrote 1.37 GB in 40 s).
    const COUNT: usize = 20_000;
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("flood.py");
    std::fs::write(&script, FLOODING_SERVER).unwrap();
    let done = dir.path().join("done");
    let spec = format!(
        "flood=python3 {} {COUNT} {}",
        script.display(),
        done.display()
    );
    for rust_log in ["info", "debug"] {
        let _ = std::fs::remove_file(&done);
        let mut command = crate::support::skein_process(dir.path());
        command.env("RUST_LOG", rust_log);
        let served =
            crate::support::serve_command(command, &["--mcp", &spec], crate::support::Stderr::Keep);
        let started = Instant::now();
        while !done.exists() {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "the flood did not end: {}",
                served.stderr()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        // What is still in the pipe is read and logged within moments.
        let mut logged = served.stderr().len();
        loop {
            std::thread::sleep(Duration::from_millis(500));
            let now = served.stderr().len();
            if now == logged || started.elapsed() > Duration::from_secs(90) {
                break;
            }
            logged = now;
        }
        let stderr = served.stderr();
        let lines = stderr.matches("notifications/message").count();
        // At debug, a few lines a second and the count of those left out; at info, none.
        assert!(
            stderr.len() < 64 * 1024 && lines < 200,
            "RUST_LOG={rust_log}: {} bytes, {lines} notification lines: {}",
            stderr.len(),
            &stderr[..stderr.len().min(2000)]
        );
        if rust_log == "debug" {
            assert!(lines > 0, "{stderr}");
        }
    }
}

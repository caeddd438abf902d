//! Shared by the `skein` process tests: a `skein` command with no provider keys, a loopback
//! HTTP server that records what it was sent, a `skein serve` child process, and signals and
//! child processes through `/proc`.
#![allow(unreachable_pub)]

use std::ffi::OsStr;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use assert_cmd::Command;
use serde_json::{Value, json};

/// A `skein` command logging into `dir/logs.db`, with no provider keys, default model or
/// tokens from the environment.
pub fn skein(dir: &Path) -> Command {
    Command::from_std(skein_process(dir))
}

/// [`skein`] as a `std` command, to spawn and watch while it runs.
pub fn skein_process(dir: &Path) -> std::process::Command {
    skein_logging_to(dir.join("logs.db"))
}

/// [`skein_process`] logging into `db`: a SQLite file or a PostgreSQL URL.
pub fn skein_logging_to(db: impl AsRef<OsStr>) -> std::process::Command {
    let mut command = std::process::Command::new(assert_cmd::cargo::cargo_bin("skein"));
    command
        .env("SKEIN_DB", db)
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("GEMINI_API_KEY")
        .env_remove("OPENROUTER_API_KEY")
        .env_remove("SKEIN_MODEL")
        .env_remove("SKEIN_API_KEY")
        .env_remove("SKEIN_TOKENS");
    command
}

/// One request the loopback server read: its request line, its headers and its body.
#[derive(Clone, Debug)]
pub struct Request {
    pub line: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    /// The value of the header `name` (any case), if sent.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(header, _)| header.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// The body as JSON, or `null` when it is not.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }
}

/// An HTTP server on loopback, each connection on its own thread: it reads one request,
/// records it, and writes `answer(n, request)` (`n` counts connections from 0) before closing.
/// Returns `http://ADDR` and the requests read so far, in order.
pub fn serve(
    answer: impl Fn(usize, &Request) -> Vec<u8> + Send + Sync + 'static,
) -> (String, Arc<Mutex<Vec<Request>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let requests = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&requests);
    let answer = Arc::new(answer);
    std::thread::spawn(move || {
        for (n, stream) in listener.incoming().enumerate() {
            let Ok(stream) = stream else { return };
            let seen = Arc::clone(&seen);
            let answer = Arc::clone(&answer);
            std::thread::spawn(move || {
                if let Some(request) = read_request(&stream) {
                    let response = answer(n, &request);
                    seen.lock().unwrap().push(request);
                    let _ = (&stream).write_all(&response);
                }
            });
        }
    });
    (url, requests)
}

/// The JSON bodies of the requests read so far, in order (`null` for one that is not JSON).
pub fn bodies(requests: &Mutex<Vec<Request>>) -> Vec<Value> {
    requests.lock().unwrap().iter().map(Request::json).collect()
}

/// The request line, headers and `Content-Length` body; `None` if the connection closed first.
fn read_request(stream: &TcpStream) -> Option<Request> {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return None;
    }
    let mut headers = Vec::new();
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).unwrap_or(0) == 0 {
            return None;
        }
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            headers.push((name.to_owned(), value.trim().to_owned()));
        }
    }
    let mut request = Request {
        line: line.trim().to_owned(),
        headers,
        body: Vec::new(),
    };
    let length = request
        .header("content-length")
        .and_then(|value| value.parse().ok())
        .unwrap_or(0);
    request.body = vec![0; length];
    let _ = reader.read_exact(&mut request.body);
    Some(request)
}

/// A `200 OK` carrying `body` as `content_type`, closing the connection.
pub fn ok(content_type: &str, body: &[u8]) -> Vec<u8> {
    let mut response = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    response.extend_from_slice(body);
    response
}

/// An OpenAI chat-completions stream: `delta` in one chunk, then `finish` in the next.
pub fn chat_stream(delta: Value, finish: &str) -> Vec<u8> {
    let chunk = |delta: Value, finish: Value| {
        json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1,
               "model": "gpt-4o-mini",
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let mut body = format!("data: {}\n\n", chunk(delta, Value::Null));
    body.push_str(&format!("data: {}\n\n", chunk(json!({}), json!(finish))));
    body.push_str("data: [DONE]\n\n");
    ok("text/event-stream", body.as_bytes())
}

/// A connection to `address` with a JSON `POST` of `body` to `path` written on it (the
/// server closes it after the answer), each read waiting at most `read_timeout`.
pub fn post_json(address: &str, path: &str, body: &str, read_timeout: Duration) -> TcpStream {
    let mut stream = TcpStream::connect(address).unwrap();
    stream.set_read_timeout(Some(read_timeout)).unwrap();
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    stream
}

/// The whole answer (status line, headers, body) to a JSON `POST` of `body` to `path` on
/// `address`, read until the server closes the connection (each read waits at most 30 s).
pub fn http_post(address: &str, path: &str, body: &str) -> String {
    let mut stream = post_json(address, path, body, Duration::from_secs(30));
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer
}

/// A `skein serve --listen 127.0.0.1:0` child process; stopped when dropped (SIGTERM, then
/// SIGKILL after 5 s), so that it can shut its MCP children down.
pub struct Served {
    pub child: Child,
    /// `IP:PORT`, from its `skein: serving http://…` line.
    pub address: String,
    stderr: Arc<Mutex<String>>,
}

/// What [`serve_command`] does with the server's stderr once it said where it serves.
pub enum Stderr {
    /// Reads on, into [`Served::stderr`], so that logging never blocks the server.
    Keep,
    /// Closes the pipe: every later write of the server to its stderr fails.
    Close,
}

/// Starts `skein serve` with `flags` and waits (at most 30 s) for the line naming its address;
/// the log lines before it are kept in [`Served::stderr`] like the rest.
pub fn skein_serve(dir: &Path, flags: &[&str]) -> Served {
    serve_command(skein_process(dir), flags, Stderr::Keep)
}

/// [`skein_serve`] with `command` (a `skein` command without arguments, as
/// [`skein_logging_to`] makes), and `stderr` deciding what becomes of its stderr after the
/// line naming its address.
pub fn serve_command(mut command: std::process::Command, flags: &[&str], stderr: Stderr) -> Served {
    let mut child = command
        .args(["serve", "--listen", "127.0.0.1:0"])
        .args(flags)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let kept = Arc::new(Mutex::new(String::new()));
    // Read on a thread, to wait with a limit; the thread hands the pipe back with the address,
    // for the caller to drain or close.
    let (send, receive) = mpsc::channel();
    let mut reader = BufReader::new(child.stderr.take().unwrap());
    let lines = Arc::clone(&kept);
    std::thread::spawn(move || {
        let mut line = String::new();
        while reader.read_line(&mut line).is_ok_and(|read| read > 0) {
            let text = line.trim_end_matches(['\n', '\r']);
            lines.lock().unwrap().push_str(&format!("{text}\n"));
            let address = text
                .strip_prefix("skein: serving http://")
                .and_then(|rest| rest.split_whitespace().next());
            if let Some(address) = address {
                let _ = send.send((address.to_owned(), reader));
                return;
            }
            line.clear();
        }
    });
    let (address, reader) = match receive.recv_timeout(Duration::from_secs(30)) {
        Ok(said) => said,
        Err(error) => {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "skein serve did not say where it serves ({error:?}): {}",
                kept.lock().unwrap()
            );
        }
    };
    match stderr {
        Stderr::Keep => {
            let lines = Arc::clone(&kept);
            std::thread::spawn(move || {
                for line in reader.lines() {
                    let Ok(line) = line else { return };
                    let mut kept = lines.lock().unwrap();
                    kept.push_str(&line);
                    kept.push('\n');
                }
            });
        }
        Stderr::Close => drop(reader),
    }
    Served {
        child,
        address,
        stderr: kept,
    }
}

impl Served {
    /// Everything it wrote to stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            signal(self.child.id(), "TERM");
            if wait_within(&mut self.child, Duration::from_secs(5)).is_none() {
                let _ = self.child.kill();
                let _ = self.child.wait();
            }
        }
    }
}

/// The lines `from` yields, read on a thread so that a test can wait for them with a limit.
pub fn read_lines(from: impl std::io::Read + Send + 'static) -> Receiver<String> {
    let (send, receive) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(from).lines() {
            let Ok(line) = line else { return };
            if send.send(line).is_err() {
                return;
            }
        }
    });
    receive
}

/// Receives lines until one satisfies `found` (returned with every line before it), or panics
/// naming `what` when the lines end or `limit` passes first.
pub fn line_where(
    lines: &Receiver<String>,
    limit: Duration,
    what: &str,
    found: impl Fn(&str) -> bool,
) -> (String, Vec<String>) {
    let deadline = Instant::now() + limit;
    let mut before = Vec::new();
    loop {
        match lines.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(line) if found(&line) => return (line, before),
            Ok(line) => before.push(line),
            Err(RecvTimeoutError::Timeout) => {
                panic!("no {what} within {limit:?}; read: {before:#?}")
            }
            Err(RecvTimeoutError::Disconnected) => panic!("no {what} before the end: {before:#?}"),
        }
    }
}

/// Sends the signal `name` (`INT`, `TERM`, `KILL`…) to the process `pid`.
pub fn signal(pid: u32, name: &str) {
    let status = std::process::Command::new("kill")
        .args([&format!("-{name}"), &pid.to_string()])
        .status()
        .expect("`kill` runs");
    assert!(status.success(), "kill -{name} {pid} failed");
}

/// Waits for `child` to exit; `None` when it still runs after `limit`.
pub fn wait_within(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        if Instant::now() >= deadline {
            return None;
        }
        // Short: the kill tests wait for hundreds of children in turn.
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The child processes of `pid` whose command line contains `needle`.
pub fn children_running(pid: u32, needle: &str) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    let mut children: Vec<u32> = tasks
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("children")).ok())
        .flat_map(|list| {
            list.split_whitespace()
                .filter_map(|child| child.parse().ok())
                .collect::<Vec<u32>>()
        })
        .filter(|child| {
            std::fs::read(format!("/proc/{child}/cmdline"))
                .is_ok_and(|cmdline| String::from_utf8_lossy(&cmdline).contains(needle))
        })
        .collect();
    children.sort_unstable();
    children.dedup();
    children
}

/// Whether the process `pid` has exited (gone, or a zombie nobody reaped yet) within `limit`.
pub fn exited_within(pid: u32, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        // The state is the first field after the command name in parentheses.
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|stat| stat.rsplit(')').next()?.trim().chars().next());
        if matches!(state, None | Some('Z')) {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The media logged with each tool response of a conversation (the latest one, or `cid`), as
/// `skein logs show --json` shows it: `(tool name, MIME type, base64 data)`, in order.
pub fn logged_tool_media(dir: &Path, cid: Option<&str>) -> Vec<(String, String, String)> {
    let output = skein(dir)
        .args(["logs", "show", "--json"])
        .args(cid)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let shown: Value = serde_json::from_slice(&output.stdout).unwrap();
    let mut media = Vec::new();
    for message in shown["messages"].as_array().expect("messages") {
        let parts = message["parts"].as_array().expect("parts");
        let Some(tool) = parts
            .iter()
            .find(|part| part["type"] == "tool_response")
            .and_then(|part| part["name"].as_str())
        else {
            continue;
        };
        for part in parts.iter().filter(|part| part["type"] == "binary") {
            media.push((
                tool.to_owned(),
                part["mime_type"].as_str().unwrap_or_default().to_owned(),
                part["data"].as_str().unwrap_or_default().to_owned(),
            ));
        }
    }
    media
}

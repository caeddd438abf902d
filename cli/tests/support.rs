//! Shared by the `skein` process tests: a `skein` command with no provider keys, a loopback
//! HTTP server that records what it was sent, and the reference MCP server's install.
#![allow(unreachable_pub)]

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use assert_cmd::Command;
use serde_json::{Value, json};

/// A `skein` command logging into `dir/logs.db`, with no provider keys, default model or
/// tokens from the environment.
pub fn skein(dir: &Path) -> Command {
    let mut command = Command::cargo_bin("skein").unwrap();
    command
        .env("SKEIN_DB", dir.join("logs.db"))
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

/// The installed `@modelcontextprotocol/server-everything` entry point; a missing install fails
/// the test with the hint to install it.
pub fn server_everything() -> PathBuf {
    ::mcp::testing::server_everything_entry()
}

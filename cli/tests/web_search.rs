//! `skein run --web-search searxng=URL`: the model's `web_search` reaches a SearxNG JSON API on
//! loopback, and what it found is the answer's sources in `--json` output.

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use assert_cmd::Command;
use serde_json::Value;

/// A SearxNG instance on loopback answering every search with one page; records request lines.
fn fake_searxng() -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let lines = Arc::clone(&seen);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut first = String::new();
            let _ = reader.read_line(&mut first);
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
                    break;
                }
            }
            lines.lock().unwrap().push(first.trim().to_owned());
            let body = serde_json::json!({"query": "rust", "results": [
                {"url": "https://www.rust-lang.org/", "title": "Rust Programming Language",
                 "content": "A language empowering <b>everyone</b>.", "engine": "duckduckgo"},
                {"url": "https://www.rust-lang.org/#top", "title": "Rust again",
                 "content": "The same page.", "engine": "bing"},
            ]})
            .to_string();
            let answer = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
                 Connection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(answer.as_bytes());
        }
    });
    (url, seen)
}

#[test]
fn the_models_web_search_reaches_searxng_and_its_pages_are_the_sources() {
    let dir = tempfile::tempdir().unwrap();
    let (url, seen) = fake_searxng();
    let calls = serde_json::json!({"tool_calls": [
        {"name": "web_search", "arguments": {"query": "rust"}},
    ]});
    let output = Command::cargo_bin("skein")
        .unwrap()
        .env("SKEIN_DB", dir.path().join("logs.db"))
        .env_remove("OPENAI_API_KEY")
        .env_remove("SKEIN_MODEL")
        .args(["run", "-m", "echo", "--json", "--web-search"])
        .arg(format!("searxng={url}"))
        .arg(calls.to_string())
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let request = seen.lock().unwrap()[0].clone();
    assert!(request.starts_with("GET /search?"), "{request}");
    assert!(
        request.contains("q=rust") && request.contains("format=json"),
        "{request}"
    );
    let events: Vec<Value> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let done = events
        .iter()
        .find(|event| event["event"] == "response.done")
        .unwrap();
    // One page (the second result is the same URL), its tags stripped.
    assert_eq!(
        done["data"]["sources"],
        serde_json::json!([{"title": "Rust Programming Language",
                            "location": "https://www.rust-lang.org/",
                            "passage": "A language empowering everyone."}])
    );
}

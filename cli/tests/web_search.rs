//! `skein run --web-search searxng=URL`: the model's `web_search` reaches a SearxNG JSON API on
//! loopback, and what it found is the answer's sources in `--json` output.

use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::support::{self, ok, skein};

/// A SearxNG instance on loopback answering every search with one page; records the requests.
fn fake_searxng() -> (String, Arc<Mutex<Vec<support::Request>>>) {
    support::serve(|_, _| {
        let body = serde_json::json!({"query": "rust", "results": [
            {"url": "https://www.rust-lang.org/", "title": "Rust Programming Language",
             "content": "A language empowering <b>everyone</b>.", "engine": "duckduckgo"},
            {"url": "https://www.rust-lang.org/#top", "title": "Rust again",
             "content": "The same page.", "engine": "bing"},
        ]});
        ok("application/json", body.to_string().as_bytes())
    })
}

#[test]
fn the_models_web_search_reaches_searxng_and_its_pages_are_the_sources() {
    let dir = tempfile::tempdir().unwrap();
    let (url, seen) = fake_searxng();
    let calls = serde_json::json!({"tool_calls": [
        {"name": "web_search", "arguments": {"query": "rust"}},
    ]});
    let output = skein(dir.path())
        .args(["run", "-m", "echo", "--json", "--web-search"])
        .arg(format!("searxng={url}"))
        .arg(calls.to_string())
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let request = seen.lock().unwrap()[0].line.clone();
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

//! One log line per request at `info`: what an operator's log holds after a streamed chat
//! completion, a whole Responses answer and a refused request, and what it never holds (the
//! bearer token, the prompt).

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use messages::Secret;
use serde_json::json;
use server::ServerConfig;

use crate::support::{TestServer, client};

const TOKEN: &str = "sk-skein-test-token-0123456789";
const PROMPT: &str = "the secret plans of the tortoise";

/// Everything the subscriber writes, as the CLI's `fmt` subscriber would.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }

    /// The request line with `request_id`, waiting for it a little: a stream's line is
    /// written when its body ends, which may be just after the client read the end.
    async fn line(&self, request_id: &str) -> String {
        for _ in 0..100 {
            if let Some(line) = self
                .text()
                .lines()
                .find(|line| line.contains("skein::request") && line.contains(request_id))
            {
                return line.to_owned();
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("no request line for {request_id}:\n{}", self.text());
    }
}

#[tokio::test]
async fn each_request_logs_one_line_without_secrets() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_env_filter("info")
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    // The test runtime has one thread: the server's tasks log through this subscriber.
    let _guard = tracing::subscriber::set_default(subscriber);
    let server = TestServer::start(ServerConfig {
        tokens: vec![Secret::new(TOKEN)],
        ..ServerConfig::default()
    })
    .await;

    // A streamed chat completion, with the client's request id.
    let response = client()
        .post(server.url("/v1/chat/completions"))
        .bearer_auth(TOKEN)
        .header("x-request-id", "client-req-42")
        .json(&json!({
            "model": "echo",
            "stream": true,
            "stream_options": {"include_usage": true},
            "messages": [{"role": "user", "content": PROMPT}],
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["x-request-id"], "client-req-42");
    let body = response.text().await.unwrap();
    assert!(body.contains("[DONE]"));
    let line = captured.line("request_id=client-req-42").await;
    for field in [
        " INFO ",
        "method=POST",
        "route=/v1/chat/completions",
        "status=200",
        "model=\"echo\"",
        "provider=\"skein\"",
        "tokens_in=",
        "tokens_out=",
        "ttft_ms=",
        "duration_ms=",
        "completed=true",
    ] {
        assert!(line.contains(field), "`{field}` is not in: {line}");
    }
    assert_eq!(
        captured.text().matches("request_id=client-req-42").count(),
        1,
        "one line per request"
    );

    // A whole Responses answer, without an id: one is made, sent back and logged.
    let response = client()
        .post(server.url("/v1/responses"))
        .bearer_auth(TOKEN)
        .json(&json!({"model": "echo", "input": PROMPT}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let id = response.headers()["x-request-id"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(id.starts_with("req-"), "{id}");
    response.bytes().await.unwrap();
    let line = captured.line(&format!("request_id={id}")).await;
    assert!(line.contains("route=/v1/responses"), "{line}");
    assert!(line.contains("tokens_out="), "{line}");

    // A refused request is logged too, under its route template.
    let response = client()
        .get(server.url("/v1/responses/resp_nothing_here"))
        .header("x-request-id", "client-req-43")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    let line = captured.line("request_id=client-req-43").await;
    assert!(line.contains("route=/v1/responses/{id}"), "{line}");
    assert!(line.contains("status=401"), "{line}");
    assert!(!line.contains("resp_nothing_here"), "the raw path: {line}");

    server.stop().await;
    let logged = captured.text();
    assert!(
        !logged.contains(TOKEN),
        "the bearer token was logged:\n{logged}"
    );
    assert!(!logged.contains(PROMPT), "the prompt was logged:\n{logged}");
}

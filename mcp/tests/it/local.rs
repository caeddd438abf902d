//! Servers that cannot start, do not speak MCP, or answer beyond the limits (no install
//! needed).

use std::time::{Duration, Instant};

use mcp::{McpError, McpServer, McpServerConfig};
use serde_json::json;

use crate::support::{assert_within, call, mcp_error, tool};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_program_names_the_command() {
    let config = McpServerConfig::parse("nope=skein-no-such-mcp-server --flag").unwrap();
    let error = McpServer::connect(config).await.unwrap_err();
    assert!(matches!(error, McpError::Spawn { .. }), "{error:?}");
    let message = error.to_string();
    assert!(message.contains("`skein-no-such-mcp-server`"), "{message}");
    assert!(message.contains("PATH"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_program_that_exits_fails_the_handshake_with_its_stderr() {
    let config = McpServerConfig::stdio(
        "dies",
        "sh",
        ["-c", "echo 'cannot open database' >&2; exit 3"],
    )
    .unwrap();
    let error = McpServer::connect(config).await.unwrap_err();
    match &error {
        McpError::Handshake { stderr, .. } => {
            assert_eq!(stderr.as_deref(), Some("cannot open database"), "{error}");
        }
        other => panic!("expected a handshake error, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_program_times_out_connecting() {
    let config = McpServerConfig::stdio("mute", "sleep", ["30"])
        .unwrap()
        .with_timeout(Duration::from_millis(500));
    let started = Instant::now();
    let error = McpServer::connect(config).await.unwrap_err();
    assert!(matches!(error, McpError::Timeout { .. }), "{error:?}");
    assert_within(started, Duration::from_secs(5));
}

/// A stdio MCP server in Python whose `big` tool answers with a 17 MiB text and whose `small`
/// tool answers "ok". Its first argument says where a response puts its id: `first` (the Rust
/// and Python SDKs) or `last` (the TypeScript SDK).
const HUGE_ANSWERS: &str = r#"
import json, sys
id_last = sys.argv[1] == "last"
def send(id, result):
    body = json.dumps(result)
    if id_last:
        line = '{"result":%s,"jsonrpc":"2.0","id":%s}' % (body, json.dumps(id))
    else:
        line = '{"jsonrpc":"2.0","id":%s,"result":%s}' % (json.dumps(id), body)
    sys.stdout.write(line + "\n")
    sys.stdout.flush()
for line in sys.stdin:
    message = json.loads(line)
    method, id = message.get("method"), message.get("id")
    if id is None:
        continue
    if method == "initialize":
        send(id, {"protocolVersion": message["params"]["protocolVersion"],
                  "capabilities": {"tools": {}}, "serverInfo": {"name": "huge", "version": "1"}})
    elif method == "tools/list":
        schema = {"type": "object"}
        send(id, {"tools": [{"name": "big", "inputSchema": schema},
                            {"name": "small", "inputSchema": schema}]})
    elif method == "tools/call":
        size = 17 * 1024 * 1024 if message["params"]["name"] == "big" else 2
        text = "x" * size if size > 2 else "ok"
        send(id, {"content": [{"type": "text", "text": text}]})
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_over_the_message_limit_fails_its_call_at_once() {
    for id_at in ["first", "last"] {
        let timeout = Duration::from_secs(30);
        let config = McpServerConfig::stdio("huge", "python3", ["-c", HUGE_ANSWERS, id_at])
            .unwrap()
            .with_timeout(timeout);
        let server = McpServer::connect(config).await.unwrap();
        let started = Instant::now();
        let error = call(&tool(&server, "huge__big"), json!({}))
            .await
            .unwrap_err();
        // It used to be dropped unread, and the call waited out its whole timeout.
        assert_within(started, timeout / 3);
        let Some(McpError::MessageTooLarge {
            server: name,
            limit_bytes,
        }) = mcp_error(&error)
        else {
            panic!("{id_at}: {error:?}");
        };
        assert_eq!((name.as_str(), *limit_bytes), ("huge", 16 * 1024 * 1024));
        let message = error.to_string();
        assert!(message.contains("more than 16777216 bytes"), "{message}");
        assert!(message.contains("ask for less"), "{message}");
        // The server stays usable.
        let ok = call(&tool(&server, "huge__small"), json!({}))
            .await
            .unwrap();
        assert_eq!(ok.text, json!("ok"), "{id_at}");
        server.close().await;
    }
}

/// A loopback HTTP server answering every request with `head` (no body), counting the
/// connections it accepted.
async fn answering(head: String) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let accepted = std::sync::Arc::new(AtomicUsize::new(0));
    let count = std::sync::Arc::clone(&accepted);
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            let head = head.clone();
            tokio::spawn(async move {
                let mut request = Vec::new();
                let mut buf = [0u8; 4096];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                let _ = socket.write_all(head.as_bytes()).await;
            });
        }
    });
    (url, accepted)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_to_another_origin_is_refused_and_named() {
    use std::sync::atomic::Ordering;
    // The other origin: reaching it would hand it the bearer token and the message.
    let (elsewhere, reached) = answering("HTTP/1.1 404 Not Found\r\n\r\n".into()).await;
    for status in [
        "307 Temporary Redirect",
        "308 Permanent Redirect",
        "302 Found",
    ] {
        let (url, _) = answering(format!(
            "HTTP/1.1 {status}\r\nLocation: {elsewhere}?token=leak-me\r\nContent-Length: 0\r\n\r\n"
        ))
        .await;
        let config = McpServerConfig::http("web", &url)
            .unwrap()
            .with_bearer(mcp::Secret::new("bearer-4242"))
            .with_timeout(Duration::from_secs(10));
        let error = McpServer::connect(config).await.unwrap_err();
        let code: u16 = status[..3].parse().unwrap();
        assert!(
            matches!(&error, McpError::Redirected { status, location, .. }
                if *status == code && *location == elsewhere),
            "{status}: {error:?}"
        );
        let message = error.to_string();
        assert!(message.contains(&elsewhere), "{message}");
        assert!(
            !message.contains("leak-me") && !message.contains("4242"),
            "{message}"
        );
    }
    assert_eq!(
        reached.load(Ordering::SeqCst),
        0,
        "the redirect was followed"
    );
}

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

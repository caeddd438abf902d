//! Servers that cannot start or do not speak MCP (no install needed).

use std::time::{Duration, Instant};

use mcp::{McpError, McpServer, McpServerConfig};

use crate::support::assert_within;

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

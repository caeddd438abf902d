//! Against the Python SDK's `MCPServer` (FastMCP) over streamable HTTP.

use std::time::{Duration, Instant};

use base64::Engine as _;
use mcp::{McpError, McpServer, Secret};
use serde_json::json;
use toolchain::{ContentPart, ToolError};

use crate::support::{FastMcp, assert_cancelled_promptly, assert_within, call, mcp_error, tool};

/// The PNG `image()` returns (see `xtask/mcp/fastmcp_server.py`).
const RED_PIXEL_PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC";

async fn connect(server: &FastMcp) -> McpServer {
    McpServer::connect(server.config("py"))
        .await
        .unwrap_or_else(|error| panic!("the FastMCP server did not connect: {error}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_and_calls_tools_over_http() {
    let python = FastMcp::start(None);
    let server = connect(&python).await;
    let names: Vec<&str> = server
        .tool_list()
        .iter()
        .map(|tool| tool.name.as_str())
        .collect();
    for name in ["py__add", "py__fail", "py__slow", "py__image"] {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
    let add = server
        .tool_list()
        .iter()
        .find(|tool| tool.name == "py__add")
        .unwrap();
    assert_eq!(add.original_name, "add");
    assert_eq!(add.description, "Adds two integers.");
    assert_eq!(add.input_schema["type"], "object");
    assert_eq!(add.input_schema["properties"]["a"]["type"], "integer");
    assert_eq!(server.info().name.as_deref(), Some("skein-test-fastmcp"));

    let result = call(&tool(&server, "py__add"), json!({"a": 2, "b": 3}))
        .await
        .unwrap();
    assert_eq!(result.text, json!("5"));
    server.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exception_is_a_failed_call_with_its_text() {
    let python = FastMcp::start(None);
    let server = connect(&python).await;
    let error = call(
        &tool(&server, "py__fail"),
        json!({"message": "disk on fire"}),
    )
    .await
    .unwrap_err();
    assert!(matches!(error, ToolError::Failed { .. }), "{error:?}");
    assert!(error.to_string().contains("disk on fire"), "{error}");
    server.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_comes_back_as_png_bytes() {
    let python = FastMcp::start(None);
    let server = connect(&python).await;
    let result = call(&tool(&server, "py__image"), json!({})).await.unwrap();
    let png = base64::engine::general_purpose::STANDARD
        .decode(RED_PIXEL_PNG)
        .unwrap();
    assert_eq!(result.media, [ContentPart::binary("image/png", png)]);
    server.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellation_reaches_the_server() {
    let python = FastMcp::start(None);
    let server = connect(&python).await;
    assert_cancelled_promptly(&tool(&server, "py__slow"), json!({"seconds": 30})).await;

    // The server saw `notifications/cancelled` and stopped the sleep.
    let cancellations = tool(&server, "py__cancellations");
    let started = Instant::now();
    loop {
        let count = call(&cancellations, json!({})).await.unwrap().text;
        if count == json!("1") {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the server counted {count} cancellations"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    server.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timeout_ends_the_call_and_the_server_stays_usable() {
    let python = FastMcp::start(None);
    let server = McpServer::connect(python.config("py").with_timeout(Duration::from_secs(1)))
        .await
        .unwrap();
    let error = call(&tool(&server, "py__slow"), json!({"seconds": 30}))
        .await
        .unwrap_err();
    assert!(matches!(error, ToolError::Timeout { .. }), "{error:?}");
    let result = call(&tool(&server, "py__add"), json!({"a": 1, "b": 1}))
        .await
        .unwrap();
    assert_eq!(result.text, json!("2"));
    server.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bearer_token_is_sent_and_a_wrong_one_is_a_clear_error() {
    let python = FastMcp::start(Some("right-token-123"));
    let error = McpServer::connect(
        python
            .config("py")
            .with_bearer(Secret::new("wrong-token-456")),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(error, McpError::HttpStatus { status: 401, .. }),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(!message.contains("wrong-token-456"), "{message}");
    assert!(!format!("{error:?}").contains("wrong-token-456"));

    let error = McpServer::connect(python.config("py")).await.unwrap_err();
    assert!(
        matches!(error, McpError::HttpStatus { status: 401, .. }),
        "{error:?}"
    );

    let server = McpServer::connect(
        python
            .config("py")
            .with_bearer(Secret::new("right-token-123")),
    )
    .await
    .unwrap();
    let result = call(&tool(&server, "py__add"), json!({"a": 20, "b": 22}))
        .await
        .unwrap();
    assert_eq!(result.text, json!("42"));
    server.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_mid_call_fails_that_call_and_the_next_promptly() {
    let mut python = FastMcp::start(None);
    let server = connect(&python).await;
    let slow = tool(&server, "py__slow");
    let add = tool(&server, "py__add");
    let slow_call = tokio::spawn(async move {
        let started = Instant::now();
        let result = call(&slow, json!({"seconds": 30})).await;
        (result, started.elapsed())
    });
    tokio::time::sleep(Duration::from_millis(700)).await;
    python.kill();
    let (result, elapsed) = slow_call.await.unwrap();
    let error = result.unwrap_err();
    assert!(elapsed < Duration::from_secs(8), "{elapsed:?}");
    assert!(
        matches!(mcp_error(&error), Some(McpError::Stopped { server, .. }) if server == "py"),
        "{error:?}"
    );

    let started = Instant::now();
    let error = call(&add, json!({"a": 1, "b": 2})).await.unwrap_err();
    assert_within(started, Duration::from_secs(2));
    assert!(
        matches!(mcp_error(&error), Some(McpError::Stopped { .. })),
        "{error:?}"
    );
    server.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_url_says_so() {
    // Port 9 (discard) on loopback: nothing listens there.
    let config = mcp::McpServerConfig::http("gone", "http://127.0.0.1:9/mcp").unwrap();
    let error = McpServer::connect(config).await.unwrap_err();
    assert!(matches!(error, McpError::Unreachable { .. }), "{error:?}");
    assert!(
        error.to_string().contains("http://127.0.0.1:9/mcp"),
        "{error}"
    );
}

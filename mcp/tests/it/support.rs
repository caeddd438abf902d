//! Connecting to the installed servers (found and started by `mcp::testing`), and small
//! helpers.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

pub(crate) use mcp::testing::{FastMcp, everything_config};
use mcp::{McpError, McpServer};
use serde_json::{Value, json};
use toolchain::{CancellationToken, DynTool, ExecutionContext, ToolError, ToolResult};

pub(crate) async fn everything(name: &str) -> McpServer {
    McpServer::connect(everything_config(name))
        .await
        .unwrap_or_else(|error| panic!("server-everything did not connect: {error}"))
}

/// The tool called `name` (as the model sees it).
pub(crate) fn tool(server: &McpServer, name: &str) -> DynTool {
    server
        .tools()
        .into_iter()
        .find(|tool| tool.name() == name)
        .unwrap_or_else(|| panic!("no tool {name} in {:?}", server.tool_list()))
}

/// Calls `tool` with `input` under a fresh context.
pub(crate) async fn call(tool: &DynTool, input: Value) -> Result<ToolResult<Value>, ToolError> {
    tool.call_json(&ExecutionContext::new(), input).await
}

/// Calls server-everything's `echo` with `message` and checks the echo.
pub(crate) async fn assert_echoes(echo: &DynTool, message: &str) {
    let result = call(echo, json!({ "message": message })).await.unwrap();
    assert_eq!(result.text, json!(format!("Echo: {message}")));
}

/// Calls `tool` with `input` (a long call), cancels the context after 500 ms and checks that
/// the call ends as cancelled within 5 s of its start.
pub(crate) async fn assert_cancelled_promptly(tool: &DynTool, input: Value) {
    let cancel = CancellationToken::new();
    let ctx = ExecutionContext::new().with_cancellation(cancel.clone());
    let canceller = tokio::spawn({
        let cancel = cancel.clone();
        async move {
            tokio::time::sleep(Duration::from_millis(500)).await;
            cancel.cancel();
        }
    });
    let started = Instant::now();
    let error = tool.call_json(&ctx, input).await.unwrap_err();
    canceller.await.unwrap();
    assert!(matches!(error, ToolError::Cancelled { .. }), "{error:?}");
    assert_within(started, Duration::from_secs(5));
}

/// Asserts that less than `limit` has passed since `started`.
#[track_caller]
pub(crate) fn assert_within(started: Instant, limit: Duration) {
    let elapsed = started.elapsed();
    assert!(elapsed < limit, "{elapsed:?}");
}

/// The `McpError` a tool error carries, if any.
pub(crate) fn mcp_error(error: &ToolError) -> Option<&McpError> {
    McpError::from_tool_error(error)
}

/// Kills a process with SIGKILL.
pub(crate) fn kill(pid: u32) {
    let status = Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .expect("`kill` runs");
    assert!(status.success(), "kill -KILL {pid} failed");
}

/// Waits until `/proc/<pid>` is gone (exited and reaped); false after `limit`.
pub(crate) async fn reaped_within(pid: u32, limit: Duration) -> bool {
    let started = Instant::now();
    while started.elapsed() < limit {
        if !Path::new(&format!("/proc/{pid}")).exists() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

//! Finding the installed servers, starting the HTTP one, and small helpers.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use mcp::{McpError, McpServer, McpServerConfig};
use serde_json::{Value, json};
use tokio::task::JoinHandle;
use toolchain::{CancellationToken, DynTool, ExecutionContext, ToolError, ToolResult};

const INSTALL_HINT: &str = "run `cargo xtask mcp-servers` (needs the npm registry and PyPI)";

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the mcp crate sits in the workspace")
        .to_owned()
}

/// `$CARGO_TARGET_DIR` (relative to the workspace root) or `target/`, then `xtask-mcp/`.
fn install_dir() -> PathBuf {
    let target = match std::env::var_os("CARGO_TARGET_DIR").filter(|dir| !dir.is_empty()) {
        Some(dir) => workspace_root().join(dir),
        None => workspace_root().join("target"),
    };
    target.join("xtask-mcp")
}

fn installed(path: PathBuf, what: &str) -> PathBuf {
    assert!(
        path.exists(),
        "{what} is not installed at {}: {INSTALL_HINT}",
        path.display()
    );
    path
}

/// `server-everything` over stdio, run with `node` (which must be on PATH).
pub(crate) fn everything_config(name: &str) -> McpServerConfig {
    let entry = installed(
        install_dir()
            .join("node/node_modules/@modelcontextprotocol/server-everything/dist/index.js"),
        "@modelcontextprotocol/server-everything",
    );
    McpServerConfig::stdio(
        name,
        "node",
        [entry.to_string_lossy().into_owned(), "stdio".into()],
    )
    .expect("a valid config")
}

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

/// Cancels `cancel` after `delay`, on a task to await.
pub(crate) fn cancel_after(cancel: &CancellationToken, delay: Duration) -> JoinHandle<()> {
    let cancel = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(delay).await;
        cancel.cancel();
    })
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

/// The Python SDK's server (`xtask/mcp/fastmcp_server.py`) on a free loopback port, killed on
/// drop.
pub(crate) struct FastMcp {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl FastMcp {
    /// Starts it; with `token`, requests must carry that bearer token.
    pub(crate) fn start(token: Option<&str>) -> FastMcp {
        let python = installed(
            install_dir().join("venv/bin/python"),
            "the Python `mcp` SDK virtualenv",
        );
        let script = workspace_root().join("xtask/mcp/fastmcp_server.py");
        let dir = tempfile::tempdir().expect("a temporary directory");
        let port_file = dir.path().join("port");
        let mut command = Command::new(python);
        command
            .arg(&script)
            .arg("--port-file")
            .arg(&port_file)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .env_remove("SKEIN_TEST_MCP_TOKEN");
        if let Some(token) = token {
            command.env("SKEIN_TEST_MCP_TOKEN", token);
        }
        let mut child = command.spawn().expect("python starts");
        let started = Instant::now();
        let port = loop {
            if let Ok(text) = std::fs::read_to_string(&port_file)
                && let Ok(port) = text.trim().parse()
            {
                break port;
            }
            if let Ok(Some(status)) = child.try_wait() {
                panic!("fastmcp_server.py exited with {status} before listening ({INSTALL_HINT}?)");
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "fastmcp_server.py did not write its port within 30 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        FastMcp {
            child,
            port,
            _dir: dir,
        }
    }

    pub(crate) fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    pub(crate) fn config(&self, name: &str) -> McpServerConfig {
        McpServerConfig::http(name, self.url()).expect("a valid config")
    }

    /// Kills the server (SIGKILL) and reaps it.
    pub(crate) fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for FastMcp {
    fn drop(&mut self) {
        self.kill();
    }
}

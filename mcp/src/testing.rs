//! The real MCP servers that end-to-end tests run against, as installed by
//! `cargo xtask mcp-servers`: the reference server `@modelcontextprotocol/server-everything`
//! (stdio, run with `node`) and the Python SDK's server `xtask/mcp/fastmcp_server.py`
//! (streamable HTTP, run from the virtualenv the same task builds).
//!
//! Both live under `$CARGO_TARGET_DIR/xtask-mcp/` (a relative `CARGO_TARGET_DIR` is taken
//! from the workspace root) or `<workspace>/target/xtask-mcp/`. A missing install panics with
//! [`INSTALL_HINT`]: tests that need a server fail instead of silently skipping.
//!
//! ```no_run
//! use mcp::testing::{FastMcp, everything_config};
//!
//! let everything = everything_config("everything");
//! let python = FastMcp::start(None);
//! let py = python.config("py");
//! # let _ = (everything, py);
//! ```

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::McpServerConfig;

/// What to do when a server is not installed; every panic about a missing install says it.
pub const INSTALL_HINT: &str = "run `cargo xtask mcp-servers` (needs the npm registry and PyPI)";

/// How long [`FastMcp::start`] waits for the Python server to listen.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// The workspace's root directory (where `Cargo.lock` and `xtask/` are).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the mcp crate sits in the workspace")
        .to_owned()
}

/// Where `cargo xtask mcp-servers` installs the servers: `$CARGO_TARGET_DIR` (relative to the
/// workspace root when relative) or `<workspace>/target`, then `xtask-mcp/`.
pub fn install_dir() -> PathBuf {
    let root = workspace_root();
    let target = match std::env::var_os("CARGO_TARGET_DIR").filter(|dir| !dir.is_empty()) {
        Some(dir) => root.join(dir),
        None => root.join("target"),
    };
    target.join("xtask-mcp")
}

/// `path`, or a panic naming `what` and [`INSTALL_HINT`] when it does not exist.
#[track_caller]
fn installed(path: PathBuf, what: &str) -> PathBuf {
    assert!(
        path.exists(),
        "{what} is not installed at {}: {INSTALL_HINT}",
        path.display()
    );
    path
}

/// The installed `@modelcontextprotocol/server-everything` entry point (a script for `node`,
/// which must be on `PATH`; its argument `stdio` selects the stdio transport).
///
/// # Panics
///
/// When it is not installed, with [`INSTALL_HINT`].
#[track_caller]
pub fn server_everything_entry() -> PathBuf {
    installed(
        install_dir()
            .join("node/node_modules/@modelcontextprotocol/server-everything/dist/index.js"),
        "@modelcontextprotocol/server-everything",
    )
}

/// server-everything over stdio under the name `name`: `node <entry> stdio`.
///
/// # Panics
///
/// When it is not installed, with [`INSTALL_HINT`], or when `name` is not a valid server name.
#[track_caller]
pub fn everything_config(name: &str) -> McpServerConfig {
    McpServerConfig::stdio(name, "node", everything_args()).expect("a valid config")
}

/// server-everything in the command-line form `NAME=node <entry> stdio` (`--mcp`,
/// `skein mcp list`).
///
/// # Panics
///
/// When it is not installed, with [`INSTALL_HINT`].
#[track_caller]
pub fn everything_spec(name: &str) -> String {
    format!("{name}=node {}", everything_args().join(" "))
}

#[track_caller]
fn everything_args() -> [String; 2] {
    [
        server_everything_entry().to_string_lossy().into_owned(),
        "stdio".to_owned(),
    ]
}

/// The Python SDK's server (`xtask/mcp/fastmcp_server.py`) listening on a free loopback port,
/// serving MCP at `/mcp`; killed (SIGKILL) and reaped on drop.
///
/// Its tools: `add(a, b)` answers the sum as text, `fail(message)` is an `isError` result
/// with `message`, `slow(seconds)` sleeps, `image()` is a 1x1 red PNG, and `cancellations()`
/// counts the `slow` calls a client cancelled (see the script's docstring).
#[derive(Debug)]
pub struct FastMcp {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl FastMcp {
    /// Starts the server and waits until it listens; with `token`, every request must carry
    /// `Authorization: Bearer <token>`.
    ///
    /// # Panics
    ///
    /// When the virtualenv is not installed (with [`INSTALL_HINT`]), or the server exits or
    /// does not listen within 30 seconds.
    #[track_caller]
    pub fn start(token: Option<&str>) -> FastMcp {
        Self::start_on(0, token)
    }

    /// Kills the server if it runs, and starts a new one on the same port (a restarted
    /// deployment: the new process knows none of the old one's sessions).
    ///
    /// # Panics
    ///
    /// As [`start`](Self::start); also when the port cannot be listened on again.
    #[track_caller]
    pub fn restart(&mut self, token: Option<&str>) {
        self.kill();
        let port = self.port;
        *self = Self::start_on(port, token);
    }

    #[track_caller]
    fn start_on(port: u16, token: Option<&str>) -> FastMcp {
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
            .arg("--port")
            .arg(port.to_string())
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
            if started.elapsed() > START_TIMEOUT {
                let _ = child.kill();
                let _ = child.wait();
                panic!("fastmcp_server.py did not write its port within {START_TIMEOUT:?}");
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        FastMcp {
            child,
            port,
            _dir: dir,
        }
    }

    /// Its MCP endpoint, `http://127.0.0.1:PORT/mcp`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    /// The server under the name `name`, over streamable HTTP without a bearer token.
    ///
    /// # Panics
    ///
    /// When `name` is not a valid server name.
    pub fn config(&self, name: &str) -> McpServerConfig {
        McpServerConfig::http(name, self.url()).expect("a valid config")
    }

    /// The Python process's id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Kills the server (SIGKILL) and reaps it; nothing happens when it is already gone.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for FastMcp {
    fn drop(&mut self) {
        self.kill();
    }
}

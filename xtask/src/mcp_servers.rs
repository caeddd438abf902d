//! `cargo xtask mcp-servers`: installs the real MCP servers the `mcp` crate's end-to-end tests
//! run against, under `target/xtask-mcp/` (or `$CARGO_TARGET_DIR/xtask-mcp/`):
//!
//! - `node/`: the reference server `@modelcontextprotocol/server-everything` (stdio), from the
//!   npm registry, with `npm ci` from the manifest and lockfile committed in `xtask/mcp/`
//!   (`package.json`, `package-lock.json`: an exact version, every dependency pinned by
//!   integrity hash). Install scripts are not run.
//! - `venv/`: a Python virtualenv with the official `mcp` SDK from PyPI, pinned with all its
//!   dependencies in `xtask/mcp/requirements.txt`; the tests run `xtask/mcp/fastmcp_server.py`
//!   (streamable HTTP) with its Python.
//!
//! Each half is reinstalled only when its pinned files changed (a stamp beside the install holds
//! what was installed), so a second run takes well under a second. It needs the npm registry
//! and PyPI (no other network) and `node` + `npm` and `python3` with the `venv` module; when
//! one is missing or unreachable the step fails and says which: the tests never skip.

use std::path::PathBuf;

use crate::cmd::target_dir;

/// The server-everything entry point, relative to the npm prefix.
const EVERYTHING_ENTRY: &str = "node_modules/@modelcontextprotocol/server-everything/dist/index.js";

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    if args.iter().any(|arg| arg == "-h" || arg == "--help") {
        println!(
            "usage: cargo xtask mcp-servers\n\
             installs @modelcontextprotocol/server-everything (npm) and the Python `mcp` SDK \
             (PyPI) under target/xtask-mcp/, for `cargo nextest run -p mcp`"
        );
        return Ok(());
    }
    if let Some(extra) = args.first() {
        return Err(format!("`mcp-servers` takes no arguments, got `{extra}`"));
    }
    let dir = target_dir().join("xtask-mcp");
    everything()?;
    crate::venv::ensure(&dir, "mcp/requirements.txt", "mcp-servers python")
        .map_err(|err| format!("{err} (the Python `mcp` SDK comes from PyPI)"))?;
    eprintln!("mcp-servers: installed under {}", dir.display());
    Ok(())
}

/// Installs server-everything when it is missing or its pinned files changed (the node half of
/// [`run`]); the path of its entry point, which `node <entry> stdio` starts.
pub(crate) fn everything() -> Result<PathBuf, String> {
    let prefix = target_dir().join("xtask-mcp").join("node");
    crate::npm::ensure(
        "mcp",
        &prefix,
        EVERYTHING_ENTRY,
        "mcp-servers node",
        "needs node and npm, and the npm registry for @modelcontextprotocol/server-everything",
    )?;
    Ok(prefix.join(EVERYTHING_ENTRY))
}

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

use std::fs;
use std::path::Path;
use std::process::Command;

use crate::cmd::{step, target_dir, workspace_root};

/// The server-everything entry point, relative to the npm prefix.
const EVERYTHING_ENTRY: &str = "node_modules/@modelcontextprotocol/server-everything/dist/index.js";
/// The npm files copied into the prefix; their concatenation is the stamp.
const NPM_FILES: &[&str] = &["package.json", "package-lock.json"];

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
    install_node(&dir.join("node"))?;
    crate::venv::ensure(&dir, "mcp/requirements.txt", "mcp-servers python")
        .map_err(|err| format!("{err} (the Python `mcp` SDK comes from PyPI)"))?;
    eprintln!("mcp-servers: installed under {}", dir.display());
    Ok(())
}

/// `npm ci` of `xtask/mcp/package*.json` into `prefix`, unless exactly those are installed.
fn install_node(prefix: &Path) -> Result<(), String> {
    let source = workspace_root().join("xtask").join("mcp");
    let mut wanted = String::new();
    for file in NPM_FILES {
        let path = source.join(file);
        wanted.push_str(
            &fs::read_to_string(&path).map_err(|err| format!("{}: {err}", path.display()))?,
        );
    }
    let stamp = prefix.join("installed-package-lock.json");
    if prefix.join(EVERYTHING_ENTRY).exists()
        && fs::read_to_string(&stamp).is_ok_and(|installed| installed == wanted)
    {
        eprintln!("mcp-servers node: reusing {}", prefix.display());
        return Ok(());
    }
    let _ = fs::remove_dir_all(prefix);
    fs::create_dir_all(prefix).map_err(|err| format!("{}: {err}", prefix.display()))?;
    for file in NPM_FILES {
        fs::copy(source.join(file), prefix.join(file))
            .map_err(|err| format!("copying {file} to {}: {err}", prefix.display()))?;
    }
    step(
        "mcp-servers node install",
        Command::new("npm")
            .args([
                "ci",
                "--ignore-scripts",
                "--no-audit",
                "--no-fund",
                "--prefix",
            ])
            .arg(prefix),
    )
    .map_err(|err| {
        format!(
            "{err} (needs node and npm, and the npm registry for \
             @modelcontextprotocol/server-everything)"
        )
    })?;
    if !prefix.join(EVERYTHING_ENTRY).exists() {
        return Err(format!(
            "npm ci finished but {} is missing; check xtask/mcp/package-lock.json",
            prefix.join(EVERYTHING_ENTRY).display()
        ));
    }
    fs::write(&stamp, wanted).map_err(|err| format!("{}: {err}", stamp.display()))?;
    Ok(())
}

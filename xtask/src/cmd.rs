//! Running commands with a visible trace.

use std::ffi::OsStr;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

/// The workspace root (the parent of this crate's directory).
pub(crate) fn workspace_root() -> PathBuf {
    let manifest_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest_dir
        .parent()
        .map(PathBuf::from)
        .unwrap_or(manifest_dir)
}

/// Cargo's target directory: `$CARGO_TARGET_DIR` (relative to the workspace root) when set,
/// else `target/` in the workspace, where the binaries a step builds are found.
pub(crate) fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR").filter(|dir| !dir.is_empty()) {
        Some(dir) => workspace_root().join(dir),
        None => workspace_root().join("target"),
    }
}

/// Removes from `command`'s environment every variable named `*_API_KEY`: each provider's key
/// variable (whatever providers Skein has), `SKEIN_API_KEY`, search backend keys. A server
/// started for a check or a bench then holds only the keys the step gives it, and no real key
/// is sent anywhere, even to loopback.
pub(crate) fn remove_api_keys(command: &mut Command) {
    for (name, _) in std::env::vars_os() {
        if name.to_str().is_some_and(|name| name.ends_with("_API_KEY")) {
            command.env_remove(name);
        }
    }
}

/// `cargo` as cargo itself was invoked (respects `$CARGO`), without the variables `cargo run`
/// set for xtask itself: build scripts that watch them (ring's watches `CARGO_MANIFEST_DIR`
/// and `CARGO_PKG_*`) would otherwise see other values than in a build from a shell, and
/// every build would recompile them and all that depends on them.
pub(crate) fn cargo() -> Command {
    let mut command = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    command.current_dir(workspace_root());
    for (name, _) in std::env::vars_os() {
        if name.to_str().is_some_and(set_by_cargo_run) {
            command.env_remove(name);
        }
    }
    command
}

/// Whether `name` is one of the variables `cargo run` sets for the program it runs.
fn set_by_cargo_run(name: &str) -> bool {
    name.starts_with("CARGO_PKG_")
        || matches!(
            name,
            "CARGO_MANIFEST_DIR"
                | "CARGO_MANIFEST_PATH"
                | "CARGO_MANIFEST_LINKS"
                | "CARGO_CRATE_NAME"
                | "CARGO_BIN_NAME"
                | "CARGO_PRIMARY_PACKAGE"
                | "OUT_DIR"
        )
}

/// Runs `command`, printing it first and its duration after; a non-zero exit is an error that
/// names the step.
pub(crate) fn step(step: &str, command: &mut Command) -> Result<(), String> {
    let shown = std::iter::once(command.get_program())
        .chain(command.get_args())
        .map(OsStr::to_string_lossy)
        .collect::<Vec<_>>()
        .join(" ");
    eprintln!("\n==> {step}: {shown}");
    let started = Instant::now();
    let status = command
        .status()
        .map_err(|err| format!("{step}: could not start `{shown}`: {err}"))?;
    eprintln!("<== {step}: {status} in {:.1?}", started.elapsed());
    if status.success() {
        Ok(())
    } else {
        Err(format!("{step} failed ({status}): `{shown}`"))
    }
}

/// Whether `cargo <subcommand> --version` works (an installed cargo plugin such as nextest).
pub(crate) fn has_cargo_subcommand(subcommand: &str) -> bool {
    cargo()
        .args([subcommand, "--version"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// Builds the debug `skein` binary the API steps serve with; its path. Built with the whole
/// workspace's features, as the lints and tests build it, so that after them (in `ci`, or on a
/// developer's machine) this is a no-op instead of a second build of every dependency.
pub(crate) fn build_skein() -> Result<PathBuf, String> {
    step(
        "build skein",
        cargo().args([
            "build",
            "--locked",
            "--workspace",
            "--all-features",
            "--bin",
            "skein",
        ]),
    )?;
    Ok(target_dir().join("debug").join("skein"))
}

/// An empty folder for this process's run under `dir` (logs, configs, stores), so that two
/// runs never share files.
pub(crate) fn fresh_run_dir(dir: &std::path::Path) -> Result<PathBuf, String> {
    let run_dir = dir.join(format!("run-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&run_dir);
    std::fs::create_dir_all(&run_dir).map_err(|err| format!("{}: {err}", run_dir.display()))?;
    Ok(run_dir)
}

/// Sends SIGTERM to `child` and waits up to `timeout` for it to exit; its exit status, or why
/// there is none (a process still running then is killed with its descendants).
pub(crate) fn terminate(
    child: &mut Child,
    name: &str,
    timeout: Duration,
) -> Result<ExitStatus, String> {
    bench::process::terminate(child, name, timeout).map_err(|err| err.to_string())
}

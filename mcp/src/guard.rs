//! A stdio server dies with the process that started it, also when that process is killed
//! (`kill -9`, the OOM killer) and cannot shut it down: a watchdog in the server's process
//! group waits on a pipe only this process writes to, and once the pipe closes (this process
//! exited, however it exited) it kills the whole group.
//!
//! Without it, a server busy with a call when Skein was killed ran on (its stdin closing told
//! it nothing until the call ended), and whatever it had started with it. The watchdog is
//! `/bin/sh`, forked away from its first shell so that it is not this process's child: waiting
//! for the server's group (as closing a session does) would otherwise wait for the watchdog
//! too. As a member of the group, it keeps the group id from being reused by unrelated
//! processes, so the group it kills is always the server's.

use std::process::Stdio;

use tokio::process::{ChildStdin, Command};

/// The watchdog: keep the pipe as fd 3 (a background job's stdin is `/dev/null`), wait in the
/// background until it closes, then kill the process group (itself included); the first shell
/// exits at once.
const WATCHDOG: &str = "exec 3<&0; (read -r line <&3; kill -KILL 0) & exit 0";

/// Kills the process group it watches when this process exits, or when dropped. Drop it only
/// once the server is shut down (or to kill what is left of it).
#[derive(Debug)]
pub(crate) struct GroupGuard {
    /// The write end of the watchdog's pipe; nothing is ever written to it.
    _pipe: ChildStdin,
}

/// Starts the watchdog of the process group `group` (the id of its leader, the server).
pub(crate) async fn watch(group: u32) -> std::io::Result<GroupGuard> {
    let group = i32::try_from(group).map_err(std::io::Error::other)?;
    let mut shell = Command::new("/bin/sh")
        .args(["-c", WATCHDOG])
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(group)
        .kill_on_drop(true)
        .spawn()?;
    let pipe = shell
        .stdin
        .take()
        .ok_or_else(|| std::io::Error::other("the watchdog shell has no stdin"))?;
    let status = shell.wait().await?;
    if !status.success() {
        return Err(std::io::Error::other(format!(
            "the watchdog shell exited with {status}"
        )));
    }
    Ok(GroupGuard { _pipe: pipe })
}

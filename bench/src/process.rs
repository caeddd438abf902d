//! Stopping the processes a harness started: SIGTERM with a grace time, and killing whole
//! trees (a gateway's workers must not outlive its row).

use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

use crate::Error;

/// Variables removed from a harness's servers besides every `*_API_KEY` (each provider's key
/// variable, whatever providers there are): no real key is sent anywhere, even to loopback, no
/// server finds other tokens or another store, and none reaches past loopback through a proxy.
const SCRUBBED_VARIABLES: &[&str] = &[
    "SKEIN_TOKENS",
    "SKEIN_DB",
    "DATABASE_URL",
    "LITELLM_MASTER_KEY",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
];

/// Removes from `command`'s environment every `*_API_KEY`, and the variables that would give
/// a server under test other tokens, another store or a proxy.
pub fn scrub_environment(command: &mut Command) {
    for (name, _) in std::env::vars_os() {
        if name.to_str().is_some_and(|name| name.ends_with("_API_KEY")) {
            command.env_remove(name);
        }
    }
    for name in SCRUBBED_VARIABLES {
        command.env_remove(name);
    }
}
use crate::procfs::process_tree;

/// Sends SIGTERM to `child` and waits up to `timeout` for it to exit; its exit status. When
/// it is still running after that, it and its descendants are killed and the error says so.
pub fn terminate(child: &mut Child, name: &str, timeout: Duration) -> Result<ExitStatus, Error> {
    let pid = child.id();
    let signal_error = |reason: String| Error::Signal {
        name: name.to_owned(),
        pid,
        reason,
    };
    let sent = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .map_err(|err| signal_error(format!("cannot run kill: {err}")))?;
    if !sent.success() {
        return Err(signal_error(format!("kill exited with {sent}")));
    }
    wait_or_kill(child, name, timeout)
}

/// Waits up to `timeout` for `child` to exit (after it was asked to, by a signal or by closing
/// its stdin); kills its tree when it does not.
pub fn wait_or_kill(child: &mut Child, name: &str, timeout: Duration) -> Result<ExitStatus, Error> {
    let wait_error = |source| Error::Wait {
        name: name.to_owned(),
        source,
    };
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().map_err(wait_error)? {
            return Ok(status);
        }
        if started.elapsed() > timeout {
            kill_tree(child.id());
            let _ = child.wait();
            return Err(Error::NotStopped {
                name: name.to_owned(),
                timeout,
            });
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Sends SIGKILL to `pid` and every live descendant, children first.
pub fn kill_tree(pid: u32) {
    for member in process_tree(pid).into_iter().rev() {
        let _ = Command::new("kill")
            .args(["-KILL", &member.to_string()])
            .status();
    }
}

//! What servers notify, in the log: at `debug` (target `mcp::notification`), and at most
//! [`MAX_LOGGED_PER_SECOND`] lines a second per server, each cut to [`MAX_LOGGED_CHARS`].
//!
//! Notifications are the server's to send, as many and as large as it likes: logged one line
//! each, a server sending a million of them writes a million lines. Past the rate, lines are
//! counted instead, and the count is logged with the next line that is written.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Most notification lines logged per server in one second.
pub(crate) const MAX_LOGGED_PER_SECOND: u32 = 20;
/// Longest notification detail logged, in characters.
pub(crate) const MAX_LOGGED_CHARS: usize = 200;

const WINDOW: Duration = Duration::from_secs(1);

/// The notification log of one server.
#[derive(Debug)]
pub(crate) struct NotificationLog {
    server: String,
    /// The server's secrets: a detail is redacted before it is cut, so that no part of a
    /// secret that straddles the cut reaches the log.
    redactor: messages::Redactor,
    window: Mutex<Window>,
}

#[derive(Debug)]
struct Window {
    start: Instant,
    logged: u32,
    /// Notifications not logged since the last line that was.
    unlogged: u64,
}

/// What to do with one notification.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Admit {
    /// Log it, after saying that `unlogged` notifications before it were not.
    Log { unlogged: u64 },
    /// Count it only.
    Count,
}

impl NotificationLog {
    /// The log of `server`'s notifications, without the secrets `redactor` knows.
    pub(crate) fn new(server: &str, redactor: messages::Redactor) -> Self {
        NotificationLog {
            server: server.to_owned(),
            redactor,
            window: Mutex::new(Window {
                start: Instant::now(),
                logged: 0,
                unlogged: 0,
            }),
        }
    }

    /// Logs notification `method` with `detail` (made only when it is logged), within the
    /// rate.
    pub(crate) fn note(&self, method: &str, detail: impl FnOnce() -> String) {
        if !tracing::enabled!(target: "mcp::notification", tracing::Level::DEBUG) {
            return;
        }
        let Admit::Log { unlogged } = self.admit(Instant::now()) else {
            return;
        };
        let server = self.server.as_str();
        if unlogged > 0 {
            tracing::debug!(
                target: "mcp::notification",
                server,
                "{unlogged} notification(s) not logged: at most {MAX_LOGGED_PER_SECOND} a second are"
            );
        }
        let detail: String = self
            .redactor
            .redact(&detail())
            .chars()
            .take(MAX_LOGGED_CHARS)
            .collect();
        tracing::debug!(target: "mcp::notification", server, "{method}: {detail}");
    }

    fn admit(&self, now: Instant) -> Admit {
        let mut window = self
            .window
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if now.duration_since(window.start) >= WINDOW {
            window.start = now;
            window.logged = 0;
        }
        if window.logged >= MAX_LOGGED_PER_SECOND {
            window.unlogged += 1;
            return Admit::Count;
        }
        window.logged += 1;
        Admit::Log {
            unlogged: std::mem::take(&mut window.unlogged),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flood_is_logged_at_the_rate_and_counted_past_it() {
        let log = NotificationLog::new("s", messages::Redactor::new());
        let start = Instant::now();
        let admitted: Vec<Admit> = (0..1_000_000).map(|_| log.admit(start)).collect();
        let logged = admitted
            .iter()
            .filter(|a| matches!(a, Admit::Log { .. }))
            .count();
        assert_eq!(logged, MAX_LOGGED_PER_SECOND as usize);
        // A second later the next line says how many were left out.
        assert_eq!(
            log.admit(start + WINDOW),
            Admit::Log {
                unlogged: 1_000_000 - u64::from(MAX_LOGGED_PER_SECOND)
            }
        );
        assert_eq!(log.admit(start + WINDOW), Admit::Log { unlogged: 0 });
    }
}

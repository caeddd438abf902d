//! The log of `skein serve` on stderr, each line without any secret the server holds.
//!
//! Whatever a log line quotes (an MCP server's error, a provider's answer, a library's
//! message), it goes through the server's one redactor before it is written: an echoed
//! provider key, bearer token or search key never reaches a terminal or a log collector.

use std::io::Write as _;
use std::sync::Arc;

use messages::Redactor;

/// Makes one [`RedactedLine`] per log event.
#[derive(Clone, Debug)]
pub(crate) struct RedactedStderr {
    redactor: Arc<Redactor>,
}

impl RedactedStderr {
    /// Stderr, redacted by `redactor`.
    pub(crate) fn new(redactor: Redactor) -> Self {
        RedactedStderr {
            redactor: Arc::new(redactor),
        }
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for RedactedStderr {
    type Writer = RedactedLine;

    fn make_writer(&'a self) -> Self::Writer {
        RedactedLine {
            redactor: Arc::clone(&self.redactor),
            text: Vec::new(),
        }
    }
}

/// One event's text: collected whole, so that a secret split across writes is still found,
/// then written redacted when the event is done.
#[derive(Debug)]
pub(crate) struct RedactedLine {
    redactor: Arc<Redactor>,
    text: Vec<u8>,
}

impl std::io::Write for RedactedLine {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.text.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for RedactedLine {
    fn drop(&mut self) {
        if self.text.is_empty() {
            return;
        }
        let clean = self.redactor.redact(&String::from_utf8_lossy(&self.text));
        // A closed stderr stops no server: the line is lost, nothing else.
        let _ = std::io::stderr().lock().write_all(clean.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing_subscriber::fmt::MakeWriter as _;

    #[test]
    fn a_line_is_collected_whole_and_redacted() {
        let writer = RedactedStderr::new(Redactor::new().with("tok-SECRET-123456"));
        let mut line = writer.make_writer();
        line.write_all(b"refused: tok-SECRET-").unwrap();
        line.write_all(b"123456\n").unwrap();
        let clean = line.redactor.redact(&String::from_utf8_lossy(&line.text));
        assert_eq!(clean, "refused: [REDACTED]\n");
    }
}

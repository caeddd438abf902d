//! SSE framing: a body's bytes, read by read, into events (a name and the data), with the cap
//! on the size of one event.
//!
//! Lines are split and read by sseer's line parser ([`sseer::parser::parse_line`]: LF, CR and
//! CRLF endings, comments, the one space after the colon); this module keeps the bytes between
//! reads, builds events from lines the way sseer's `EventStream` does (data lines joined by
//! LF, `event:` naming the event, a blank line dispatching it, a byte-order mark skipped at the
//! start) and counts each line's length as it frames it. Framing here instead of through
//! sseer's `EventStream` is what keeps a stream near the cost of reading it: that stream hands
//! out every line and event as reference-counted buffers, and hides line boundaries, so the
//! event cap had to scan every byte a second time; here an event's data is borrowed from a
//! buffer reused for the whole stream and the cap costs one comparison per line.

use std::str::Utf8Error;

use sseer::parser::{RawEventLine, parse_line};

/// What ends a stream's framing.
#[derive(Debug)]
pub(super) enum FrameError {
    /// A field value is not UTF-8.
    Utf8(Utf8Error),
    /// A line, or the field lines of one event, passed the cap.
    TooLong,
}

/// UTF-8's byte-order mark, which a stream may start with.
const BOM: &[u8] = "\u{feff}".as_bytes();

/// The name of an event that came without `event:`.
const MESSAGE: &str = "message";

/// Frames one SSE stream; see the module documentation.
///
/// Memory: the bytes held are the current event's field lines (at most `max`), the line not
/// yet complete (at most `max`: it is measured after every read) and the last read.
#[derive(Debug)]
pub(super) struct Frames {
    max: usize,
    /// Bytes received; those before `pos` are framed.
    buf: Vec<u8>,
    pos: usize,
    /// `buf[pos..scanned]` holds no line end: a line that spans reads is not searched again
    /// from its start at every read.
    scanned: usize,
    /// Whether the start of the stream was checked for a byte-order mark.
    started: bool,
    /// Whether the body ended: a final CR then ends its line (no LF can follow).
    ended: bool,
    /// The current event: its name (empty means [`MESSAGE`]) and its data lines joined by LF.
    name: String,
    data: String,
    /// Whether the current event has a data line (an event without one is not dispatched).
    has_data: bool,
    /// Bytes of the current event's complete field lines.
    event_bytes: usize,
    /// Whether the last call returned an event, whose fields are cleared on the next call.
    emitted: bool,
}

impl Frames {
    /// Framing that fails when a line, or the field lines of one event (comments excluded:
    /// they are dropped line by line), pass `max` bytes.
    pub(super) fn new(max: usize) -> Self {
        Frames {
            max,
            buf: Vec::new(),
            pos: 0,
            scanned: 0,
            started: false,
            ended: false,
            name: String::new(),
            data: String::new(),
            has_data: false,
            event_bytes: 0,
            emitted: false,
        }
    }

    /// Adds one read of the body (dropping the bytes already framed).
    pub(super) fn push(&mut self, bytes: &[u8]) {
        if self.pos > 0 {
            self.buf.drain(..self.pos);
            self.scanned -= self.pos;
            self.pos = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// The body ended: what follows its last line end is no line, and an event that no blank
    /// line closed is not dispatched.
    pub(super) fn end(&mut self) {
        self.ended = true;
        if self.buf.last() == Some(&b'\r') {
            self.buf.push(b'\n');
        }
    }

    /// The next complete event (its name and its data), or `None` when the bytes so far hold
    /// no more.
    pub(super) fn next_event(&mut self) -> Result<Option<(&str, &str)>, FrameError> {
        if std::mem::take(&mut self.emitted) {
            self.name.clear();
            self.data.clear();
            self.has_data = false;
        }
        if !self.started && !self.skip_bom() {
            return Ok(None);
        }
        loop {
            if self.scanned > self.pos
                && memchr::memchr2(b'\n', b'\r', &self.buf[self.scanned..]).is_none()
            {
                self.scanned = self.buf.len();
                return self.check_pending().map(|()| None);
            }
            let rest = &self.buf[self.pos..];
            // The blank line after each event, read without a search.
            let parsed = match rest.first() {
                Some(b'\n') => Some((RawEventLine::Empty, &rest[1..])),
                _ => parse_line(rest),
            };
            let Some((line, next)) = parsed else {
                // No line end, or a CR that an LF may still follow.
                self.scanned = self.buf.len() - usize::from(rest.last() == Some(&b'\r'));
                return self.check_pending().map(|()| None);
            };
            let consumed = rest.len() - next.len();
            let crlf = consumed >= 2 && rest[consumed - 2..consumed] == *b"\r\n";
            let length = consumed - 1 - usize::from(crlf);
            self.pos += consumed;
            self.scanned = self.pos;
            match line {
                RawEventLine::Empty => {
                    self.event_bytes = 0;
                    if self.has_data {
                        self.emitted = true;
                        let name = if self.name.is_empty() {
                            MESSAGE
                        } else {
                            &self.name
                        };
                        return Ok(Some((name, &self.data)));
                    }
                    self.name.clear();
                }
                RawEventLine::Comment => {
                    if length > self.max {
                        return Err(FrameError::TooLong);
                    }
                }
                RawEventLine::Field {
                    field_name,
                    field_value,
                } => {
                    self.event_bytes = self.event_bytes.saturating_add(length);
                    if self.event_bytes > self.max {
                        return Err(FrameError::TooLong);
                    }
                    let value = field_value
                        .map(std::str::from_utf8)
                        .transpose()
                        .map_err(FrameError::Utf8)?;
                    match (field_name, value) {
                        (b"data", value) => {
                            if self.has_data {
                                self.data.push('\n');
                            }
                            self.data.push_str(value.unwrap_or_default());
                            self.has_data = true;
                        }
                        (b"event", Some(value)) => {
                            self.name.clear();
                            self.name.push_str(value);
                        }
                        // `id` and `retry` matter to a client that reconnects, which a model
                        // call never does; other fields are ignored by the format.
                        _ => {}
                    }
                }
            }
        }
    }

    /// Skips a byte-order mark at the start; false while the bytes so far could still be the
    /// start of one.
    fn skip_bom(&mut self) -> bool {
        let rest = &self.buf[self.pos..];
        if rest.len() < BOM.len() && BOM.starts_with(rest) && !self.ended {
            return false;
        }
        if rest.starts_with(BOM) {
            self.pos += BOM.len();
            self.scanned = self.scanned.max(self.pos);
        }
        self.started = true;
        true
    }

    /// Fails when the line not yet complete is already past the cap (on its own for a
    /// comment, with the event's other field lines otherwise).
    fn check_pending(&self) -> Result<(), FrameError> {
        let pending = &self.buf[self.pos..];
        let pending = pending.strip_suffix(b"\r").unwrap_or(pending);
        let counted = if pending.first() == Some(&b':') {
            pending.len()
        } else {
            self.event_bytes.saturating_add(pending.len())
        };
        if counted > self.max {
            return Err(FrameError::TooLong);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;

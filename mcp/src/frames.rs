//! A stdio server's output, one JSON-RPC message a line, held to [`MAX_MESSAGE_BYTES`] a
//! message before the SDK reads it.
//!
//! The SDK drops a longer line with nothing but a log line, so the request it answered would
//! wait out its whole timeout. [`FrameGuard`] cuts such a line at the limit (what was passed on
//! of it is ended there, which the SDK then ignores as unparsable) and puts in its place a
//! JSON-RPC error answering the same request, read from the start of the line (`{"jsonrpc":
//! "2.0","id":7,…`, as the Rust and Python SDKs write) or, failing that, from its end
//! (`…,"jsonrpc":"2.0","id":7}`, as the TypeScript SDK writes). The call then fails at once
//! with [`McpError::MessageTooLarge`](crate::McpError::MessageTooLarge). A line whose id is in
//! neither place is dropped as before, and named in the log.

use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, ReadBuf};

/// The most one message from a stdio server may hold, its newline included: the SDK's own
/// line limit, so every line this guard passes is one the SDK reads.
pub(crate) const MAX_MESSAGE_BYTES: usize = rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH;

/// The JSON-RPC error code of an answer too large to read (in the range JSON-RPC leaves to
/// implementations).
pub(crate) const TOO_LARGE_CODE: i32 = -32_099;

/// The key under the error's `data` that marks it as this guard's, with the limit as value:
/// a server's own error with the same code is not mistaken for it.
pub(crate) const TOO_LARGE_MARKER: &str = "skein_message_too_large";

/// How many bytes of a line's start and end are kept to find its id.
const ID_WINDOW: usize = 96;

/// Reads through to `inner`, cutting lines over `limit` bytes (newline included) and answering
/// their request with an error; see the module docs.
pub(crate) struct FrameGuard<R> {
    inner: R,
    limit: usize,
    /// Bytes of the current line passed on so far (without its newline).
    line_len: usize,
    /// The first [`ID_WINDOW`] bytes of the current line.
    head: Vec<u8>,
    /// Set while the rest of an over-long line is skipped.
    skipping: Option<Skipping>,
    /// Bytes to hand out before reading on: the cut line's end and the error line.
    pending: Vec<u8>,
    pending_at: usize,
    /// Bytes read from `inner` and not looked at yet.
    scratch: Box<[u8]>,
    scratch_at: usize,
    scratch_len: usize,
}

/// An over-long line being skipped.
struct Skipping {
    /// Whether its request was answered already (its id was at the line's start).
    answered: bool,
    /// Its last [`ID_WINDOW`] bytes so far.
    tail: Vec<u8>,
}

impl<R: AsyncRead + Unpin> FrameGuard<R> {
    /// A guard over `inner` at [`MAX_MESSAGE_BYTES`].
    pub(crate) fn new(inner: R) -> Self {
        Self::with_limit(inner, MAX_MESSAGE_BYTES)
    }

    /// A guard over `inner` that lets lines of at most `limit` bytes (newline included) through.
    pub(crate) fn with_limit(inner: R, limit: usize) -> Self {
        FrameGuard {
            inner,
            limit: limit.max(2),
            line_len: 0,
            head: Vec::with_capacity(ID_WINDOW),
            skipping: None,
            pending: Vec::new(),
            pending_at: 0,
            scratch: vec![0; 64 * 1024].into_boxed_slice(),
            scratch_at: 0,
            scratch_len: 0,
        }
    }

    /// Moves what `scratch` holds into `out` (passed lines), `pending` (cut lines' ends and
    /// errors) or nowhere (the rest of an over-long line), as far as `out` has room.
    fn sort(&mut self, out: &mut ReadBuf<'_>) {
        while self.scratch_at < self.scratch_len && out.remaining() > 0 && self.pending_len() == 0 {
            let available = &self.scratch[self.scratch_at..self.scratch_len];
            let newline = available.iter().position(|byte| *byte == b'\n');
            let line_part = newline.unwrap_or(available.len());
            if let Some(mut skipping) = self.skipping.take() {
                keep_last(&mut skipping.tail, &available[..line_part]);
                self.scratch_at += line_part;
                match newline {
                    Some(_) => {
                        self.scratch_at += 1;
                        if !skipping.answered {
                            self.answer(id_at_end(&skipping.tail));
                        }
                    }
                    None => self.skipping = Some(skipping),
                }
                continue;
            }
            // Room left in this line before its newline would pass the limit.
            let room = self.limit - 1 - self.line_len;
            if line_part > room {
                // Pass what fits, end the line there, and skip the rest.
                let take = room.min(out.remaining());
                self.pass(out, take);
                if take < room {
                    continue;
                }
                self.pending.push(b'\n');
                let id = id_at_start(&self.head);
                self.skipping = Some(Skipping {
                    answered: id.is_some(),
                    tail: Vec::with_capacity(ID_WINDOW),
                });
                if id.is_some() {
                    self.answer(id);
                }
                self.line_len = 0;
                self.head.clear();
                continue;
            }
            let take = (line_part + usize::from(newline.is_some())).min(out.remaining());
            self.pass(out, take);
        }
    }

    /// Passes the next `take` bytes of `scratch` on, keeping track of the line.
    fn pass(&mut self, out: &mut ReadBuf<'_>, take: usize) {
        let bytes = &self.scratch[self.scratch_at..self.scratch_at + take];
        out.put_slice(bytes);
        match bytes.iter().position(|byte| *byte == b'\n') {
            Some(end) => {
                debug_assert_eq!(end + 1, take, "a newline ends what is passed");
                self.line_len = 0;
                self.head.clear();
            }
            None => {
                let room = ID_WINDOW.saturating_sub(self.head.len());
                self.head.extend_from_slice(&bytes[..room.min(bytes.len())]);
                self.line_len += take;
            }
        }
        self.scratch_at += take;
    }

    /// Queues the error answering request `id`, or names the line in the log when its id is
    /// unknown.
    fn answer(&mut self, id: Option<u64>) {
        let Some(id) = id else {
            tracing::warn!(
                limit = self.limit,
                "an MCP server sent a message over the size limit whose request id could not be \
                 read; it was dropped, and the request it answered waits for its timeout"
            );
            return;
        };
        let error = serde_json::json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {
                "code": TOO_LARGE_CODE,
                "message": format!("the answer was larger than {} bytes", self.limit),
                "data": { TOO_LARGE_MARKER: self.limit },
            },
        });
        self.pending.extend_from_slice(error.to_string().as_bytes());
        self.pending.push(b'\n');
    }

    fn pending_len(&self) -> usize {
        self.pending.len() - self.pending_at
    }

    /// Hands out pending bytes; true if any were.
    fn drain_pending(&mut self, out: &mut ReadBuf<'_>) -> bool {
        let take = self.pending_len().min(out.remaining());
        if take == 0 {
            return false;
        }
        out.put_slice(&self.pending[self.pending_at..self.pending_at + take]);
        self.pending_at += take;
        if self.pending_at == self.pending.len() {
            self.pending.clear();
            self.pending_at = 0;
        }
        true
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for FrameGuard<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        out: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        loop {
            let before = out.filled().len();
            if this.drain_pending(out) {
                return Poll::Ready(Ok(()));
            }
            this.sort(out);
            if out.filled().len() > before || this.drain_pending(out) {
                return Poll::Ready(Ok(()));
            }
            if out.remaining() == 0 {
                return Poll::Ready(Ok(()));
            }
            // Everything read was looked at (skipped, if anything): read on.
            let mut scratch = ReadBuf::new(&mut this.scratch);
            ready!(Pin::new(&mut this.inner).poll_read(cx, &mut scratch))?;
            let read = scratch.filled().len();
            if read == 0 {
                // End of output: nothing more to pass.
                return Poll::Ready(Ok(()));
            }
            this.scratch_at = 0;
            this.scratch_len = read;
        }
    }
}

/// Appends `bytes` to `window`, keeping its last [`ID_WINDOW`] bytes.
fn keep_last(window: &mut Vec<u8>, bytes: &[u8]) {
    let bytes = &bytes[bytes.len().saturating_sub(ID_WINDOW)..];
    window.extend_from_slice(bytes);
    let excess = window.len().saturating_sub(ID_WINDOW);
    window.drain(..excess);
}

/// The id of a response that opens `{"jsonrpc":"2.0","id":N` or `{"id":N` (whitespace
/// allowed between the tokens).
fn id_at_start(head: &[u8]) -> Option<u64> {
    let rest = token(head, b"{")?;
    let rest = match token(rest, b"\"jsonrpc\"") {
        Some(after) => token(token(token(after, b":")?, b"\"2.0\"")?, b",")?,
        None => rest,
    };
    let rest = token(token(rest, b"\"id\"")?, b":")?;
    let digits = rest.trim_ascii_start();
    let end = digits
        .iter()
        .position(|byte| !byte.is_ascii_digit())
        .unwrap_or(digits.len());
    // The number must be followed by more of the object, not cut by the window.
    if end == digits.len() {
        return None;
    }
    number(&digits[..end])
}

/// The id of a response that ends `"id":N}` (whitespace allowed between the tokens).
fn id_at_end(tail: &[u8]) -> Option<u64> {
    let rest = tail.trim_ascii_end().strip_suffix(b"}")?.trim_ascii_end();
    let start = rest
        .iter()
        .rposition(|byte| !byte.is_ascii_digit())
        .map_or(0, |at| at + 1);
    let digits = &rest[start..];
    let before = rest[..start].trim_ascii_end().strip_suffix(b":")?;
    before.trim_ascii_end().strip_suffix(b"\"id\"")?;
    number(digits)
}

fn token<'a>(bytes: &'a [u8], token: &[u8]) -> Option<&'a [u8]> {
    bytes.trim_ascii_start().strip_prefix(token)
}

fn number(digits: &[u8]) -> Option<u64> {
    std::str::from_utf8(digits).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncReadExt as _;

    use super::*;

    /// What a guard at `limit` passes of `input`, read from and into pieces of `chunk` bytes.
    async fn guarded(input: &[u8], limit: usize, chunk: usize) -> String {
        let mut guard = FrameGuard::with_limit(Pieces::new(input, chunk), limit);
        let mut out = Vec::new();
        let mut buf = vec![0; chunk];
        loop {
            let read = guard.read(&mut buf).await.unwrap();
            if read == 0 {
                break;
            }
            out.extend_from_slice(&buf[..read]);
        }
        String::from_utf8(out).unwrap()
    }

    /// A reader handing out its input a few bytes at a time, as a pipe may.
    struct Pieces(std::collections::VecDeque<Vec<u8>>);

    impl Pieces {
        fn new(input: &[u8], chunk: usize) -> Self {
            Pieces(input.chunks(chunk).map(<[u8]>::to_vec).collect())
        }
    }

    impl AsyncRead for Pieces {
        fn poll_read(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            out: &mut ReadBuf<'_>,
        ) -> Poll<std::io::Result<()>> {
            if let Some(piece) = self.0.front_mut() {
                let take = piece.len().min(out.remaining());
                out.put_slice(&piece[..take]);
                piece.drain(..take);
                if piece.is_empty() {
                    self.0.pop_front();
                }
            }
            Poll::Ready(Ok(()))
        }
    }

    /// Checks that `line` is this guard's error for request `id`.
    fn assert_too_large(line: &str, id: u64, limit: usize) {
        let error: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(error["id"], id, "{line}");
        assert_eq!(error["error"]["code"], TOO_LARGE_CODE, "{line}");
        assert_eq!(error["error"]["data"][TOO_LARGE_MARKER], limit, "{line}");
        assert!(line.ends_with('\n'));
    }

    #[tokio::test]
    async fn short_lines_pass_unchanged_in_any_pieces() {
        let input = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n{\"a\":[1,2]}\npartial";
        for chunk in [1, 3, 7, 64] {
            assert_eq!(guarded(input.as_bytes(), 64, chunk).await, input, "{chunk}");
        }
    }

    #[tokio::test]
    async fn an_over_long_line_becomes_an_error_for_its_request() {
        let limit = 64;
        let filler = "x".repeat(200);
        let next = "{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":{}}\n";
        for (line, id) in [
            // The Rust and Python SDKs: the id first.
            (
                format!("{{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":\"{filler}\"}}\n"),
                7,
            ),
            // The TypeScript SDK: the id last.
            (
                format!("{{\"result\":\"{filler}\",\"jsonrpc\":\"2.0\",\"id\":12}}\n"),
                12,
            ),
        ] {
            let input = format!("{line}{next}");
            for chunk in [1, 5, 64, 4096] {
                let out = guarded(input.as_bytes(), limit, chunk).await;
                let lines: Vec<&str> = out.split_inclusive('\n').collect();
                assert_eq!(lines.len(), 3, "{chunk}: {out}");
                // The cut line fits the limit, newline included, and is no message.
                assert_eq!(lines[0].len(), limit, "{chunk}");
                assert!(serde_json::from_str::<serde_json::Value>(lines[0]).is_err());
                assert_too_large(lines[1], id, limit);
                assert_eq!(lines[2], next, "{chunk}");
            }
        }
    }

    #[tokio::test]
    async fn an_over_long_line_without_a_readable_id_is_dropped() {
        let input = format!("{{\"result\":\"{}\"}}\n{{\"id\":3}}\n", "y".repeat(100));
        let out = guarded(input.as_bytes(), 32, 8).await;
        let lines: Vec<&str> = out.split_inclusive('\n').collect();
        assert_eq!(lines.len(), 2, "{out}");
        assert_eq!(lines[0].len(), 32);
        assert_eq!(lines[1], "{\"id\":3}\n");
    }

    #[test]
    fn ids_are_read_only_where_a_response_puts_them() {
        assert_eq!(
            id_at_start(b"{ \"jsonrpc\" : \"2.0\", \"id\": 42, \"re"),
            Some(42)
        );
        assert_eq!(id_at_start(b"{\"id\":5,\"result\""), Some(5));
        assert_eq!(
            id_at_start(b"{\"jsonrpc\":\"2.0\",\"id\":123"),
            None,
            "cut by the window"
        );
        assert_eq!(id_at_start(b"{\"result\":{\"id\":5,"), None);
        assert_eq!(id_at_end(b"xx\",\"jsonrpc\":\"2.0\",\"id\":12}"), Some(12));
        assert_eq!(id_at_end(b"xx\", \"id\" : 12 }\r"), Some(12));
        assert_eq!(id_at_end(b"xx\",\"uuid\":12}"), None);
        assert_eq!(id_at_end(b"xx\",\"id\":\"a\"}"), None);
    }
}

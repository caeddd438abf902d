//! Keeping terminal control sequences that came from a model, a tool or a stored log off the
//! user's terminal.
//!
//! A model's answer, a tool's output or a logged prompt can hold escape sequences: `ESC ] 0 ;
//! … BEL` retitles the window, `ESC [ 2 J` clears the screen, others rewrite what was shown,
//! query the terminal or (with some terminals) write files. The CLI passes such text through a
//! [`Sanitizer`] before a terminal sees it: whole ESC / CSI / OSC / DCS sequences (7-bit and
//! 8-bit forms) are removed, every other C0 and C1 control and DEL is dropped, `\n` and `\t`
//! stay, and `\r` goes (so `\r\n` becomes `\n` and no line can be overwritten).
//!
//! **When it applies** (the choice `render.rs` and `logs/` make):
//!
//! - the answer on stdout and the logs' text output are sanitised when stdout is a terminal;
//!   piped or redirected, they keep the exact text (`skein run … > out.txt` gets the model's
//!   bytes, escapes included: the reader of the file decides what to do with them);
//! - tool activity lines, reasoning and error messages on stderr are always sanitised (they
//!   are for people, never a data channel);
//! - JSON output (`--json`) carries no raw C0 control (serde escapes them); DEL and the C1
//!   controls, which JSON allows raw, are written as `\u007f`…`\u009f` by
//!   [`escape_json_controls`], which leaves the JSON's meaning unchanged.

use std::borrow::Cow;
use std::io::{self, Write};

const ESC: char = '\u{1b}';
const BEL: char = '\u{07}';
/// Longest control string (OSC, DCS, …) swallowed before the rest is shown as text again, so
/// an unterminated one cannot hide a whole answer.
const MAX_STRING: usize = 4096;

/// Where the sanitizer is within an escape sequence; carried across chunks, so a sequence
/// split between two streamed deltas is removed whole.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum State {
    /// Plain text.
    #[default]
    Text,
    /// After ESC.
    Escape,
    /// After ESC and intermediate bytes (0x20–0x2F), before the final byte.
    EscapeIntermediate,
    /// Inside a control sequence (`ESC [` or U+009B), before its final byte.
    Csi,
    /// Inside a control string (OSC, DCS, SOS, PM, APC), with the characters swallowed so far.
    String(usize),
    /// After ESC inside a control string (ESC `\` ends it).
    StringEscape(usize),
}

/// Removes terminal control sequences and controls from streamed text (see the module
/// documentation). Feed it the chunks in order with [`push`](Sanitizer::push).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Sanitizer {
    state: State,
}

impl Sanitizer {
    /// `chunk` without control sequences or controls other than `\n` and `\t`.
    pub(crate) fn push<'a>(&mut self, chunk: &'a str) -> Cow<'a, str> {
        if self.state == State::Text && !chunk.chars().any(needs_care) {
            return Cow::Borrowed(chunk);
        }
        let mut shown = String::with_capacity(chunk.len());
        for ch in chunk.chars() {
            self.feed(ch, &mut shown);
        }
        Cow::Owned(shown)
    }

    fn feed(&mut self, ch: char, shown: &mut String) {
        self.state = match self.state {
            State::Text => match ch {
                ESC => State::Escape,
                '\u{9b}' => State::Csi,
                '\u{90}' | '\u{98}' | '\u{9d}' | '\u{9e}' | '\u{9f}' => State::String(0),
                '\n' | '\t' => {
                    shown.push(ch);
                    State::Text
                }
                ch if ch.is_control() => State::Text,
                ch => {
                    shown.push(ch);
                    State::Text
                }
            },
            State::Escape => match ch {
                '[' => State::Csi,
                ']' | 'P' | 'X' | '^' | '_' => State::String(0),
                ESC => State::Escape,
                '\u{20}'..='\u{2f}' => State::EscapeIntermediate,
                // The final byte of a two-character sequence (`ESC c`, `ESC 7`, …).
                '\u{30}'..='\u{7e}' => State::Text,
                // Not a sequence after all: ESC alone goes, the character is text.
                other => {
                    self.state = State::Text;
                    return self.feed(other, shown);
                }
            },
            State::EscapeIntermediate => match ch {
                '\u{20}'..='\u{2f}' => State::EscapeIntermediate,
                '\u{30}'..='\u{7e}' => State::Text,
                other => {
                    self.state = State::Text;
                    return self.feed(other, shown);
                }
            },
            State::Csi => match ch {
                // Parameters and intermediates.
                '\u{20}'..='\u{3f}' => State::Csi,
                // The final byte.
                '\u{40}'..='\u{7e}' => State::Text,
                // A broken sequence ends; the character is read as text.
                other => {
                    self.state = State::Text;
                    return self.feed(other, shown);
                }
            },
            State::String(seen) => match ch {
                BEL | '\u{9c}' => State::Text,
                ESC => State::StringEscape(seen),
                // A newline or a long string ends it, so that the rest of the text shows.
                '\n' => {
                    shown.push('\n');
                    State::Text
                }
                _ if seen >= MAX_STRING => State::Text,
                _ => State::String(seen + 1),
            },
            State::StringEscape(_) => match ch {
                '\\' => State::Text,
                other => {
                    self.state = State::Escape;
                    return self.feed(other, shown);
                }
            },
        };
    }
}

/// Whether `ch` is a control character (C0, DEL or C1) other than `\n` and `\t`, which the
/// sanitizer must look at.
fn needs_care(ch: char) -> bool {
    ch.is_control() && ch != '\n' && ch != '\t'
}

/// `text` without control sequences or controls other than `\n` and `\t`.
pub(crate) fn for_terminal(text: &str) -> Cow<'_, str> {
    Sanitizer::default().push(text)
}

/// JSON text with DEL and the C1 controls (which JSON allows raw in strings, and some
/// terminals obey) written as `\u007f` … `\u009f` escapes: the same JSON value, safe to show.
/// Raw C0 controls cannot occur in serde_json's output.
pub(crate) fn escape_json_controls(json: &str) -> Cow<'_, str> {
    if !json.chars().any(char::is_control) {
        return Cow::Borrowed(json);
    }
    let mut escaped = String::with_capacity(json.len() + 16);
    for ch in json.chars() {
        match ch {
            // Outside strings (pretty-printing's layout): kept.
            '\n' | '\t' => escaped.push(ch),
            ch if ch.is_control() => escaped.push_str(&format!("\\u{:04x}", u32::from(ch))),
            ch => escaped.push(ch),
        }
    }
    Cow::Owned(escaped)
}

/// A writer that sanitises what goes through it when `active` (text printed to a terminal),
/// and passes bytes unchanged otherwise. Bytes that are not UTF-8 are shown as U+FFFD when
/// active.
pub(crate) struct Output<W: Write> {
    inner: W,
    active: bool,
    sanitizer: Sanitizer,
    /// The start of a UTF-8 character split between two writes.
    pending: Vec<u8>,
}

impl<W: Write> Output<W> {
    /// Writes to `inner`, sanitising when `active`.
    pub(crate) fn new(inner: W, active: bool) -> Self {
        Output {
            inner,
            active,
            sanitizer: Sanitizer::default(),
            pending: Vec::new(),
        }
    }
}

impl<W: Write> Write for Output<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if !self.active {
            return self.inner.write(buf);
        }
        self.pending.extend_from_slice(buf);
        let mut shown = String::new();
        let mut rest = &self.pending[..];
        loop {
            match std::str::from_utf8(rest) {
                Ok(text) => {
                    shown.push_str(&self.sanitizer.push(text));
                    rest = &[];
                    break;
                }
                Err(error) => {
                    let (valid, after) = rest.split_at(error.valid_up_to());
                    // `valid` is UTF-8 by the error's word.
                    shown.push_str(&self.sanitizer.push(&String::from_utf8_lossy(valid)));
                    match error.error_len() {
                        // A character cut at the end of this write: kept for the next.
                        None => {
                            rest = after;
                            break;
                        }
                        Some(bad) => {
                            shown.push(char::REPLACEMENT_CHARACTER);
                            rest = &after[bad..];
                        }
                    }
                }
            }
        }
        let kept = rest.to_vec();
        self.pending = kept;
        self.inner.write_all(shown.as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn clean(text: &str) -> String {
        for_terminal(text).into_owned()
    }

    #[test]
    fn removes_the_sequences_a_hostile_model_would_send() {
        assert_eq!(clean("a\x1b]0;pwned\x07b"), "ab");
        assert_eq!(clean("a\x1b]0;pwned\x1b\\b"), "ab");
        assert_eq!(clean("\x1b[2Jcleared"), "cleared");
        assert_eq!(clean("\x1b[1;31mred\x1b[0m"), "red");
        assert_eq!(clean("\u{9b}2Jx\u{9d}0;t\u{9c}y"), "xy");
        assert_eq!(clean("\x1bPq#0;2;0;0;0\x1b\\z"), "z");
        assert_eq!(clean("\x1b(Bx\x1bcy"), "xy");
        assert_eq!(
            clean("line\r\nfake\roverwrite\x08\x00\x7f"),
            "line\nfakeoverwrite"
        );
        assert_eq!(
            clean("tabs\tand\nnewlines stay, é and 😀 too"),
            "tabs\tand\nnewlines stay, é and 😀 too"
        );
        // An unterminated string ends at the line's end: the rest of the answer shows.
        assert_eq!(clean("\x1b]0;title\nvisible"), "\nvisible");
        // ESC before a non-ASCII character: ESC goes, the character stays.
        assert_eq!(clean("\x1bé"), "é");
    }

    #[test]
    fn a_sequence_split_between_chunks_goes_whole() {
        let mut sanitizer = Sanitizer::default();
        let shown: String = ["ok \x1b", "]0;pw", "ned\x07 done \x1b[", "2J!"]
            .iter()
            .map(|chunk| sanitizer.push(chunk).into_owned())
            .collect();
        assert_eq!(shown, "ok  done !");
    }

    #[test]
    fn the_writer_sanitises_only_when_active() {
        let mut shown = Output::new(Vec::new(), true);
        // A character split between writes, and a sequence.
        shown.write_all(b"caf\xc3").unwrap();
        shown.write_all(b"\xa9 \x1b[2J\xffend").unwrap();
        assert_eq!(String::from_utf8(shown.inner).unwrap(), "café \u{fffd}end");
        let mut raw = Output::new(Vec::new(), false);
        raw.write_all(b"\x1b[2J").unwrap();
        assert_eq!(raw.inner, b"\x1b[2J");
    }

    #[test]
    fn json_keeps_its_meaning() {
        let json = serde_json::json!({"text": "\x1b]0;pwned\x07 \u{9b}2J \x7f"}).to_string();
        let escaped = escape_json_controls(&json);
        assert!(!escaped.chars().any(needs_care), "{escaped}");
        let back: serde_json::Value = serde_json::from_str(&escaped).unwrap();
        assert_eq!(back["text"], "\x1b]0;pwned\x07 \u{9b}2J \x7f");
    }

    proptest! {
        #[test]
        fn nothing_shown_is_a_control(
            chunks in prop::collection::vec(
                prop::collection::vec(
                    prop_oneof![
                        Just('\u{1b}'), Just('['), Just(']'), Just('\u{07}'), Just('\\'),
                        Just('\u{9b}'), Just('\u{9d}'), Just('\u{9c}'), Just('\r'), Just('\n'),
                        Just('\t'), Just('P'), Just('0'), Just(';'),
                        any::<char>(),
                    ],
                    0..40,
                ),
                0..6,
            )
        ) {
            let mut sanitizer = Sanitizer::default();
            let mut writer = Output::new(Vec::new(), true);
            for chunk in &chunks {
                let chunk: String = chunk.iter().collect();
                let shown = sanitizer.push(&chunk);
                prop_assert!(!shown.chars().any(needs_care), "{shown:?}");
                writer.write_all(chunk.as_bytes()).unwrap();
                let json = serde_json::json!({ "text": chunk }).to_string();
                prop_assert!(!escape_json_controls(&json).chars().any(needs_care));
            }
            let written = String::from_utf8(writer.inner).unwrap();
            prop_assert!(!written.chars().any(needs_care), "{written:?}");
        }
    }
}

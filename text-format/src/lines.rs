//! Line scanning shared by both formats: CRLF normalisation, line offsets and fenced code
//! blocks.
//!
//! Fences follow CommonMark (three or more backticks or tildes, indented at most three spaces,
//! closed by a fence of the same character at least as long) with one tolerance: an opening
//! fence that is never closed is *not* a fence. CommonMark would run it to the end of the
//! document, which would swallow every section after a model's forgotten closing fence.

use std::borrow::Cow;
use std::ops::Range;

/// Model output split into lines, with the lines that belong to fenced code blocks marked.
pub(crate) struct Lines<'a> {
    pub(crate) text: &'a str,
    /// Byte range of each line, without its `\n`.
    pub(crate) ranges: Vec<Range<usize>>,
    /// Whether each line is part of a fenced block (fence lines included).
    pub(crate) in_code: Vec<bool>,
    /// Fenced blocks as `(opening line, closing line)` indexes.
    pub(crate) blocks: Vec<(usize, usize)>,
}

/// `output` with every `\r\n` turned into `\n` (borrowed when there is none).
pub(crate) fn normalize(output: &str) -> Cow<'_, str> {
    if output.contains('\r') {
        Cow::Owned(output.replace("\r\n", "\n"))
    } else {
        Cow::Borrowed(output)
    }
}

impl<'a> Lines<'a> {
    pub(crate) fn new(text: &'a str) -> Self {
        let mut ranges = Vec::new();
        let mut start = 0;
        for (i, byte) in text.bytes().enumerate() {
            if byte == b'\n' {
                ranges.push(start..i);
                start = i + 1;
            }
        }
        ranges.push(start..text.len());

        let mut in_code = vec![false; ranges.len()];
        let mut blocks = Vec::new();
        // Shortest fence length, per fence character, known to have no closer after the point
        // where it was searched: a later, longer fence of that character cannot close either.
        // This keeps adversarial input (thousands of unclosed fences) linear.
        let mut unclosable = [usize::MAX; 2];
        let mut i = 0;
        while i < ranges.len() {
            let Some((ch, len)) = fence(&text[ranges[i].clone()], true) else {
                i += 1;
                continue;
            };
            let slot = usize::from(ch == b'~');
            if len >= unclosable[slot] {
                i += 1;
                continue;
            }
            let closer = (i + 1..ranges.len()).find(|&j| {
                fence(&text[ranges[j].clone()], false)
                    .is_some_and(|(close_ch, close_len)| close_ch == ch && close_len >= len)
            });
            match closer {
                Some(j) => {
                    in_code[i..=j].fill(true);
                    blocks.push((i, j));
                    i = j + 1;
                }
                None => {
                    unclosable[slot] = unclosable[slot].min(len);
                    i += 1;
                }
            }
        }
        Lines {
            text,
            ranges,
            in_code,
            blocks,
        }
    }

    pub(crate) fn line(&self, index: usize) -> &'a str {
        &self.text[self.ranges[index].clone()]
    }

    pub(crate) fn len(&self) -> usize {
        self.ranges.len()
    }

    /// The text between the fences of `block`, without the fence lines.
    pub(crate) fn block_inner(&self, (open, close): (usize, usize)) -> &'a str {
        let start = self.ranges[open].end;
        let end = self.ranges[close].start;
        self.text
            .get(start + 1..end.saturating_sub(1))
            .unwrap_or("")
    }

    /// The first line that is not blank, with its index.
    pub(crate) fn first_non_blank(&self) -> Option<(usize, &'a str)> {
        (0..self.len())
            .map(|i| (i, self.line(i)))
            .find(|(_, line)| !line.trim().is_empty())
    }

    /// The last line that is not blank, with its index.
    pub(crate) fn last_non_blank(&self) -> Option<(usize, &'a str)> {
        (0..self.len())
            .rev()
            .map(|i| (i, self.line(i)))
            .find(|(_, line)| !line.trim().is_empty())
    }
}

/// Whether `line` is a fence: `(fence character, length)`. An opening backtick fence may carry
/// an info string without backticks; a closing fence carries nothing but whitespace.
fn fence(line: &str, opening: bool) -> Option<(u8, usize)> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    if indent > 3 {
        return None;
    }
    let rest = &line[indent..];
    let ch = *rest.as_bytes().first()?;
    if ch != b'`' && ch != b'~' {
        return None;
    }
    let len = rest.bytes().take_while(|&b| b == ch).count();
    if len < 3 {
        return None;
    }
    let info = &rest[len..];
    let ok = if opening {
        ch == b'~' || !info.contains('`')
    } else {
        info.trim().is_empty()
    };
    ok.then_some((ch, len))
}

/// `text` without one code fence wrapped around all of it.
///
/// Models often wrap a whole answer, or the JSON of a tool call, in ```` ```json … ``` ````. When
/// the trimmed text starts with an opening fence and ends with the matching closing fence, this
/// returns what is between them; otherwise `text` trimmed.
///
/// ```
/// assert_eq!(text_format::strip_code_fence("```json\n{\"a\": 1}\n```"), "{\"a\": 1}");
/// assert_eq!(text_format::strip_code_fence("  plain  "), "plain");
/// ```
pub fn strip_code_fence(text: &str) -> &str {
    let trimmed = text.trim();
    let (first, rest) = trimmed.split_once('\n').unwrap_or((trimmed, ""));
    let (body, last) = rest.rsplit_once('\n').unwrap_or(("", rest));
    let first = first.trim_end_matches('\r');
    match (
        fence(first, true),
        fence(last.trim_end_matches('\r'), false),
    ) {
        (Some((open_ch, open_len)), Some((close_ch, close_len)))
            if open_ch == close_ch && close_len >= open_len =>
        {
            body.trim()
        }
        _ => trimmed,
    }
}

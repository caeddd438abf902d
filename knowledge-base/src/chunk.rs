//! Cutting a document's text into overlapping chunks, on paragraph and line boundaries.

use std::ops::Range;

/// Default largest chunk, in characters.
pub const DEFAULT_MAX_CHARS: usize = 1200;

/// Default overlap between consecutive chunks, in characters.
pub const DEFAULT_OVERLAP_CHARS: usize = 200;

/// Cuts text into chunks of at most `max_chars` characters (Unicode scalar values), each
/// repeating up to `overlap_chars` characters of the end of the one before, so a passage cut
/// at a chunk boundary is still found whole in one of them.
///
/// The rules, which the property tests check:
///
/// - **Boundaries.** Chunks start and end on line boundaries. A chunk ends after a blank line
///   or before a Markdown heading (a line starting with `#`) when one lies in its second half;
///   otherwise after the last whole line that fits.
/// - **Size.** No chunk has more than `max_chars` characters. A line longer than that is cut
///   into pieces of at most `max_chars` characters, after a space when there is one in the
///   second half of the piece, else anywhere between two characters; each piece is its own
///   unit, and a chunk made of pieces has that one line as its start and end line. Text is
///   never cut inside a UTF-8 character.
/// - **Overlap.** A chunk starts with whole lines (or pieces) of the end of the chunk before,
///   at most `overlap_chars` characters of them, and never so many that it would not reach
///   past the end of the chunk before.
/// - **Coverage.** Every character that is not white space is in at least one chunk; chunks
///   neither start nor end with blank lines, and a text of white space only has no chunk.
/// - **Lines.** A chunk's `start_line` and `end_line` are the 1-based lines of its first and
///   last character (a line's `\n` belongs to it).
///
/// Out-of-range settings are brought into range when chunking: `max_chars` is at least 1 and
/// `overlap_chars` at most half of `max_chars`.
///
/// ```
/// use knowledge_base::Chunker;
///
/// let text = "# Title\n\nFirst paragraph.\n\nSecond paragraph,\nover two lines.\n";
/// let chunker = Chunker { max_chars: 40, overlap_chars: 0 };
/// let chunks = chunker.chunks(text);
/// let texts: Vec<&str> = chunks.iter().map(|chunk| chunk.text(text)).collect();
/// assert_eq!(texts, ["# Title\n\nFirst paragraph.\n", "Second paragraph,\nover two lines.\n"]);
/// assert_eq!((chunks[1].start_line, chunks[1].end_line), (5, 6));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chunker {
    /// Largest chunk, in characters.
    pub max_chars: usize,
    /// Most characters a chunk repeats from the end of the chunk before.
    pub overlap_chars: usize,
}

impl Default for Chunker {
    /// [`DEFAULT_MAX_CHARS`] (1200) and [`DEFAULT_OVERLAP_CHARS`] (200).
    fn default() -> Self {
        Chunker {
            max_chars: DEFAULT_MAX_CHARS,
            overlap_chars: DEFAULT_OVERLAP_CHARS,
        }
    }
}

/// One chunk of a text: a byte range of it, and the lines it spans.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chunk {
    /// The chunk's bytes in the text (always on UTF-8 character boundaries).
    pub range: Range<usize>,
    /// 1-based line of the chunk's first character.
    pub start_line: usize,
    /// 1-based line of the chunk's last character.
    pub end_line: usize,
}

impl Chunk {
    /// The chunk's text, cut from the text it was made from.
    ///
    /// # Panics
    ///
    /// When `source` is not the text the chunk was made from and the range does not fit it.
    pub fn text<'a>(&self, source: &'a str) -> &'a str {
        &source[self.range.clone()]
    }
}

/// A whole line, or a piece of a line longer than a chunk.
#[derive(Debug)]
struct Unit {
    start: usize,
    end: usize,
    chars: usize,
    line: usize,
    /// White space only.
    blank: bool,
    /// A Markdown heading starts here.
    heading: bool,
}

impl Chunker {
    /// A chunker with these limits (see the type's documentation for how they apply).
    pub fn new(max_chars: usize, overlap_chars: usize) -> Self {
        Chunker {
            max_chars,
            overlap_chars,
        }
    }

    /// The limits in force: `max_chars` at least 1, `overlap_chars` at most half of it.
    fn limits(&self) -> (usize, usize) {
        let max = self.max_chars.max(1);
        (max, self.overlap_chars.min(max / 2))
    }

    /// Cuts `text` into chunks, in order.
    pub fn chunks(&self, text: &str) -> Vec<Chunk> {
        let (max, overlap) = self.limits();
        let units = units(text, max);
        let n = units.len();
        let mut chunks = Vec::new();
        let mut start = 0;
        // A unit the chunk must hold: the first one not blank after the chunk before.
        let mut must_hold = 0;
        loop {
            while start < n && units[start].blank {
                start += 1;
            }
            if start >= n {
                break;
            }
            // The most whole units that fit (at least one: no unit is longer than `max`).
            let mut fit = start;
            let mut size = 0;
            while fit < n && size + units[fit].chars <= max {
                size += units[fit].chars;
                fit += 1;
            }
            let mut end = fit;
            if fit < n {
                // Prefer a paragraph boundary in the second half, past the chunk before.
                let mut prefix = size;
                for k in (start + 1..=fit).rev() {
                    if prefix * 2 < max || k <= must_hold {
                        break;
                    }
                    if units[k - 1].blank || units[k].heading {
                        end = k;
                        break;
                    }
                    prefix -= units[k - 1].chars;
                }
            }
            let mut last = end;
            while last > start && units[last - 1].blank {
                last -= 1;
            }
            chunks.push(Chunk {
                range: units[start].start..units[last - 1].end,
                start_line: units[start].line,
                end_line: units[last - 1].line,
            });
            // The first unit after this chunk that is not blank: the next chunk must hold it.
            let mut target = end;
            while target < n && units[target].blank {
                target += 1;
            }
            if target >= n {
                break;
            }
            let gap: usize = units[end..=target].iter().map(|unit| unit.chars).sum();
            // The next chunk repeats whole units of this one's end, at most `overlap`
            // characters, and no more than leaves room to reach `target`.
            let mut next = end;
            let mut repeated = 0;
            while next - 1 > start && repeated + units[next - 1].chars <= overlap {
                next -= 1;
                repeated += units[next].chars;
            }
            while next < end && repeated + gap > max {
                repeated -= units[next].chars;
                next += 1;
            }
            if next == end {
                next = target;
            }
            must_hold = target;
            start = next;
        }
        chunks
    }
}

/// The text's lines as units, long lines cut into pieces of at most `max` characters.
fn units(text: &str, max: usize) -> Vec<Unit> {
    let mut units = Vec::new();
    let mut offset = 0;
    for (index, line) in text.split_inclusive('\n').enumerate() {
        let number = index + 1;
        let heading = line.starts_with('#');
        let mut rest = line;
        let mut first = true;
        while !rest.is_empty() {
            let piece = piece_len(rest, max);
            let (head, tail) = rest.split_at(piece);
            units.push(Unit {
                start: offset,
                end: offset + head.len(),
                chars: head.chars().count(),
                line: number,
                blank: head.trim().is_empty(),
                heading: heading && first,
            });
            offset += head.len();
            rest = tail;
            first = false;
        }
    }
    units
}

/// Length in bytes of the first piece of `line`: all of it when it has at most `max`
/// characters, else at most `max` characters, ending after a white space character in the
/// second half of the piece when there is one.
fn piece_len(line: &str, max: usize) -> usize {
    let mut cut = line.len();
    let mut space_cut = None;
    for (count, (index, c)) in line.char_indices().enumerate() {
        if count == max {
            cut = index;
            break;
        }
        if c.is_whitespace() && (count + 1) * 2 >= max {
            space_cut = Some(index + c.len_utf8());
        }
    }
    if cut == line.len() {
        return cut;
    }
    match space_cut {
        Some(space) if space < cut => space,
        _ => cut,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(chunker: Chunker, text: &str) -> Vec<String> {
        chunker
            .chunks(text)
            .iter()
            .map(|chunk| chunk.text(text).to_owned())
            .collect()
    }

    #[test]
    fn empty_and_blank_texts_have_no_chunks() {
        assert!(Chunker::default().chunks("").is_empty());
        assert!(Chunker::default().chunks(" \n\n\t\n").is_empty());
    }

    #[test]
    fn a_short_text_is_one_chunk_without_its_blank_edges() {
        let text = "\n\nhello\nworld\n\n";
        let chunks = Chunker::default().chunks(text);
        assert_eq!(chunks.len(), 1);
        assert_eq!(chunks[0].text(text), "hello\nworld\n");
        assert_eq!((chunks[0].start_line, chunks[0].end_line), (3, 4));
    }

    #[test]
    fn long_lines_are_cut_after_spaces_and_never_inside_a_character() {
        let text = "ééé ééé ééé ééé";
        let chunks = Chunker::new(8, 0).chunks(text);
        let pieces: Vec<&str> = chunks.iter().map(|chunk| chunk.text(text)).collect();
        assert_eq!(pieces, ["ééé ééé ", "ééé ééé"]);
        assert!(chunks.iter().all(|chunk| chunk.start_line == 1));
        let unbroken = "x".repeat(10);
        assert_eq!(texts(Chunker::new(4, 0), &unbroken), ["xxxx", "xxxx", "xx"]);
    }

    #[test]
    fn consecutive_chunks_overlap_by_whole_lines() {
        let text = "aaaa\nbbbb\ncccc\ndddd\neeee\n";
        assert_eq!(
            texts(Chunker::new(15, 5), text),
            ["aaaa\nbbbb\ncccc\n", "cccc\ndddd\neeee\n"]
        );
    }

    #[test]
    fn chunks_end_at_paragraphs_and_before_headings() {
        let text = "# A\none\ntwo\n# B\nthree\nfour\n";
        assert_eq!(
            texts(Chunker::new(20, 0), text),
            ["# A\none\ntwo\n", "# B\nthree\nfour\n"]
        );
    }
}

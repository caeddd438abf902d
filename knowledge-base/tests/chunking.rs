//! Property tests of the [`Chunker`]: coverage, sizes, overlaps, boundaries and line numbers.

use knowledge_base::{Chunk, Chunker, Document};
use proptest::prelude::*;

/// Texts with short and long lines, blank lines, headings, indentation and multi-byte
/// characters.
fn text() -> impl Strategy<Value = String> {
    let word = prop_oneof![
        "[a-z]{1,8}",
        Just("é".to_owned()),
        Just("日本語".to_owned()),
        Just("🙂".to_owned()),
        Just("x".repeat(70)),
    ];
    let line = prop_oneof![
        4 => prop::collection::vec(word, 0..12).prop_map(|words| words.join(" ")),
        1 => Just(String::new()),
        1 => Just("   \t".to_owned()),
        1 => "[a-z ]{0,20}".prop_map(|rest| format!("# {rest}")),
        1 => "[a-z]{1,10}".prop_map(|rest| format!("    {rest}")),
    ];
    (prop::collection::vec(line, 0..40), any::<bool>()).prop_map(|(lines, trailing)| {
        let mut text = lines.join("\n");
        if trailing {
            text.push('\n');
        }
        text
    })
}

fn line_of(text: &str, offset: usize) -> usize {
    1 + text.as_bytes()[..offset]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
}

/// Characters of the line holding byte `offset`, `\n` included.
fn line_chars(text: &str, offset: usize) -> usize {
    let bytes = text.as_bytes();
    let start = bytes[..offset]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    let end = bytes[offset..]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(text.len(), |i| offset + i + 1);
    text[start..end].chars().count()
}

fn check(text: &str, chunker: Chunker) -> Result<(), TestCaseError> {
    let chunks: Vec<Chunk> = chunker.chunks(text);
    let max = chunker.max_chars.max(1);
    for chunk in &chunks {
        let range = chunk.range.clone();
        prop_assert!(range.start < range.end && range.end <= text.len());
        prop_assert!(text.is_char_boundary(range.start) && text.is_char_boundary(range.end));
        let piece = chunk.text(text);
        // Size: never more than max_chars characters.
        prop_assert!(
            piece.chars().count() <= max,
            "{} > {max}",
            piece.chars().count()
        );
        // Lines: 1-based lines of the first and last character.
        prop_assert_eq!(chunk.start_line, line_of(text, range.start));
        prop_assert_eq!(chunk.end_line, line_of(text, range.end - 1));
        // No blank first or last line.
        let first = piece.split_inclusive('\n').next().unwrap();
        let last = piece.split_inclusive('\n').next_back().unwrap();
        prop_assert!(
            !first.trim().is_empty() && !last.trim().is_empty(),
            "{piece:?}"
        );
        // Boundaries: at line boundaries, except inside a line longer than a chunk.
        let starts_line = range.start == 0 || text.as_bytes()[range.start - 1] == b'\n';
        prop_assert!(starts_line || line_chars(text, range.start) > max);
        let ends_line = range.end == text.len() || text.as_bytes()[range.end - 1] == b'\n';
        prop_assert!(ends_line || line_chars(text, range.end - 1) > max);
    }
    for pair in chunks.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        // In order, each reaching further.
        prop_assert!(a.range.start < b.range.start && a.range.end < b.range.end);
        // Overlap: at most overlap_chars characters.
        if b.range.start < a.range.end {
            let shared = text[b.range.start..a.range.end].chars().count();
            prop_assert!(
                shared <= chunker.overlap_chars,
                "{shared} > {}",
                chunker.overlap_chars
            );
        }
    }
    // Coverage: every character that is not white space is in a chunk.
    let mut covered = vec![false; text.len()];
    for chunk in &chunks {
        covered[chunk.range.clone()].fill(true);
    }
    for (offset, c) in text.char_indices() {
        prop_assert!(
            c.is_whitespace() || covered[offset],
            "{c:?} at {offset} is in no chunk"
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn chunks_cover_fit_overlap_and_count_lines(
        text in text(),
        max_chars in 0usize..300,
        overlap_chars in 0usize..300,
    ) {
        check(&text, Chunker::new(max_chars, overlap_chars))?;
    }

    #[test]
    fn any_unicode_text_chunks_safely(text in "\\PC{0,400}", max_chars in 1usize..60) {
        check(&text, Chunker::new(max_chars, max_chars / 3))?;
    }
}

#[test]
fn the_workspace_docs_chunk_within_the_defaults() {
    let chunker = Chunker::default();
    assert_eq!((chunker.max_chars, chunker.overlap_chars), (1200, 200));
    for document in crate::common::workspace_docs() {
        check(&document.text, chunker).unwrap();
        let chunks = document.chunks(&chunker);
        assert!(!chunks.is_empty(), "{}", document.location);
        // Consecutive chunks do overlap when they can (lines of at most 200 characters).
        let overlapping = chunks
            .windows(2)
            .filter(|pair| pair[1].0.range.start < pair[0].0.range.end)
            .count();
        assert!(
            chunks.len() < 3 || overlapping > 0,
            "{}: no overlaps",
            document.location
        );
    }
}

#[test]
fn single_character_chunks() {
    let text = "ab\ncd";
    let chunks = Chunker::new(1, 5).chunks(text);
    let pieces: Vec<&str> = chunks.iter().map(|chunk| chunk.text(text)).collect();
    assert_eq!(pieces, ["a", "b", "c", "d"]);
    let lines: Vec<usize> = chunks.iter().map(|chunk| chunk.start_line).collect();
    assert_eq!(lines, [1, 1, 2, 2]);
    let document = Document::new("t", "t.txt", text);
    assert_eq!(document.chunks(&Chunker::new(1, 0)).len(), 4);
}

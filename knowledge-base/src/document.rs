//! Documents: text read from files, and where each chunk of it lies.

use std::fmt;
use std::io::Read as _;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::chunk::{Chunk, Chunker};
use crate::{KbError, ReadLimits};

/// Separates the pages of a [`SpanKind::Pages`] document's text: a line holding only a form
/// feed.
pub const PAGE_BREAK: &str = "\u{c}\n";

/// How a document's locations count: lines (text, Markdown, source code) or pages (PDF).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SpanKind {
    /// 1-based lines.
    Lines,
    /// 1-based pages; the text holds the pages separated by [`PAGE_BREAK`].
    Pages,
}

impl SpanKind {
    /// `lines` or `pages`, as stored.
    pub fn as_str(self) -> &'static str {
        match self {
            SpanKind::Lines => "lines",
            SpanKind::Pages => "pages",
        }
    }

    /// The kind `as_str` names.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "lines" => Some(SpanKind::Lines),
            "pages" => Some(SpanKind::Pages),
            _ => None,
        }
    }
}

/// Where a passage lies in its document: a range of lines or of pages, 1-based and inclusive.
///
/// Displayed as it is appended to the document's location: `12-40` (lines 12 to 40), `12` (one
/// line), `p3-4` (pages 3 to 4), `p3` (one page).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Span {
    /// Lines or pages.
    pub kind: SpanKind,
    /// First line or page.
    pub start: u32,
    /// Last line or page.
    pub end: u32,
}

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let prefix = match self.kind {
            SpanKind::Lines => "",
            SpanKind::Pages => "p",
        };
        if self.start == self.end {
            write!(f, "{prefix}{}", self.start)
        } else {
            write!(f, "{prefix}{}-{}", self.start, self.end)
        }
    }
}

/// A document to add to a knowledge base.
///
/// Its `location` identifies it within the base: adding a document with the location of one
/// already there replaces it. Passages found in it are cited as `location:span`
/// (`docs/guide.md:12-40`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Document {
    /// A title for people: a Markdown file's first `# ` heading, else the file name.
    pub title: String,
    /// Where the document comes from, usually its path as the user gave it.
    pub location: String,
    /// The text.
    pub text: String,
    /// Whether spans count lines or pages.
    pub kind: SpanKind,
}

/// Largest file [`Document::from_file`] reads: 256 MiB.
pub const MAX_FILE_BYTES: u64 = 256 * 1024 * 1024;

impl Document {
    /// A text document (spans count lines).
    pub fn new(
        title: impl Into<String>,
        location: impl Into<String>,
        text: impl Into<String>,
    ) -> Self {
        Document {
            title: title.into(),
            location: location.into(),
            text: text.into(),
            kind: SpanKind::Lines,
        }
    }

    /// A paged document (spans count pages), from the text of each page in order.
    pub fn from_pages(
        title: impl Into<String>,
        location: impl Into<String>,
        pages: impl IntoIterator<Item = impl AsRef<str>>,
    ) -> Self {
        let mut text = String::new();
        for (index, page) in pages.into_iter().enumerate() {
            if index > 0 {
                if !text.ends_with('\n') {
                    text.push('\n');
                }
                text.push_str(PAGE_BREAK);
            }
            // A form feed inside a page would count as a page break.
            text.push_str(&page.as_ref().replace('\u{c}', "\n"));
        }
        Document {
            title: title.into(),
            location: location.into(),
            text,
            kind: SpanKind::Pages,
        }
    }

    /// Reads a file within the default [`ReadLimits`]: UTF-8 text of any kind (plain text,
    /// Markdown, source code), recognised by its content rather than its name, or a PDF
    /// file's text page by page (feature `pdf`; without it a PDF is [`KbError::PdfDisabled`]).
    ///
    /// The location is the path as given; the title is a Markdown file's first `# ` heading,
    /// else the file name. A UTF-8 byte order mark is dropped. A binary file (one with a NUL
    /// byte) and text in another encoding are refused with [`KbError::NotText`] naming the
    /// file, as are files larger than [`MAX_FILE_BYTES`] and anything but a regular file (a
    /// directory, a named pipe, a device such as `/dev/zero`, also behind a link): those never
    /// end, or block, when read.
    ///
    /// PDF text comes from the `pdf-extract` crate. It reads the text layer only (a scanned
    /// PDF has none and gives an empty document), and a PDF it cannot parse is
    /// [`KbError::Pdf`]; that crate may panic on malformed files, which is caught here (the
    /// panic message still reaches the process's panic hook, by default standard error). A
    /// PDF past one of the [`ReadLimits`] is [`KbError::LimitExceeded`].
    pub fn from_file(path: impl AsRef<Path>) -> Result<Document, KbError> {
        Document::from_file_within(path, &ReadLimits::default())
    }

    /// [`Document::from_file`] within `limits`.
    pub fn from_file_within(
        path: impl AsRef<Path>,
        limits: &ReadLimits,
    ) -> Result<Document, KbError> {
        let path = path.as_ref();
        let shown = path.display().to_string();
        let bytes = read_regular_file(path, &shown)?;
        let file_name = path
            .file_name()
            .map_or_else(|| shown.clone(), |name| name.to_string_lossy().into_owned());
        if bytes.starts_with(b"%PDF-") {
            return read_pdf(&shown, file_name, &bytes, limits);
        }
        let text = decode_text(&shown, &bytes)?;
        let markdown = path
            .extension()
            .and_then(|extension| extension.to_str())
            .is_some_and(|extension| {
                matches!(
                    extension.to_ascii_lowercase().as_str(),
                    "md" | "markdown" | "mdx"
                )
            });
        let title = markdown
            .then(|| markdown_title(&text))
            .flatten()
            .unwrap_or(file_name);
        Ok(Document {
            title,
            location: shown,
            text,
            kind: SpanKind::Lines,
        })
    }

    /// The document's chunks, each with its text and span.
    pub fn chunks(&self, chunker: &Chunker) -> Vec<(Chunk, Span)> {
        // The page breaks are found once, not once per chunk: a long PDF has thousands.
        let breaks = self.page_breaks();
        chunker
            .chunks(&self.text)
            .into_iter()
            .map(|chunk| {
                let span = self.span_among(&chunk, &breaks);
                (chunk, span)
            })
            .collect()
    }

    /// Where `chunk` (a chunk of this document's text) lies: its lines, or for a paged document
    /// its pages.
    pub fn span(&self, chunk: &Chunk) -> Span {
        self.span_among(chunk, &self.page_breaks())
    }

    /// The byte offsets of the form feeds that separate pages, in order (none when spans count
    /// lines).
    fn page_breaks(&self) -> Vec<usize> {
        match self.kind {
            SpanKind::Lines => Vec::new(),
            SpanKind::Pages => self
                .text
                .bytes()
                .enumerate()
                .filter_map(|(offset, byte)| (byte == 0x0c).then_some(offset))
                .collect(),
        }
    }

    /// [`Document::span`] given the document's [`page_breaks`](Document::page_breaks).
    fn span_among(&self, chunk: &Chunk, breaks: &[usize]) -> Span {
        let clamp = |value: usize| u32::try_from(value).unwrap_or(u32::MAX);
        match self.kind {
            SpanKind::Lines => Span {
                kind: SpanKind::Lines,
                start: clamp(chunk.start_line),
                end: clamp(chunk.end_line),
            },
            SpanKind::Pages => {
                // The page of a byte: one more than the breaks before it.
                let page = |offset: usize| 1 + breaks.partition_point(|&at| at < offset);
                Span {
                    kind: SpanKind::Pages,
                    start: clamp(page(chunk.range.start)),
                    end: clamp(page(chunk.range.end.saturating_sub(1))),
                }
            }
        }
    }
}

/// The text of a file's bytes, or why it is not text.
fn decode_text(path: &str, bytes: &[u8]) -> Result<String, KbError> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    if let Some(offset) = bytes.iter().position(|&b| b == 0) {
        return Err(KbError::NotText {
            path: path.to_owned(),
            reason: format!("it holds binary data: a NUL byte at offset {offset}"),
            hint: "knowledge bases take UTF-8 text, Markdown, source code and PDF files",
        });
    }
    match std::str::from_utf8(bytes) {
        Ok(text) => Ok(text.to_owned()),
        Err(error) => Err(KbError::NotText {
            path: path.to_owned(),
            reason: format!(
                "it is not UTF-8: an invalid byte sequence at offset {}",
                error.valid_up_to()
            ),
            hint: "convert it to UTF-8 first (such as with `iconv -t UTF-8`)",
        }),
    }
}

/// The text of a Markdown file's first level-one ATX heading (`# Title`).
fn markdown_title(text: &str) -> Option<String> {
    let mut in_fence = false;
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        if let Some(title) = line.strip_prefix("# ") {
            let title = title.trim().trim_end_matches('#').trim();
            if !title.is_empty() {
                return Some(title.to_owned());
            }
        }
    }
    None
}

/// The bytes of the regular file `path` (`shown` names it in errors), at most
/// [`MAX_FILE_BYTES`] of them.
fn read_regular_file(path: &Path, shown: &str) -> Result<Vec<u8>, KbError> {
    let io = |operation: &'static str| {
        move |source| KbError::Io {
            operation,
            path: shown.to_owned(),
            source,
        }
    };
    // Checked before opening: opening a named pipe blocks until a writer comes.
    check_regular(shown, &std::fs::metadata(path).map_err(io("read"))?)?;
    let file = std::fs::File::open(path).map_err(io("open"))?;
    // Checked again on what was opened, in case the path changed in between.
    let metadata = file.metadata().map_err(io("read"))?;
    check_regular(shown, &metadata)?;
    let mut bytes = Vec::new();
    // `take`: a file that grows while it is read stops at the limit all the same.
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(io("read"))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(too_large(shown, "more bytes".to_owned()));
    }
    Ok(bytes)
}

/// `Ok` for a regular file of at most [`MAX_FILE_BYTES`].
fn check_regular(shown: &str, metadata: &std::fs::Metadata) -> Result<(), KbError> {
    let not_text = |reason: String, hint| KbError::NotText {
        path: shown.to_owned(),
        reason,
        hint,
    };
    if metadata.is_dir() {
        return Err(not_text(
            "it is a directory".to_owned(),
            "name the files in it instead",
        ));
    }
    if !metadata.is_file() {
        return Err(not_text(
            format!("it is {}, not a regular file", special_kind(metadata)),
            "knowledge bases read regular files only: copy what you want added into one",
        ));
    }
    if metadata.len() > MAX_FILE_BYTES {
        return Err(too_large(shown, format!("{} bytes", metadata.len())));
    }
    Ok(())
}

fn too_large(shown: &str, size: String) -> KbError {
    KbError::NotText {
        path: shown.to_owned(),
        reason: format!("it has {size}"),
        hint: "knowledge bases take files of at most 256 MiB: split it",
    }
}

/// What kind of file that is not a regular file or a directory `metadata` describes.
fn special_kind(metadata: &std::fs::Metadata) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt as _;
        let kind = metadata.file_type();
        if kind.is_fifo() {
            return "a named pipe (FIFO)";
        }
        if kind.is_char_device() {
            return "a character device";
        }
        if kind.is_block_device() {
            return "a block device";
        }
        if kind.is_socket() {
            return "a socket";
        }
    }
    let _ = metadata;
    "a special file"
}

#[cfg(feature = "pdf")]
fn read_pdf(
    path: &str,
    title: String,
    bytes: &[u8],
    limits: &ReadLimits,
) -> Result<Document, KbError> {
    let pages = crate::pdf::pages(path, bytes, limits)?;
    Ok(Document::from_pages(title, path, pages))
}

#[cfg(not(feature = "pdf"))]
fn read_pdf(
    path: &str,
    _title: String,
    _bytes: &[u8],
    _limits: &ReadLimits,
) -> Result<Document, KbError> {
    Err(KbError::PdfDisabled {
        path: path.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_display_as_location_suffixes() {
        let lines = |start, end| Span {
            kind: SpanKind::Lines,
            start,
            end,
        };
        assert_eq!(lines(12, 40).to_string(), "12-40");
        assert_eq!(lines(7, 7).to_string(), "7");
        let pages = Span {
            kind: SpanKind::Pages,
            start: 3,
            end: 4,
        };
        assert_eq!(pages.to_string(), "p3-4");
    }

    #[test]
    fn paged_documents_report_pages() {
        let document = Document::from_pages("t", "t.pdf", ["one\n", "two", "three\u{c}x"]);
        assert_eq!(document.text, "one\n\u{c}\ntwo\n\u{c}\nthree\nx");
        let chunks = document.chunks(&Chunker::new(7, 0));
        let spans: Vec<String> = chunks.iter().map(|(_, span)| span.to_string()).collect();
        assert_eq!(spans, ["p1", "p2", "p3"]);
    }

    #[test]
    fn markdown_titles_skip_code_fences() {
        assert_eq!(
            markdown_title("```\n# not\n```\n\n# Guide #\n"),
            Some("Guide".to_owned())
        );
        assert_eq!(markdown_title("## Sub\n"), None);
    }

    #[test]
    fn binary_and_non_utf8_files_are_refused_by_name() {
        let error = decode_text("a.bin", b"ab\0c").unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("a.bin is not a text document")
        );
        assert!(error.to_string().contains("offset 2"));
        let error = decode_text("l1.txt", b"caf\xe9").unwrap_err();
        assert!(error.to_string().contains("not UTF-8"), "{error}");
        assert_eq!(decode_text("b.txt", b"\xEF\xBB\xBFhi").unwrap(), "hi");
    }
}

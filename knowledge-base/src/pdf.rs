//! PDF text within [`ReadLimits`]: compressed streams are measured before the file is parsed,
//! and extraction stops when its text or its time passes the limit.

use std::io::Read as _;
use std::time::Instant;

use pdf_extract::{MediaBox, OutputDev, OutputError, PlainTextOutput, Transform};

use crate::{KbError, ReadLimit, ReadLimits};

/// The text of each page of the PDF `bytes` (`path` names it in errors).
pub(crate) fn pages(path: &str, bytes: &[u8], limits: &ReadLimits) -> Result<Vec<String>, KbError> {
    let over = |limit: ReadLimit| KbError::LimitExceeded {
        path: path.to_owned(),
        limit,
        max: limit.shown(limits),
    };
    if inflated_size_exceeds(bytes, limits.max_inflated_bytes) {
        return Err(over(ReadLimit::InflatedBytes));
    }
    let mut budget = Budget {
        text_left: limits.max_text_bytes,
        deadline: Instant::now() + limits.extract_timeout,
        stopped: None,
    };
    // pdf-extract may panic on malformed files; the panic message still reaches the process's
    // panic hook.
    let extracted =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| extract(bytes, &mut budget)));
    match (extracted, budget.stopped) {
        (Ok(Ok(pages)), _) => Ok(pages),
        (Ok(Err(_)), Some(limit)) => Err(over(limit)),
        (Ok(Err(error)), None) => Err(KbError::Pdf {
            path: path.to_owned(),
            reason: error.to_string(),
        }),
        (Err(panic), _) => {
            let message = panic
                .downcast_ref::<&str>()
                .map(|message| (*message).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown failure".to_owned());
            Err(KbError::Pdf {
                path: path.to_owned(),
                reason: format!("the PDF reader failed: {message}"),
            })
        }
    }
}

/// Page by page, as `pdf_extract::extract_text_from_mem_by_pages` does (a page that fails
/// ends the document), but through a [`Budget`].
fn extract(bytes: &[u8], budget: &mut Budget) -> Result<Vec<String>, OutputError> {
    let mut document = pdf_extract::Document::load_mem(bytes)?;
    if document.is_encrypted() {
        document.decrypt("")?;
    }
    let mut pages = Vec::new();
    for number in document.get_pages().into_keys() {
        budget.check_time()?;
        let mut text = String::new();
        let mut output = Bounded {
            inner: PlainTextOutput::new(&mut text),
            budget,
        };
        match pdf_extract::output_doc_page(&document, &mut output, number) {
            Ok(()) => pages.push(text),
            Err(error) if budget.stopped.is_some() => return Err(error),
            Err(_) => break,
        }
    }
    Ok(pages)
}

/// What is left of the limits while one file is extracted.
struct Budget {
    text_left: usize,
    deadline: Instant,
    /// The limit that stopped extraction, if one did.
    stopped: Option<ReadLimit>,
}

impl Budget {
    fn stop(&mut self, limit: ReadLimit) -> Result<(), OutputError> {
        self.stopped = Some(limit);
        // pdf-extract's errors carry no cause of ours; `stopped` says which limit it was.
        Err(OutputError::FormatError(std::fmt::Error))
    }

    fn check_time(&mut self) -> Result<(), OutputError> {
        if Instant::now() >= self.deadline {
            return self.stop(ReadLimit::ExtractTime);
        }
        Ok(())
    }

    /// Takes `bytes` of text (plus the separator the text output may write before it).
    fn take_text(&mut self, bytes: usize) -> Result<(), OutputError> {
        match self.text_left.checked_sub(bytes + 1) {
            Some(left) => {
                self.text_left = left;
                self.check_time()
            }
            None => self.stop(ReadLimit::TextBytes),
        }
    }
}

/// pdf-extract's plain-text output, stopped by a [`Budget`].
struct Bounded<'a, 'b> {
    inner: PlainTextOutput<&'a mut String>,
    budget: &'b mut Budget,
}

impl OutputDev for Bounded<'_, '_> {
    fn begin_page(
        &mut self,
        page_num: u32,
        media_box: &MediaBox,
        art_box: Option<(f64, f64, f64, f64)>,
    ) -> Result<(), OutputError> {
        self.budget.check_time()?;
        self.inner.begin_page(page_num, media_box, art_box)
    }

    fn end_page(&mut self) -> Result<(), OutputError> {
        self.inner.end_page()
    }

    fn output_character(
        &mut self,
        trm: &Transform,
        width: f64,
        spacing: f64,
        font_size: f64,
        char: &str,
    ) -> Result<(), OutputError> {
        self.budget.take_text(char.len())?;
        self.inner
            .output_character(trm, width, spacing, font_size, char)
    }

    fn begin_word(&mut self) -> Result<(), OutputError> {
        self.inner.begin_word()
    }

    fn end_word(&mut self) -> Result<(), OutputError> {
        self.inner.end_word()
    }

    fn end_line(&mut self) -> Result<(), OutputError> {
        self.inner.end_line()
    }
}

/// Whether the zlib streams in `bytes` (every `stream` keyword followed by zlib data: content,
/// font and object streams alike) expand past `max` bytes all together. Nothing is kept: each
/// stream is inflated into a fixed buffer and only counted, so the check itself needs no
/// memory, and it stops at the first byte past `max`.
fn inflated_size_exceeds(bytes: &[u8], max: u64) -> bool {
    let mut total: u64 = 0;
    let mut buffer = vec![0u8; 64 * 1024];
    let mut from = 0;
    while let Some(found) = find(&bytes[from..], b"stream") {
        let keyword = from + found;
        from = keyword + b"stream".len();
        // `endstream` ends a stream; only `stream` at an end of line starts one.
        if keyword >= 3 && &bytes[keyword - 3..keyword] == b"end" {
            continue;
        }
        let data = match &bytes[from..] {
            [b'\r', b'\n', rest @ ..] | [b'\n', rest @ ..] | [b'\r', rest @ ..] => rest,
            _ => continue,
        };
        let mut inflater = flate2::read::ZlibDecoder::new(data);
        // A stream that is not zlib data (another filter, or none) fails at once and counts
        // nothing; a damaged one counts what it gave before failing.
        while let Ok(read) = inflater.read(&mut buffer) {
            if read == 0 {
                break;
            }
            total += read as u64;
            if total > max {
                return true;
            }
        }
    }
    false
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use super::*;

    fn zlib(data: &[u8]) -> Vec<u8> {
        let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        encoder.write_all(data).unwrap();
        encoder.finish().unwrap()
    }

    #[test]
    fn inflated_streams_are_counted_together_and_endstream_is_no_start() {
        let mut pdf = b"%PDF-1.4\n1 0 obj\n<< /Filter /FlateDecode >>\nstream\n".to_vec();
        pdf.extend(zlib(&[b' '; 6000]));
        pdf.extend_from_slice(b"\nendstream\nendobj\n2 0 obj\n<< >>\nstream\r\n");
        pdf.extend(zlib(&[b'x'; 6000]));
        pdf.extend_from_slice(b"\nendstream\nendobj\n3 0 obj\n<< >>\nstream\nBT ET\nendstream\n");
        assert!(!inflated_size_exceeds(&pdf, 12_000));
        assert!(inflated_size_exceeds(&pdf, 11_999));
    }
}

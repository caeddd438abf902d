//! Bounds on the work of reading one file: how much text a PDF may yield, how far its
//! compressed streams may expand, and how long extracting its text may take.
//!
//! A file is data from anyone: a 3 MB PDF can expand to gigabytes, and one content stream
//! shared by every page is parsed once per page. Each bound ends the read of that one file
//! with [`KbError::LimitExceeded`](crate::KbError::LimitExceeded), naming the file and the
//! limit, before the work or the memory grows past it.

use std::fmt;
use std::time::Duration;

/// Most text one PDF file may yield: 64 MiB (a 30,000-page book holds about 60 MB).
pub const MAX_TEXT_BYTES: usize = 64 * 1024 * 1024;

/// Most bytes a PDF file's compressed streams may expand to, all together: 256 MiB.
pub const MAX_INFLATED_BYTES: u64 = 256 * 1024 * 1024;

/// Longest the text extraction of one PDF file may take: 30 s.
pub const EXTRACT_TIMEOUT: Duration = Duration::from_secs(30);

/// The bounds [`Document::from_file_within`](crate::Document::from_file_within) reads one file
/// within; [`Default`] is [`MAX_TEXT_BYTES`], [`MAX_INFLATED_BYTES`] and [`EXTRACT_TIMEOUT`],
/// what [`Document::from_file`](crate::Document::from_file) uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadLimits {
    /// Most text, in bytes, one PDF file may yield.
    pub max_text_bytes: usize,
    /// Most bytes a PDF file's zlib-compressed (`FlateDecode`) streams may expand to, all
    /// together; checked before the PDF is parsed.
    pub max_inflated_bytes: u64,
    /// Longest a PDF file's text extraction may take. It is checked before each page and as
    /// text is produced, so one page that parses slowly without producing text can still
    /// overrun it by that page's time.
    pub extract_timeout: Duration,
}

impl Default for ReadLimits {
    fn default() -> Self {
        ReadLimits {
            max_text_bytes: MAX_TEXT_BYTES,
            max_inflated_bytes: MAX_INFLATED_BYTES,
            extract_timeout: EXTRACT_TIMEOUT,
        }
    }
}

/// Which of the [`ReadLimits`] a read went past.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ReadLimit {
    /// [`ReadLimits::max_text_bytes`].
    TextBytes,
    /// [`ReadLimits::max_inflated_bytes`].
    InflatedBytes,
    /// [`ReadLimits::extract_timeout`].
    ExtractTime,
}

impl ReadLimit {
    /// The field of [`ReadLimits`] that sets this limit.
    pub fn field(self) -> &'static str {
        match self {
            ReadLimit::TextBytes => "max_text_bytes",
            ReadLimit::InflatedBytes => "max_inflated_bytes",
            ReadLimit::ExtractTime => "extract_timeout",
        }
    }

    /// This limit's value in `limits`, for people (`64 MiB`, `30 s`).
    #[cfg_attr(
        not(feature = "pdf"),
        allow(dead_code, reason = "only PDF reading goes past limits")
    )]
    pub(crate) fn shown(self, limits: &ReadLimits) -> String {
        match self {
            ReadLimit::TextBytes => mib(limits.max_text_bytes as u64),
            ReadLimit::InflatedBytes => mib(limits.max_inflated_bytes),
            ReadLimit::ExtractTime => {
                format!("{:.3} s", limits.extract_timeout.as_secs_f64()).replace(".000 s", " s")
            }
        }
    }

    /// What to do about it.
    pub(crate) fn hint(self) -> &'static str {
        match self {
            ReadLimit::TextBytes => {
                "split the document, or export the part you need to a .txt file and add that"
            }
            ReadLimit::InflatedBytes => {
                "the file is damaged or built to exhaust memory: export its text to a .txt file \
                 and add that instead"
            }
            ReadLimit::ExtractTime => {
                "the file is damaged or built to stall readers: export its text to a .txt file \
                 and add that instead"
            }
        }
    }
}

impl fmt::Display for ReadLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ReadLimit::TextBytes => "its text is larger than",
            ReadLimit::InflatedBytes => "its compressed streams expand past",
            ReadLimit::ExtractTime => "extracting its text takes longer than",
        })
    }
}

/// `bytes` in MiB when a whole number of them, else in bytes.
#[cfg_attr(
    not(feature = "pdf"),
    allow(dead_code, reason = "only PDF reading goes past limits")
)]
fn mib(bytes: u64) -> String {
    const MIB: u64 = 1024 * 1024;
    if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else {
        format!("{bytes} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_show_their_values() {
        let limits = ReadLimits {
            max_text_bytes: 100,
            ..ReadLimits::default()
        };
        assert_eq!(ReadLimit::TextBytes.shown(&limits), "100 bytes");
        assert_eq!(ReadLimit::InflatedBytes.shown(&limits), "256 MiB");
        assert_eq!(ReadLimit::ExtractTime.shown(&limits), "30 s");
    }
}

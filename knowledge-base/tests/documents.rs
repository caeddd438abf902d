//! `Document::from_file`: text of every kind, refusals, and PDF.

use std::path::PathBuf;
use std::time::Duration;

use knowledge_base::{Document, KbError, ReadLimit, ReadLimits, SpanKind};

#[test]
fn text_markdown_and_source_are_read_by_content() {
    let dir = tempfile::tempdir().unwrap();
    let markdown = dir.path().join("guide.md");
    std::fs::write(&markdown, "\u{feff}Intro\n\n# The Guide\n\nBody\n").unwrap();
    let document = Document::from_file(&markdown).unwrap();
    assert_eq!(document.title, "The Guide");
    assert_eq!(document.location, markdown.display().to_string());
    assert_eq!(document.text, "Intro\n\n# The Guide\n\nBody\n");
    assert_eq!(document.kind, SpanKind::Lines);

    // Any name: the content decides. The title is the file name.
    let source = dir.path().join("main.rs.bak");
    std::fs::write(&source, "fn main() {\n    println!(\"hi\");\n}\n").unwrap();
    let document = Document::from_file(&source).unwrap();
    assert_eq!(document.title, "main.rs.bak");
    let no_extension = dir.path().join("Makefile");
    std::fs::write(&no_extension, "all:\n\techo ok\n").unwrap();
    assert_eq!(
        Document::from_file(&no_extension).unwrap().title,
        "Makefile"
    );
}

#[test]
fn binary_and_foreign_files_are_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("logo.png");
    std::fs::write(&image, b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR").unwrap();
    let error = Document::from_file(&image).unwrap_err();
    assert!(matches!(error, KbError::NotText { .. }), "{error:?}");
    let message = error.to_string();
    assert!(
        message.contains("logo.png") && message.contains("binary"),
        "{message}"
    );

    let latin1 = dir.path().join("old.txt");
    std::fs::write(&latin1, b"caf\xe9 cr\xe8me\n").unwrap();
    let message = Document::from_file(&latin1).unwrap_err().to_string();
    assert!(
        message.contains("old.txt") && message.contains("UTF-8"),
        "{message}"
    );

    let error = Document::from_file(dir.path()).unwrap_err();
    assert!(error.to_string().contains("directory"), "{error}");
    let error = Document::from_file(dir.path().join("missing.md")).unwrap_err();
    assert!(matches!(error, KbError::Io { .. }), "{error:?}");
    assert!(error.to_string().contains("missing.md"));
}

/// `Document::from_file(path)` on another thread, or `None` when it has not returned after
/// 20 s (it used to read `/dev/zero` until memory ran out, and to block on a FIFO forever).
fn read_in_time(path: PathBuf) -> Option<Result<Document, KbError>> {
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = sender.send(Document::from_file(&path));
    });
    receiver.recv_timeout(Duration::from_secs(20)).ok()
}

#[cfg(unix)]
#[test]
fn devices_and_pipes_are_refused_by_name_without_reading_them() {
    let dir = tempfile::tempdir().unwrap();
    let zeros = dir.path().join("zeros.txt");
    std::os::unix::fs::symlink("/dev/zero", &zeros).unwrap();
    let pipe = dir.path().join("pipe.md");
    let made = std::process::Command::new("mkfifo")
        .arg(&pipe)
        .status()
        .unwrap();
    assert!(made.success());
    for (path, kind) in [(zeros, "a character device"), (pipe, "a named pipe")] {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let error = read_in_time(path)
            .unwrap_or_else(|| panic!("reading {name} did not return"))
            .unwrap_err();
        assert!(matches!(error, KbError::NotText { .. }), "{error:?}");
        let message = error.to_string();
        assert!(
            message.contains(&name) && message.contains(kind) && message.contains("regular file"),
            "{message}"
        );
    }
}

/// A two-page PDF whose pages say `page_texts` (Helvetica, one line each).
fn pdf(page_texts: &[&str]) -> Vec<u8> {
    let streams = page_texts
        .iter()
        .map(|text| format!("BT /F1 12 Tf 72 720 Td ({text}) Tj ET").into_bytes());
    let contents: Vec<usize> = (0..page_texts.len()).collect();
    paged_pdf(&streams.collect::<Vec<_>>(), &contents, "")
}

/// A PDF of `contents.len()` pages, page `i` showing content stream `contents[i]` of
/// `streams` (so pages may share one), each stream's dictionary holding `filter` as well.
fn paged_pdf(streams: &[Vec<u8>], contents: &[usize], filter: &str) -> Vec<u8> {
    let pages = contents.len();
    let first_stream = 4 + pages;
    // Objects: 1 catalog, 2 pages, 3 font, then the pages, then the content streams.
    let mut objects: Vec<Vec<u8>> = vec![
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        format!(
            "<< /Type /Pages /Kids [{}] /Count {pages} >>",
            (0..pages)
                .map(|i| format!("{} 0 R", 4 + i))
                .collect::<Vec<_>>()
                .join(" ")
        )
        .into_bytes(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"
            .to_vec(),
    ];
    for content in contents {
        objects.push(
            format!(
                "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] \
                 /Resources << /Font << /F1 3 0 R >> >> /Contents {} 0 R >>",
                first_stream + content
            )
            .into_bytes(),
        );
    }
    for stream in streams {
        let mut object = format!("<< /Length {} {filter} >>\nstream\n", stream.len()).into_bytes();
        object.extend_from_slice(stream);
        object.extend_from_slice(b"\nendstream");
        objects.push(object);
    }
    let mut out = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for (i, object) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n", i + 1).as_bytes());
        out.extend_from_slice(object);
        out.extend_from_slice(b"\nendobj\n");
    }
    let xref = out.len();
    out.extend_from_slice(
        format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes(),
    );
    for offset in offsets {
        out.extend_from_slice(format!("{offset:010} 00000 n \n").as_bytes());
    }
    out.extend_from_slice(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1
        )
        .as_bytes(),
    );
    out
}

#[cfg(feature = "pdf")]
#[test]
fn pdf_text_is_read_page_by_page() {
    use knowledge_base::Chunker;

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("manual.pdf");
    std::fs::write(
        &path,
        pdf(&["Pump overview", "Replace the impeller yearly"]),
    )
    .unwrap();
    let document = Document::from_file(&path).unwrap();
    assert_eq!(document.kind, SpanKind::Pages);
    assert_eq!(document.title, "manual.pdf");
    assert!(
        document.text.contains("Pump overview"),
        "{:?}",
        document.text
    );
    assert!(document.text.contains("impeller"), "{:?}", document.text);
    let spans: Vec<String> = document
        .chunks(&Chunker::new(30, 0))
        .iter()
        .map(|(_, span)| span.to_string())
        .collect();
    assert_eq!(spans, ["p1", "p2"]);

    // A damaged PDF is an error naming the file, never a panic.
    let damaged = dir.path().join("damaged.pdf");
    let mut bytes = pdf(&["x"]);
    bytes.truncate(60);
    std::fs::write(&damaged, bytes).unwrap();
    let error = Document::from_file(&damaged).unwrap_err();
    assert!(matches!(error, KbError::Pdf { .. }), "{error:?}");
    assert!(error.to_string().contains("damaged.pdf"));
}

/// zlib data of `bytes` spaces, compressed as far as it goes (about 1000 to 1).
#[cfg(feature = "pdf")]
fn deflated_spaces(bytes: usize) -> Vec<u8> {
    use std::io::Write as _;

    let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    let block = vec![b' '; 1 << 20];
    let mut left = bytes;
    while left > 0 {
        let now = left.min(block.len());
        encoder.write_all(&block[..now]).unwrap();
        left -= now;
    }
    encoder.finish().unwrap()
}

#[cfg(feature = "pdf")]
#[test]
fn a_pdf_bomb_is_refused_before_it_is_inflated() {
    // 257 MiB of content in a 260 KB file: it used to be inflated whole (a 3 MB one took
    // 8 GB of memory).
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bomb.pdf");
    let stream = deflated_spaces(257 << 20);
    assert!(stream.len() < 1 << 20, "{}", stream.len());
    std::fs::write(&path, paged_pdf(&[stream], &[0], "/Filter /FlateDecode")).unwrap();
    let error = Document::from_file(&path).unwrap_err();
    assert!(
        matches!(
            &error,
            KbError::LimitExceeded { limit: ReadLimit::InflatedBytes, max, .. } if max == "256 MiB"
        ),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(
        message.contains("bomb.pdf")
            && message.contains("256 MiB")
            && message.contains("max_inflated_bytes"),
        "{message}"
    );
}

#[cfg(feature = "pdf")]
#[test]
fn a_stream_shared_by_every_page_stops_at_the_text_and_time_limits() {
    // 200 pages showing one stream: its text is extracted once per page.
    let line = format!(
        "BT /F1 12 Tf 72 720 Td ({}) Tj ET",
        "Pump overview ".repeat(40)
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.pdf");
    std::fs::write(&path, paged_pdf(&[line.into_bytes()], &[0; 200], "")).unwrap();

    let text_limit = ReadLimits {
        max_text_bytes: 64 << 10,
        ..ReadLimits::default()
    };
    let error = Document::from_file_within(&path, &text_limit).unwrap_err();
    assert!(
        matches!(
            &error,
            KbError::LimitExceeded {
                limit: ReadLimit::TextBytes,
                ..
            }
        ),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(
        message.contains("shared.pdf")
            && message.contains("65536 bytes")
            && message.contains("max_text_bytes"),
        "{message}"
    );

    let no_time = ReadLimits {
        extract_timeout: Duration::ZERO,
        ..ReadLimits::default()
    };
    let error = Document::from_file_within(&path, &no_time).unwrap_err();
    assert!(
        matches!(
            &error,
            KbError::LimitExceeded {
                limit: ReadLimit::ExtractTime,
                ..
            }
        ),
        "{error:?}"
    );
    assert!(error.to_string().contains("extract_timeout"), "{error}");

    // Within the default limits the same file is read, every page.
    let document = Document::from_file(&path).unwrap();
    assert_eq!(document.text.matches("Pump overview").count(), 200 * 40);
}

#[cfg(not(feature = "pdf"))]
#[test]
fn pdf_needs_the_feature() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("manual.pdf");
    std::fs::write(&path, pdf(&["Pump overview"])).unwrap();
    let error = Document::from_file(&path).unwrap_err();
    assert!(matches!(error, KbError::PdfDisabled { .. }), "{error:?}");
    assert!(error.to_string().contains("feature `pdf`"));
}

//! `Document::from_file`: text of every kind, refusals, and PDF.

use knowledge_base::{Document, KbError, SpanKind};

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

/// A two-page PDF whose pages say `page_texts` (Helvetica, one line each).
fn pdf(page_texts: &[&str]) -> Vec<u8> {
    let pages = page_texts.len();
    // Objects: 1 catalog, 2 pages, 3 font, then per page: page object, content stream.
    let mut objects: Vec<String> = vec![
        "<< /Type /Catalog /Pages 2 0 R >>".to_owned(),
        format!(
            "<< /Type /Pages /Kids [{}] /Count {pages} >>",
            (0..pages)
                .map(|i| format!("{} 0 R", 4 + 2 * i))
                .collect::<Vec<_>>()
                .join(" ")
        ),
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"
            .to_owned(),
    ];
    for (i, text) in page_texts.iter().enumerate() {
        let stream = format!("BT /F1 12 Tf 72 720 Td ({text}) Tj ET");
        objects.push(format!(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] \
             /Resources << /Font << /F1 3 0 R >> >> /Contents {} 0 R >>",
            5 + 2 * i
        ));
        objects.push(format!(
            "<< /Length {} >>\nstream\n{stream}\nendstream",
            stream.len()
        ));
    }
    let mut out = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for (i, object) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n{object}\nendobj\n", i + 1).as_bytes());
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

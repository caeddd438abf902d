//! The TextFormat fuzz target (`fuzz/`), shared with its proptest twin
//! (`tests/fuzz_targets.rs`); not a stable API.

use crate::{MarkdownFormat, TextFormat, TextSection, XmlFormat, strip_code_fence};

/// Pieces of the syntax the scanners branch on: headings, tags, fences, line ends.
const PIECES: &[&str] = &[
    "# ",
    "#",
    "## ",
    "\n",
    "\r\n",
    "\r",
    " ",
    "\t",
    "```",
    "~~~",
    "````",
    "```xml\n",
    "<answer>",
    "</answer>",
    "<thinking>",
    "</ThInKiNg>",
    "<action>",
    "</action>",
    "<observation>",
    "<",
    ">",
    "</",
    "/>",
    "<answer/>",
    "answer",
    "thinking",
    "action",
    ":",
    "é漢🦀",
    "\u{0}",
    "\u{feff}",
];

/// The target: the first byte picks the format (Markdown or XML, strict or not, with or
/// without registered sections), the rest is the model's reply (raw, or syntax pieces).
/// Parsing returns, and what it returns is trimmed and non-empty.
pub fn parse(data: &[u8]) {
    let Some((&config, rest)) = data.split_first() else {
        return;
    };
    let text = if config & 0x10 == 0 {
        String::from_utf8_lossy(rest).into_owned()
    } else {
        let mut text = String::new();
        let mut bytes = rest.iter();
        while let Some(&choice) = bytes.next() {
            if choice < 0xE0 {
                text.push_str(PIECES[usize::from(choice) % PIECES.len()]);
            } else {
                // A run of raw bytes, as many as the choice says.
                let raw: Vec<u8> = bytes
                    .by_ref()
                    .take(usize::from(choice - 0xE0))
                    .copied()
                    .collect();
                text.push_str(&String::from_utf8_lossy(&raw));
            }
        }
        text
    };
    let mut sections = Vec::new();
    if config & 0x04 != 0 {
        sections.push(TextSection::new("thinking", "t").expect("a valid name"));
        sections.push(
            TextSection::new("answer", "a")
                .expect("a valid name")
                .required(config & 0x08 != 0)
                .repeatable(false),
        );
        sections.push(TextSection::new("action", "c").expect("a valid name"));
    }
    let strict = config & 0x02 != 0;
    let format: Box<dyn TextFormat> = if config & 0x01 == 0 {
        let mut format = MarkdownFormat::new().strict(strict);
        for section in sections {
            format = format.with_section(section);
        }
        Box::new(format)
    } else {
        let mut format = XmlFormat::new().strict(strict);
        for section in sections {
            format = format.with_section(section);
        }
        Box::new(format)
    };
    if let Ok(parsed) = format.parse(&text) {
        for (name, content) in parsed.iter() {
            assert!(!content.is_empty(), "section {name} is empty");
            assert_eq!(content, content.trim(), "section {name} is not trimmed");
        }
    }
    let _ = strip_code_fence(&text);
}

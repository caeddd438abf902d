use std::collections::HashMap;

use crate::lines::{Lines, normalize};
use crate::registry::{Found, Registry};
use crate::section::is_name_char;
use crate::{FormattedSection, ParseError, ParsedSections, TextFormat, TextSection};

/// The tag [`XmlFormat::format_sections`] wraps observations in.
pub const OBSERVATION_TAG: &str = "observation";

/// Sections as XML-style tags: `<name>` … `</name>`.
///
/// # Parsing
///
/// Only bare tags count (`<answer>`, no attributes), matched to registered names ignoring ASCII
/// case. Each closing tag pairs with the nearest unpaired opening tag of the same name before it,
/// so a literal `provide <answer>` inside `<thinking>` does not open a section. Then only
/// *top-level* pairs are sections: a pair inside another registered section, such as an example
/// `<answer>42</answer>` written inside `<thinking>`, is that section's content. Also:
///
/// - text outside sections is ignored, tags inside fenced code blocks are content;
/// - a section whose closing tag is missing (an output cut off, or a model that forgot it) is
///   accepted when its opening tag starts a line and it is not inside another section: it runs
///   to the next section or the end;
/// - an unregistered pair of tags is skipped, or is an error with
///   [`strict`](XmlFormat::strict);
/// - if no section is found outside code blocks, the fenced blocks are searched, so an answer
///   wrapped whole in ```` ```xml ```` still parses.
///
/// # Formatting
///
/// `format_section("search", "…")` is `"<search>\n…\n</search>"`; `format_sections` writes
/// each section followed by a newline, inside one `<observation>` wrapper (the text includes the
/// full structure), and an empty list gives the empty string.
///
/// ```
/// use text_format::{FormattedSection, TextFormat, XmlFormat};
///
/// let format = XmlFormat::new();
/// let text = format.format_sections(&[FormattedSection::new("search", "3 results")]);
/// assert_eq!(text, "<observation>\n<search>\n3 results\n</search>\n</observation>");
/// assert_eq!(format.format_sections(&[]), "");
/// ```
#[derive(Clone, Debug, Default)]
pub struct XmlFormat {
    registry: Registry,
}

/// A tag found in the text.
struct Tag<'a> {
    closing: bool,
    name: &'a str,
    /// Byte range of the tag itself.
    start: usize,
    end: usize,
    line: usize,
    /// Whether only whitespace precedes the tag on its line.
    starts_line: bool,
}

/// A matched pair of tags, as indexes into the tag list.
#[derive(Clone, Copy)]
struct Pair {
    open: usize,
    close: usize,
}

impl XmlFormat {
    /// A format with no sections registered that ignores unknown tags.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers `section` and returns the format, for building in one expression.
    #[must_use]
    pub fn with_section(mut self, section: TextSection) -> Self {
        self.register_section(section);
        self
    }

    /// Whether an unregistered top-level pair of tags is an error (`true`) or skipped (`false`,
    /// the default).
    #[must_use]
    pub fn strict(mut self, strict: bool) -> Self {
        self.registry.strict = strict;
        self
    }

    /// The registered sections, in registration order.
    pub fn sections(&self) -> &[TextSection] {
        self.registry.sections()
    }

    /// Whether a tag named `name` delimits a section.
    fn counts(&self, name: &str) -> bool {
        self.registry.is_empty() || self.registry.lookup(name).is_some()
    }

    fn scan<'a>(
        &self,
        lines: &Lines<'a>,
        line_offset: usize,
        unclosed: &mut HashMap<usize, usize>,
    ) -> Result<Vec<Found<'a>>, ParseError> {
        let text = lines.text;
        let tags = tags(lines);
        let pairs = pair(&tags);
        let span = |pair: &Pair| tags[pair.open].start..tags[pair.close].end;

        // Top-level section pairs: sorted by start, dropping any inside (or crossing) a kept one.
        let mut sections: Vec<Pair> = pairs
            .iter()
            .copied()
            .filter(|pair| self.counts(tags[pair.open].name))
            .collect();
        sections.sort_by_key(|pair| tags[pair.open].start);
        let mut kept: Vec<Pair> = Vec::with_capacity(sections.len());
        for pair in sections {
            if kept
                .last()
                .is_none_or(|last| tags[pair.open].start >= tags[last.close].end)
            {
                kept.push(pair);
            }
        }
        // `kept` is sorted and disjoint: the only candidate is the last pair starting before.
        let inside_kept = |offset: usize| {
            let after = kept.partition_point(|pair| tags[pair.open].start <= offset);
            after > 0 && span(&kept[after - 1]).contains(&offset)
        };

        if self.registry.strict {
            let stray = pairs
                .iter()
                .filter(|pair| !self.counts(tags[pair.open].name))
                .filter(|pair| !inside_kept(tags[pair.open].start))
                .min_by_key(|pair| tags[pair.open].start);
            if let Some(pair) = stray {
                let tag = &tags[pair.open];
                return Err(self.registry.unknown_section(
                    lines.line(tag.line),
                    tag.name,
                    tag.line + line_offset,
                    spell,
                ));
            }
        }

        let mut found: Vec<(usize, Found<'a>)> = kept
            .iter()
            .map(|pair| {
                let (open, close) = (&tags[pair.open], &tags[pair.close]);
                (
                    open.start,
                    self.found(open, text[open.end..close.start].trim(), line_offset),
                )
            })
            .collect();

        // Opening tags left unpaired: a section cut off before its closing tag, when the tag
        // starts a line at top level; it runs to the next section.
        let paired: Vec<bool> = {
            let mut paired = vec![false; tags.len()];
            for pair in &pairs {
                paired[pair.open] = true;
                paired[pair.close] = true;
            }
            paired
        };
        let mut boundaries: Vec<usize> = kept.iter().map(|pair| tags[pair.open].start).collect();
        let open_ends: Vec<&Tag<'a>> = tags
            .iter()
            .enumerate()
            .filter(|(i, tag)| !paired[*i] && !tag.closing && self.counts(tag.name))
            .map(|(_, tag)| tag)
            .collect();
        for tag in &open_ends {
            if let Some(index) = self.registry.lookup(tag.name) {
                unclosed.entry(index).or_insert(tag.line + line_offset);
            }
        }
        let accepted: Vec<&Tag<'a>> = open_ends
            .into_iter()
            .filter(|tag| tag.starts_line && !inside_kept(tag.start))
            .collect();
        boundaries.extend(accepted.iter().map(|tag| tag.start));
        boundaries.sort_unstable();
        for tag in accepted {
            let next = boundaries.partition_point(|&boundary| boundary <= tag.start);
            let end = boundaries.get(next).copied().unwrap_or(text.len());
            found.push((
                tag.start,
                self.found(tag, text[tag.end..end].trim(), line_offset),
            ));
        }
        found.sort_by_key(|(start, _)| *start);
        Ok(found.into_iter().map(|(_, item)| item).collect())
    }

    fn found<'a>(&self, open: &Tag<'a>, content: &'a str, line_offset: usize) -> Found<'a> {
        Found {
            section: self.registry.lookup(open.name),
            written: open.name,
            line: open.line + line_offset,
            content,
        }
    }
}

/// Every bare `<name>` / `</name>` tag outside fenced code blocks, in order.
fn tags<'a>(lines: &Lines<'a>) -> Vec<Tag<'a>> {
    let mut tags = Vec::new();
    for line in 0..lines.len() {
        if lines.in_code[line] {
            continue;
        }
        let range = lines.ranges[line].clone();
        let bytes = &lines.text.as_bytes()[range.clone()];
        let mut at = 0;
        while let Some(lt) = bytes[at..].iter().position(|&b| b == b'<') {
            let start = at + lt;
            at = start + 1;
            let closing = bytes.get(at) == Some(&b'/');
            let name_start = at + usize::from(closing);
            let name_len = bytes[name_start..]
                .iter()
                .take_while(|&&b| is_name_char(char::from(b)))
                .count();
            if name_len == 0 || bytes.get(name_start + name_len) != Some(&b'>') {
                continue;
            }
            let end = name_start + name_len + 1;
            tags.push(Tag {
                closing,
                name: &lines.text[range.start + name_start..range.start + name_start + name_len],
                start: range.start + start,
                end: range.start + end,
                line,
                starts_line: bytes[..start].iter().all(u8::is_ascii_whitespace),
            });
            at = end;
        }
    }
    tags
}

/// Pairs each closing tag with the last unpaired opening tag of the same name (ASCII case
/// ignored) before it.
fn pair(tags: &[Tag<'_>]) -> Vec<Pair> {
    let mut open: HashMap<String, Vec<usize>> = HashMap::new();
    let mut pairs = Vec::new();
    for (i, tag) in tags.iter().enumerate() {
        let key = tag.name.to_ascii_lowercase();
        if tag.closing {
            if let Some(opened) = open.get_mut(&key).and_then(Vec::pop) {
                pairs.push(Pair {
                    open: opened,
                    close: i,
                });
            }
        } else {
            open.entry(key).or_default().push(i);
        }
    }
    pairs
}

fn spell(name: &str) -> String {
    format!("<{name}>")
}

fn hint(name: &str) -> String {
    format!("as <{name}>…</{name}>, closing the tag")
}

impl TextFormat for XmlFormat {
    fn register_section(&mut self, section: TextSection) {
        self.registry.register(section);
    }

    fn parse(&self, output: &str) -> Result<ParsedSections, ParseError> {
        let text = normalize(output);
        let lines = Lines::new(&text);
        let mut unclosed = HashMap::new();
        let mut found = self.scan(&lines, 0, &mut unclosed)?;
        if found.iter().all(|item| item.content.is_empty()) {
            // Nothing outside code blocks: the model may have fenced its whole answer.
            for &block in &lines.blocks {
                let inner = Lines::new(lines.block_inner(block));
                found.extend(self.scan(&inner, block.0 + 1, &mut unclosed)?);
            }
        }
        self.registry.finish(
            &lines,
            found,
            &|index| unclosed.get(&index).copied(),
            spell,
            hint,
        )
    }

    fn describe_structure(&self) -> String {
        if self.registry.is_empty() {
            return String::new();
        }
        let mut text =
            String::from("Format your response using XML-style tags for each section:\n\n");
        for section in self.registry.sections() {
            let name = section.name();
            text.push_str(&format!("<{name}>\n{}\n</{name}>\n", section.description()));
        }
        let rules = self.registry.describe_rules(spell);
        if !rules.is_empty() {
            text.push('\n');
            text.push_str(&rules);
        }
        text
    }

    fn format_section(&self, name: &str, content: &str) -> String {
        format!("<{name}>\n{content}\n</{name}>")
    }

    fn format_sections(&self, sections: &[FormattedSection]) -> String {
        if sections.is_empty() {
            return String::new();
        }
        let mut text = format!("<{OBSERVATION_TAG}>\n");
        for section in sections {
            text.push_str(&self.format_section(&section.name, &section.content));
            text.push('\n');
        }
        text.push_str(&format!("</{OBSERVATION_TAG}>"));
        text
    }
}

use crate::lines::{Lines, normalize};
use crate::registry::{Found, Registry};
use crate::{FormattedSection, ParseError, ParsedSections, TextFormat, TextSection};

/// Sections as level-1 Markdown headings: `# name` on its own line, content below.
///
/// # Parsing
///
/// A heading is a line starting (after at most three spaces) with exactly one `#`, then spaces
/// or tabs, then the name. The name matches a registered section ignoring ASCII case, trailing
/// whitespace, a trailing `:` and closing `#`s (`# Answer:` is `answer`). A section's content
/// runs to the next level-1 heading, trimmed. So:
///
/// - `## Step 1` and `#hashtag` are content, which lets an answer use sub-headings;
/// - text before the first heading is ignored (models often open with prose);
/// - headings inside fenced code blocks are content;
/// - an unregistered level-1 heading ends the current section and its own content is skipped
///   (a model that writes its own `# Observation` must not extend its `# action`), or
///   is an error when built with [`strict`](MarkdownFormat::strict);
/// - if no section is found outside code blocks, the fenced blocks are searched, so an answer
///   wrapped whole in ```` ```markdown ```` still parses.
///
/// # Formatting
///
/// `format_section("search", "…")` is `"# search\n…"`; `format_sections` joins sections with a
/// blank line and adds no wrapper.
///
/// ```
/// use text_format::{FormattedSection, MarkdownFormat, TextFormat};
///
/// let format = MarkdownFormat::new();
/// let text = format.format_sections(&[
///     FormattedSection::new("get_customer_info", r#"{"id":"C001"}"#),
///     FormattedSection::new("get_flight", r#"{"flight":"AA100"}"#),
/// ]);
/// assert_eq!(text, "# get_customer_info\n{\"id\":\"C001\"}\n\n# get_flight\n{\"flight\":\"AA100\"}");
/// assert_eq!(format.format_sections(&[]), "");
/// ```
#[derive(Clone, Debug, Default)]
pub struct MarkdownFormat {
    registry: Registry,
}

impl MarkdownFormat {
    /// A format with no sections registered that ignores unknown headings.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers `section` and returns the format, for building in one expression.
    #[must_use]
    pub fn with_section(mut self, section: TextSection) -> Self {
        self.register_section(section);
        self
    }

    /// Whether an unregistered level-1 heading is an error (`true`) or skipped (`false`, the
    /// default).
    #[must_use]
    pub fn strict(mut self, strict: bool) -> Self {
        self.registry.strict = strict;
        self
    }

    /// The registered sections, in registration order.
    pub fn sections(&self) -> &[TextSection] {
        self.registry.sections()
    }

    /// Finds the headings of `lines`; `line_offset` is added to line numbers (for the inside
    /// of a fenced block).
    fn scan<'a>(
        &self,
        lines: &Lines<'a>,
        line_offset: usize,
    ) -> Result<Vec<Found<'a>>, ParseError> {
        let mut found = Vec::new();
        // The open section: (found entry, byte where its content starts).
        let mut open: Option<(Found<'a>, usize)> = None;
        let close = |open: Option<(Found<'a>, usize)>, end: usize, found: &mut Vec<Found<'a>>| {
            if let Some((mut item, start)) = open {
                item.content = lines.text.get(start..end).unwrap_or("").trim();
                found.push(item);
            }
        };
        for i in 0..lines.len() {
            if lines.in_code[i] {
                continue;
            }
            let Some(name) = heading(lines.line(i)) else {
                continue;
            };
            let line_start = lines.ranges[i].start;
            close(open.take(), line_start, &mut found);
            let section = self.registry.lookup(name);
            if section.is_some() || self.registry.is_empty() {
                let item = Found {
                    section,
                    written: name,
                    line: i + line_offset,
                    content: "",
                };
                open = Some((item, lines.ranges[i].end));
            } else if self.registry.strict {
                return Err(self.registry.unknown_section(
                    lines.line(i),
                    name,
                    i + line_offset,
                    spell,
                ));
            }
        }
        close(open, lines.text.len(), &mut found);
        Ok(found)
    }
}

/// The section name of a level-1 heading line, if `line` is one.
fn heading(line: &str) -> Option<&str> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    if indent > 3 {
        return None;
    }
    let rest = line[indent..].strip_prefix('#')?;
    if !rest.starts_with([' ', '\t']) {
        return None;
    }
    let name = rest
        .trim()
        .trim_end_matches('#')
        .trim_end()
        .trim_end_matches(':')
        .trim_end();
    (!name.is_empty()).then_some(name)
}

fn spell(name: &str) -> String {
    format!("`# {name}`")
}

fn hint(name: &str) -> String {
    format!("as a heading line `# {name}` followed by its content")
}

impl TextFormat for MarkdownFormat {
    fn register_section(&mut self, section: TextSection) {
        self.registry.register(section);
    }

    fn parse(&self, output: &str) -> Result<ParsedSections, ParseError> {
        let text = normalize(output);
        let lines = Lines::new(&text);
        let mut found = self.scan(&lines, 0)?;
        if found.iter().all(|item| item.content.is_empty()) {
            // Nothing outside code blocks: the model may have fenced its whole answer.
            for &block in &lines.blocks {
                let inner = Lines::new(lines.block_inner(block));
                found.extend(self.scan(&inner, block.0 + 1)?);
            }
        }
        self.registry.finish(&lines, found, &|_| None, spell, hint)
    }

    fn describe_structure(&self) -> String {
        if self.registry.is_empty() {
            return String::new();
        }
        let mut text =
            String::from("Format your response using markdown headers for each section:\n\n");
        for section in self.registry.sections() {
            text.push_str(&format!(
                "# {}\n{}\n\n",
                section.name(),
                section.description()
            ));
        }
        text.push_str(&self.registry.describe_rules(spell));
        text
    }

    fn format_section(&self, name: &str, content: &str) -> String {
        format!("# {name}\n{content}")
    }

    fn format_sections(&self, sections: &[FormattedSection]) -> String {
        sections
            .iter()
            .map(|section| self.format_section(&section.name, &section.content))
            .collect::<Vec<_>>()
            .join("\n\n")
    }
}

//! The registered sections and the rules both formats apply after scanning: which names count,
//! required and repeat checks, and the errors that quote lines.

use crate::lines::Lines;
use crate::{Line, ParseError, ParsedSections, TextSection};

/// A section occurrence found by a format's scanner, before the rules are applied.
pub(crate) struct Found<'a> {
    /// Index into the registry, or `None` when nothing is registered and any name counts.
    pub(crate) section: Option<usize>,
    /// The name as written (used when nothing is registered).
    pub(crate) written: &'a str,
    /// Line index where the section starts.
    pub(crate) line: usize,
    /// Content, already trimmed.
    pub(crate) content: &'a str,
}

/// How a format writes a section name in prose (`<answer>` or `# answer`).
pub(crate) type Spell = fn(&str) -> String;

#[derive(Clone, Debug, Default)]
pub(crate) struct Registry {
    sections: Vec<TextSection>,
    /// Whether a well-formed but unregistered section is an error rather than skipped. Off by
    /// default: models invent sections (an `observation` of their own, say) and the registered
    /// ones around them are still usable.
    pub(crate) strict: bool,
}

impl Registry {
    /// Adds `section` unless a section of the same name (ignoring ASCII case) exists: the first
    /// registration wins, so re-registering every turn is harmless.
    pub(crate) fn register(&mut self, section: TextSection) {
        if self.lookup(section.name()).is_none() {
            self.sections.push(section);
        }
    }

    pub(crate) fn sections(&self) -> &[TextSection] {
        &self.sections
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.sections.is_empty()
    }

    pub(crate) fn lookup(&self, name: &str) -> Option<usize> {
        self.sections
            .iter()
            .position(|section| section.name().eq_ignore_ascii_case(name))
    }

    pub(crate) fn expected(&self, spell: Spell) -> String {
        if self.sections.is_empty() {
            return format!("of your choosing, each written as {}", spell("name"));
        }
        self.sections
            .iter()
            .map(|section| spell(section.name()))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The error for an unregistered section `name` written on line index `line`, whose text
    /// is `text`.
    pub(crate) fn unknown_section(
        &self,
        text: &str,
        name: &str,
        line: usize,
        spell: Spell,
    ) -> ParseError {
        ParseError::UnknownSection {
            name: name.to_owned(),
            line: Line::new(line + 1, text),
            expected: self.expected(spell),
        }
    }

    /// Applies the rules to what a scanner found: drops empty contents, rejects repeats of
    /// single sections, checks required ones. `unclosed` gives, per section, a line where it was
    /// opened but never closed (XML), quoted when that section turns out to be missing.
    pub(crate) fn finish(
        &self,
        lines: &Lines<'_>,
        found: Vec<Found<'_>>,
        unclosed: &dyn Fn(usize) -> Option<usize>,
        spell: Spell,
        hint: fn(&str) -> String,
    ) -> Result<ParsedSections, ParseError> {
        let mut seen = vec![false; self.sections.len()];
        let mut entries = Vec::with_capacity(found.len());
        for item in found {
            if item.content.is_empty() {
                continue;
            }
            let name = match item.section {
                Some(index) => {
                    let section = &self.sections[index];
                    if seen[index] && !section.may_repeat() {
                        return Err(ParseError::RepeatedSection {
                            section: section.name().to_owned(),
                            line: Line::new(item.line + 1, lines.line(item.line)),
                        });
                    }
                    seen[index] = true;
                    section.name()
                }
                None => item.written,
            };
            entries.push((name.to_owned(), item.content.to_owned()));
        }
        if entries.is_empty() {
            return Err(ParseError::NoSections {
                expected: self.expected(spell),
                first_line: lines
                    .first_non_blank()
                    .map(|(i, text)| Line::new(i + 1, text)),
            });
        }
        let missing = self
            .sections
            .iter()
            .enumerate()
            .find(|(index, section)| section.is_required() && !seen[*index]);
        if let Some((index, section)) = missing {
            let context = unclosed(index).or_else(|| lines.last_non_blank().map(|(i, _)| i));
            return Err(ParseError::MissingSection {
                section: section.name().to_owned(),
                hint: hint(section.name()),
                context: context.map(|i| Line::new(i + 1, lines.line(i))),
            });
        }
        Ok(ParsedSections::from_entries(entries))
    }

    /// A `Rules:` paragraph for `describe_structure` stating the rules that differ from the
    /// defaults, or the empty string.
    pub(crate) fn describe_rules(&self, spell: Spell) -> String {
        let mut rules = String::new();
        for section in &self.sections {
            if section.is_required() {
                rules.push_str(&format!("- Always include {}.\n", spell(section.name())));
            }
            if !section.may_repeat() {
                rules.push_str(&format!(
                    "- Write {} at most once.\n",
                    spell(section.name())
                ));
            }
        }
        if self.strict {
            rules.push_str("- Write no other sections.\n");
        }
        if rules.is_empty() {
            rules
        } else {
            format!("Rules:\n{rules}")
        }
    }
}

use std::collections::BTreeMap;
use std::fmt;

/// What [`TextFormat::parse`](crate::TextFormat::parse) found: every section's content, in the
/// order the model wrote them.
///
/// Names are the *registered* spelling (`# THINKING` is reported as `thinking` when `thinking`
/// was registered); lookups by name ignore ASCII case. Empty sections are not reported: an empty
/// `<action></action>` must not look like a tool call (an agent that ran it would loop forever
/// on empty calls).
///
/// ```
/// use text_format::{MarkdownFormat, TextFormat, TextSection};
///
/// let mut format = MarkdownFormat::new();
/// format.register_section(TextSection::new("thinking", "Your reasoning.")?);
/// format.register_section(TextSection::new("answer", "Your final answer.")?);
///
/// let parsed = format.parse("# Thinking\nEasy.\n# answer\n42\n")?;
/// assert_eq!(parsed.first("answer"), Some("42"));
/// assert_eq!(parsed.get("THINKING"), ["Easy."]);
/// assert_eq!(parsed.iter().map(|(name, _)| name).collect::<Vec<_>>(), ["thinking", "answer"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ParsedSections {
    entries: Vec<(String, String)>,
}

impl ParsedSections {
    pub(crate) fn from_entries(entries: Vec<(String, String)>) -> Self {
        ParsedSections { entries }
    }

    /// Every content of the section `name`, in order (empty if it is absent).
    pub fn get(&self, name: &str) -> Vec<&str> {
        self.iter()
            .filter(|(section, _)| section.eq_ignore_ascii_case(name))
            .map(|(_, content)| content)
            .collect()
    }

    /// The first content of the section `name`.
    pub fn first(&self, name: &str) -> Option<&str> {
        self.iter()
            .find(|(section, _)| section.eq_ignore_ascii_case(name))
            .map(|(_, content)| content)
    }

    /// Whether the section `name` was found.
    pub fn contains(&self, name: &str) -> bool {
        self.first(name).is_some()
    }

    /// `(name, content)` pairs in document order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.entries
            .iter()
            .map(|(name, content)| (name.as_str(), content.as_str()))
    }

    /// How many sections were found (a repeated section counts each time).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether nothing was found.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The sections grouped by name (`name -> contents in order`).
    pub fn into_map(self) -> BTreeMap<String, Vec<String>> {
        let mut map = BTreeMap::<String, Vec<String>>::new();
        for (name, content) in self.entries {
            map.entry(name).or_default().push(content);
        }
        map
    }

    /// `(name, content)` pairs in document order, owned.
    pub fn into_entries(self) -> Vec<(String, String)> {
        self.entries
    }
}

/// A line of model output, quoted in errors: 1-based number and text.
///
/// Long lines are shortened to [`Line::MAX_QUOTE`] characters so an error stays readable when
/// it is fed back to the model.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Line {
    /// 1-based line number in the output as given (after CRLF normalisation).
    pub number: usize,
    /// The line's text, possibly shortened with a trailing `…`.
    pub text: String,
}

impl Line {
    /// Characters of a line kept in a quote.
    pub const MAX_QUOTE: usize = 120;

    /// Line `number` holding `text`, shortened to [`Line::MAX_QUOTE`] characters and without
    /// trailing whitespace.
    pub fn new(number: usize, text: &str) -> Self {
        let text = text.trim_end();
        let text = match text.char_indices().nth(Self::MAX_QUOTE) {
            Some((cut, _)) => format!("{}…", &text[..cut]),
            None => text.to_owned(),
        };
        Line { number, text }
    }
}

impl fmt::Display for Line {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: `{}`", self.number, self.text)
    }
}

use crate::{FormattedSection, ParseError, ParsedSections, TextSection};

/// One section convention, used in both directions: to *parse* what a model wrote and to
/// *format* what it will read.
///
/// Using one `TextFormat` for both means the model sees a single convention in a conversation:
/// if it is asked to answer in `<answer>` tags, tool observations come back in tags too, so it
/// never has to read one convention and write another.
///
/// Implemented by [`MarkdownFormat`](crate::MarkdownFormat) and [`XmlFormat`](crate::XmlFormat).
/// The trait is object safe; agents hold a `Box<dyn TextFormat>`.
pub trait TextFormat: Send + Sync {
    /// Registers a section the model may write. A second section with the same name (ignoring
    /// ASCII case) is ignored, so registering on every turn is harmless.
    fn register_section(&mut self, section: TextSection);

    /// Splits model output into the registered sections, in document order.
    ///
    /// Tolerant of what models write (leading prose, a code fence around the whole answer,
    /// CRLF, trailing whitespace, the case of section names); text inside fenced code blocks is
    /// content, never a section boundary. Strict where it matters: a missing required section,
    /// a repeated single section, or (when unknown sections are rejected) an unregistered one is
    /// a [`ParseError`] quoting the line. Empty sections are dropped.
    ///
    /// With nothing registered, every section the format can recognise is returned under the
    /// name as written.
    fn parse(&self, output: &str) -> Result<ParsedSections, ParseError>;

    /// The prompt text that teaches a model this format and the registered sections (empty when
    /// nothing is registered).
    fn describe_structure(&self) -> String;

    /// One section of model input, e.g. a tool's output under the tool's name.
    fn format_section(&self, name: &str, content: &str) -> String;

    /// Several sections combined into the text a model reads as one observation, including any
    /// wrapper the format puts around observations. An empty list gives the empty string, not
    /// an empty wrapper.
    fn format_sections(&self, sections: &[FormattedSection]) -> String;
}

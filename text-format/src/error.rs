use crate::Line;

/// Why model output could not be parsed.
///
/// The messages are written to be fed back to the model (an agent typically answers a parse
/// error with an observation quoting it): each says what was wrong, where, and what to write
/// instead.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// Not one registered section was found.
    #[error(
        "no recognized sections found in the output{}; write your response in the sections {expected}",
        first_line.as_ref().map(|line| format!(" (it starts at {line})")).unwrap_or_default()
    )]
    NoSections {
        /// The registered sections, formatted as the format writes them (`<answer>`,
        /// `# answer`), comma-separated.
        expected: String,
        /// The first non-blank line of the output, if any.
        first_line: Option<Line>,
    },
    /// A required section is missing.
    #[error(
        "required section `{section}` is missing{}; write it {hint}",
        context.as_ref().map(|line| format!(" ({line})")).unwrap_or_default()
    )]
    MissingSection {
        /// The missing section (registered spelling).
        section: String,
        /// How to write it, e.g. `as <answer>…</answer>`.
        hint: String,
        /// Where it went wrong: an opening tag that was never closed, or the last line of an
        /// output that may have been cut off.
        context: Option<Line>,
    },
    /// A section that is not registered appeared while unknown sections are rejected.
    #[error("unexpected section `{name}` at {line}; only these sections are allowed: {expected}")]
    UnknownSection {
        /// The section name as the model wrote it.
        name: String,
        /// Where it starts.
        line: Line,
        /// The registered sections, as in [`ParseError::NoSections`].
        expected: String,
    },
    /// A section that may appear once appeared again.
    #[error("section `{section}` appears more than once (again at {line}); write it once")]
    RepeatedSection {
        /// The section (registered spelling).
        section: String,
        /// Where it appears the second time.
        line: Line,
    },
}

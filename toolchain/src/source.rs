//! [`Source`]: what a search tool found, as a front end shows it under an answer.

use serde::{Deserialize, Serialize};

/// A source an answer may draw on: a knowledge-base passage or a web page a tool found. Tools
/// return them in [`ToolResult::sources`](crate::ToolResult::sources); a front end lists them
/// under the answer.
///
/// ```
/// use toolchain::{Source, ToolResult};
///
/// let page = Source {
///     title: "Rust".into(),
///     location: "https://www.rust-lang.org/".into(),
///     passage: "A language empowering everyone.".into(),
/// };
/// let result = ToolResult::text("1 result").with_sources(vec![page.clone()]);
/// assert_eq!(result.sources, [page]);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Source {
    /// The document's or page's title.
    pub title: String,
    /// Where it is: `path:12-40`, `file.pdf:p3-4`, or a URL.
    pub location: String,
    /// The passage or snippet.
    pub passage: String,
}

impl Source {
    /// Removes the secrets `redactor` knows from every field (a tool result is redacted before
    /// anyone reads it).
    pub(crate) fn redact(&mut self, redactor: &messages::Redactor) {
        redactor.redact_in_place(&mut self.title);
        redactor.redact_in_place(&mut self.location);
        redactor.redact_in_place(&mut self.passage);
    }
}

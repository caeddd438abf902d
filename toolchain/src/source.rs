//! [`Source`]: what a search tool found, as a front end shows it under an answer.

use serde::{Deserialize, Serialize};

/// A source an answer may draw on: a knowledge-base passage or a web page a tool found. A tool
/// says what its output cites with [`Tool::sources`](crate::Tool::sources); the chain passes
/// them on in [`ToolEvent::Finished`](crate::ToolEvent::Finished), and a front end lists them
/// under the answer.
///
/// ```
/// use toolchain::{async_trait, ExecutionContext, JsonSchema, Source, Tool, ToolError, ToolResult};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Deserialize, JsonSchema)]
/// struct SearchInput {
///     /// What to look for.
///     query: String,
/// }
///
/// #[derive(Serialize)]
/// struct Page {
///     title: String,
///     url: String,
///     snippet: String,
/// }
///
/// struct Search;
///
/// #[async_trait]
/// impl Tool<SearchInput, Vec<Page>> for Search {
///     fn name(&self) -> &str {
///         "search"
///     }
///     fn description(&self) -> &str {
///         "Searches the web."
///     }
///     async fn call(&self, _ctx: &ExecutionContext, _input: SearchInput) -> Result<ToolResult<Vec<Page>>, ToolError> {
///         Ok(ToolResult::text(vec![Page {
///             title: "Rust".into(),
///             url: "https://www.rust-lang.org/".into(),
///             snippet: "A language empowering everyone.".into(),
///         }]))
///     }
///     fn sources(&self, pages: &Vec<Page>) -> Vec<Source> {
///         pages
///             .iter()
///             .map(|page| Source {
///                 title: page.title.clone(),
///                 location: page.url.clone(),
///                 passage: page.snippet.clone(),
///             })
///             .collect()
///     }
/// }
///
/// let pages = vec![Page { title: "Rust".into(), url: "https://www.rust-lang.org/".into(), snippet: String::new() }];
/// assert_eq!(Search.sources(&pages)[0].location, "https://www.rust-lang.org/");
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

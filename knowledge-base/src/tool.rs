//! The `knowledge_base_search` tool, and the sources its outputs carry.

use std::collections::HashSet;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolchain::{DynTool, ExecutionContext, Tool, ToolError, ToolResult, async_trait};

use crate::store::collapse_space;
use crate::{KbError, KnowledgeStore, Passage};

/// The tool's name, as the model calls it and as tool events report it.
pub const TOOL_NAME: &str = "knowledge_base_search";

/// Passages a call returns when the model does not say.
pub const DEFAULT_TOOL_LIMIT: u8 = 5;

/// Most passages a call may ask for.
pub const MAX_TOOL_LIMIT: u8 = 20;

/// Longest query a call may send, in characters.
const MAX_QUERY_CHARS: usize = 1000;

/// `knowledge_base_search`: full-text search of a fixed list of knowledge bases, for a model.
///
/// The model sends `{"query": "…", "limit": 5}` and reads [`SearchOutput`] as JSON: the
/// passages, best first, each with its document's title, its location (`path:12-40`) and its
/// text. The tool cites the same passages as [`Source`]s ([`Tool::sources`]), which a front
/// end attaches to its answer; [`sources`] reads them back from the JSON output.
///
/// ```
/// use knowledge_base::{Document, KnowledgeBaseSearch, KnowledgeStore, SqliteKnowledge};
/// use toolchain::{ExecutionContext, ToolSet};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let store = KnowledgeStore::from(SqliteKnowledge::open_in_memory().await?);
/// let guide = Document::new("Guide", "guide.md", "Backups run nightly at 02:00.\n");
/// store.add("docs", vec![guide]).await?;
///
/// let tool = KnowledgeBaseSearch::new(store, ["docs"]).await?;
/// let tools = ToolSet::new().with(tool)?;
/// let search = tools.get(knowledge_base::TOOL_NAME).unwrap();
/// let output = search
///     .call_json(&ExecutionContext::new(), serde_json::json!({"query": "when do backups run"}))
///     .await?;
/// let sources = knowledge_base::sources(&output.text);
/// assert_eq!(sources[0].location, "guide.md:1");
/// assert_eq!(sources[0].passage, "Backups run nightly at 02:00.");
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct KnowledgeBaseSearch {
    store: KnowledgeStore,
    bases: Vec<String>,
    description: String,
}

/// What the model sends to `knowledge_base_search`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchInput {
    /// What to look for: keywords or a short question, such as "backup schedule" or "how are
    /// API keys rotated". Passages holding more of the words rank higher; exact identifiers
    /// such as "previous_response_id" match as written.
    pub query: String,
    /// How many passages to return, from 1 to 20. Default: 5.
    #[schemars(range(min = 1, max = 20))]
    pub limit: Option<u8>,
}

/// What `knowledge_base_search` returns to the model (serialised as JSON).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SearchOutput {
    /// The passages found, best first.
    pub passages: Vec<OutputPassage>,
    /// A hint for the model when nothing was found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One passage of a [`SearchOutput`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OutputPassage {
    /// The document's title.
    pub title: String,
    /// Where the passage is: `path:12-40` (lines) or `file.pdf:p3-4` (pages).
    pub location: String,
    /// The knowledge base it came from.
    pub base: String,
    /// The passage's text.
    pub text: String,
}

impl From<Passage> for OutputPassage {
    fn from(passage: Passage) -> Self {
        OutputPassage {
            title: passage.title,
            location: passage.location,
            base: passage.base,
            text: passage.text.trim_end().to_owned(),
        }
    }
}

impl KnowledgeBaseSearch {
    /// The tool over the knowledge bases `bases` of `store`. Each must exist
    /// ([`KbError::UnknownBase`] lists those that do); an empty list is [`KbError::NoBases`].
    /// A name given twice counts once.
    pub async fn new(
        store: KnowledgeStore,
        bases: impl IntoIterator<Item = impl Into<String>>,
    ) -> Result<Self, KbError> {
        let mut names: Vec<String> = Vec::new();
        for base in bases {
            let base = base.into();
            if !names.contains(&base) {
                names.push(base);
            }
        }
        let known: Vec<String> = store.list().await?.into_iter().map(|b| b.name).collect();
        crate::storage::check_bases(&names, &known)?;
        let description = format!(
            "Searches the knowledge base{} {} (documents provided by the user) by keywords and \
             returns the best-matching passages, each with its document's title, its location \
             (file and line range, or pages) and its text. Use it before answering questions \
             those documents may cover, and cite the locations of the passages you use.",
            if names.len() == 1 { "" } else { "s" },
            names
                .iter()
                .map(|name| format!("\"{name}\""))
                .collect::<Vec<_>>()
                .join(", "),
        );
        Ok(KnowledgeBaseSearch {
            store,
            bases: names,
            description,
        })
    }

    /// The knowledge bases searched.
    pub fn bases(&self) -> &[String] {
        &self.bases
    }

    /// The tool with its types erased, for a [`toolchain::ToolSet`].
    pub fn into_dyn(self) -> Result<DynTool, ToolError> {
        DynTool::new(self)
    }
}

#[async_trait]
impl Tool<SearchInput, SearchOutput> for KnowledgeBaseSearch {
    fn name(&self) -> &str {
        TOOL_NAME
    }

    fn description(&self) -> &str {
        &self.description
    }

    async fn call(
        &self,
        _ctx: &ExecutionContext,
        input: SearchInput,
    ) -> Result<ToolResult<SearchOutput>, ToolError> {
        let limit = input.limit.unwrap_or(DEFAULT_TOOL_LIMIT);
        if !(1..=MAX_TOOL_LIMIT).contains(&limit) {
            return Err(ToolError::InvalidInput {
                tool: TOOL_NAME.to_owned(),
                path: Some("limit".to_owned()),
                message: format!("limit is {limit}; ask for 1 to {MAX_TOOL_LIMIT} passages"),
            });
        }
        if input.query.trim().is_empty() {
            return Err(ToolError::InvalidInput {
                tool: TOOL_NAME.to_owned(),
                path: Some("query".to_owned()),
                message: "the query is empty; send the words to look for".to_owned(),
            });
        }
        let query: String = input.query.chars().take(MAX_QUERY_CHARS).collect();
        // The chain runs the call under the run's cancellation and timeouts.
        let passages = self
            .store
            .search(&self.bases, &query, usize::from(limit))
            .await
            .map_err(|error| ToolError::failed(error.to_string()))?;
        let note = passages.is_empty().then(|| {
            "No passage matched. Try other words: synonyms, a shorter query, or names and \
             identifiers as they would be written in the documents."
                .to_owned()
        });
        let output = SearchOutput {
            passages: passages.into_iter().map(OutputPassage::from).collect(),
            note,
        };
        Ok(ToolResult::text(output))
    }

    /// The passages found, as the answer's sources.
    fn sources(&self, output: &SearchOutput) -> Vec<Source> {
        output.passages.iter().map(Source::from).collect()
    }
}

/// A source an answer drew on, for a front end to show (`response.done`'s `sources`): the
/// one type every tool cites with.
pub use toolchain::Source;

impl From<Passage> for Source {
    /// The passage as a source: its title, location and text (trailing white space trimmed,
    /// as the tool shows it).
    fn from(passage: Passage) -> Self {
        Source {
            title: passage.title,
            location: passage.location,
            passage: passage.text.trim_end().to_owned(),
        }
    }
}

/// The sources in the output of a `knowledge_base_search` call: the JSON value the tool
/// returned (`ToolEvent::Finished`'s output), or that value parsed back from the JSON text the
/// model read. Anything else (another tool's output, an error text) gives no sources.
pub fn sources(output: &Value) -> Vec<Source> {
    let Ok(output) = SearchOutput::deserialize(output) else {
        return Vec::new();
    };
    output.passages.iter().map(Source::from).collect()
}

impl From<&OutputPassage> for Source {
    /// The passage as the tool showed it, as a source.
    fn from(passage: &OutputPassage) -> Self {
        Source {
            title: passage.title.clone(),
            location: passage.location.clone(),
            passage: passage.text.clone(),
        }
    }
}

/// The sources of a run, in the order first seen, each location once: what several
/// `knowledge_base_search` calls found, merged for one answer.
///
/// ```
/// use knowledge_base::SourceSet;
///
/// let output = serde_json::json!({"passages": [
///     {"title": "Guide", "location": "guide.md:1-3", "base": "docs", "text": "Backups…"},
/// ]});
/// let mut sources = SourceSet::default();
/// sources.add_output(&output);
/// sources.add_output(&output); // the same passage found again
/// assert_eq!(sources.len(), 1);
/// let json = serde_json::to_value(sources.into_vec()).unwrap();
/// assert_eq!(json[0]["location"], "guide.md:1-3");
/// ```
#[derive(Clone, Debug, Default)]
pub struct SourceSet {
    sources: Vec<Source>,
    locations: HashSet<String>,
    /// The passages' texts, white space collapsed.
    passages: HashSet<String>,
}

impl SourceSet {
    /// Adds `source` unless one with the same location or the same passage text (up to white
    /// space) is there; returns whether it was added.
    pub fn add(&mut self, source: Source) -> bool {
        let passage = collapse_space(&source.passage);
        if self.locations.contains(&source.location) || self.passages.contains(&passage) {
            return false;
        }
        self.locations.insert(source.location.clone());
        self.passages.insert(passage);
        self.sources.push(source);
        true
    }

    /// Adds the sources of a `knowledge_base_search` output (see [`sources`]).
    pub fn add_output(&mut self, output: &Value) {
        for source in sources(output) {
            self.add(source);
        }
    }

    /// How many sources there are.
    pub fn len(&self) -> usize {
        self.sources.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.sources.is_empty()
    }

    /// The sources, in the order first seen.
    pub fn as_slice(&self) -> &[Source] {
        &self.sources
    }

    /// The sources, in the order first seen.
    pub fn into_vec(self) -> Vec<Source> {
        self.sources
    }
}

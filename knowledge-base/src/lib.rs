//! Knowledge bases: documents cut into overlapping chunks and searched by full text, in the
//! conversation store's own database, with a tool that lets a model search them.
//!
//! - [`Document`]: text, Markdown, source code or (feature `pdf`) PDF text, read with
//!   [`Document::from_file`]; [`Chunker`] cuts it into chunks on paragraph and line
//!   boundaries, each knowing its lines (or pages).
//! - [`KnowledgeStore`]: named knowledge bases, and the one API to add, search, list and
//!   remove them whatever the backend. [`SqliteKnowledge`] opens them in the conversation
//!   store's SQLite file (an FTS5 table, BM25 ranking); `PostgresKnowledge` (feature
//!   `postgres`) in its PostgreSQL database (a `tsvector` column with a GIN index,
//!   `websearch_to_tsquery` and `ts_rank_cd`); either converts into a [`KnowledgeStore`].
//!   [`KnowledgeStore::search`] returns [`Passage`]s, best first, deduplicated; a query is
//!   words, never syntax. Both version their tables in `kb_meta` with the conversation
//!   store's migration runner ([`conversation_tree::migrate`]).
//! - [`KnowledgeBaseSearch`]: the `knowledge_base_search` tool ([`toolchain::Tool`]) over a
//!   fixed list of bases. [`sources`] reads the [`Source`]s (title, location, passage) back
//!   from its output, and [`SourceSet`] merges those of a run for `response.done`.
//!
//! # Features
//!
//! - `postgres`: `PostgresKnowledge` and `postgres://` locations in [`KnowledgeStore::open`]
//!   (tokio-postgres, deadpool-postgres).
//! - `pdf`: [`Document::from_file`] reads PDF text page by page with `pdf-extract` (the most
//!   used maintained crate for it, built on `lopdf`) within [`ReadLimits`]; without it a PDF
//!   is [`KbError::PdfDisabled`].
//!
//! # Example
//!
//! ```
//! use knowledge_base::{Document, KnowledgeStore};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), knowledge_base::KbError> {
//! let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("skein.db"); // the conversation store's file
//! std::fs::write(
//!     dir.path().join("notes.md"),
//!     "# Notes\n\nThe store runs in WAL mode.\n\nBackups run nightly.\n",
//! )
//! .unwrap();
//!
//! let store = KnowledgeStore::open(path.to_str().unwrap()).await?;
//! let notes = Document::from_file(dir.path().join("notes.md"))?;
//! let report = store.add("docs", vec![notes]).await?;
//! assert_eq!((report.documents, report.chunks), (1, 1));
//!
//! let passages = store.search(&["docs"], "when do backups run?", 5).await?;
//! assert_eq!(passages[0].title, "Notes");
//! assert!(passages[0].location.ends_with("notes.md:1-5"));
//!
//! // The same file is still a conversation store.
//! conversation_tree::SqliteStore::open(&path).await.unwrap();
//! # Ok(())
//! # }
//! ```

mod chunk;
mod document;
mod error;
mod limits;
#[cfg(feature = "pdf")]
mod pdf;
#[cfg(feature = "postgres")]
mod postgres;
mod query;
mod sqlite;
mod storage;
mod store;
mod tool;

pub use chunk::{Chunk, Chunker, DEFAULT_MAX_CHARS, DEFAULT_OVERLAP_CHARS};
pub use document::{Document, MAX_FILE_BYTES, PAGE_BREAK, Span, SpanKind};
pub use error::{Backend, KbError};
pub use limits::{EXTRACT_TIMEOUT, MAX_INFLATED_BYTES, MAX_TEXT_BYTES, ReadLimit, ReadLimits};
#[cfg(feature = "postgres")]
pub use postgres::PostgresKnowledge;
pub use sqlite::SqliteKnowledge;
pub use store::{AddReport, BaseSummary, KnowledgeStore, MAX_SEARCH_LIMIT, Passage};
pub use tool::{
    DEFAULT_TOOL_LIMIT, KnowledgeBaseSearch, MAX_TOOL_LIMIT, OutputPassage, SearchInput,
    SearchOutput, Source, SourceSet, TOOL_NAME, sources,
};

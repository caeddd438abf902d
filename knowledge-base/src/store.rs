//! [`KnowledgeStore`]: the one API over the SQLite and PostgreSQL backends, and the results it
//! returns.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use crate::chunk::Chunker;
use crate::document::{Document, Span};
use crate::storage::{Search, Storage, blocking, prepare};
use crate::{KbError, SqliteKnowledge};

#[cfg(feature = "postgres")]
use crate::PostgresKnowledge;

/// Most passages one search returns.
pub const MAX_SEARCH_LIMIT: usize = 100;

/// What [`KnowledgeStore::add`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AddReport {
    /// Documents stored (each location counted once).
    pub documents: usize,
    /// Chunks stored for them.
    pub chunks: usize,
    /// How many of the documents replaced one of the same location.
    pub replaced: usize,
    /// Locations of documents without any text (stored with no chunks; a scanned PDF has no
    /// text layer, for example).
    pub empty: Vec<String>,
}

/// A knowledge base and its size, as [`KnowledgeStore::list`] reports it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BaseSummary {
    /// The base's name.
    pub name: String,
    /// Documents in it.
    pub documents: usize,
    /// Chunks of those documents.
    pub chunks: usize,
}

/// A passage found by [`KnowledgeStore::search`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Passage {
    /// The knowledge base it was found in.
    pub base: String,
    /// Its document's title.
    pub title: String,
    /// Its document's location (usually a path).
    pub document: String,
    /// Where in the document it lies.
    pub span: Span,
    /// `document:span`, such as `docs/guide.md:12-40` or `manual.pdf:p3-4`.
    pub location: String,
    /// The passage's text, exactly as it is in the document (whole lines, except for a piece
    /// of a line too long for one chunk).
    pub text: String,
    /// Relevance: higher is better. Comparable only within one search (SQLite: the negated
    /// BM25 rank; PostgreSQL: `ts_rank_cd`).
    pub score: f64,
}

/// Knowledge bases in the conversation store's database: SQLite (the embedded default) or
/// PostgreSQL (feature `postgres`).
///
/// Cheap to clone: clones share their connections.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum KnowledgeStore {
    /// In a SQLite file (FTS5).
    Sqlite(SqliteKnowledge),
    /// In a PostgreSQL database (`tsvector`, GIN index).
    #[cfg(feature = "postgres")]
    Postgres(PostgresKnowledge),
}

impl From<SqliteKnowledge> for KnowledgeStore {
    fn from(store: SqliteKnowledge) -> Self {
        KnowledgeStore::Sqlite(store)
    }
}

#[cfg(feature = "postgres")]
impl From<PostgresKnowledge> for KnowledgeStore {
    fn from(store: PostgresKnowledge) -> Self {
        KnowledgeStore::Postgres(store)
    }
}

impl KnowledgeStore {
    /// Opens the knowledge bases at a store location, as the conversation store's
    /// configuration names it: `:memory:` (a SQLite database in memory), a `postgres://` or
    /// `postgresql://` URL (feature `postgres`, else [`KbError::PostgresDisabled`]), or the
    /// path of a SQLite file (see [`SqliteKnowledge::open`]).
    pub async fn open(location: &str) -> Result<Self, KbError> {
        if location == ":memory:" {
            return Ok(SqliteKnowledge::open_in_memory().await?.into());
        }
        if location.starts_with("postgres://") || location.starts_with("postgresql://") {
            return open_postgres(location).await;
        }
        Ok(SqliteKnowledge::open(location).await?.into())
    }

    /// The backend: the one place that tells them apart.
    fn storage(&self) -> &dyn Storage {
        match self {
            KnowledgeStore::Sqlite(store) => store,
            #[cfg(feature = "postgres")]
            KnowledgeStore::Postgres(store) => store,
        }
    }

    /// Where the store is (a path, `:memory:`, or a URL without its password).
    pub fn location(&self) -> &str {
        self.storage().location()
    }

    /// Adds `documents` to the knowledge base `base`, creating the base if needed, chunked by
    /// the default [`Chunker`]. A document whose location is already in the base replaces it
    /// (its old chunks are deleted). Everything is written in one transaction: on an error
    /// nothing is.
    pub async fn add(&self, base: &str, documents: Vec<Document>) -> Result<AddReport, KbError> {
        self.add_with_chunker(base, documents, Chunker::default())
            .await
    }

    /// [`KnowledgeStore::add`] with chunks cut by `chunker`.
    pub async fn add_with_chunker(
        &self,
        base: &str,
        documents: Vec<Document>,
        chunker: Chunker,
    ) -> Result<AddReport, KbError> {
        let base_name = base.to_owned();
        let prepared = blocking("adding documents", move || {
            prepare(&base_name, documents, &chunker)
        })
        .await?;
        self.storage().add(base, prepared).await
    }

    /// The passages of the knowledge bases `bases` that best match `query`, best first, at
    /// most `limit` of them (at most [`MAX_SEARCH_LIMIT`]).
    ///
    /// The query is words, not a query language: each word matches as written (its letters
    /// and digits; `previous_response_id` matches those three words in a row), a passage
    /// matches if it holds any of them, and passages holding more of them, and rarer ones,
    /// rank higher. Words are stemmed (English), so `tests` finds `test`. Quotes, `*`, `-`,
    /// parentheses and operators such as `NEAR` are never syntax and never an error; a query
    /// without letters or digits finds nothing.
    ///
    /// Results are deduplicated: a passage whose location or text (up to white space) was
    /// already returned, or that overlaps a better passage of the same document (consecutive
    /// chunks share lines), is left out.
    ///
    /// An unknown base is [`KbError::UnknownBase`], listing the known ones; an empty list is
    /// [`KbError::NoBases`].
    pub async fn search<S: AsRef<str>>(
        &self,
        bases: &[S],
        query: &str,
        limit: usize,
    ) -> Result<Vec<Passage>, KbError> {
        let search = Search::new(bases, query, limit);
        let limit = search.limit;
        let candidates = self.storage().candidates(search).await?;
        Ok(deduplicate(candidates, limit))
    }

    /// Every knowledge base, by name.
    pub async fn list(&self) -> Result<Vec<BaseSummary>, KbError> {
        self.storage().list().await
    }

    /// Deletes the knowledge base `base` and everything in it, in one transaction; returns
    /// what it held. An unknown base is [`KbError::UnknownBase`].
    pub async fn remove(&self, base: &str) -> Result<BaseSummary, KbError> {
        self.storage().remove(base).await
    }
}

#[cfg(feature = "postgres")]
async fn open_postgres(location: &str) -> Result<KnowledgeStore, KbError> {
    Ok(PostgresKnowledge::connect(location).await?.into())
}

#[cfg(not(feature = "postgres"))]
async fn open_postgres(location: &str) -> Result<KnowledgeStore, KbError> {
    Err(KbError::PostgresDisabled {
        location: crate::error::redact(location),
    })
}

/// The best `limit` of `candidates` (best first) after deduplication.
pub(crate) fn deduplicate(candidates: Vec<Passage>, limit: usize) -> Vec<Passage> {
    let mut kept: Vec<Passage> = Vec::new();
    let mut locations = HashSet::new();
    let mut texts = HashSet::new();
    for passage in candidates {
        if kept.len() == limit {
            break;
        }
        let text = collapse_space(&passage.text);
        let overlaps = kept.iter().any(|better| {
            better.document == passage.document
                && better.span.kind == passage.span.kind
                && better.span.start <= passage.span.end
                && passage.span.start <= better.span.end
        });
        if overlaps || locations.contains(&passage.location) || texts.contains(&text) {
            continue;
        }
        locations.insert(passage.location.clone());
        texts.insert(text);
        kept.push(passage);
    }
    kept
}

/// `text` with each run of white space made one space and none at its ends: passages equal up
/// to white space count as one.
pub(crate) fn collapse_space(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `limit` brought into `0..=MAX_SEARCH_LIMIT`.
pub(crate) fn clamp_limit(limit: usize) -> usize {
    limit.min(MAX_SEARCH_LIMIT)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::SpanKind;

    fn passage(document: &str, start: u32, end: u32, text: &str) -> Passage {
        let span = Span {
            kind: SpanKind::Lines,
            start,
            end,
        };
        Passage {
            base: "b".into(),
            title: "t".into(),
            document: document.into(),
            span,
            location: format!("{document}:{span}"),
            text: text.into(),
            score: 1.0,
        }
    }

    #[test]
    fn deduplication_drops_repeats_and_overlaps() {
        let kept = deduplicate(
            vec![
                passage("a.md", 10, 20, "alpha beta"),
                passage("a.md", 18, 30, "gamma"),
                passage("b.md", 1, 5, "alpha\n beta"),
                passage("a.md", 10, 20, "other text, same place"),
                passage("a.md", 21, 30, "delta"),
                passage("c.md", 1, 2, "epsilon"),
            ],
            10,
        );
        let locations: Vec<&str> = kept.iter().map(|p| p.location.as_str()).collect();
        assert_eq!(locations, ["a.md:10-20", "a.md:21-30", "c.md:1-2"]);
        assert_eq!(deduplicate(kept, 1).len(), 1);
    }
}

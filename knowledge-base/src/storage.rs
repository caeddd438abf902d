//! What a backend implements: [`Storage`], the small interface [`KnowledgeStore`]'s one
//! public API runs on, and what both backends share (the schema, the prepared documents, the
//! search as asked).
//!
//! [`KnowledgeStore`]: crate::KnowledgeStore

use async_trait::async_trait;
use conversation_tree::migrate::{Refusal, Schema, SchemaError};

use crate::KbError;
use crate::chunk::Chunker;
use crate::document::{Document, Span};
use crate::error::check_base_name;
use crate::query::Phrases;
use crate::store::{AddReport, BaseSummary, Passage, clamp_limit};

/// One backend's part of the knowledge bases: the statements of its database. Checking,
/// chunking and deduplication happen once, in [`KnowledgeStore`](crate::KnowledgeStore).
#[async_trait]
pub(crate) trait Storage: Send + Sync {
    /// Where the store is (a path, `:memory:`, or a URL without its password).
    fn location(&self) -> &str;

    /// Stores `documents` in the base `base` (created if needed), each replacing the document
    /// of the same location, in one transaction.
    async fn add(&self, base: &str, documents: Vec<Prepared>) -> Result<AddReport, KbError>;

    /// The best candidates of `search`, best first, before deduplication: at most
    /// [`Search::wanted`], none when [`Search::admit`] says nothing can match.
    async fn candidates(&self, search: Search) -> Result<Vec<Passage>, KbError>;

    /// Every knowledge base, by name.
    async fn list(&self) -> Result<Vec<BaseSummary>, KbError>;

    /// Deletes the base `base` and everything in it, in one transaction; returns what it held.
    async fn remove(&self, base: &str) -> Result<BaseSummary, KbError>;
}

/// The knowledge tables with `migrations` (each backend writes its own SQL): versioned in
/// `kb_meta`, beside the conversation store's tables and never touching them.
pub(crate) const fn schema(migrations: &'static [&'static str]) -> Schema {
    Schema {
        holds: "Skein knowledge bases",
        meta_table: "kb_meta",
        application: "skein-knowledge-base",
        tables: &["kb_bases", "kb_documents", "kb_chunks"],
        migrations,
        // "SKENkbmg"
        lock: 0x534B_454E_6B62_6D67,
    }
}

/// The crate's error for what stopped creating the knowledge tables in `location`; `database`
/// maps the driver's errors.
pub(crate) fn schema_error<E: std::error::Error + 'static>(
    location: &str,
    error: SchemaError<E>,
    database: impl Fn(E) -> KbError,
) -> KbError {
    match error {
        SchemaError::Database { source, .. } => database(source),
        SchemaError::Refused(Refusal::Newer { found, supported }) => KbError::NewerSchema {
            location: location.to_owned(),
            found,
            supported,
        },
        SchemaError::Refused(refusal) => KbError::NotAStore {
            location: location.to_owned(),
            reason: refusal.to_string(),
        },
    }
}

/// A search as asked: the bases, the query's phrases, the number of passages wanted.
pub(crate) struct Search {
    pub(crate) bases: Vec<String>,
    pub(crate) phrases: Phrases,
    /// Passages to return, at most [`MAX_SEARCH_LIMIT`](crate::MAX_SEARCH_LIMIT).
    pub(crate) limit: usize,
}

impl Search {
    pub(crate) fn new<S: AsRef<str>>(bases: &[S], query: &str, limit: usize) -> Search {
        Search {
            bases: bases.iter().map(|base| base.as_ref().to_owned()).collect(),
            phrases: Phrases::parse(query),
            limit: clamp_limit(limit),
        }
    }

    /// Checks the bases against the `known` ones ([`KbError::NoBases`],
    /// [`KbError::UnknownBase`]); then whether anything can match (a query with words, a limit
    /// above zero).
    pub(crate) fn admit(&self, known: &[String]) -> Result<bool, KbError> {
        check_bases(&self.bases, known)?;
        Ok(!self.phrases.is_empty() && self.limit > 0)
    }

    /// How many candidates to fetch so that `limit` passages remain after deduplication.
    pub(crate) fn wanted(&self) -> i64 {
        i64::try_from(self.limit * 4 + 8).unwrap_or(i64::MAX)
    }
}

/// Checks base names against the known ones.
pub(crate) fn check_bases<S: AsRef<str>>(bases: &[S], known: &[String]) -> Result<(), KbError> {
    if bases.is_empty() {
        return Err(KbError::NoBases);
    }
    for base in bases {
        let base = base.as_ref();
        if !known.iter().any(|name| name == base) {
            return Err(KbError::UnknownBase {
                name: base.to_owned(),
                known: known.to_vec(),
            });
        }
    }
    Ok(())
}

/// A document ready to store: chunk texts and spans, cut before any lock is taken.
pub(crate) struct Prepared {
    pub(crate) title: String,
    pub(crate) location: String,
    pub(crate) kind: &'static str,
    pub(crate) chunks: Vec<(Span, String)>,
}

/// Checks the base name and the documents, and chunks them (CPU work: call it off the async
/// workers). A location given twice keeps its last document.
pub(crate) fn prepare(
    base: &str,
    documents: Vec<Document>,
    chunker: &Chunker,
) -> Result<Vec<Prepared>, KbError> {
    check_base_name(base)?;
    let mut prepared: Vec<Prepared> = Vec::with_capacity(documents.len());
    for document in documents {
        if document.location.trim().is_empty() {
            return Err(KbError::InvalidDocument {
                location: document.location,
                reason: "its location is empty; give each document a location, such as its path"
                    .to_owned(),
            });
        }
        let chunks = document
            .chunks(chunker)
            .into_iter()
            // NUL cannot be stored in PostgreSQL text; a space keeps every byte offset.
            .map(|(chunk, span)| (span, chunk.text(&document.text).replace('\0', " ")))
            .collect();
        let title = if document.title.trim().is_empty() {
            document.location.clone()
        } else {
            document.title.clone()
        };
        prepared.retain(|earlier| earlier.location != document.location);
        prepared.push(Prepared {
            title,
            location: document.location,
            kind: document.kind.as_str(),
            chunks,
        });
    }
    Ok(prepared)
}

/// A count read from the database.
pub(crate) fn count(value: i64) -> usize {
    usize::try_from(value).unwrap_or(0)
}

/// Runs `f` on tokio's blocking pool: SQLite's calls, and chunking, which is CPU work.
pub(crate) async fn blocking<T: Send + 'static>(
    operation: &'static str,
    f: impl FnOnce() -> Result<T, KbError> + Send + 'static,
) -> Result<T, KbError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|error| KbError::Interrupted {
            operation,
            reason: error.to_string(),
        })?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bases_are_checked() {
        let known = vec!["docs".to_owned()];
        check_bases(&["docs"], &known).unwrap();
        assert!(matches!(
            check_bases::<&str>(&[], &known),
            Err(KbError::NoBases)
        ));
        assert!(matches!(
            check_bases(&["dcs"], &known),
            Err(KbError::UnknownBase { name, known }) if name == "dcs" && known == ["docs"]
        ));
    }
}

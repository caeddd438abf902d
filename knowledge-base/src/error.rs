//! The crate's error type.

use std::error::Error as StdError;

/// Which database an error came from: the conversation store's, as both share the database.
pub use conversation_tree::Backend;

/// Everything that can go wrong in this crate. Each message says what was wrong, where, and
/// what to do; none contains a password.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KbError {
    /// A file could not be read (or a directory created).
    #[error("cannot {operation} {path}: {source}")]
    Io {
        /// What was being done: `read`, `open`, …
        operation: &'static str,
        /// The file.
        path: String,
        /// The system's error.
        #[source]
        source: std::io::Error,
    },
    /// A file that is not text: binary data, or text in an encoding other than UTF-8.
    #[error("{path} is not a text document ({reason}); {hint}")]
    NotText {
        /// The file.
        path: String,
        /// What gave it away (a NUL byte, an invalid UTF-8 sequence, and where).
        reason: String,
        /// What to do instead.
        hint: &'static str,
    },
    /// A PDF file whose text could not be extracted (feature `pdf`).
    #[error(
        "cannot read the text of the PDF file {path} ({reason}); it may be damaged or \
         encrypted: export its text to a .txt file and add that instead"
    )]
    Pdf {
        /// The file.
        path: String,
        /// What the PDF reader said.
        reason: String,
    },
    /// Reading a file went past one of its [`ReadLimits`](crate::ReadLimits) (a PDF whose
    /// text, expanded streams or extraction time is too large); reading stopped there and
    /// nothing of the file was kept.
    #[error(
        "{path} was not added: {limit} the limit of {max} (`ReadLimits::{}`); {}",
        limit.field(),
        limit.hint()
    )]
    LimitExceeded {
        /// The file.
        path: String,
        /// Which limit.
        limit: crate::ReadLimit,
        /// The limit's value, for people (`64 MiB`, `30 s`).
        max: String,
    },
    /// A PDF file, but this build reads PDF only with the `pdf` feature.
    #[error(
        "{path} is a PDF file, and this build of Skein reads PDF text only with the cargo \
         feature `pdf` of the knowledge-base crate: rebuild with it, or export the text to a \
         .txt file and add that instead"
    )]
    PdfDisabled {
        /// The file.
        path: String,
    },
    /// A knowledge base name that cannot be used.
    #[error(
        "`{name}` cannot name a knowledge base: {reason}; use 1 to 64 ASCII letters, digits, \
         `_`, `-` or `.`, starting with a letter or digit (such as `docs` or `team-notes`)"
    )]
    InvalidBaseName {
        /// The name as given.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A document that cannot be stored (an empty location).
    #[error("cannot add the document `{location}`: {reason}")]
    InvalidDocument {
        /// The document's location, as given.
        location: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A search or removal named a knowledge base that does not exist.
    #[error("there is no knowledge base named `{name}`; {}", known_list(.known))]
    UnknownBase {
        /// The name asked for.
        name: String,
        /// The knowledge bases that exist, sorted.
        known: Vec<String>,
    },
    /// A search tool bound to no knowledge base at all.
    #[error("no knowledge base was named: name one or more (such as `--kb docs`)")]
    NoBases,
    /// The file or database holds something that is not Skein's: it was left untouched.
    #[error(
        "{location} cannot hold Skein knowledge bases ({reason}); it was left untouched: point \
         Skein at a Skein store, or at a new file or database"
    )]
    NotAStore {
        /// The file path, or the PostgreSQL database.
        location: String,
        /// What gave it away.
        reason: String,
    },
    /// The knowledge-base tables were written by a newer Skein: they were left untouched.
    #[error(
        "the knowledge bases in {location} have schema version {found}, but this build of Skein \
         reads versions up to {supported}; they were left untouched: upgrade Skein"
    )]
    NewerSchema {
        /// The file path, or the PostgreSQL database.
        location: String,
        /// Schema version found.
        found: i64,
        /// Newest schema version this build knows.
        supported: i64,
    },
    /// Opening the conversation store that shares the file failed.
    #[error("cannot open the Skein store {location} for knowledge bases: {source}")]
    Store {
        /// The file path, or the PostgreSQL database.
        location: String,
        /// The conversation store's error (it says what to do).
        #[source]
        source: conversation_tree::StoreError,
    },
    /// Another process held the database's write lock for longer than the busy timeout.
    #[error(
        "{location} stayed locked by another process for {timeout_ms} ms while {operation}; \
         try again when the other writer is done"
    )]
    Busy {
        /// The file path.
        location: String,
        /// What was being done.
        operation: &'static str,
        /// How long this process waited.
        timeout_ms: u64,
    },
    /// A `postgres://` location, but this build has no PostgreSQL support.
    #[error(
        "{location} is a PostgreSQL URL, but this build of Skein has no PostgreSQL support for \
         knowledge bases: rebuild with the cargo feature `postgres`, or use a SQLite file"
    )]
    PostgresDisabled {
        /// The URL, without its password.
        location: String,
    },
    /// The database failed.
    #[error("{backend} error while {operation}: {source}")]
    Database {
        /// Which database.
        backend: Backend,
        /// What was being done.
        operation: &'static str,
        /// The driver's error.
        #[source]
        source: Box<dyn StdError + Send + Sync>,
    },
    /// A blocking task of the store panicked or was cancelled (a bug, or the runtime shutting
    /// down).
    #[error("the knowledge store stopped while {operation}: {reason}")]
    Interrupted {
        /// What was being done.
        operation: &'static str,
        /// Why.
        reason: String,
    },
}

impl KbError {
    pub(crate) fn database(
        backend: Backend,
        operation: &'static str,
        source: impl StdError + Send + Sync + 'static,
    ) -> Self {
        KbError::Database {
            backend,
            operation,
            source: Box::new(source),
        }
    }
}

fn known_list(known: &[String]) -> String {
    if known.is_empty() {
        "there are none yet: create one with `skein kb add NAME FILES…`".to_owned()
    } else {
        let names: Vec<String> = known.iter().map(|name| format!("`{name}`")).collect();
        format!(
            "the knowledge bases are {} (`skein kb add NAME FILES…` creates one)",
            names.join(", ")
        )
    }
}

/// Checks a knowledge base name: 1 to 64 ASCII letters, digits, `_`, `-`, `.`, starting with a
/// letter or digit.
pub(crate) fn check_base_name(name: &str) -> Result<(), KbError> {
    let invalid = |reason: String| KbError::InvalidBaseName {
        name: name.to_owned(),
        reason,
    };
    if name.is_empty() {
        return Err(invalid("it is empty".to_owned()));
    }
    if name.len() > 64 {
        return Err(invalid(format!("it is {} bytes long", name.len())));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
    {
        return Err(invalid(format!("it contains {c:?}")));
    }
    if !name.starts_with(|c: char| c.is_ascii_alphanumeric()) {
        return Err(invalid(
            "it does not start with a letter or digit".to_owned(),
        ));
    }
    Ok(())
}

/// `location` with the password of a URL replaced by `***`.
pub(crate) fn redact(location: &str) -> String {
    conversation_tree::redact_location(location)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_names() {
        for good in ["docs", "team-notes", "v1.2", "A_b"] {
            check_base_name(good).unwrap();
        }
        for bad in ["", "-x", ".x", "a b", "a/b", "é", &"x".repeat(65)] {
            assert!(
                matches!(check_base_name(bad), Err(KbError::InvalidBaseName { .. })),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn unknown_base_lists_the_known_ones() {
        let error = KbError::UnknownBase {
            name: "dcs".into(),
            known: vec!["docs".into(), "notes".into()],
        };
        assert_eq!(
            error.to_string(),
            "there is no knowledge base named `dcs`; the knowledge bases are `docs`, `notes` \
             (`skein kb add NAME FILES…` creates one)"
        );
    }

    #[test]
    fn redacts_passwords() {
        assert_eq!(
            redact("postgres://u:secret@h:5432/db"),
            "postgres://u:***@h:5432/db"
        );
        assert_eq!(redact("postgres://h/db"), "postgres://h/db");
        assert_eq!(redact("/tmp/a.db"), "/tmp/a.db");
    }
}

//! Opening the conversation store a configuration names.

use std::path::Path;
use std::sync::Arc;

use conversation_tree::{SqliteStore, Store};

use crate::ServiceError;

/// Which kind of store a location names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreKind {
    /// `:memory:`: a SQLite database that lives as long as the process.
    Memory,
    /// A SQLite file.
    Sqlite,
    /// A `postgres://` or `postgresql://` URL.
    Postgres,
}

impl StoreKind {
    /// What `location` names.
    pub fn of(location: &str) -> StoreKind {
        if location == ":memory:" {
            StoreKind::Memory
        } else if location.starts_with("postgres://") || location.starts_with("postgresql://") {
            StoreKind::Postgres
        } else {
            StoreKind::Sqlite
        }
    }

    /// `memory`, `sqlite` or `postgres`.
    pub fn as_str(self) -> &'static str {
        match self {
            StoreKind::Memory => "memory",
            StoreKind::Sqlite => "sqlite",
            StoreKind::Postgres => "postgres",
        }
    }
}

/// Opens the store at `location`: `:memory:`, a SQLite file path (its directory is created),
/// or a PostgreSQL URL (feature `postgres`). An empty location is
/// [`ServiceError::EmptyStoreLocation`].
pub async fn open_store(location: &str) -> Result<Arc<dyn Store>, ServiceError> {
    open(location, false).await
}

/// Opens the store at `location` for reading only, for commands that never write (`skein
/// logs`): a SQLite file is opened with [`SqliteStore::open_read_only`] (never created,
/// migrated or written; it may be read-only, in a read-only directory, or open in a writer),
/// a PostgreSQL URL with `PostgresStore::connect_read_only` (read-only sessions, no
/// migrations). `:memory:` is an empty store, as with [`open_store`].
///
/// A missing or empty store is [`conversation_tree::StoreError::NoStore`], an older schema
/// [`conversation_tree::StoreError::OlderSchema`], inside [`ServiceError::Store`].
pub async fn open_store_read_only(location: &str) -> Result<Arc<dyn Store>, ServiceError> {
    open(location, true).await
}

async fn open(location: &str, read_only: bool) -> Result<Arc<dyn Store>, ServiceError> {
    if location.is_empty() {
        return Err(ServiceError::EmptyStoreLocation);
    }
    let failed = |source| ServiceError::Store {
        location: redact(location),
        source,
    };
    match StoreKind::of(location) {
        StoreKind::Memory => Ok(Arc::new(
            SqliteStore::open_in_memory().await.map_err(failed)?,
        )),
        StoreKind::Sqlite if read_only => Ok(Arc::new(
            SqliteStore::open_read_only(location)
                .await
                .map_err(failed)?,
        )),
        StoreKind::Sqlite => {
            if let Some(dir) = Path::new(location)
                .parent()
                .filter(|dir| !dir.as_os_str().is_empty())
            {
                tokio::fs::create_dir_all(dir).await?;
            }
            Ok(Arc::new(SqliteStore::open(location).await.map_err(failed)?))
        }
        StoreKind::Postgres => open_postgres(location, read_only).await,
    }
}

/// Connects to the PostgreSQL store at `location`, in read-only sessions without migrations
/// when `read_only`.
#[cfg(feature = "postgres")]
async fn open_postgres(location: &str, read_only: bool) -> Result<Arc<dyn Store>, ServiceError> {
    use conversation_tree::PostgresStore;
    let store = if read_only {
        PostgresStore::connect_read_only(location).await
    } else {
        PostgresStore::connect(location).await
    }
    .map_err(|source| ServiceError::Store {
        location: redact(location),
        source,
    })?;
    Ok(Arc::new(store))
}

#[cfg(not(feature = "postgres"))]
async fn open_postgres(location: &str, _read_only: bool) -> Result<Arc<dyn Store>, ServiceError> {
    Err(ServiceError::PostgresDisabled {
        location: redact(location),
    })
}

/// The location with the password of a URL replaced by `***`.
pub fn redact(location: &str) -> String {
    conversation_tree::redact_location(location)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_and_redaction() {
        assert_eq!(StoreKind::of(":memory:"), StoreKind::Memory);
        assert_eq!(StoreKind::of("/tmp/logs.db"), StoreKind::Sqlite);
        assert_eq!(StoreKind::of("postgresql://u@h/db"), StoreKind::Postgres);
        assert_eq!(
            redact("postgres://skein:hunter2@db.local:5432/skein"),
            "postgres://skein:***@db.local:5432/skein"
        );
        assert_eq!(
            redact("postgres://db.local/skein"),
            "postgres://db.local/skein"
        );
        assert_eq!(redact("logs.db"), "logs.db");
    }

    #[tokio::test]
    async fn opens_sqlite_files_in_new_directories() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested/dir/logs.db");
        let store = open_store(path.to_str().unwrap()).await.unwrap();
        assert!(store.conversations(10).await.unwrap().is_empty());
        assert!(path.exists());
    }

    #[tokio::test]
    async fn read_only_opening_creates_nothing_and_refuses_writes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested/logs.db");
        let location = path.to_str().unwrap();
        let err = match open_store_read_only(location).await {
            Err(err) => err,
            Ok(_) => panic!("opened a missing file read-only"),
        };
        assert!(
            matches!(
                err,
                ServiceError::Store {
                    source: conversation_tree::StoreError::NoStore { .. },
                    ..
                }
            ),
            "{err}"
        );
        assert!(!path.parent().unwrap().exists(), "created the directory");

        drop(open_store(location).await.unwrap());
        let store = open_store_read_only(location).await.unwrap();
        assert!(store.conversations(10).await.unwrap().is_empty());
        let conversation = conversation_tree::ConversationId::random();
        let response = conversation_tree::NewResponse::new(
            conversation,
            None,
            vec![conversation_tree::Message::human("hi")],
            conversation_tree::Message::ai("hello"),
            &conversation_tree::CallOptions::new("echo"),
        );
        let err = store.log_response(response).await.unwrap_err();
        assert!(
            matches!(err, conversation_tree::StoreError::ReadOnly { .. }),
            "{err}"
        );
    }

    #[tokio::test]
    async fn an_empty_location_is_refused_not_opened_as_a_temporary_file() {
        for read_only in [false, true] {
            match open("", read_only).await {
                Err(ServiceError::EmptyStoreLocation) => {}
                Err(other) => panic!("{other}"),
                Ok(_) => panic!("opened an empty location (read only: {read_only})"),
            }
        }
    }

    #[cfg(not(feature = "postgres"))]
    #[tokio::test]
    async fn postgres_urls_need_the_feature() {
        let err = match open_store("postgres://u:secret@localhost/db").await {
            Err(err) => err,
            Ok(_) => panic!("opened a PostgreSQL store without the feature"),
        };
        let message = err.to_string();
        assert!(message.contains("`postgres` feature"), "{message}");
        assert!(!message.contains("secret"), "{message}");
    }
}

//! [`ServiceError`]: a service that cannot be set up.

/// Why a service could not be set up: its store, its tools or its configuration.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServiceError {
    /// The conversation store could not be opened.
    #[error("cannot open the conversation store `{location}`: {source}")]
    Store {
        /// The configured store (a path or a URL without its password).
        location: String,
        /// Why.
        #[source]
        source: conversation_tree::StoreError,
    },
    /// The store location is empty. SQLite would open an empty path as a private temporary
    /// database, so everything logged into it would be lost at exit.
    #[error(
        "the conversation store location is empty; name a SQLite file, a postgres:// URL or \
         `:memory:`"
    )]
    EmptyStoreLocation,
    /// A `postgres://` store was configured but this build has no PostgreSQL support.
    #[error(
        "the store `{location}` is a PostgreSQL URL, but this build has no PostgreSQL support; \
         rebuild with the `postgres` feature, or use a SQLite file path"
    )]
    PostgresDisabled {
        /// The configured store, without its password.
        location: String,
    },
    /// The built-in tool configuration is unusable.
    #[error(transparent)]
    Tools(#[from] tools::ToolsConfigError),
    /// The configuration is inconsistent.
    #[error("invalid server configuration: {0}")]
    Config(String),
    /// A run's record, events or lease could not be read or written.
    #[error("the run store failed: {0}")]
    Runs(#[source] conversation_tree::StoreError),
    /// No run of the caller's has this id (another principal's run is as absent).
    #[error(
        "no run `{id}` of yours is kept here; it may have finished before the retention period"
    )]
    UnknownRun {
        /// The id asked for.
        id: String,
    },
    /// The run is not paused for approval: its calls were decided already (perhaps by a
    /// request racing this one), it finished, or it never paused.
    #[error(
        "run `{id}` is {status}, not waiting for approval: its calls were decided already, or it \
         never paused; read it again to see how it goes on"
    )]
    RunNotPaused {
        /// The run's id.
        id: String,
        /// Its status now.
        status: conversation_tree::runs::RunStatus,
    },
    /// Reading or creating the store's directory failed.
    #[error("the server failed: {0}")]
    Io(#[from] std::io::Error),
}

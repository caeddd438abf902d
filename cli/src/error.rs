//! [`CliError`]: everything a command can fail with, and its exit code.

use std::path::PathBuf;

/// A failed command. `main` prints it as `skein: error: …` and exits with
/// [`exit_code`](CliError::exit_code).
#[derive(Debug, thiserror::Error)]
pub(crate) enum CliError {
    /// A file could not be read.
    #[error("cannot read `{}`: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A file is not a transcript.
    #[error("`{}` is not a transcript: {source}", path.display())]
    Transcript {
        path: PathBuf,
        #[source]
        source: messages::TranscriptError,
    },
    /// A transcript breaks a chain rule.
    #[error(
        "`{}` is not a valid chain: {detail}\nhint: `skein chain check {} --repair` repairs it",
        path.display(),
        path.display()
    )]
    BrokenChain { path: PathBuf, detail: String },
    /// The arguments make no sense together.
    #[error("{0}")]
    Usage(String),
    /// A knowledge base failed.
    #[error("{0}")]
    Knowledge(#[from] knowledge_base::KbError),
    /// The skill directories cannot be read.
    #[error("{0}")]
    Skills(#[from] service::skills::SkillError),
    /// The conversation store failed.
    #[error("the log database failed: {0}")]
    Store(#[from] conversation_tree::StoreError),
    /// A logged conversation cannot be read back.
    #[error("conversation {conversation} in the log database is damaged: {source}")]
    Damaged {
        conversation: String,
        #[source]
        source: conversation_tree::StoreError,
    },
    /// Setting up the service or the store failed.
    #[error(transparent)]
    Service(#[from] service::ServiceError),
    /// Setting up or running the server failed.
    #[error(transparent)]
    Server(#[from] server::ServerError),
    /// Run options no run can take (the rule of `service::options`, as for `POST /v1/response`).
    #[error("{}", options_message(.0))]
    Options(Vec<service::options::OptionProblem>),
    /// A run failed.
    #[error("{0}")]
    Run(String),
    /// Writing output or reading input failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// Writing JSON failed.
    #[error("cannot write JSON: {0}")]
    Json(#[from] serde_json::Error),
}

/// `--temperature: must be between 0 and 2; --max-tokens: must be at least 1`.
fn options_message(problems: &[service::options::OptionProblem]) -> String {
    problems
        .iter()
        .map(|problem| problem.for_flag().to_string())
        .collect::<Vec<_>>()
        .join("; ")
}

impl CliError {
    /// 2 for usage mistakes (as clap uses), 1 for everything else.
    pub(crate) fn exit_code(&self) -> u8 {
        match self {
            CliError::Usage(_) | CliError::Options(_) => 2,
            _ => 1,
        }
    }
}

//! [`FailureKind`]: what kind of failure ended a run, read once from the typed error; every
//! protocol derives its HTTP status and its error code from it.

use agent_loop::AgentError;
use http::StatusCode;
use providers::ProviderError;

/// The kind of failure that ended a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailureKind {
    /// The input cannot be answered as sent (a broken chain, nothing to answer, no store).
    InvalidRequest,
    /// The model call failed at the provider.
    Provider,
    /// The model cut its tool calls off at the output token limit again and again.
    OutputTruncated,
    /// The conversation store failed.
    Store,
    /// The run was cancelled.
    Cancelled,
    /// A bug or a misconfigured agent: nothing the client can change.
    Internal,
}

impl FailureKind {
    /// The kind of `error`.
    pub fn of(error: &AgentError) -> Self {
        match error {
            AgentError::InvalidHistory(_)
            | AgentError::NothingToAnswer
            | AgentError::NoStore { .. } => FailureKind::InvalidRequest,
            AgentError::Provider { .. } => FailureKind::Provider,
            AgentError::OutputTruncated { .. } => FailureKind::OutputTruncated,
            AgentError::Store(_) => FailureKind::Store,
            AgentError::Cancelled { .. } => FailureKind::Cancelled,
            _ => FailureKind::Internal,
        }
    }

    /// The HTTP status of an answer that failed this way before any byte of it was sent.
    pub fn status(self) -> StatusCode {
        match self {
            FailureKind::InvalidRequest => StatusCode::UNPROCESSABLE_ENTITY,
            FailureKind::Provider | FailureKind::OutputTruncated => StatusCode::BAD_GATEWAY,
            FailureKind::Cancelled => StatusCode::CONFLICT,
            FailureKind::Store | FailureKind::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

/// The provider error inside `error`, if the model call is what failed.
pub fn provider_error(error: &AgentError) -> Option<&ProviderError> {
    match error {
        AgentError::Provider { source, .. } => Some(source),
        _ => None,
    }
}

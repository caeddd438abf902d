use std::error::Error as StdError;
use std::sync::Arc;
use std::time::Duration;

use text_format::{FormattedSection, Line, TextFormat};

/// Why a tool call failed, or why a tool could not be registered.
///
/// A tool returns [`ToolError::failed`] (or [`ToolError::from_error`]) for its own failures;
/// the chains produce the other variants. Whatever the cause, a failed call never aborts the
/// other calls of a round: the error is shown to the model as the call's result (`Error: …` in
/// the text chains, `Tool execution failed: …` in a native `ToolResponse`) and kept, typed, in
/// [`RawToolChainResult::errors`](crate::RawToolChainResult::errors).
///
/// The `Display` text is what the model reads, so each message says what went wrong and what
/// to do about it.
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// The tool ran and reported a failure.
    #[error("{message}")]
    Failed {
        /// What went wrong, for the model.
        message: String,
        /// The underlying error, for code.
        #[source]
        source: Option<Arc<dyn StdError + Send + Sync>>,
    },
    /// The tool asks for the whole run to end without a reply (a silent exit). The
    /// chains report it like any error; agents stop the run when
    /// [`RawToolChainResult::silent_exit`](crate::RawToolChainResult::silent_exit) says so.
    #[error("silent exit requested{}", if reason.is_empty() { String::new() } else { format!(": {reason}") })]
    SilentExit {
        /// Why, possibly empty.
        reason: String,
    },
    /// The model called a tool that is not in the set.
    #[error(
        "unknown tool \"{name}\"; available tools: {available}. Review the available tools and use one of these exact names"
    )]
    UnknownTool {
        /// The name the model used.
        name: String,
        /// The names it could have used, comma-separated.
        available: String,
    },
    /// A tool call the model wrote has no usable shape (no tool name, say).
    #[error("{message}")]
    InvalidCall {
        /// What is wrong and how to write it.
        message: String,
    },
    /// The input does not fit the tool's input type.
    #[error(
        "invalid input for tool \"{tool}\"{}: {message}",
        path.as_ref().map(|path| format!(" at `{path}`")).unwrap_or_default()
    )]
    InvalidInput {
        /// The tool.
        tool: String,
        /// Where in the input, as a serde path (`filters.limit`, `ids[2]`), when known.
        path: Option<String>,
        /// What is wrong (serde's message, e.g. ``missing field `query` ``).
        message: String,
    },
    /// The tool panicked; the panic was caught.
    #[error("tool \"{tool}\" crashed: {message}")]
    Panicked {
        /// The tool.
        tool: String,
        /// The panic message.
        message: String,
    },
    /// The run was cancelled before the call finished.
    #[error("tool \"{tool}\" was cancelled")]
    Cancelled {
        /// The tool.
        tool: String,
    },
    /// The call took longer than the context's per-call timeout.
    #[error("tool \"{tool}\" did not finish within {timeout:?}")]
    Timeout {
        /// The tool.
        tool: String,
        /// The timeout.
        timeout: Duration,
    },
    /// The run's deadline passed before the call finished.
    #[error("tool \"{tool}\" did not finish before the run's deadline")]
    DeadlineExceeded {
        /// The tool.
        tool: String,
    },
    /// The context's call budget was spent; the call was not made.
    #[error("tool \"{tool}\" was not called: the budget of {budget} tool calls is spent")]
    BudgetExhausted {
        /// The tool.
        tool: String,
        /// The budget.
        budget: usize,
    },
    /// The tool's output could not be serialised.
    #[error("the output of tool \"{tool}\" could not be serialized: {message}")]
    Output {
        /// The tool.
        tool: String,
        /// The serializer's message.
        message: String,
    },
    /// A tool of this name is already in the set.
    #[error("a tool named \"{name}\" is already in the set; tool names must be unique")]
    DuplicateTool {
        /// The name.
        name: String,
    },
    /// The tool cannot be offered to a model: bad name or an input schema that is not an
    /// object.
    #[error("tool \"{name}\" cannot be registered: {reason}")]
    InvalidTool {
        /// The tool's name.
        name: String,
        /// What to change.
        reason: String,
    },
}

impl ToolError {
    /// A tool failure with a message for the model.
    pub fn failed(message: impl Into<String>) -> Self {
        ToolError::Failed {
            message: message.into(),
            source: None,
        }
    }

    /// A tool failure caused by `error`: its `Display` text is the message, and it is kept as
    /// the [`source`](StdError::source).
    pub fn from_error(error: impl StdError + Send + Sync + 'static) -> Self {
        ToolError::Failed {
            message: error.to_string(),
            source: Some(Arc::new(error)),
        }
    }

    /// A request to end the run silently.
    pub fn silent_exit(reason: impl Into<String>) -> Self {
        ToolError::SilentExit {
            reason: reason.into(),
        }
    }

    /// This error with every secret `redactor` knows removed from its text (its typed
    /// `source`, for code, is kept as it is).
    #[must_use]
    pub fn redacted(mut self, redactor: &messages::Redactor) -> Self {
        let texts: Vec<&mut String> = match &mut self {
            ToolError::Failed { message, .. }
            | ToolError::InvalidCall { message }
            | ToolError::Panicked { message, .. }
            | ToolError::Output { message, .. } => vec![message],
            ToolError::SilentExit { reason } | ToolError::InvalidTool { reason, .. } => {
                vec![reason]
            }
            ToolError::UnknownTool { available, .. } => vec![available],
            ToolError::InvalidInput { path, message, .. } => {
                let mut texts = vec![message];
                texts.extend(path.as_mut());
                texts
            }
            ToolError::Cancelled { .. }
            | ToolError::Timeout { .. }
            | ToolError::DeadlineExceeded { .. }
            | ToolError::BudgetExhausted { .. }
            | ToolError::DuplicateTool { .. } => Vec::new(),
        };
        for text in texts {
            redactor.redact_in_place(text);
        }
        self
    }

    /// The reason, if this is a silent exit request.
    pub fn silent_exit_reason(&self) -> Option<&str> {
        match self {
            ToolError::SilentExit { reason } => Some(reason),
            _ => None,
        }
    }
}

/// Why a text chain could not read the tool calls at all.
///
/// Problems with *one* call (no tool name, arguments that are not an object, an unknown tool)
/// are per-call [`ToolError`]s and the other calls still run; this error is for a section that
/// is not JSON / YAML in the first place. It is returned rather than guessed around, so code can
/// count format failures; [`observation`](ToolChainError::observation) renders it for the model.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolChainError {
    /// The section does not parse.
    #[error(
        "invalid {syntax} in the `{section}` section: {message}{}; write each call as {example}",
        line.as_ref().map(|line| format!(" ({line})")).unwrap_or_default()
    )]
    MalformedCalls {
        /// `JSON` or `YAML`.
        syntax: &'static str,
        /// The section holding the calls (`action`).
        section: String,
        /// The parser's message.
        message: String,
        /// The offending line of the section, when the parser says where.
        line: Option<Line>,
        /// How a call is written.
        example: &'static str,
    },
}

impl ToolChainError {
    /// The observation that tells the model about this error: an `error` section holding
    /// `Error: <this error>`, formatted by `format` like any other observation.
    pub fn observation(&self, format: &dyn TextFormat) -> String {
        format.format_sections(&[FormattedSection::new("error", format!("Error: {self}"))])
    }
}

//! The canonical transcript format: a JSON array of [`Message`]s.
//!
//! ```json
//! [
//!   {"role": "system", "parts": [{"type": "text", "text": "Be brief."}]},
//!   {"role": "human", "parts": [{"type": "text", "text": "Hi"}]}
//! ]
//! ```
//!
//! Part objects are tagged by `type` (`text`, `image_url`, `binary`, `reasoning`, `tool_call`,
//! `tool_response`); optional fields are omitted when absent; `binary.data` is standard padded
//! base64. Writing then reading a transcript gives back exactly the same messages.

use crate::Message;

/// A transcript that could not be read.
#[derive(Debug, thiserror::Error)]
pub enum TranscriptError {
    /// The text is not a transcript: bad JSON, a wrong shape, an unknown role or part type.
    #[error(
        "invalid transcript at line {line}, column {column}: {message}; a transcript is a JSON array of \
         {{\"role\": \"system\"|\"human\"|\"ai\"|\"tool\", \"parts\": [...]}} objects"
    )]
    Invalid {
        /// 1-based line of the error.
        line: usize,
        /// 1-based column of the error.
        column: usize,
        /// What serde found wrong there.
        message: String,
    },
}

impl From<serde_json::Error> for TranscriptError {
    fn from(err: serde_json::Error) -> Self {
        // serde_json appends " at line L column C" to its Display; we report those separately.
        let full = err.to_string();
        let suffix = format!(" at line {} column {}", err.line(), err.column());
        let message = full.strip_suffix(&suffix).unwrap_or(&full).to_owned();
        TranscriptError::Invalid {
            line: err.line(),
            column: err.column(),
            message,
        }
    }
}

/// Reads a transcript from JSON text.
pub fn from_json(text: &str) -> Result<Vec<Message>, TranscriptError> {
    Ok(serde_json::from_str(text)?)
}

/// Reads a transcript from JSON bytes.
pub fn from_slice(bytes: &[u8]) -> Result<Vec<Message>, TranscriptError> {
    Ok(serde_json::from_slice(bytes)?)
}

/// Writes a transcript as pretty-printed JSON (two-space indent), the form Skein stores.
pub fn to_json(messages: &[Message]) -> String {
    // Serialising these types cannot fail: every map key is a string and no Serialize impl
    // returns an error.
    serde_json::to_string_pretty(messages).expect("messages always serialise to JSON")
}

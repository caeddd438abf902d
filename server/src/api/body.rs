//! [`parse`]: a request body read as exactly one JSON value of the endpoint's type, with what
//! went wrong kept apart (a field of the wrong shape, no JSON at all, bytes after the value), so
//! that each protocol words the error in its own shape.

use serde::de::DeserializeOwned;

/// Why a body is not a request.
#[derive(Debug)]
pub(crate) enum BodyError {
    /// The JSON is fine but a field has the wrong shape.
    Field {
        /// Where: `messages[0].role`.
        path: String,
        /// What serde said.
        reason: String,
    },
    /// The body is not JSON.
    NotJson(String),
    /// Something follows the JSON value.
    Trailing(String),
}

/// `body` as one `T` and nothing after it (whitespace aside).
pub(crate) fn parse<T: DeserializeOwned>(body: &[u8]) -> Result<T, BodyError> {
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    let value: T = serde_path_to_error::deserialize(&mut deserializer).map_err(|err| {
        let path = err.path().to_string();
        let inner = err.into_inner();
        match inner.classify() {
            serde_json::error::Category::Data => BodyError::Field {
                path,
                reason: inner.to_string(),
            },
            _ => BodyError::NotJson(inner.to_string()),
        }
    })?;
    deserializer
        .end()
        .map_err(|err| BodyError::Trailing(err.to_string()))?;
    Ok(value)
}

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
    /// Fields the endpoint does not define, every one of them (only from
    /// [`parse_naming_unknown`]), by their paths (`seeed`, `stream_options.foo`).
    Unknown(Vec<String>),
}

/// `body` as one `T` and nothing after it (whitespace aside).
pub(crate) fn parse<T: DeserializeOwned>(body: &[u8]) -> Result<T, BodyError> {
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    let value = typed(&mut deserializer)?;
    deserializer
        .end()
        .map_err(|err| BodyError::Trailing(err.to_string()))?;
    Ok(value)
}

/// [`parse`] for a `T` whose structs let unknown fields through (no `deny_unknown_fields`):
/// every field `T` does not define is named at once, so a client fixes them in one go instead
/// of one request per field.
pub(crate) fn parse_naming_unknown<T: DeserializeOwned>(body: &[u8]) -> Result<T, BodyError> {
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    let mut unknown = Vec::new();
    let mut note = |path: serde_ignored::Path<'_>| unknown.push(path.to_string());
    let value = typed(serde_ignored::Deserializer::new(
        &mut deserializer,
        &mut note,
    ))?;
    deserializer
        .end()
        .map_err(|err| BodyError::Trailing(err.to_string()))?;
    if unknown.is_empty() {
        Ok(value)
    } else {
        Err(BodyError::Unknown(unknown))
    }
}

/// A `T` from `deserializer`, a field of the wrong shape named by its path.
fn typed<'de, T, D>(deserializer: D) -> Result<T, BodyError>
where
    T: serde::Deserialize<'de>,
    D: serde::Deserializer<'de, Error = serde_json::Error>,
{
    serde_path_to_error::deserialize(deserializer).map_err(|err| {
        let path = err.path().to_string();
        let inner = err.into_inner();
        match inner.classify() {
            serde_json::error::Category::Data => BodyError::Field {
                path,
                reason: inner.to_string(),
            },
            _ => BodyError::NotJson(inner.to_string()),
        }
    })
}

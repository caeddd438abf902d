//! [`Secret`]: a string that must never be shown.

use std::fmt;

use serde::Deserialize;

/// A secret string (an API key, a bearer token): deserialised, never serialised, shown as
/// `<redacted>`.
///
/// ```
/// use service::Secret;
///
/// let key = Secret::new("sk-very-secret");
/// assert_eq!(format!("{key:?}"), "<redacted>");
/// assert_eq!(key.expose(), "sk-very-secret");
/// ```
#[derive(Clone, Deserialize, PartialEq, Eq)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(value_type = String, format = Password))]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret.
    pub fn new(secret: impl Into<String>) -> Self {
        Secret(secret.into())
    }

    /// The secret itself, for the one place that sends it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

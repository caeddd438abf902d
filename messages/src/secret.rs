//! [`Secret`]: a credential (an API key, a bearer token) that is never shown.

use std::fmt;

use serde::Deserialize;

/// A credential (an API key, a bearer token): read from configuration as a plain string, never
/// serialised, never shown (its `Debug` output is `Secret(<redacted>)` and it has no
/// `Display`). [`expose`](Secret::expose) gives the value to the one place that sends it;
/// [`redactor`](Secret::redactor) removes it from text that may quote it.
///
/// ```
/// use messages::Secret;
///
/// let key: Secret = serde_json::from_str(r#""sk-very-secret""#)?;
/// assert_eq!(key.expose(), "sk-very-secret");
/// assert_eq!(format!("{key:?}"), "Secret(<redacted>)");
/// assert_eq!(
///     key.redactor().redact("upstream said: bad key sk-very-secret"),
///     "upstream said: bad key [REDACTED]"
/// );
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    /// Wraps a credential.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The credential itself, for the one place that sends it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// A [`Redactor`](crate::Redactor) that knows this credential.
    pub fn redactor(&self) -> crate::Redactor {
        crate::Redactor::new().with(&self.0)
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

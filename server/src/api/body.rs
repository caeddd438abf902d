//! [`parse`]: a request body read as exactly one JSON value of the endpoint's type, with what
//! went wrong kept apart (a field of the wrong shape, no JSON at all, bytes after the value), so
//! that each protocol words the error in its own shape.

use std::fmt;

use serde::de::{DeserializeOwned, Deserializer, IgnoredAny, MapAccess, Visitor};

/// Separates the path of a flattened struct's field from serde's message in the error of
/// [`flattened`], for [`typed`] to take apart.
const FLATTENED_PATH: char = '\u{1f}';

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
pub(crate) fn parse_naming_unknown<T: DeserializeOwned + KeepsUnknown>(
    body: &[u8],
) -> Result<T, BodyError> {
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    let mut unknown = Vec::new();
    let mut note = |path: serde_ignored::Path<'_>| unknown.push(path.to_string());
    let value: T = typed(serde_ignored::Deserializer::new(
        &mut deserializer,
        &mut note,
    ))?;
    deserializer
        .end()
        .map_err(|err| BodyError::Trailing(err.to_string()))?;
    unknown.extend(value.unknown_fields().iter().cloned());
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
            serde_json::error::Category::Data => {
                let reason = plain(inner.to_string());
                match reason
                    .strip_prefix(FLATTENED_PATH)
                    .and_then(|rest| rest.split_once(FLATTENED_PATH))
                {
                    Some((field, reason)) => BodyError::Field {
                        path: if path == "." {
                            field.to_owned()
                        } else {
                            format!("{path}.{field}")
                        },
                        reason: reason.to_owned(),
                    },
                    None => BodyError::Field { path, reason },
                }
            }
            _ => BodyError::NotJson(inner.to_string()),
        }
    })
}

/// `reason` with serde's name of a Rust type (`expected struct ApprovalRequest`, `… with 2
/// elements` for an array given in its place) said as a client reads the JSON: `expected an
/// object`.
fn plain(reason: String) -> String {
    const STRUCT: &str = "expected struct ";
    let Some(start) = reason.find(STRUCT) else {
        return reason;
    };
    let rest = &reason[start + STRUCT.len()..];
    let name_end = rest
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    let mut rest = &rest[name_end..];
    if let Some(after) = rest.strip_prefix(" with ")
        && let Some(end) = after.find(" elements")
    {
        rest = &after[end + " elements".len()..];
    }
    format!("{}expected an object{rest}", &reason[..start])
}

/// A request that keeps the fields it does not define in an [`UnknownFields`].
pub(crate) trait KeepsUnknown {
    /// The fields it does not define, by name, in the order sent.
    fn unknown_fields(&self) -> &[String] {
        &[]
    }
}

/// The fields of an object that its struct does not define, by name in the order sent. A
/// struct with a `#[serde(flatten)]`ed part keeps them in a flattened field of this type,
/// declared after that part: serde hands a struct with a flattened part the fields it does
/// not define as values already read, which `serde_ignored` never sees.
#[derive(Debug, Default)]
pub(crate) struct UnknownFields(Vec<String>);

impl UnknownFields {
    /// The fields, by name.
    pub(crate) fn names(&self) -> &[String] {
        &self.0
    }
}

impl<'de> serde::Deserialize<'de> for UnknownFields {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(Names)
    }
}

/// Reads the keys of a map, skipping their values.
struct Names;

impl<'de> Visitor<'de> for Names {
    type Value = UnknownFields;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<UnknownFields, A::Error> {
        let mut names = Vec::new();
        while let Some(name) = map.next_key::<String>()? {
            map.next_value::<IgnoredAny>()?;
            names.push(name);
        }
        Ok(UnknownFields(names))
    }
}

/// Reads a `#[serde(flatten)]`ed struct so that a field of the wrong shape is still named:
/// serde reads a flattened part once the whole object is read, where the field's name is no
/// longer known to the path of the error, so the path goes into the message for [`typed`].
pub(crate) fn flattened<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    serde_path_to_error::deserialize(deserializer).map_err(|err| {
        let path = err.path().to_string();
        <D::Error as serde::de::Error>::custom(format_args!(
            "{FLATTENED_PATH}{path}{FLATTENED_PATH}{}",
            err.into_inner()
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::plain;

    #[test]
    fn a_rust_type_name_is_said_as_json() {
        assert_eq!(
            plain("invalid type: null, expected struct ApprovalRequest at line 1 column 4".into()),
            "invalid type: null, expected an object at line 1 column 4"
        );
        assert_eq!(
            plain(
                "invalid length 0, expected struct ApprovalRequest with 2 elements at line 1 \
                 column 2"
                    .into()
            ),
            "invalid length 0, expected an object at line 1 column 2"
        );
        assert_eq!(
            plain("unknown variant `maybe`, expected one of `approve`".into()),
            "unknown variant `maybe`, expected one of `approve`"
        );
    }
}

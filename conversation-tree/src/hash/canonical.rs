//! Canonical JSON: sorted keys, no insignificant whitespace.

use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::Value;

/// `value` as canonical JSON: object keys sorted by code point at every depth, no whitespace
/// between tokens, raw UTF-8 strings.
///
/// Key order in the input does not matter, whether or not serde_json keeps insertion order
/// (its `preserve_order` feature may be switched on by any crate in a build).
///
/// ```
/// let value = serde_json::json!({"b": [1, {"d": 2, "c": 3}], "a": "é"});
/// assert_eq!(conversation_tree::canonical_json(&value), r#"{"a":"é","b":[1,{"c":3,"d":2}]}"#);
/// ```
pub fn canonical_json(value: &Value) -> String {
    // Serialising a `Value` into a `String` cannot fail.
    serde_json::to_string(&Canonical(value)).unwrap_or_default()
}

/// Serialises the wrapped value with its object keys sorted.
pub(crate) struct Canonical<'a>(pub(crate) &'a Value);

impl Serialize for Canonical<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::Array(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(&Canonical(item))?;
                }
                seq.end()
            }
            Value::Object(object) => {
                let mut entries: Vec<(&String, &Value)> = object.iter().collect();
                entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
                let mut map = serializer.serialize_map(Some(entries.len()))?;
                for (key, value) in entries {
                    map.serialize_entry(key, &Canonical(value))?;
                }
                map.end()
            }
            scalar => scalar.serialize(serializer),
        }
    }
}

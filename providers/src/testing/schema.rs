//! [`example_for_schema`]: a JSON value valid for a JSON Schema.

use serde_json::{Map, Value, json};

/// How deep nested or recursive schemas are followed before giving up with `null`.
const MAX_DEPTH: usize = 16;

/// A value valid for `schema`, for calling a tool without a model.
///
/// Follows `default`, `const`, `enum`, `examples`, `type` (first non-null type of a list),
/// `anyOf`/`oneOf` (first branch), `allOf` (object branches merged), local `$ref`s
/// (`#/$defs/…`, `#/definitions/…`), numeric bounds, string lengths and `format`s
/// (`date-time`, `date`, `email`, `uri`, `uuid`), array `minItems`, and fills every property
/// of an object (required or not, so `additionalProperties: false` schemas are satisfied).
///
/// ```
/// use serde_json::json;
/// use providers::testing::example_for_schema;
///
/// let schema = json!({
///     "type": "object",
///     "properties": {
///         "city": {"type": "string"},
///         "days": {"type": "integer", "minimum": 1, "maximum": 7},
///         "units": {"enum": ["metric", "imperial"]}
///     },
///     "required": ["city", "days"]
/// });
/// assert_eq!(
///     example_for_schema(&schema),
///     json!({"city": "example", "days": 1, "units": "metric"})
/// );
/// ```
pub fn example_for_schema(schema: &Value) -> Value {
    Generator {
        root: schema,
        text: "example",
    }
    .value(schema, 0)
}

/// [`example_for_schema`] with `text` for every free string (one without `format`, `enum`,
/// `const` or `default`), cut or padded to the string's length bounds: the `echo` model's
/// answer to a JSON Schema response format, with the prompt as `text`.
///
/// ```
/// use serde_json::json;
/// use providers::testing::instance_with_text;
///
/// let schema = json!({
///     "type": "object",
///     "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 18}},
///     "required": ["name", "age"],
///     "additionalProperties": false
/// });
/// assert_eq!(instance_with_text(&schema, "Ada"), json!({"name": "Ada", "age": 18}));
/// ```
pub fn instance_with_text(schema: &Value, text: &str) -> Value {
    Generator { root: schema, text }.value(schema, 0)
}

struct Generator<'a> {
    root: &'a Value,
    /// What free strings hold.
    text: &'a str,
}

impl<'a> Generator<'a> {
    fn value(&self, schema: &'a Value, depth: usize) -> Value {
        if depth > MAX_DEPTH {
            return Value::Null;
        }
        let Some(object) = schema.as_object() else {
            // `true` or `{}`-like schemas accept anything.
            return json!({});
        };
        if let Some(reference) = object.get("$ref").and_then(Value::as_str) {
            return match self.resolve(reference) {
                Some(target) => self.value(target, depth + 1),
                None => Value::Null,
            };
        }
        for key in ["const", "default"] {
            if let Some(value) = object.get(key) {
                return value.clone();
            }
        }
        for key in ["enum", "examples"] {
            if let Some(first) = object
                .get(key)
                .and_then(Value::as_array)
                .and_then(|v| v.first())
            {
                return first.clone();
            }
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(branches) = object.get(key).and_then(Value::as_array) {
                let branch = branches
                    .iter()
                    .find(|b| b.get("type").and_then(Value::as_str) != Some("null"))
                    .or(branches.first());
                if let Some(branch) = branch {
                    return self.value(branch, depth + 1);
                }
            }
        }
        if let Some(branches) = object.get("allOf").and_then(Value::as_array) {
            let mut merged = Map::new();
            for branch in branches {
                match self.value(branch, depth + 1) {
                    Value::Object(fields) => merged.extend(fields),
                    other if branches.len() == 1 => return other,
                    _ => {}
                }
            }
            return Value::Object(merged);
        }
        match self.type_of(object) {
            "object" => self.object(object, depth),
            "array" => {
                let count = object.get("minItems").and_then(Value::as_u64).unwrap_or(1);
                let count = count.min(
                    object
                        .get("maxItems")
                        .and_then(Value::as_u64)
                        .unwrap_or(u64::MAX),
                );
                let items = object.get("items").unwrap_or(&Value::Bool(true));
                let prefix = object.get("prefixItems").and_then(Value::as_array);
                let values = (0..count.min(8))
                    .map(|i| {
                        let schema = prefix
                            .and_then(|p| usize::try_from(i).ok().and_then(|i| p.get(i)))
                            .unwrap_or(items);
                        self.value(schema, depth + 1)
                    })
                    .collect();
                Value::Array(values)
            }
            "string" => string(object, self.text),
            "integer" => integer(object),
            "number" => number(object),
            "boolean" => Value::Bool(true),
            "null" => Value::Null,
            _ => json!({}),
        }
    }

    fn object(&self, object: &'a Map<String, Value>, depth: usize) -> Value {
        let mut fields = Map::new();
        if let Some(properties) = object.get("properties").and_then(Value::as_object) {
            for (name, schema) in properties {
                fields.insert(name.clone(), self.value(schema, depth + 1));
            }
        }
        // Required names without a property schema still need a value.
        if let Some(required) = object.get("required").and_then(Value::as_array) {
            for name in required.iter().filter_map(Value::as_str) {
                fields
                    .entry(name.to_owned())
                    .or_insert_with(|| Value::String("example".into()));
            }
        }
        Value::Object(fields)
    }

    fn type_of(&self, object: &Map<String, Value>) -> &'static str {
        let declared: Vec<&str> = match object.get("type") {
            Some(Value::String(one)) => vec![one.as_str()],
            Some(Value::Array(many)) => many.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        let chosen = declared
            .iter()
            .copied()
            .find(|t| *t != "null")
            .or(declared.first().copied());
        match chosen {
            Some("object") => "object",
            Some("array") => "array",
            Some("string") => "string",
            Some("integer") => "integer",
            Some("number") => "number",
            Some("boolean") => "boolean",
            Some("null") => "null",
            _ if object.contains_key("properties") => "object",
            _ if object.contains_key("items") => "array",
            _ => "any",
        }
    }

    fn resolve(&self, reference: &str) -> Option<&'a Value> {
        let pointer = reference.strip_prefix('#')?;
        self.root.pointer(pointer)
    }
}

fn string(object: &Map<String, Value>, free: &str) -> Value {
    let format = object.get("format").and_then(Value::as_str).unwrap_or("");
    let mut text = match format {
        "date-time" => "2024-01-01T00:00:00Z".to_owned(),
        "date" => "2024-01-01".to_owned(),
        "time" => "00:00:00".to_owned(),
        "email" => "user@example.com".to_owned(),
        "uri" | "url" => "https://example.com/".to_owned(),
        "uuid" => "00000000-0000-4000-8000-000000000000".to_owned(),
        _ => free.to_owned(),
    };
    let len = |key: &str| {
        object
            .get(key)
            .and_then(Value::as_u64)
            .and_then(|n| usize::try_from(n).ok())
    };
    if let Some(max) = len("maxLength") {
        text = text.chars().take(max).collect();
    }
    if let Some(min) = len("minLength") {
        while text.chars().count() < min.min(10_000) {
            text.push('x');
        }
    }
    Value::String(text)
}

fn integer(object: &Map<String, Value>) -> Value {
    let bound = |key: &str| object.get(key).and_then(Value::as_f64);
    // 0 where the bounds allow it: a client's "any safe integer" bounds (zod's) then read
    // as the plain answer they are.
    let mut value = 0.0_f64;
    if let Some(min) = bound("minimum") {
        value = value.max(min.ceil());
    }
    if let Some(min) = bound("exclusiveMinimum") {
        value = value.max((min + 1.0).floor());
    }
    if let Some(max) = bound("maximum") {
        value = value.min(max.floor());
    }
    if let Some(max) = bound("exclusiveMaximum") {
        value = value.min((max - 1.0).ceil());
    }
    // Bounds come from a trusted tool schema; saturate rather than fail on silly ones.
    Value::from(value as i64)
}

fn number(object: &Map<String, Value>) -> Value {
    let bound = |key: &str| object.get(key).and_then(Value::as_f64);
    let mut value = 0.0_f64;
    if let Some(min) = bound("minimum") {
        value = value.max(min);
    }
    if let Some(min) = bound("exclusiveMinimum")
        && value <= min
    {
        value = min + 0.5;
    }
    if let Some(max) = bound("maximum").or(bound("exclusiveMaximum").map(|m| m - 0.5)) {
        value = value.min(max);
    }
    serde_json::Number::from_f64(value).map_or(Value::from(0), Value::Number)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refs_nested_arrays_and_nullable_types() {
        let schema = json!({
            "type": "object",
            "$defs": {"Point": {"type": "object", "properties": {"x": {"type": "number", "exclusiveMinimum": 1}}, "required": ["x"]}},
            "properties": {
                "points": {"type": "array", "items": {"$ref": "#/$defs/Point"}, "minItems": 2},
                "label": {"type": ["string", "null"], "minLength": 9},
                "when": {"type": "string", "format": "date-time"},
                "flag": {"type": "boolean"},
                "choice": {"anyOf": [{"type": "null"}, {"type": "integer", "minimum": 5}]},
                "fixed": {"const": "v1"}
            },
            "required": ["points", "extra"],
            "additionalProperties": false
        });
        assert_eq!(
            example_for_schema(&schema),
            json!({
                "points": [{"x": 1.5}, {"x": 1.5}],
                "label": "examplexx",
                "when": "2024-01-01T00:00:00Z",
                "flag": true,
                "choice": 5,
                "fixed": "v1",
                "extra": "example"
            })
        );
    }

    #[test]
    fn recursive_refs_stop() {
        let schema = json!({"$ref": "#/$defs/Node", "$defs": {"Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}}}});
        let value = example_for_schema(&schema);
        assert!(value.is_object());
    }

    #[test]
    fn bounds_are_respected() {
        assert_eq!(
            example_for_schema(&json!({"type": "integer", "minimum": -3, "maximum": -1})),
            json!(-1)
        );
        // zod's `z.number().int()`: every safe integer; 0 is one.
        assert_eq!(
            example_for_schema(
                &json!({"type": "integer", "minimum": -9_007_199_254_740_991_i64, "maximum": 9_007_199_254_740_991_i64})
            ),
            json!(0)
        );
        assert_eq!(
            example_for_schema(&json!({"type": "number", "exclusiveMinimum": 2})),
            json!(2.5)
        );
        assert_eq!(
            example_for_schema(&json!({"type": "integer", "exclusiveMaximum": 0})),
            json!(-1)
        );
        assert_eq!(
            example_for_schema(&json!({"type": "string", "maxLength": 3})),
            json!("exa")
        );
        assert_eq!(
            example_for_schema(
                &json!({"type": "array", "items": {"type": "integer"}, "maxItems": 0})
            ),
            json!([])
        );
    }
}

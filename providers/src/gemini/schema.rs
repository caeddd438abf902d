//! A tool's JSON Schema → the Gemini `Schema` of `functionDeclarations[].parameters`.
//!
//! Gemini's `Schema` is a subset of the OpenAPI 3.0 schema object, and the API rejects the
//! whole request over one keyword it does not know (`Unknown name "additionalProperties"`).
//! The conversion keeps what Gemini understands and rewrites what it can:
//!
//! - kept: `type` (upper-cased: `OBJECT`, `STRING`, …), `description`, `title`, `nullable`,
//!   `enum` (strings), `properties`, `required` (only names of defined properties), `items`,
//!   `anyOf`, `minimum`, `maximum`, `minItems`, `maxItems`, `minLength`, `maxLength`,
//!   `minProperties`, `maxProperties`, `pattern`, `default`, `example`, and the `format`s
//!   Gemini supports (`date-time`, `enum`, `int32`, `int64`, `float`, `double`);
//! - rewritten: `$ref` to `#/$defs/…` or `#/definitions/…` is inlined (a recursive schema is
//!   cut after [`MAX_REF_DEPTH`] levels to a bare `OBJECT`); `oneOf` → `anyOf`; `allOf` is
//!   merged into one schema; a `"null"` type or a `{"type": "null"}` branch → `nullable`;
//!   `type: [a, b]` → `anyOf`; `const` → a one-value `enum`; `exclusiveMinimum` /
//!   `exclusiveMaximum` → `minimum` / `maximum`; `examples` → `example`; a missing `type`
//!   is inferred from `properties`, `items` or `enum`; a non-string `enum` is dropped and its
//!   values are listed in the description;
//! - dropped: everything else (`$schema`, `$id`, `additionalProperties`, `patternProperties`,
//!   `multipleOf`, `uniqueItems`, `not`, `if`/`then`/`else`, …) — constraints the model is then
//!   not told about, which is what every Gemini client does.
//!
//! A tool without parameters (no schema, or an object schema without properties) gets no
//! `parameters` at all.

use serde_json::{Map, Value, json};

/// How many `$ref`s deep a schema is expanded.
const MAX_REF_DEPTH: usize = 8;

/// Keywords copied unchanged.
const COPIED: &[&str] = &[
    "description",
    "title",
    "format",
    "nullable",
    "minimum",
    "maximum",
    "minItems",
    "maxItems",
    "minLength",
    "maxLength",
    "minProperties",
    "maxProperties",
    "pattern",
    "default",
    "example",
];

/// The `parameters` for a tool's input schema, or `None` when the tool takes none.
pub(super) fn parameters(schema: &Value) -> Option<Value> {
    let Value::Object(_) = schema else {
        return None;
    };
    let mut converted = Converter { root: schema }.convert(schema, 0);
    let Value::Object(map) = &mut converted else {
        return None;
    };
    let has_properties = map
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|properties| !properties.is_empty());
    if has_properties {
        map.insert("type".into(), "OBJECT".into());
    } else if !map.contains_key("anyOf") {
        return None;
    }
    Some(converted)
}

struct Converter<'a> {
    root: &'a Value,
}

impl Converter<'_> {
    fn convert(&self, schema: &Value, depth: usize) -> Value {
        let Value::Object(source) = schema else {
            // `true` (anything) and malformed schemas: no constraint Gemini can express.
            return json!({});
        };
        if let Some(reference) = source.get("$ref").and_then(Value::as_str) {
            return self.reference(reference, source, depth);
        }
        let mut out = Map::new();
        for key in COPIED {
            if let Some(value) = source.get(*key) {
                out.insert((*key).to_owned(), value.clone());
            }
        }
        self.types(source, &mut out, depth);
        for (exclusive, inclusive) in [
            ("exclusiveMinimum", "minimum"),
            ("exclusiveMaximum", "maximum"),
        ] {
            if let Some(bound @ Value::Number(_)) = source.get(exclusive) {
                out.entry(inclusive).or_insert_with(|| bound.clone());
            }
        }
        if let Some(example) = source.get("examples").and_then(|e| e.as_array()?.first()) {
            out.entry("example").or_insert_with(|| example.clone());
        }
        values(source, &mut out);
        if let Some(Value::Object(properties)) = source.get("properties") {
            let converted: Map<String, Value> = properties
                .iter()
                .map(|(name, schema)| (name.clone(), self.convert(schema, depth)))
                .collect();
            if let Some(Value::Array(required)) = source.get("required") {
                let known: Vec<Value> = required
                    .iter()
                    .filter(|name| name.as_str().is_some_and(|n| converted.contains_key(n)))
                    .cloned()
                    .collect();
                if !known.is_empty() {
                    out.insert("required".into(), Value::Array(known));
                }
            }
            out.insert("properties".into(), Value::Object(converted));
        }
        match source.get("items").or_else(|| source.get("prefixItems")) {
            Some(Value::Array(tuple)) => {
                out.insert("items".into(), self.any_of(tuple, depth));
            }
            Some(items) => {
                out.insert("items".into(), self.convert(items, depth));
            }
            None => {}
        }
        if let Some(Value::Array(all)) = source.get("allOf") {
            for schema in all {
                merge(&mut out, self.convert(schema, depth));
            }
        }
        infer_type(&mut out);
        format(&mut out);
        Value::Object(out)
    }

    /// An inlined `$ref`; keywords next to it (usually a description) win.
    fn reference(&self, reference: &str, source: &Map<String, Value>, depth: usize) -> Value {
        let target = reference
            .strip_prefix("#/$defs/")
            .map(|name| ("$defs", name))
            .or_else(|| {
                reference
                    .strip_prefix("#/definitions/")
                    .map(|name| ("definitions", name))
            })
            .and_then(|(section, name)| self.root.get(section)?.get(name));
        let mut out = match target {
            Some(target) if depth < MAX_REF_DEPTH => self.convert(target, depth + 1),
            _ => json!({"type": "OBJECT"}),
        };
        let mut siblings = source.clone();
        siblings.remove("$ref");
        if let (Value::Object(out), Value::Object(siblings)) =
            (&mut out, self.convert(&Value::Object(siblings), depth))
        {
            out.extend(siblings.into_iter().filter(|(key, _)| key != "type"));
        }
        out
    }

    /// `type`, `anyOf` / `oneOf` and `nullable`.
    fn types(&self, source: &Map<String, Value>, out: &mut Map<String, Value>, depth: usize) {
        match source.get("type") {
            Some(Value::String(kind)) if kind == "null" => {
                out.insert("nullable".into(), true.into());
            }
            Some(Value::String(kind)) => {
                out.insert("type".into(), kind.to_ascii_uppercase().into());
            }
            Some(Value::Array(kinds)) => {
                let kinds: Vec<&str> = kinds.iter().filter_map(Value::as_str).collect();
                if kinds.contains(&"null") {
                    out.insert("nullable".into(), true.into());
                }
                let mut named = kinds.iter().filter(|kind| **kind != "null");
                match (named.next(), named.next()) {
                    (Some(kind), None) => {
                        out.insert("type".into(), kind.to_ascii_uppercase().into());
                    }
                    (Some(_), Some(_)) => {
                        let branches = kinds
                            .iter()
                            .filter(|kind| **kind != "null")
                            .map(|kind| json!({"type": kind.to_ascii_uppercase()}))
                            .collect();
                        out.insert("anyOf".into(), Value::Array(branches));
                    }
                    _ => {}
                }
            }
            _ => {}
        }
        let branches = source.get("anyOf").or_else(|| source.get("oneOf"));
        if let Some(Value::Array(branches)) = branches {
            let is_null = |b: &Value| b.get("type").and_then(Value::as_str) == Some("null");
            if branches.iter().any(is_null) {
                out.insert("nullable".into(), true.into());
            }
            let mut rest: Vec<Value> = branches
                .iter()
                .filter(|b| !is_null(b))
                .map(|b| self.convert(b, depth))
                .collect();
            match rest.len() {
                0 => {}
                1 => merge(out, rest.remove(0)),
                _ => {
                    out.insert("anyOf".into(), Value::Array(rest));
                }
            }
        }
    }

    /// `{"anyOf": [...]}` of the converted schemas (the schema itself when there is one).
    fn any_of(&self, schemas: &[Value], depth: usize) -> Value {
        let mut converted: Vec<Value> = schemas.iter().map(|s| self.convert(s, depth)).collect();
        if converted.len() == 1 {
            return converted.remove(0);
        }
        json!({ "anyOf": converted })
    }
}

/// `enum` and `const`: Gemini takes string enums only.
fn values(source: &Map<String, Value>, out: &mut Map<String, Value>) {
    let values: Option<Vec<Value>> = match (source.get("enum"), source.get("const")) {
        (Some(Value::Array(values)), _) => Some(values.clone()),
        (None, Some(value)) => Some(vec![value.clone()]),
        _ => None,
    };
    let Some(values) = values else { return };
    if values.iter().all(Value::is_string) {
        out.insert("enum".into(), Value::Array(values));
        return;
    }
    let integral = |v: &Value| v.is_i64() || v.is_u64();
    let kind = match values.first() {
        Some(Value::Bool(_)) => Some("BOOLEAN"),
        Some(Value::Number(_)) if values.iter().all(integral) => Some("INTEGER"),
        Some(Value::Number(_)) => Some("NUMBER"),
        _ => None,
    };
    if let Some(kind) = kind {
        out.entry("type").or_insert_with(|| kind.into());
    }
    let listed: Vec<String> = values.iter().map(Value::to_string).collect();
    let note = format!("One of: {}.", listed.join(", "));
    let description = match out.get("description").and_then(Value::as_str) {
        Some(text) if !text.is_empty() => format!("{text} {note}"),
        _ => note,
    };
    out.insert("description".into(), description.into());
}

/// Adds `other`'s keywords to `out`: properties and required names are united, other
/// keywords already in `out` win.
fn merge(out: &mut Map<String, Value>, other: Value) {
    let Value::Object(other) = other else { return };
    for (key, value) in other {
        match (out.get_mut(&key), value) {
            (Some(Value::Object(mine)), Value::Object(theirs)) if key == "properties" => {
                for (name, schema) in theirs {
                    mine.entry(name).or_insert(schema);
                }
            }
            (Some(Value::Array(mine)), Value::Array(theirs)) if key == "required" => {
                for name in theirs {
                    if !mine.contains(&name) {
                        mine.push(name);
                    }
                }
            }
            (Some(_), _) => {}
            (None, value) => {
                out.insert(key, value);
            }
        }
    }
}

fn infer_type(out: &mut Map<String, Value>) {
    if out.contains_key("type") || out.contains_key("anyOf") {
        return;
    }
    let kind = if out.contains_key("properties") {
        "OBJECT"
    } else if out.contains_key("items") {
        "ARRAY"
    } else if out.contains_key("enum") {
        "STRING"
    } else {
        return;
    };
    out.insert("type".into(), kind.into());
}

/// Keeps a `format` only where Gemini supports it.
fn format(out: &mut Map<String, Value>) {
    let supported = match (out.get("type").and_then(Value::as_str), out.get("format")) {
        (_, None) => return,
        (Some("STRING"), Some(format)) => matches!(format.as_str(), Some("date-time" | "enum")),
        (Some("INTEGER"), Some(format)) => matches!(format.as_str(), Some("int32" | "int64")),
        (Some("NUMBER"), Some(format)) => matches!(format.as_str(), Some("float" | "double")),
        _ => false,
    };
    if !supported {
        out.remove("format");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_parameters() {
        for schema in [
            Value::Null,
            json!({}),
            json!({"type": "object", "properties": {}, "additionalProperties": false}),
        ] {
            assert_eq!(parameters(&schema), None, "{schema}");
        }
    }

    #[test]
    fn strict_json_schema_becomes_gemini_schema() {
        let schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "city": {"type": "string", "description": "City", "format": "uri"},
                "when": {"type": ["string", "null"], "format": "date-time"},
                "unit": {"enum": ["c", "f"]},
                "days": {"type": "integer", "exclusiveMinimum": 0, "multipleOf": 1, "examples": [3]},
                "level": {"enum": [1, 2], "description": "Level."},
                "place": {"$ref": "#/$defs/Place", "description": "Where."},
                "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": true},
                "pick": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
                "maybe": {"anyOf": [{"$ref": "#/$defs/Place"}, {"type": "null"}]},
                "both": {"allOf": [
                    {"properties": {"a": {"type": "string"}}, "required": ["a"]},
                    {"properties": {"b": {"const": "x"}}}
                ]}
            },
            "required": ["city", "ghost"],
            "$defs": {"Place": {"type": "object", "properties": {"lat": {"type": "number"}}}}
        });
        let place = json!({"type": "OBJECT", "properties": {"lat": {"type": "NUMBER"}}});
        assert_eq!(
            parameters(&schema),
            Some(json!({
                "type": "OBJECT",
                "properties": {
                    "city": {"type": "STRING", "description": "City"},
                    "when": {"type": "STRING", "nullable": true, "format": "date-time"},
                    "unit": {"type": "STRING", "enum": ["c", "f"]},
                    "days": {"type": "INTEGER", "minimum": 0, "example": 3},
                    "level": {"type": "INTEGER", "description": "Level. One of: 1, 2."},
                    "place": {"type": "OBJECT", "properties": {"lat": {"type": "NUMBER"}}, "description": "Where."},
                    "tags": {"type": "ARRAY", "items": {"type": "STRING"}},
                    "pick": {"anyOf": [{"type": "STRING"}, {"type": "INTEGER"}]},
                    "maybe": {"nullable": true, "type": "OBJECT", "properties": place["properties"]},
                    "both": {
                        "type": "OBJECT",
                        "properties": {"a": {"type": "STRING"}, "b": {"type": "STRING", "enum": ["x"]}},
                        "required": ["a"]
                    }
                },
                "required": ["city"]
            }))
        );
    }

    #[test]
    fn recursive_refs_are_cut() {
        let schema = json!({
            "type": "object",
            "properties": {"root": {"$ref": "#/definitions/Node"}},
            "definitions": {"Node": {"type": "object", "properties": {"child": {"$ref": "#/definitions/Node"}}}}
        });
        let mut node = parameters(&schema).expect("has properties")["properties"]["root"].clone();
        let mut depth = 0;
        while let Some(child) = node.pointer("/properties/child").cloned() {
            node = child;
            depth += 1;
        }
        assert_eq!(depth, MAX_REF_DEPTH);
        assert_eq!(node, json!({"type": "OBJECT"}));
    }
}

//! `response_format` (Chat Completions, Chat Shell) and `text.format` (Responses): the answer's
//! shape, read into a [`ResponseFormat`] with every fault named by its field path.

use providers::{JsonSchemaFormat, ResponseFormat};
use serde_json::{Map, Value};

/// Why a format was refused: the field at fault and what to send instead.
#[derive(Debug)]
pub(crate) struct FormatFault {
    /// The field path, e.g. `response_format.json_schema`.
    pub(crate) field: String,
    /// What is wrong, every fault of the field at once.
    pub(crate) reason: String,
}

impl FormatFault {
    fn new(field: impl Into<String>, reason: impl Into<String>) -> Self {
        FormatFault {
            field: field.into(),
            reason: reason.into(),
        }
    }
}

/// Where the schema object sits: Chat Completions nests it under `json_schema`, the Responses
/// API puts its fields beside `type`.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Layout {
    /// `{"type": "json_schema", "json_schema": {"name", "schema", …}}`.
    Chat,
    /// `{"type": "json_schema", "name", "schema", …}`.
    Responses,
}

/// The format `value` (found at `field`) asks for.
pub(crate) fn parse(
    field: &str,
    value: Value,
    layout: Layout,
) -> Result<ResponseFormat, FormatFault> {
    let Value::Object(mut object) = value else {
        return Err(FormatFault::new(
            field,
            format!("`{field}` must be an object such as {{\"type\": \"json_object\"}}"),
        ));
    };
    let kind = object.remove("type");
    match kind.as_ref().and_then(Value::as_str) {
        Some("text") => Ok(ResponseFormat::Text),
        Some("json_object") => Ok(ResponseFormat::JsonObject),
        Some("json_schema") => {
            let (at, fields) = match layout {
                Layout::Responses => (field.to_owned(), object),
                Layout::Chat => {
                    let at = format!("{field}.json_schema");
                    match object.remove("json_schema") {
                        Some(Value::Object(fields)) => (at, fields),
                        _ => {
                            return Err(FormatFault::new(
                                at.clone(),
                                format!(
                                    "`{at}` must be an object with `name` and `schema` for a \
                                     `json_schema` format"
                                ),
                            ));
                        }
                    }
                }
            };
            json_schema(&at, fields).map(ResponseFormat::JsonSchema)
        }
        _ => Err(FormatFault::new(
            format!("{field}.type"),
            format!("`{field}.type` must be `text`, `json_object` or `json_schema`"),
        )),
    }
}

/// The fields of a JSON Schema format, every fault named at once.
fn json_schema(at: &str, mut fields: Map<String, Value>) -> Result<JsonSchemaFormat, FormatFault> {
    let mut faults = Vec::new();
    let name = match fields.remove("name") {
        Some(Value::String(name)) if !name.trim().is_empty() => name,
        _ => {
            faults.push(format!("`{at}.name` must be a non-empty string"));
            String::new()
        }
    };
    let description = match fields.remove("description") {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) => Some(text),
        Some(_) => {
            faults.push(format!("`{at}.description` must be a string"));
            None
        }
    };
    // OpenAI lets `schema` out (any JSON then); a schema is an object or a boolean.
    let schema = match fields.remove("schema") {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(schema @ (Value::Object(_) | Value::Bool(_))) => schema,
        Some(_) => {
            faults.push(format!("`{at}.schema` must be a JSON Schema object"));
            Value::Null
        }
    };
    let strict = match fields.remove("strict") {
        None | Some(Value::Null) => None,
        Some(Value::Bool(strict)) => Some(strict),
        Some(_) => {
            faults.push(format!("`{at}.strict` must be true or false"));
            None
        }
    };
    let unknown: Vec<String> = fields.keys().map(|key| format!("`{at}.{key}`")).collect();
    if !unknown.is_empty() {
        faults.push(format!("unknown field(s) {}", unknown.join(", ")));
    }
    if faults.is_empty() {
        Ok(JsonSchemaFormat {
            name,
            description,
            schema,
            strict,
        })
    } else {
        Err(FormatFault::new(at, faults.join("; ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn chat_and_responses_layouts() {
        let chat = json!({"type": "json_schema", "json_schema": {"name": "p", "schema": {"type": "object"}, "strict": true}});
        let responses = json!({"type": "json_schema", "name": "p", "schema": {"type": "object"}, "strict": true});
        let expected = ResponseFormat::json_schema("p", json!({"type": "object"})).strict(true);
        assert_eq!(
            parse("response_format", chat, Layout::Chat).unwrap(),
            expected
        );
        assert_eq!(
            parse("text.format", responses, Layout::Responses).unwrap(),
            expected
        );
        assert_eq!(
            parse("response_format", json!({"type": "text"}), Layout::Chat).unwrap(),
            ResponseFormat::Text
        );
    }

    #[test]
    fn every_fault_is_named() {
        let error = parse(
            "response_format",
            json!({"type": "json_schema", "json_schema": {"schema": 3, "strict": "yes", "extra": 1}}),
            Layout::Chat,
        )
        .unwrap_err();
        let message = &error.reason;
        for field in ["name", "schema", "strict", "extra"] {
            assert!(
                message.contains(&format!("response_format.json_schema.{field}")),
                "{message}"
            );
        }
        let error = parse("response_format", json!({"type": "xml"}), Layout::Chat).unwrap_err();
        assert_eq!(error.field, "response_format.type");
    }
}

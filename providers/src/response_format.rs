//! [`ResponseFormat`]: the shape the answer must take (free text, any JSON object, or JSON
//! valid for a schema).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The shape a model's answer must take, sent natively by every adapter: OpenAI Chat
/// Completions `response_format`, OpenAI Responses `text.format`, Anthropic
/// `output_config.format` (a forced tool for models without it), Gemini
/// `generationConfig.responseMimeType` + `responseJsonSchema`.
///
/// Serialised as the Responses API's `text.format` object (`{"type": "text"}`,
/// `{"type": "json_object"}`, `{"type": "json_schema", "name": …, "schema": …}`).
///
/// A schema a provider refuses (OpenAI's `strict` mode needs `additionalProperties: false` and
/// every property required) is sent as given: the provider's 400 says what to change.
///
/// ```
/// use providers::{ChatOptions, ResponseFormat};
/// use serde_json::json;
///
/// let format = ResponseFormat::json_schema(
///     "person",
///     json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}),
/// )
/// .strict(true);
/// let options = ChatOptions { response_format: Some(format), ..ChatOptions::default() };
/// let wire = serde_json::to_value(&options.response_format).unwrap();
/// assert_eq!(wire["type"], "json_schema");
/// assert_eq!(wire["name"], "person");
/// assert_eq!(wire["strict"], true);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ResponseFormat {
    /// Free text: every model's default (sent only where the provider has the notion).
    Text,
    /// Some JSON object, no schema ("JSON mode").
    JsonObject,
    /// JSON valid for a schema ("structured output").
    JsonSchema(JsonSchemaFormat),
}

/// The schema of a [`ResponseFormat::JsonSchema`] and how it is named to the model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JsonSchemaFormat {
    /// A name for the format (OpenAI requires one: letters, digits, `_` and `-`, at most 64).
    pub name: String,
    /// What the answer is, for the model (OpenAI and Gemini read it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The JSON Schema the answer must be valid for.
    pub schema: Value,
    /// OpenAI's strict mode (the schema is enforced during sampling); `None` leaves the
    /// provider's default (not strict).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strict: Option<bool>,
}

impl ResponseFormat {
    /// JSON valid for `schema`, named `name` (not strict, no description).
    pub fn json_schema(name: impl Into<String>, schema: Value) -> Self {
        ResponseFormat::JsonSchema(JsonSchemaFormat {
            name: name.into(),
            description: None,
            schema,
            strict: None,
        })
    }

    /// JSON valid for the schema `schemars` derives for `T`, named after the type (characters
    /// OpenAI refuses in a name become `_`).
    ///
    /// ```
    /// use providers::ResponseFormat;
    ///
    /// #[derive(schemars::JsonSchema)]
    /// struct Weather {
    ///     city: String,
    ///     celsius: f64,
    /// }
    ///
    /// let ResponseFormat::JsonSchema(format) = ResponseFormat::for_type::<Weather>() else {
    ///     unreachable!()
    /// };
    /// assert_eq!(format.name, "Weather");
    /// assert_eq!(format.schema["required"], serde_json::json!(["city", "celsius"]));
    /// ```
    pub fn for_type<T: schemars::JsonSchema>() -> Self {
        let schema = schemars::schema_for!(T);
        Self::json_schema(format_name(&T::schema_name()), schema.to_value())
    }

    /// The same format with OpenAI's strict mode on or off (no effect on other formats).
    #[must_use]
    pub fn strict(mut self, strict: bool) -> Self {
        if let ResponseFormat::JsonSchema(format) = &mut self {
            format.strict = Some(strict);
        }
        self
    }

    /// The same format with a description for the model (no effect on other formats).
    #[must_use]
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        if let ResponseFormat::JsonSchema(format) = &mut self {
            format.description = Some(description.into());
        }
        self
    }

    /// The schema the answer must be valid for, if any.
    pub fn schema(&self) -> Option<&Value> {
        match self {
            ResponseFormat::JsonSchema(format) => Some(&format.schema),
            _ => None,
        }
    }

    /// Whether the answer must be JSON (an object or a schema's instance).
    pub fn is_json(&self) -> bool {
        !matches!(self, ResponseFormat::Text)
    }
}

/// `name` with every character outside `[A-Za-z0-9_-]` replaced by `_`, at most 64 long.
fn format_name(name: &str) -> String {
    let cleaned: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if cleaned.is_empty() {
        "response".to_owned()
    } else {
        cleaned
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn serialises_as_the_responses_text_format() {
        assert_eq!(
            serde_json::to_value(ResponseFormat::Text).unwrap(),
            json!({"type": "text"})
        );
        assert_eq!(
            serde_json::to_value(ResponseFormat::JsonObject).unwrap(),
            json!({"type": "json_object"})
        );
        let format =
            ResponseFormat::json_schema("p", json!({"type": "object"})).with_description("d");
        let value = serde_json::to_value(&format).unwrap();
        assert_eq!(
            value,
            json!({"type": "json_schema", "name": "p", "description": "d", "schema": {"type": "object"}})
        );
        assert_eq!(
            serde_json::from_value::<ResponseFormat>(value).unwrap(),
            format
        );
    }

    #[test]
    fn names_are_made_acceptable() {
        assert_eq!(format_name("Vec<Point>"), "Vec_Point_");
        assert_eq!(format_name(""), "response");
        assert_eq!(format_name(&"a".repeat(80)).len(), 64);
    }
}

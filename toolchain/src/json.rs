//! The JSON call syntax: `{"tool": …, "args": {…}}` or an array of them.

use serde_json::Value;

use crate::ToolSet;
use crate::calls::{Requested, SyntaxError, from_value};
use crate::text_chain::CallSyntax;
use crate::text_chain::sealed::Syntax;

/// Tool calls written as JSON; outputs rendered as compact JSON. See
/// [`JsonToolChain`](crate::JsonToolChain).
#[derive(Clone, Copy, Debug, Default)]
pub struct Json;

impl CallSyntax for Json {}

impl Syntax for Json {
    const NAME: &'static str = "JSON";

    const EXAMPLE: &'static str = r#"{"tool": "tool_name", "args": {...}}"#;

    const GUIDANCE: &'static str = "Call tools using JSON format:\n\
        {\"tool\": \"tool_name\", \"args\": {...}}\n\n\
        For multiple parallel calls, use an array:\n\
        [{\"tool\": \"tool1\", \"args\": {...}}, {\"tool\": \"tool2\", \"args\": {...}}]";

    /// Accepts one call object, an array of them, or several of either one after another.
    fn parse(body: &str, _tools: &ToolSet) -> Result<Vec<Requested>, SyntaxError> {
        let mut calls = Vec::new();
        for value in serde_json::Deserializer::from_str(body).into_iter::<Value>() {
            let value = value.map_err(|error| {
                // serde_json ends its message with " at line L column C"; the error quotes the
                // line itself, so keep only the column.
                let text = error.to_string();
                let position = format!(" at line {} column {}", error.line(), error.column());
                let message = match text.strip_suffix(&position) {
                    Some(message) => format!("{message} at column {}", error.column()),
                    None => text,
                };
                SyntaxError {
                    message,
                    line: Some(error.line()).filter(|&line| line > 0),
                }
            })?;
            let values = match value {
                Value::Array(values) => values,
                value => vec![value],
            };
            for value in values {
                calls.push(from_value(calls.len() + 1, value, Self::EXAMPLE));
            }
        }
        Ok(calls)
    }

    fn render(value: &Value) -> String {
        render_json(value)
    }

    fn describe_parameters(schema: &Value) -> String {
        let pretty = serde_json::to_string_pretty(schema).unwrap_or_else(|_| schema.to_string());
        format!("  Parameters: {}\n", pretty.replace('\n', "\n  "))
    }
}

/// A tool output as the model reads it: text as is (quoting it would escape every newline of,
/// say, a file's contents), anything else as compact JSON.
pub(crate) fn render_json(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

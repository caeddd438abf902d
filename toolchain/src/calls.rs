//! Tool calls written as text: the shape both text syntaxes share once their parser has turned
//! the section into values.

use serde_json::{Map, Value};

use crate::ToolError;
use crate::dyn_tool::kind;

/// A call as the model wrote it, before it runs.
pub struct Requested {
    /// The tool name; empty when the model gave none.
    pub(crate) name: String,
    /// The arguments as a JSON object, or why the call cannot run.
    pub(crate) input: Result<Value, ToolError>,
    /// The arguments as JSON text, for [`messages::ToolCall::arguments`].
    pub(crate) arguments: String,
}

/// The section is not valid JSON / YAML at all.
pub struct SyntaxError {
    pub(crate) message: String,
    /// 1-based line in the parsed text, when the parser says.
    pub(crate) line: Option<usize>,
}

/// Keys accepted for the tool name: the documented `tool`, and `name` as OpenAI-style models
/// write it.
const NAME_KEYS: [&str; 2] = ["tool", "name"];
/// Keys accepted for the arguments: the documented `args`, and `arguments`.
const ARGS_KEYS: [&str; 2] = ["args", "arguments"];

/// Whether `key` holds a call's tool name.
#[cfg(feature = "yaml")]
pub(crate) fn is_name_key(key: &str) -> bool {
    NAME_KEYS.contains(&key)
}

/// Whether `key` holds a call's arguments (parsers treat their values specially).
#[cfg(feature = "yaml")]
pub(crate) fn is_args_key(key: &str) -> bool {
    ARGS_KEYS.contains(&key)
}

/// Interprets one JSON value as a call (`number` is 1-based, for messages).
pub(crate) fn from_value(number: usize, value: Value, example: &str) -> Requested {
    match value {
        Value::Object(mut fields) => {
            let name = take(&mut fields, &NAME_KEYS);
            let args = take(&mut fields, &ARGS_KEYS);
            requested(number, name, args, example)
        }
        other => invalid(
            format!(
                "tool call {number} is {}, not an object; write each call as {example}",
                kind(&other)
            ),
            &other,
        ),
    }
}

/// Builds a call from its name and arguments values, checking their types.
pub(crate) fn requested(
    number: usize,
    name: Option<Value>,
    args: Option<Value>,
    example: &str,
) -> Requested {
    let name = match name {
        Some(Value::String(name)) if !name.trim().is_empty() => name.trim().to_owned(),
        other => {
            let args = args.unwrap_or(Value::Null);
            let problem = match other {
                None => "has no \"tool\" field".to_owned(),
                Some(Value::String(_)) => "has an empty \"tool\" field".to_owned(),
                Some(value) => format!("has {} as its \"tool\" field, not a name", kind(&value)),
            };
            return invalid(
                format!("tool call {number} {problem}; write each call as {example}"),
                &args,
            );
        }
    };
    let input = match args {
        None | Some(Value::Null) => Ok(Value::Object(Map::new())),
        Some(Value::Object(args)) => Ok(Value::Object(args)),
        // Some models put the arguments in a JSON string, as native calls carry them.
        Some(Value::String(text)) => match serde_json::from_str::<Value>(&text) {
            Ok(Value::Object(args)) => Ok(Value::Object(args)),
            _ => Err(not_an_object(&name, "a string")),
        },
        Some(other) => Err(not_an_object(&name, kind(&other))),
    };
    let arguments = match &input {
        Ok(args) => args.to_string(),
        Err(_) => String::new(),
    };
    Requested {
        name,
        input,
        arguments,
    }
}

fn not_an_object(tool: &str, found: &str) -> ToolError {
    ToolError::InvalidInput {
        tool: tool.to_owned(),
        path: Some("args".to_owned()),
        message: format!("expected an object of named arguments, found {found}"),
    }
}

fn invalid(message: String, written: &Value) -> Requested {
    Requested {
        name: String::new(),
        input: Err(ToolError::InvalidCall { message }),
        arguments: if written.is_null() {
            String::new()
        } else {
            written.to_string()
        },
    }
}

/// Removes and returns the value of the first of `keys` present.
fn take(fields: &mut Map<String, Value>, keys: &[&str]) -> Option<Value> {
    keys.iter().find_map(|key| fields.remove(*key))
}

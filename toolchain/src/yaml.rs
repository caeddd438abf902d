//! The YAML call syntax: `tool: …` / `args: …`, or a list of them.
//!
//! YAML types plain scalars by their look: `zip: 01234` is a number and `answer: yes` a
//! boolean, so a tool expecting strings would get wrong inputs. This parser consults the tool's
//! schema: an argument whose schema type is `string` gets the scalar's text exactly as written,
//! using the byte spans serde-saphyr reports.

use std::fmt;

use serde::Deserialize;
use serde::de::value::MapAccessDeserializer;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use serde_saphyr::Spanned;

use crate::ToolSet;
use crate::calls::{Requested, SyntaxError, from_value, is_args_key, is_name_key, requested};
use crate::json::render_json;
use crate::text_chain::CallSyntax;
use crate::text_chain::sealed::Syntax;

/// Tool calls written as YAML; outputs rendered as YAML. See
/// [`YamlToolChain`](crate::YamlToolChain).
#[derive(Clone, Copy, Debug, Default)]
pub struct Yaml;

impl CallSyntax for Yaml {}

impl Syntax for Yaml {
    const NAME: &'static str = "YAML";

    const EXAMPLE: &'static str = "a mapping with `tool: tool_name` and `args:`";

    const GUIDANCE: &'static str = "Call tools using YAML format:\n\
        tool: tool_name\n\
        args:\n  param: value\n\n\
        For multiple parallel calls, use a list:\n\
        - tool: tool1\n  args:\n    param: value\n\
        - tool: tool2\n  args:\n    param: value\n\n\
        For strings with special characters (colons, quotes) or multiple lines, use double quotes:\n\
        - tool: send_email\n  args:\n    subject: \"Unsubscribe Confirmation: Newsletter\"\n    \
        body: \"You have been unsubscribed.\\n\\nYou will no longer receive emails.\"";

    fn parse(body: &str, tools: &ToolSet) -> Result<Vec<Requested>, SyntaxError> {
        if body.is_empty() {
            return Ok(Vec::new());
        }
        let calls: Calls = serde_saphyr::from_str(body).map_err(|error| SyntaxError {
            message: message(&error),
            line: error
                .location()
                .and_then(|location| usize::try_from(location.line()).ok())
                .filter(|&line| line > 0),
        })?;
        Ok(calls
            .0
            .into_iter()
            .enumerate()
            .map(|(i, node)| node.into_requested(i + 1, body, tools))
            .collect())
    }

    fn render(value: &Value) -> String {
        match value {
            Value::String(text) => text.clone(),
            // A number, boolean or null is written the same in YAML as in JSON; skipping the
            // emitter for them keeps scalar outputs (the common case) cheap.
            Value::Number(_) | Value::Bool(_) | Value::Null => value.to_string(),
            other => serde_saphyr::to_string(other)
                .map(|yaml| yaml.trim_end().to_owned())
                .unwrap_or_else(|_| render_json(other)),
        }
    }

    fn describe_parameters(schema: &Value) -> String {
        let yaml = serde_saphyr::to_string(schema).unwrap_or_else(|_| schema.to_string());
        let mut text = String::from("  Parameters:\n");
        for line in yaml.lines() {
            if !line.is_empty() {
                text.push_str("    ");
            }
            text.push_str(line);
            text.push('\n');
        }
        text
    }
}

/// The parser's message without its source snippet (the error quotes the line itself).
fn message(error: &serde_saphyr::Error) -> String {
    let text = error.without_snippet().to_string();
    text.strip_prefix("error: ").unwrap_or(&text).to_owned()
}

/// The document: one call mapping or a sequence of them.
struct Calls(Vec<CallNode>);

/// One call: its entries, with the arguments kept spanned; or what it was instead of a mapping.
enum CallNode {
    Mapping {
        name: Option<Value>,
        args: Option<ArgsNode>,
    },
    Other(Value),
}

/// The `args` value: a mapping whose values carry their source span, or anything else.
enum ArgsNode {
    Mapping(Vec<(String, Spanned<Value>)>),
    Other(Value),
}

impl CallNode {
    fn into_requested(self, number: usize, body: &str, tools: &ToolSet) -> Requested {
        let (name, args) = match self {
            CallNode::Other(value) => return from_value(number, value, Yaml::EXAMPLE),
            CallNode::Mapping { name, args } => (name, args),
        };
        let tool_name = name.as_ref().and_then(Value::as_str).unwrap_or_default();
        let schema = tools.get(tool_name).map(|tool| &tool.spec().parameters);
        let args = args.map(|args| match args {
            ArgsNode::Other(value) => value,
            ArgsNode::Mapping(entries) => Value::Object(
                entries
                    .into_iter()
                    .map(|(key, value)| {
                        let value = typed_as_written(schema, &key, value, body);
                        (key, value)
                    })
                    .collect::<Map<_, _>>(),
            ),
        });
        requested(number, name, args, Yaml::EXAMPLE)
    }
}

/// The argument's value, or its text as written when the schema wants a string and YAML read
/// a number or boolean.
fn typed_as_written(schema: Option<&Value>, key: &str, value: Spanned<Value>, body: &str) -> Value {
    let wants_string = schema
        .and_then(|schema| schema.get("properties")?.get(key)?.get("type"))
        .is_some_and(|kind| match kind {
            Value::String(kind) => kind == "string",
            Value::Array(kinds) => kinds.iter().any(|kind| kind == "string"),
            _ => false,
        });
    if !wants_string || !matches!(value.value, Value::Number(_) | Value::Bool(_)) {
        return value.value;
    }
    let span = value.referenced.span();
    let written = span
        .byte_offset()
        .zip(span.byte_len())
        .and_then(|(offset, len)| {
            let start = usize::try_from(offset).ok()?;
            let end = start.checked_add(usize::try_from(len).ok()?)?;
            body.get(start..end)
        });
    match written {
        Some(text) if !text.is_empty() => Value::String(text.to_owned()),
        _ => value.value,
    }
}

impl<'de> Deserialize<'de> for Calls {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct CallsVisitor;
        impl<'de> Visitor<'de> for CallsVisitor {
            type Value = Calls;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a tool call mapping (`tool:` and `args:`) or a list of them")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Calls, A::Error> {
                let mut calls = Vec::new();
                while let Some(call) = seq.next_element::<CallNode>()? {
                    calls.push(call);
                }
                Ok(Calls(calls))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Calls, A::Error> {
                CallNode::deserialize(MapAccessDeserializer::new(map)).map(|call| Calls(vec![call]))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Calls, E> {
                Ok(Calls(Vec::new()))
            }
        }
        deserializer.deserialize_any(CallsVisitor)
    }
}

/// Implements the scalar `visit_*` methods of a visitor whose value is built from a
/// [`Value`] by `$wrap`.
macro_rules! visit_scalars {
    ($wrap:expr) => {
        fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
            Ok($wrap(Value::Bool(v)))
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
            Ok($wrap(Value::from(v)))
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
            Ok($wrap(Value::from(v)))
        }
        fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
            Ok($wrap(Value::from(v)))
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
            Ok($wrap(Value::from(v)))
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok($wrap(Value::Null))
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok($wrap(Value::Null))
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut items = Vec::new();
            while let Some(item) = seq.next_element::<Value>()? {
                items.push(item);
            }
            Ok($wrap(Value::Array(items)))
        }
    };
}

impl<'de> Deserialize<'de> for CallNode {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct CallVisitor;
        impl<'de> Visitor<'de> for CallVisitor {
            type Value = CallNode;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a tool call mapping")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<CallNode, A::Error> {
                let (mut name, mut args) = (None, None);
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        key if is_name_key(key) && name.is_none() => {
                            name = Some(map.next_value::<Value>()?)
                        }
                        key if is_args_key(key) && args.is_none() => {
                            args = Some(map.next_value::<ArgsNode>()?)
                        }
                        _ => drop(map.next_value::<IgnoredAny>()?),
                    }
                }
                Ok(CallNode::Mapping { name, args })
            }
            visit_scalars!(CallNode::Other);
        }
        deserializer.deserialize_any(CallVisitor)
    }
}

impl<'de> Deserialize<'de> for ArgsNode {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ArgsVisitor;
        impl<'de> Visitor<'de> for ArgsVisitor {
            type Value = ArgsNode;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a mapping of named arguments")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ArgsNode, A::Error> {
                let mut entries = Vec::new();
                while let Some(key) = map.next_key::<String>()? {
                    entries.push((key, map.next_value::<Spanned<Value>>()?));
                }
                Ok(ArgsNode::Mapping(entries))
            }
            visit_scalars!(ArgsNode::Other);
        }
        deserializer.deserialize_any(ArgsVisitor)
    }
}

//! The tool-call text fuzz target (`fuzz/`), shared with its proptest twin
//! (`tests/fuzz_targets.rs`); not a stable API.
//!
//! The bytes become the text of an `action` section (raw, a mutated JSON call template with
//! arbitrary numbers, or pieces of JSON / YAML syntax), which the JSON and YAML call parsers
//! read as [`TextToolChain::execute`](crate::TextToolChain) does, against a tool whose schema
//! has string, integer, number, boolean, list and nested fields (so YAML's typed-as-written
//! strings are exercised). Every call read must keep the shape rules: a name (trimmed,
//! non-empty) or an error, arguments that are the JSON text of an object input.

use std::sync::OnceLock;

use async_trait::async_trait;
use messages::fuzzing::{Input, mutate};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use text_format::strip_code_fence;

use crate::calls::{Requested, SyntaxError};
use crate::text_chain::sealed::Syntax;
use crate::{ExecutionContext, Json, Tool, ToolError, ToolResult, ToolSet};

/// The probe tool's input: one field of each JSON type.
#[derive(Deserialize, JsonSchema)]
#[allow(dead_code, reason = "only the schema is used")]
struct ProbeInput {
    text: String,
    zip: Option<String>,
    count: Option<u32>,
    ratio: Option<f64>,
    flag: Option<bool>,
    items: Option<Vec<String>>,
    nested: Option<Nested>,
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code, reason = "only the schema is used")]
struct Nested {
    when: String,
    depth: i64,
}

struct Probe;

#[async_trait]
impl Tool<ProbeInput, String> for Probe {
    fn name(&self) -> &str {
        "probe"
    }

    fn description(&self) -> &str {
        "Takes one field of each type."
    }

    async fn call(
        &self,
        _: &ExecutionContext,
        _: ProbeInput,
    ) -> Result<ToolResult<String>, ToolError> {
        Ok(ToolResult::text(String::new()))
    }
}

fn tools() -> &'static ToolSet {
    static TOOLS: OnceLock<ToolSet> = OnceLock::new();
    TOOLS.get_or_init(|| ToolSet::new().with(Probe).expect("one tool"))
}

const TEMPLATE: &str = r#"[
  {"tool": "probe", "args": {"text": "a", "zip": "01234", "count": 3, "ratio": 0.5,
    "flag": true, "items": ["x", "y"], "nested": {"when": "2026-01-25", "depth": 2}}},
  {"name": "probe", "arguments": "{\"text\": \"b\", \"count\": 4294967295}"},
  {"tool": "unknown", "args": null}
]"#;

const WORDS: &[&str] = &[
    "tool",
    "name",
    "args",
    "arguments",
    "probe",
    "text",
    "zip",
    "count",
    "ratio",
    "flag",
    "items",
    "nested",
    "when",
    "depth",
];

/// Pieces of JSON and YAML syntax the parsers branch on.
const PIECES: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    ":",
    ",",
    "\"",
    "\n",
    "  ",
    "- ",
    "tool: ",
    "args:",
    "name: ",
    "probe",
    "\"probe\"",
    "\"tool\"",
    "\"args\"",
    "text: ",
    "zip: ",
    "01234",
    "yes",
    "null",
    "~",
    "0x1F",
    "1e400",
    "-.inf",
    ".nan",
    "&a ",
    "*a",
    "!!str ",
    "!!binary ",
    "|",
    ">-",
    "? ",
    "---",
    "...",
    "```json\n",
    "```\n",
    "#",
    "%YAML 1.2\n",
    "'",
    "\t",
    "\u{feff}",
    "é",
];

/// The target: `data` read as an action section by both call syntaxes.
pub fn action(data: &[u8]) {
    let mut input = Input::new(data);
    let content = match input.byte() % 3 {
        0 => String::from_utf8_lossy(input.rest()).into_owned(),
        1 => {
            let template: Value = serde_json::from_str(TEMPLATE).expect("the template is JSON");
            mutate(&template, &mut input, WORDS)
        }
        _ => {
            let mut text = String::new();
            while !input.is_empty() {
                match input.byte() {
                    0..=199 => text.push_str(PIECES[input.below(PIECES.len())]),
                    _ => text.push_str(&input.text(16)),
                }
            }
            text
        }
    };
    let body = strip_code_fence(&content);
    if body.is_empty() {
        return;
    }
    check(Json::parse(body, tools()));
    #[cfg(feature = "yaml")]
    check(crate::Yaml::parse(body, tools()));
}

fn check(parsed: Result<Vec<Requested>, SyntaxError>) {
    match parsed {
        Ok(calls) => {
            for call in calls {
                match &call.input {
                    Ok(input) => {
                        assert!(input.is_object(), "a call's input is an object: {input}");
                        assert_eq!(call.arguments, input.to_string());
                        assert!(!call.name.is_empty(), "a runnable call has a name");
                        assert_eq!(call.name, call.name.trim());
                    }
                    Err(_) => {
                        if !call.arguments.is_empty() {
                            serde_json::from_str::<Value>(&call.arguments)
                                .expect("arguments are JSON text");
                        }
                    }
                }
            }
        }
        Err(error) => {
            if let Some(line) = error.line {
                assert!(line >= 1, "lines are 1-based");
            }
        }
    }
}

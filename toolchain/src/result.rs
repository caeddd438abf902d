use std::time::Duration;

use messages::{ContentPart, ToolCall};
use serde_json::Value;

use crate::ToolError;

/// What a text [`ToolChain`](crate::ToolChain) round produced: the observation for the model,
/// the media to send with it, and the raw results for code.
#[derive(Clone, Debug)]
pub struct ToolChainResult {
    /// The observation, fully formatted by the conversation's `TextFormat` (wrapper included);
    /// the empty string when there were no calls.
    pub text: String,
    /// Media from every successful call, in call order (after the media transform).
    pub media: Vec<ContentPart>,
    /// Per-call calls, outputs and errors.
    pub raw: RawToolChainResult,
}

impl ToolChainResult {
    /// The observation as message parts: the text, then the media. An empty text is left out
    /// (providers reject empty text blocks), so no calls and no media give no parts.
    pub fn as_content_parts(&self) -> Vec<ContentPart> {
        let text = (!self.text.is_empty()).then(|| ContentPart::text(self.text.clone()));
        text.into_iter().chain(self.media.iter().cloned()).collect()
    }

    /// The reason, if a tool asked for the run to end silently.
    pub fn silent_exit(&self) -> Option<&str> {
        self.raw.silent_exit()
    }
}

/// The calls of a round with their outcomes, index-aligned: `results[i]` and `errors[i]`
/// belong to `calls[i]`, and exactly one of `results[i].output` and `errors[i]` is set.
#[derive(Clone, Debug, Default)]
pub struct RawToolChainResult {
    /// The calls, in the order the model wrote them. Text chains mint ids `call_1`, `call_2`…
    /// and put the arguments as JSON text.
    pub calls: Vec<ToolCall>,
    /// Per call: name, output (when it succeeded) and duration.
    pub results: Vec<RawToolCallResult>,
    /// Per call: the error, when it failed.
    pub errors: Vec<Option<ToolError>>,
}

/// One call's raw outcome.
#[derive(Clone, Debug, PartialEq)]
pub struct RawToolCallResult {
    /// The tool called.
    pub name: String,
    /// The tool's output as JSON, `None` when the call failed.
    pub output: Option<Value>,
    /// How long the call took (zero when it never ran).
    pub duration: Duration,
}

impl RawToolChainResult {
    /// Each call with its outcome.
    pub fn iter(&self) -> impl Iterator<Item = (&ToolCall, Result<&Value, &ToolError>)> {
        self.calls.iter().enumerate().map(|(i, call)| {
            let outcome = match (
                self.errors.get(i).and_then(Option::as_ref),
                self.results.get(i),
            ) {
                (Some(error), _) => Err(error),
                (
                    None,
                    Some(RawToolCallResult {
                        output: Some(output),
                        ..
                    }),
                ) => Ok(output),
                // Unreachable by construction; `null` keeps this total.
                (None, _) => Ok(&Value::Null),
            };
            (call, outcome)
        })
    }

    /// How many calls there were.
    pub fn len(&self) -> usize {
        self.calls.len()
    }

    /// Whether there were no calls.
    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    /// How many calls failed.
    pub fn error_count(&self) -> usize {
        self.errors.iter().flatten().count()
    }

    /// The reason of the first silent exit request, if a tool made one.
    pub fn silent_exit(&self) -> Option<&str> {
        self.errors
            .iter()
            .flatten()
            .find_map(ToolError::silent_exit_reason)
    }
}

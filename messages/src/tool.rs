use serde::{Deserialize, Serialize};

use crate::Reasoning;

/// A tool call requested by the model.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ToolCall {
    /// Id that pairs the call with its [`ToolResponse`]. Provider-issued, or minted by the
    /// adapter where the provider issues none (Gemini).
    pub id: String,
    /// Name of the tool.
    pub name: String,
    /// Arguments as JSON text, exactly as the model wrote them (they may be invalid JSON).
    pub arguments: String,
    /// Reasoning attached to the call (Gemini's `thoughtSignature` on a `functionCall` part).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<Reasoning>,
}

impl ToolCall {
    /// A call without reasoning.
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
            reasoning: None,
        }
    }
}

/// The result of a [`ToolCall`], sent back to the model in a [`Role::Tool`](crate::Role::Tool)
/// message.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ToolResponse {
    /// The id of the call this answers.
    pub tool_call_id: String,
    /// Name of the tool that was called.
    pub name: String,
    /// The result as text.
    pub content: String,
}

impl ToolResponse {
    /// A response to the call `tool_call_id`.
    pub fn new(
        tool_call_id: impl Into<String>,
        name: impl Into<String>,
        content: impl Into<String>,
    ) -> Self {
        ToolResponse {
            tool_call_id: tool_call_id.into(),
            name: name.into(),
            content: content.into(),
        }
    }
}

/// What a model is told about a tool it may call: the shape providers' function calling takes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// Name the model calls the tool by.
    pub name: String,
    /// What the tool does and when to use it.
    pub description: String,
    /// JSON Schema of the tool's input (an object schema).
    pub parameters: serde_json::Value,
}

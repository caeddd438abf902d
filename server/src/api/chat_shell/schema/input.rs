//! `input`: text or content parts or a whole message list.

use serde::Deserialize;
use utoipa::ToSchema;

/// The user's input. Exactly one of `text`, `content` and `messages`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct InputConfig {
    /// The user's message as plain text.
    #[serde(default)]
    #[schema(example = "Hello")]
    pub text: Option<String>,
    /// The user's message as text and image parts, in order.
    #[serde(default)]
    pub content: Option<Vec<ContentItem>>,
    /// A whole conversation, oldest first, replacing the stored history: the last message is
    /// the one to answer (a `user` or `tool` message). At most 10,000 messages.
    #[serde(default, deserialize_with = "crate::api::bounded::optional_messages")]
    #[schema(max_items = 10000)]
    pub messages: Option<Vec<InputMessage>>,
}

/// One content part: `{"type": "text", "text": …}` or `{"type": "image", "source": {…}}`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ContentItem {
    /// `text` or `image`.
    #[serde(rename = "type")]
    #[schema(example = "text")]
    pub kind: String,
    /// The text of a `text` part.
    #[serde(default)]
    pub text: Option<String>,
    /// The bytes of an `image` part.
    #[serde(default)]
    pub source: Option<ImageSource>,
}

/// Inline image bytes.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ImageSource {
    /// Base64 bytes.
    pub data: String,
    /// The MIME type, e.g. `image/png`.
    pub media_type: String,
}

/// A message of `input.messages` (OpenAI chat shape).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct InputMessage {
    /// `system`, `user`, `assistant` or `tool` (`human` and `ai` are accepted too).
    #[schema(example = "user")]
    pub role: String,
    /// Text, or content parts.
    #[serde(default)]
    pub content: Option<MessageContent>,
    /// The tool's name, on `tool` messages (else taken from the call it answers).
    #[serde(default)]
    pub name: Option<String>,
    /// The call a `tool` message answers.
    #[serde(default)]
    pub tool_call_id: Option<String>,
    /// Calls an `assistant` message made.
    #[serde(default)]
    pub tool_calls: Option<Vec<InputToolCall>>,
}

/// A message's content: a string or content parts.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum MessageContent {
    /// Plain text.
    Text(String),
    /// Parts, in order.
    Parts(Vec<ContentItem>),
}

/// A tool call of an `assistant` message: `{"id", "type": "function", "function": {"name", "arguments"}}`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct InputToolCall {
    /// The call id.
    pub id: String,
    /// Always `function`.
    #[serde(rename = "type", default = "function")]
    pub kind: String,
    /// What is called.
    pub function: InputFunction,
}

fn function() -> String {
    "function".to_owned()
}

/// The function a tool call of `messages` names.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct InputFunction {
    /// The tool name.
    pub name: String,
    /// The arguments as JSON text.
    #[serde(default)]
    pub arguments: String,
}

//! `POST /v1/chat/completions`: the request, as OpenAI's Chat Completions API defines it (the
//! fields a client needs; any other field is refused by name, never ignored).

use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;

/// A Chat Completions request.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ChatCompletionRequest {
    /// The model: a registry id or alias (`gpt-4o-mini`, `claude-sonnet-4-5`,
    /// `gemini-2.5-flash`, `echo`), its prefix picking the provider.
    pub model: String,
    /// The conversation, oldest first; the last message is the one answered. At most
    /// 10,000 messages.
    #[serde(deserialize_with = "crate::api::bounded::messages")]
    #[schema(max_items = 10000)]
    pub messages: Vec<ChatMessage>,
    /// Stream `chat.completion.chunk` events instead of one body.
    #[serde(default)]
    pub stream: Option<bool>,
    /// Streaming options.
    #[serde(default)]
    pub stream_options: Option<StreamOptions>,
    /// Function tools the model may call; calls come back as `tool_calls` and are not run.
    #[serde(default)]
    pub tools: Option<Vec<ChatTool>>,
    /// `none`, `auto`, `required` or `{"type": "function", "function": {"name": …}}`.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub tool_choice: Option<Value>,
    /// Whether the model may call several tools at once; only `true` (the default) is
    /// honoured by every provider.
    #[serde(default)]
    pub parallel_tool_calls: Option<bool>,
    /// Sampling temperature.
    #[serde(default)]
    pub temperature: Option<f64>,
    /// Output token limit.
    #[serde(default)]
    pub max_tokens: Option<u32>,
    /// Output token limit (the newer name; wins over `max_tokens`).
    #[serde(default)]
    pub max_completion_tokens: Option<u32>,
    /// Stop sequences: one string or a list.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub stop: Option<Value>,
    /// How many answers; only 1.
    #[serde(default)]
    pub n: Option<u32>,
    /// `minimal`, `low`, `medium` or `high`, for reasoning models.
    #[serde(default)]
    pub reasoning_effort: Option<String>,
    /// The answer's shape: `{"type": "text"}`, `{"type": "json_object"}` or
    /// `{"type": "json_schema", "json_schema": {"name", "description", "schema", "strict"}}`,
    /// honoured natively by every provider, streamed or not, with or without tools. The answer
    /// is the JSON text in `content`.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub response_format: Option<Value>,
    /// The end user, for the operator's logs.
    #[serde(default)]
    pub user: Option<String>,
    /// Whether the exchange is kept in the conversation tree (default true); `false` leaves
    /// no trace of it and never answers from the tree.
    #[serde(default)]
    pub store: Option<bool>,
}

/// `stream_options`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StreamOptions {
    /// Send a last chunk with the usage of the whole answer.
    #[serde(default)]
    pub include_usage: Option<bool>,
}

/// One message of `messages`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ChatMessage {
    /// `system`, `developer`, `user`, `assistant` or `tool`.
    pub role: String,
    /// Text, or a list of parts (`text`, `image_url`); may be null on an assistant message
    /// with tool calls.
    #[serde(default)]
    pub content: Option<ChatContent>,
    /// A participant name; accepted and not sent on (no provider but OpenAI reads it).
    #[serde(default)]
    pub name: Option<String>,
    /// On an assistant message: the calls it made.
    #[serde(default)]
    pub tool_calls: Option<Vec<ChatToolCall>>,
    /// On a tool message: the call it answers.
    #[serde(default)]
    pub tool_call_id: Option<String>,
    /// On an assistant message: the reasoning it streamed, sent back.
    #[serde(default)]
    pub reasoning_content: Option<String>,
    /// On an assistant message: its reasoning blocks as a chunk's `reasoning_details` gave
    /// them (text with a signature, or encrypted data), sent back; they replace
    /// `reasoning_content` when both are present.
    #[serde(default)]
    pub reasoning_details: Option<Vec<InputReasoningDetail>>,
    /// On an assistant message: a refusal; accepted as text.
    #[serde(default)]
    pub refusal: Option<String>,
}

/// `content`: text, or a list of parts.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum ChatContent {
    /// Plain text.
    Text(String),
    /// Typed parts.
    Parts(Vec<ChatContentPart>),
}

/// One content part.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum ChatContentPart {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image by URL or `data:` URL.
    ImageUrl {
        /// The image.
        image_url: ImageUrl,
    },
}

/// `image_url` of an image part.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ImageUrl {
    /// An `https:` or `data:` URL.
    pub url: String,
    /// `auto`, `low` or `high`; accepted and not sent on.
    #[serde(default)]
    pub detail: Option<String>,
}

/// One tool call of an assistant message.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ChatToolCall {
    /// The call id.
    pub id: String,
    /// Always `function`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The function called.
    pub function: FunctionCall,
    /// What the provider needs back with the call, as the answer gave it (Gemini's thought
    /// signature).
    #[serde(default)]
    pub extra_content: Option<super::extra::ExtraContent>,
}

/// The function of a tool call.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FunctionCall {
    /// The tool's name.
    pub name: String,
    /// The arguments as JSON text.
    #[serde(default)]
    pub arguments: String,
}

/// One entry of `tools`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ChatTool {
    /// Always `function`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The function.
    pub function: FunctionDefinition,
}

/// A function the model may call.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FunctionDefinition {
    /// Its name.
    pub name: String,
    /// What it does.
    #[serde(default)]
    pub description: Option<String>,
    /// JSON Schema of its arguments.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub parameters: Option<Value>,
    /// Strict schema adherence: accepted, not enforced (the arguments are passed on as the
    /// model wrote them).
    #[serde(default)]
    pub strict: Option<bool>,
}

/// A reasoning block sent back on an assistant message.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(tag = "type")]
pub enum InputReasoningDetail {
    /// Reasoning text with its signature.
    #[serde(rename = "reasoning.text")]
    Text {
        /// The text.
        #[serde(default)]
        text: String,
        /// The provider's signature.
        #[serde(default)]
        signature: Option<String>,
        /// The provider's id of the block.
        #[serde(default)]
        id: Option<String>,
    },
    /// Encrypted reasoning.
    #[serde(rename = "reasoning.encrypted")]
    Encrypted {
        /// The opaque data.
        data: String,
        /// The provider's id of the block.
        #[serde(default)]
        id: Option<String>,
    },
}

//! `POST /v1/chat/completions`: the request, as OpenAI's Chat Completions API defines it. Every
//! field of the API reference is accepted; any other is refused by name, all of them in one
//! answer, never ignored. `providers/COMPAT.md` says what each provider does with each.

use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;

/// A Chat Completions request.
// No `deny_unknown_fields`: the parser names every unknown top-level field at once.
#[derive(Debug, Deserialize, ToSchema)]
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
    /// Whether the model may call several tools at once (default true); `false` is sent to
    /// OpenAI and OpenRouter, becomes Anthropic's `disable_parallel_tool_use`, and Gemini has
    /// no equivalent (the operator's policy applies).
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
    /// How many answers (1 to 128). Skein answers one: more are refused, or dropped under
    /// `drop_unsupported_params`.
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
    /// The end user (OpenAI `user`, Anthropic `metadata.user_id`).
    #[serde(default)]
    pub user: Option<String>,
    /// Whether the exchange is kept in the conversation tree (default true); `false` leaves
    /// no trace of it and never answers from the tree.
    #[serde(default)]
    pub store: Option<bool>,
    /// Nucleus sampling, 0 to 1.
    #[serde(default)]
    pub top_p: Option<f64>,
    /// A seed for repeatable sampling.
    #[serde(default)]
    pub seed: Option<i64>,
    /// -2.0 to 2.0: penalises tokens that appeared at all.
    #[serde(default)]
    pub presence_penalty: Option<f64>,
    /// -2.0 to 2.0: penalises tokens by how often they appeared.
    #[serde(default)]
    pub frequency_penalty: Option<f64>,
    /// Token id (as a string) → bias from -100 to 100.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub logit_bias: Option<std::collections::BTreeMap<String, i32>>,
    /// Ask for the log probabilities of the output tokens.
    #[serde(default)]
    pub logprobs: Option<bool>,
    /// 0 to 20: the most likely tokens to report at each position (with `logprobs`).
    #[serde(default)]
    pub top_logprobs: Option<u32>,
    /// Up to 16 string pairs describing the request.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<std::collections::BTreeMap<String, String>>,
    /// `auto`, `default`, `flex`, `scale`, `priority` or `fast`.
    #[serde(default)]
    pub service_tier: Option<String>,
    /// A routing key for OpenAI's prompt caching.
    #[serde(default)]
    pub prompt_cache_key: Option<String>,
    /// `in_memory` or `24h`: how long OpenAI keeps a cached prompt; informs only.
    #[serde(default)]
    pub prompt_cache_retention: Option<String>,
    /// Prompt-cache options; inform only.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub prompt_cache_options: Option<Value>,
    /// A stable, hashed id of the end user for the provider's safety checks.
    #[serde(default)]
    pub safety_identifier: Option<String>,
    /// `low`, `medium` or `high`: how terse the answer is.
    #[serde(default)]
    pub verbosity: Option<String>,
    /// Output kinds: only `["text"]` is served.
    #[serde(default)]
    pub modalities: Option<Vec<String>>,
    /// Audio output options; Skein answers text only (the operator's policy applies).
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub audio: Option<Value>,
    /// Predicted output; no provider Skein speaks is sent it (the operator's policy applies).
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub prediction: Option<Value>,
    /// OpenAI's built-in web search; not served (the operator's policy applies).
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub web_search_options: Option<Value>,
    /// OpenAI's moderation policy; not served (the operator's policy applies).
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub moderation: Option<Value>,
    /// Deprecated form of `tools`: function definitions, read as function tools.
    #[serde(default)]
    pub functions: Option<Vec<FunctionDefinition>>,
    /// Deprecated form of `tool_choice`: `none`, `auto` or `{"name": …}`.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub function_call: Option<Value>,
}

/// `stream_options`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StreamOptions {
    /// Send a last chunk with the usage of the whole answer.
    #[serde(default)]
    pub include_usage: Option<bool>,
    /// Pad stream events against side channels: accepted; Skein's events are not padded.
    #[serde(default)]
    pub include_obfuscation: Option<bool>,
}

/// One message of `messages`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ChatMessage {
    /// `system`, `developer`, `user`, `assistant` or `tool`.
    pub role: String,
    /// Text, or a list of parts (`text`; on user messages also `image_url`, `file` and
    /// `input_audio`); may be null on an assistant message with tool calls.
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
    /// A file, inline.
    File {
        /// The file.
        file: FileInput,
    },
    /// Audio, inline.
    InputAudio {
        /// The audio.
        input_audio: InputAudio,
    },
}

/// `file` of a file part.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FileInput {
    /// The file as a `data:<type>;base64,…` URL (or bare base64 when `filename` tells the
    /// type).
    #[serde(default)]
    pub file_data: Option<String>,
    /// An uploaded file's id: refused, as this server keeps no files.
    #[serde(default)]
    pub file_id: Option<String>,
    /// The file's name.
    #[serde(default)]
    pub filename: Option<String>,
}

/// `input_audio` of an audio part.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct InputAudio {
    /// The audio, base64.
    pub data: String,
    /// `wav` or `mp3`.
    pub format: String,
}

/// `image_url` of an image part.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ImageUrl {
    /// An `https:` or `data:` URL.
    pub url: String,
    /// `auto`, `low` or `high`: sent on to OpenAI; other providers choose the resolution
    /// themselves.
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

//! The `response` object and its output items, as `GET /v1/responses/{id}`, a non-streamed
//! answer and the lifecycle events carry them.

use std::collections::BTreeMap;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use messages::Reasoning;
use providers::Usage;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::logprobs::OutputLogprob;
use super::settings::{DEFAULT_TEMPERATURE, ResponseSettings};

/// A response.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct ResponseObject {
    /// `resp_…`: what `previous_response_id` and `GET /v1/responses/{id}` take.
    pub id: String,
    /// Always `response`.
    pub object: &'static str,
    /// When the response was created, in Unix seconds.
    pub created_at: u64,
    /// Where it stands.
    pub status: ResponseState,
    /// The model asked for.
    pub model: String,
    /// What the model produced: reasoning, a message, function calls, in order.
    pub output: Vec<OutputItem>,
    /// The system prompt of this response.
    pub instructions: Option<String>,
    /// The response this one continued.
    pub previous_response_id: Option<String>,
    /// The function tools declared.
    #[schema(value_type = Vec<Object>)]
    pub tools: Vec<Value>,
    /// The tool choice asked for.
    #[schema(value_type = Object)]
    pub tool_choice: Value,
    /// Whether the model could call several tools at once.
    pub parallel_tool_calls: bool,
    /// Sampling temperature asked for (OpenAI's default, 1, when none was).
    pub temperature: Option<f64>,
    /// Output token limit asked for.
    pub max_output_tokens: Option<u32>,
    /// Whether the response is kept.
    pub store: bool,
    /// The rest of what the request asked for, as OpenAI's object repeats it.
    #[serde(flatten)]
    pub settings: ResponseSettings,
    /// Token counts, once the response ended.
    pub usage: Option<ResponseUsage>,
    /// Why it failed.
    pub error: Option<ResponseFailure>,
    /// Why it is incomplete.
    pub incomplete_details: Option<IncompleteDetails>,
    /// The key–value pairs the request was tagged with (`metadata`), as sent: echoed in every
    /// event that carries the response and, for a stored response, by
    /// `GET /v1/responses/{id}`. Empty when the request had none; a response that continues
    /// another (`previous_response_id`) does not inherit them.
    pub metadata: BTreeMap<String, String>,
}

impl ResponseObject {
    /// The response `id` of `model` as it begins, at `created_at`: in progress, no output, no
    /// tools, a kept response, OpenAI's default settings; the request's own settings are set
    /// on it afterwards.
    pub fn begun(id: String, created_at: u64, model: String) -> Self {
        ResponseObject {
            id,
            object: "response",
            created_at,
            status: ResponseState::InProgress,
            model,
            output: Vec::new(),
            instructions: None,
            previous_response_id: None,
            tools: Vec::new(),
            tool_choice: Value::String("auto".to_owned()),
            parallel_tool_calls: true,
            temperature: Some(DEFAULT_TEMPERATURE),
            max_output_tokens: None,
            store: true,
            settings: ResponseSettings::default(),
            usage: None,
            error: None,
            incomplete_details: None,
            metadata: BTreeMap::new(),
        }
    }
}

/// Where a response stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ResponseState {
    /// A background response accepted and not started yet.
    Queued,
    /// Still being produced.
    InProgress,
    /// Done.
    Completed,
    /// Stopped early by the output limit or a safety filter.
    Incomplete,
    /// The provider or the server failed.
    Failed,
    /// Cancelled by `POST /v1/responses/{id}/cancel` or by the client leaving.
    Cancelled,
}

/// One output item.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum OutputItem {
    /// Reasoning, with the opaque data a provider needs back.
    Reasoning {
        /// The item id.
        id: String,
        /// The reasoning text, whichever provider reasoned.
        summary: Vec<SummaryText>,
        /// Opaque: send it back unchanged with the item.
        #[serde(skip_serializing_if = "Option::is_none")]
        encrypted_content: Option<String>,
        /// `in_progress` or `completed`.
        status: ItemStatus,
    },
    /// The assistant's message.
    Message {
        /// The item id.
        id: String,
        /// `in_progress` or `completed`.
        status: ItemStatus,
        /// Always `assistant`.
        role: &'static str,
        /// Its text.
        content: Vec<OutputText>,
    },
    /// A call of a client's function tool: run it and send a `function_call_output`.
    FunctionCall {
        /// The item id.
        id: String,
        /// The id that pairs the call with its output. In a response with `store: false`, a
        /// Gemini call's id carries its thought signature (`<id>~s1.<base64url>`): send it
        /// back unchanged, in the `function_call` and its `function_call_output`.
        call_id: String,
        /// The tool's name.
        name: String,
        /// The arguments as JSON text.
        arguments: String,
        /// `in_progress` or `completed`.
        status: ItemStatus,
    },
    /// The tools an MCP server offers, listed once at the start of a response.
    McpListTools {
        /// The item id.
        id: String,
        /// The server (`server_label` of the request's `mcp` tool).
        server_label: String,
        /// Its tools the model may call.
        tools: Vec<McpListedTool>,
    },
    /// A call of an MCP server's tool, run by this server.
    McpCall {
        /// The item id.
        id: String,
        /// The server.
        server_label: String,
        /// The tool's name on the server.
        name: String,
        /// The arguments as JSON text.
        arguments: String,
        /// What the tool returned, once it ran.
        #[serde(skip_serializing_if = "Option::is_none")]
        output: Option<String>,
        /// Why it gave no output: the tool failed, or the call was declined.
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<McpCallError>,
        /// The approval request the call answered, when it needed one.
        #[serde(skip_serializing_if = "Option::is_none")]
        approval_request_id: Option<String>,
        /// `in_progress`, `completed`, `failed` or `incomplete`.
        status: ItemStatus,
    },
    /// A call waiting for the client's approval: answer it with an `mcp_approval_response`
    /// input item (and `previous_response_id`) to run it or decline it.
    McpApprovalRequest {
        /// The item id: the `approval_request_id` to answer.
        id: String,
        /// The server.
        server_label: String,
        /// The tool's name on the server.
        name: String,
        /// The arguments as JSON text.
        arguments: String,
    },
}

/// One tool of an `mcp_list_tools` item.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct McpListedTool {
    /// Its name on the server.
    pub name: String,
    /// What it does.
    pub description: String,
    /// The JSON Schema of its input.
    #[schema(value_type = Object)]
    pub input_schema: serde_json::Value,
}

/// Why an MCP call has no output: `{"type": "mcp_tool_execution_error", "content": […]}`.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct McpCallError {
    /// Always `mcp_tool_execution_error`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// What was said, as MCP text content.
    #[schema(value_type = Object)]
    pub content: serde_json::Value,
}

impl McpCallError {
    /// An error saying `text`.
    pub fn saying(text: &str) -> Self {
        McpCallError {
            kind: "mcp_tool_execution_error",
            content: serde_json::json!([{"type": "text", "text": text}]),
        }
    }
}

impl OutputItem {
    /// The item id.
    pub fn id(&self) -> &str {
        match self {
            OutputItem::Reasoning { id, .. }
            | OutputItem::Message { id, .. }
            | OutputItem::FunctionCall { id, .. }
            | OutputItem::McpListTools { id, .. }
            | OutputItem::McpCall { id, .. }
            | OutputItem::McpApprovalRequest { id, .. } => id,
        }
    }
}

/// Status of an output item.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ItemStatus {
    /// Still streaming.
    InProgress,
    /// Whole.
    Completed,
    /// Cut short.
    Incomplete,
    /// An MCP call whose tool failed, or that was declined.
    Failed,
}

/// A text part of a message.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct OutputText {
    /// Always `output_text`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The text.
    pub text: String,
    /// Always empty.
    #[schema(value_type = Vec<Object>)]
    pub annotations: Vec<Value>,
    /// The log probabilities of the text's tokens, with `include:
    /// ["message.output_text.logprobs"]` where the provider has them; empty otherwise.
    pub logprobs: Vec<OutputLogprob>,
}

impl OutputText {
    /// A text part holding `text`.
    pub fn new(text: String) -> Self {
        OutputText {
            kind: "output_text",
            text,
            annotations: Vec::new(),
            logprobs: Vec::new(),
        }
    }
}

/// A summary text part of a reasoning item.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct SummaryText {
    /// Always `summary_text`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The text.
    pub text: String,
}

impl SummaryText {
    /// A summary part holding `text`.
    pub fn new(text: String) -> Self {
        SummaryText {
            kind: "summary_text",
            text,
        }
    }
}

/// Token counts with the Responses API's names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, ToSchema)]
pub struct ResponseUsage {
    /// All prompt tokens.
    pub input_tokens: u64,
    /// Of the prompt: read from the provider's cache.
    pub input_tokens_details: InputTokensDetails,
    /// All generated tokens, reasoning included.
    pub output_tokens: u64,
    /// Of the output: spent on reasoning.
    pub output_tokens_details: OutputTokensDetails,
    /// Both.
    pub total_tokens: u64,
}

/// `input_tokens_details`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, ToSchema)]
pub struct InputTokensDetails {
    /// Prompt tokens read from the provider's cache.
    pub cached_tokens: u64,
}

/// `output_tokens_details`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, ToSchema)]
pub struct OutputTokensDetails {
    /// Generated tokens spent on reasoning.
    pub reasoning_tokens: u64,
}

impl From<&Usage> for ResponseUsage {
    fn from(usage: &Usage) -> Self {
        ResponseUsage {
            input_tokens: usage.input_tokens,
            input_tokens_details: InputTokensDetails {
                cached_tokens: usage.cached_input_tokens,
            },
            output_tokens: usage.output_tokens,
            output_tokens_details: OutputTokensDetails {
                reasoning_tokens: usage.reasoning_tokens,
            },
            total_tokens: usage.total_tokens(),
        }
    }
}

/// Why a response failed.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct ResponseFailure {
    /// A stable code: `server_error`, `rate_limit_exceeded`, `cancelled`, …
    pub code: String,
    /// What went wrong.
    pub message: String,
}

/// Why a response is incomplete.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct IncompleteDetails {
    /// `max_output_tokens` or `content_filter`.
    pub reason: &'static str,
}

/// The opaque data of a reasoning block that a provider needs back, in one string a client
/// returns unchanged as `encrypted_content`.
///
/// Anthropic refuses thinking without its signature and OpenAI needs its own item id with
/// its encrypted reasoning, but a reasoning item has one opaque field: an OpenAI block with
/// only encrypted data travels as it is, anything else as a tagged envelope.
#[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
struct Envelope {
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    signature: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    encrypted: Option<String>,
}

const ENVELOPE: &str = "skein1.";

/// `encrypted_content` of `block`; `None` when it holds nothing opaque.
pub fn encrypted_content(block: &Reasoning) -> Option<String> {
    match (&block.id, &block.signature, &block.encrypted) {
        (None, None, None) => None,
        (None, None, Some(encrypted)) => Some(encrypted.clone()),
        (id, signature, encrypted) => {
            let envelope = Envelope {
                id: id.clone(),
                signature: signature.clone(),
                encrypted: encrypted.clone(),
            };
            let json = serde_json::to_vec(&envelope).unwrap_or_default();
            Some(format!("{ENVELOPE}{}", URL_SAFE_NO_PAD.encode(json)))
        }
    }
}

/// The block a client's reasoning item stands for: `text` with what `encrypted_content`
/// carried (an envelope this server wrote, or a provider's encrypted data).
pub fn reasoning_block(text: String, encrypted_content: Option<String>) -> Reasoning {
    let envelope = encrypted_content.as_deref().and_then(|content| {
        let data = URL_SAFE_NO_PAD
            .decode(content.strip_prefix(ENVELOPE)?)
            .ok()?;
        serde_json::from_slice::<Envelope>(&data).ok()
    });
    match (envelope, encrypted_content) {
        (Some(envelope), _) => Reasoning {
            id: envelope.id,
            text,
            signature: envelope.signature,
            encrypted: envelope.encrypted,
        },
        (None, encrypted) => Reasoning {
            text,
            encrypted,
            ..Reasoning::default()
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opaque_reasoning_data_survives_the_round_trip() {
        let blocks = [
            Reasoning {
                text: "thinking".into(),
                signature: Some("sig==".into()),
                ..Reasoning::default()
            },
            Reasoning {
                id: Some("rs_123".into()),
                encrypted: Some("gAAAA".into()),
                ..Reasoning::default()
            },
            Reasoning {
                encrypted: Some("gAAAA".into()),
                ..Reasoning::default()
            },
        ];
        for block in blocks {
            let content = encrypted_content(&block);
            assert!(content.is_some(), "{block:?}");
            assert_eq!(reasoning_block(block.text.clone(), content), block);
        }
        // Bare encrypted data is passed as it is.
        let bare = Reasoning {
            encrypted: Some("gAAAA".into()),
            ..Reasoning::default()
        };
        assert_eq!(encrypted_content(&bare).as_deref(), Some("gAAAA"));
        assert_eq!(encrypted_content(&Reasoning::default()), None);
    }
}

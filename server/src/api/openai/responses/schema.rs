//! `POST /v1/responses`: the request, as OpenAI's Responses API defines it. Every field of the
//! API reference is accepted; any other is refused by name, all of them in one answer, never
//! ignored. `providers/COMPAT.md` says what each provider does with each.

use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::mcp::ResponseToolEntry;
use crate::api::body::UnknownFields;
use crate::api::openai::options::SharedFields;

/// A Responses request.
// No `deny_unknown_fields`: the parser names every unknown top-level field at once.
#[derive(Debug, Deserialize, ToSchema)]
pub struct CreateResponseRequest {
    /// The fields Responses shares with Chat Completions (sampling, the end user, metadata,
    /// caching hints).
    #[serde(flatten, deserialize_with = "crate::api::body::flattened")]
    pub shared: SharedFields,
    /// Fields neither this struct nor the shared ones define, named in the error.
    #[serde(flatten)]
    #[schema(ignore)]
    pub(crate) unknown: UnknownFields,
    /// The model: a registry id or alias (`gpt-4o-mini`, `claude-sonnet-4-5`,
    /// `gemini-2.5-flash`, `echo`) or an agent the operator configured, its prefix picking the
    /// provider.
    pub model: String,
    /// Text (one user message), or a list of items: messages (`role` and `content`, `type`
    /// optional), `function_call`, `function_call_output` and `reasoning` items, and
    /// `item_reference`s to output items of the caller's stored responses; at most 10,000 of
    /// them.
    #[serde(default, deserialize_with = "crate::api::bounded::optional_items")]
    #[schema(value_type = Option<Object>)]
    pub input: Option<Value>,
    /// The system prompt of this response. A continued response does not inherit the
    /// instructions of the one it continues.
    #[serde(default)]
    pub instructions: Option<String>,
    /// The response this one continues: its whole conversation comes before `input`, read
    /// from the conversation tree (also after a restart).
    #[serde(default)]
    pub previous_response_id: Option<String>,
    /// Tools the model may call: functions, whose calls come back as `function_call` items for
    /// the client to run, and MCP servers the operator configured (`{"type": "mcp",
    /// "server_label": …}`).
    #[serde(default, deserialize_with = "super::mcp::tool_entries")]
    pub tools: Option<Vec<ResponseToolEntry>>,
    /// `none`, `auto`, `required` or `{"type": "function", "name": …}`.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub tool_choice: Option<Value>,
    /// Whether the response is kept (default true): `false` leaves no trace of it, so it can
    /// neither be read back nor continued.
    #[serde(default)]
    pub store: Option<bool>,
    /// Stream the response as server-sent events.
    #[serde(default)]
    pub stream: Option<bool>,
    /// Output token limit.
    #[serde(default)]
    pub max_output_tokens: Option<u32>,
    /// Reasoning options.
    #[serde(default)]
    pub reasoning: Option<ReasoningOptions>,
    /// Text output options: `format`, the answer's shape.
    #[serde(default)]
    pub text: Option<TextOptions>,
    /// Extra output to include: `message.output_text.logprobs` asks for log probabilities;
    /// the others concern OpenAI's built-in tools and are accepted without effect
    /// (`reasoning.encrypted_content` is always returned where a provider gives it). A value
    /// OpenAI does not document is refused, as OpenAI refuses it.
    #[serde(default)]
    pub include: Option<Vec<Includable>>,
    /// `disabled` (the default) or `auto`, which would drop items from the middle of a
    /// conversation too long for the model: Skein never does (the operator's policy
    /// applies to `auto`).
    #[serde(default)]
    pub truncation: Option<String>,
    /// Run the response in the background: answered at once (`queued`, or a stream of its
    /// stored events), it goes on with no client attached, read with `GET
    /// /v1/responses/{id}` (`?stream=true&starting_after=N` streams it again) and stopped with
    /// its cancel, on any replica; needs `store` (refused with `store: false`).
    #[serde(default)]
    pub background: Option<bool>,
    /// Most calls to OpenAI's built-in tools; the gateway runs none, so it has no effect.
    #[serde(default)]
    pub max_tool_calls: Option<u32>,
    /// Streaming options.
    #[serde(default)]
    pub stream_options: Option<ResponseStreamOptions>,
    /// A prompt template stored at OpenAI; not served (the operator's policy applies).
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub prompt: Option<Value>,
    /// A conversation stored at OpenAI; not served, use `previous_response_id` (the
    /// operator's policy applies).
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub conversation: Option<Value>,
    /// OpenAI's server-side compaction; not served (the operator's policy applies).
    #[serde(default)]
    #[schema(value_type = Option<Vec<Object>>)]
    pub context_management: Option<Vec<Value>>,
}

impl crate::api::body::KeepsUnknown for CreateResponseRequest {
    fn unknown_fields(&self) -> &[String] {
        self.unknown.names()
    }
}

/// `stream_options`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ResponseStreamOptions {
    /// Pad stream events against side channels: accepted; Skein's events are not padded.
    #[serde(default)]
    pub include_obfuscation: Option<bool>,
}

/// `reasoning`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReasoningOptions {
    /// `minimal`, `low`, `medium` or `high`.
    #[serde(default)]
    pub effort: Option<String>,
    /// `auto`, `concise` or `detailed`: accepted; every provider's reasoning text is returned
    /// as its summary.
    #[serde(default)]
    pub summary: Option<String>,
    /// The former name of `summary`: accepted likewise.
    #[serde(default)]
    pub generate_summary: Option<String>,
}

/// `text`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TextOptions {
    /// `{"type": "text"}`, `{"type": "json_object"}` or `{"type": "json_schema", "name",
    /// "description", "schema", "strict"}`, honoured natively by every provider, streamed or
    /// not, with or without tools. The answer is a normal `output_text` message holding the
    /// JSON text.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub format: Option<Value>,
    /// `low`, `medium` or `high`: sent where the provider has it (OpenAI), else handled by
    /// the `drop_unsupported_params` policy.
    #[serde(default)]
    pub verbosity: Option<String>,
}

/// One entry of `tools`: a function.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ResponseTool {
    /// Always `function`.
    #[serde(rename = "type")]
    pub kind: String,
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

/// A value of `include`: what OpenAI's Responses API can add to an answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, ToSchema)]
pub enum Includable {
    /// The log probabilities of the answer's text.
    #[serde(rename = "message.output_text.logprobs")]
    OutputTextLogprobs,
    /// Reasoning as `encrypted_content`, for a stateless next turn.
    #[serde(rename = "reasoning.encrypted_content")]
    ReasoningEncryptedContent,
    /// The sources of OpenAI's web search tool.
    #[serde(rename = "web_search_call.action.sources")]
    WebSearchSources,
    /// The results of OpenAI's web search tool.
    #[serde(rename = "web_search_call.results")]
    WebSearchResults,
    /// The outputs of OpenAI's code interpreter tool.
    #[serde(rename = "code_interpreter_call.outputs")]
    CodeInterpreterOutputs,
    /// The image URLs of OpenAI's computer tool.
    #[serde(rename = "computer_call_output.output.image_url")]
    ComputerCallImageUrl,
    /// The results of OpenAI's file search tool.
    #[serde(rename = "file_search_call.results")]
    FileSearchResults,
    /// The image URLs of the input.
    #[serde(rename = "message.input_image.image_url")]
    InputImageUrl,
}

/// One item of `input` (a message item may leave `type` out).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum InputItem {
    /// A message.
    Message {
        /// `user`, `assistant`, `system` or `developer`.
        role: String,
        /// Text, or a list of parts.
        content: ItemContent,
        /// The item's id, when it came from an earlier response.
        #[serde(default)]
        id: Option<String>,
        /// The item's status, when it came from an earlier response.
        #[serde(default)]
        status: Option<String>,
    },
    /// A tool call the model made.
    FunctionCall {
        /// The id that pairs the call with its output, exactly as the response gave it (with
        /// `store: false` it may carry the call's thought signature after a `~`).
        call_id: String,
        /// The tool's name.
        name: String,
        /// The arguments as JSON text.
        arguments: String,
        /// The item's id.
        #[serde(default)]
        id: Option<String>,
        /// The item's status.
        #[serde(default)]
        status: Option<String>,
    },
    /// The result of a tool call, sent by the client that ran it.
    FunctionCallOutput {
        /// The call it answers.
        call_id: String,
        /// The result: text, or a list of parts.
        output: ItemContent,
        /// The item's id.
        #[serde(default)]
        id: Option<String>,
        /// The item's status.
        #[serde(default)]
        status: Option<String>,
    },
    /// The client's answer to an `mcp_approval_request` of the response it continues.
    McpApprovalResponse {
        /// The `id` of the `mcp_approval_request` it answers.
        approval_request_id: String,
        /// Whether the call may run.
        approve: bool,
        /// Why, told to the model when the call is rejected.
        #[serde(default)]
        reason: Option<String>,
        /// The item's id.
        #[serde(default)]
        id: Option<String>,
    },
    /// A reasoning item of an earlier response, sent back.
    Reasoning {
        /// The item's id.
        #[serde(default)]
        id: Option<String>,
        /// The reasoning summary.
        #[serde(default)]
        summary: Vec<InputSummaryText>,
        /// The reasoning text.
        #[serde(default)]
        content: Option<Vec<InputSummaryText>>,
        /// The opaque data the provider needs back.
        #[serde(default)]
        encrypted_content: Option<String>,
        /// The item's status.
        #[serde(default)]
        status: Option<String>,
    },
}

/// Content of a message or a tool result: text, or a list of parts.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum ItemContent {
    /// Plain text.
    Text(String),
    /// Typed parts.
    Parts(Vec<ResponseContentPart>),
}

/// One content part.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ResponseContentPart {
    /// Text from the user.
    InputText {
        /// The text.
        text: String,
    },
    /// Text the model wrote (an earlier response's message, sent back).
    OutputText {
        /// The text.
        text: String,
    },
    /// A refusal the model wrote.
    Refusal {
        /// The refusal.
        refusal: String,
    },
    /// An image by URL or `data:` URL.
    InputImage {
        /// An `https:` or `data:` URL.
        #[serde(default)]
        image_url: Option<String>,
        /// An uploaded file's id: refused, as this server keeps no files.
        #[serde(default)]
        file_id: Option<String>,
        /// `auto`, `low` or `high`: sent on to OpenAI; other providers choose the resolution
        /// themselves.
        #[serde(default)]
        detail: Option<String>,
    },
    /// A file: inline, or by URL (fetched by this server under its media fetching rules).
    InputFile {
        /// The file as a `data:<type>;base64,…` URL (or bare base64 when `filename` tells
        /// the type).
        #[serde(default)]
        file_data: Option<String>,
        /// An `https:` URL of the file.
        #[serde(default)]
        file_url: Option<String>,
        /// An uploaded file's id: refused, as this server keeps no files.
        #[serde(default)]
        file_id: Option<String>,
        /// The file's name.
        #[serde(default)]
        filename: Option<String>,
    },
}

/// A summary or reasoning text part.
#[derive(Debug, Deserialize, ToSchema)]
pub struct InputSummaryText {
    /// `summary_text` or `reasoning_text`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The text.
    pub text: String,
}

//! `POST /v1/responses`: the request, as OpenAI's Responses API defines it (the fields a client
//! needs; any other field is refused by name, never ignored).

use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;

/// A Responses request.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateResponseRequest {
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
    /// Function tools the model may call; calls come back as `function_call` items and are
    /// not run.
    #[serde(default)]
    pub tools: Option<Vec<ResponseTool>>,
    /// `none`, `auto`, `required` or `{"type": "function", "name": …}`.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub tool_choice: Option<Value>,
    /// Whether the model may call several tools at once; only `true` (the default) is
    /// honoured by every provider.
    #[serde(default)]
    pub parallel_tool_calls: Option<bool>,
    /// Whether the response is kept (default true): `false` leaves no trace of it, so it can
    /// neither be read back nor continued.
    #[serde(default)]
    pub store: Option<bool>,
    /// Stream the response as server-sent events.
    #[serde(default)]
    pub stream: Option<bool>,
    /// Sampling temperature.
    #[serde(default)]
    pub temperature: Option<f64>,
    /// Output token limit.
    #[serde(default)]
    pub max_output_tokens: Option<u32>,
    /// Reasoning options.
    #[serde(default)]
    pub reasoning: Option<ReasoningOptions>,
    /// Text output options: `format`, the answer's shape.
    #[serde(default)]
    pub text: Option<TextOptions>,
    /// The end user, for the operator's logs.
    #[serde(default)]
    pub user: Option<String>,
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
    /// `low`, `medium` or `high`: accepted; the model's own verbosity applies.
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
        /// The id that pairs the call with its output.
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
        /// `auto`, `low` or `high`; accepted and not sent on.
        #[serde(default)]
        detail: Option<String>,
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

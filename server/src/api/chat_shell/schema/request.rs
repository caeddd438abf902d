//! `ResponseRequest`: the body of `POST /v1/response`, its fields and their defaults.
//!
//! Unknown keys are refused (every object is `deny_unknown_fields`), and so is every field
//! whose value asks for something Skein does not do (MCP servers, skills, knowledge bases,
//! client-side tools…): [`crate::plan`] names each one in a 422 answer. Nothing is silently
//! ignored.

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::InputConfig;

/// The request of `POST /v1/response`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ResponseRequest {
    /// Which model to call and how to reach it.
    pub model_config: RequestModelConfig,
    /// Sampling temperature, 0 to 2. Absent: 0.7, or the provider's own default when
    /// `features.deep_thinking` is on (thinking models require it).
    #[serde(default)]
    #[schema(minimum = 0.0, maximum = 2.0, example = 0.7)]
    pub temperature: Option<f64>,
    /// Output token limit when `model_config.max_output_tokens` is not set (default 32768,
    /// lowered to the model's own maximum when the registry knows it).
    #[serde(default)]
    #[schema(minimum = 1, maximum = 1048576, example = 32768)]
    pub max_tokens: Option<u32>,
    /// The user's input: text, content parts, or a whole message list.
    pub input: InputConfig,
    /// The conversation to continue (same as `metadata.conversation_id`): one the server
    /// named in an earlier `response.done`, or an id of the client's choosing, which with
    /// tokens is private to the token (another token using the same id gets another
    /// conversation). A conversation another token started is answered 404.
    #[serde(default)]
    pub session_id: Option<String>,
    /// Whether the stored conversation is loaded before `input` (default true). With `false`
    /// the answer starts a new branch at the conversation's root.
    #[serde(default = "yes")]
    #[schema(default = true)]
    pub include_history: bool,
    /// System prompt.
    #[serde(default)]
    pub system: Option<String>,
    /// Tools the agent may use.
    #[serde(default)]
    pub tools: Option<ToolsConfig>,
    /// `auto` (default), `none`, `required`, or `{"type": "function", "function": {"name": …}}`.
    #[serde(default)]
    #[schema(value_type = Object)]
    pub tool_choice: Option<Value>,
    /// The answer's shape, as in OpenAI Chat Completions: `{"type": "text"}`,
    /// `{"type": "json_object"}` or `{"type": "json_schema", "json_schema": {"name",
    /// "description", "schema", "strict"}}`. Honoured natively by every provider, with tools
    /// too; the answer's text is the JSON.
    #[serde(default)]
    #[schema(value_type = Object, example = json!({"type": "json_schema", "json_schema": {"name": "person", "schema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}}}))]
    pub response_format: Option<Value>,
    /// Optional behaviour.
    #[serde(default)]
    pub features: FeaturesConfig,
    /// Correlation ids and conversation keys.
    #[serde(default)]
    pub metadata: Option<Metadata>,
    /// Files sent with the input: text `content` or base64 `data`.
    #[serde(default)]
    pub attachments: Option<Vec<Attachment>>,
    /// Knowledge-base excerpts to ground the answer; added to the system prompt.
    #[serde(default)]
    pub knowledge_context: Option<KnowledgeContext>,
    /// Results of client-side tools. Not supported (Skein runs no client-side tools): must be
    /// absent or empty.
    #[serde(default)]
    #[schema(value_type = Vec<Object>)]
    pub tool_results: Option<Vec<Value>>,
    /// Run on with no client attached (default false). The answer comes at once: `202` with
    /// the run's `id` and `status` when `features.streaming` is false, else its event stream,
    /// which the client may leave without cancelling the run. Read the events again, or
    /// follow them live, with `GET /v1/response/{id}/events` (from `Last-Event-ID`); stop the
    /// run with `POST /v1/response/{id}/cancel`. Should the server that runs it stop or die,
    /// another replica on the same database continues it (a key sent in
    /// `model_config.api_key` or headers in `model_config.default_headers` are never stored,
    /// so such a run is ended `failed` instead). Needs a server that stores its runs: one
    /// started without a store (`--db none`) refuses it with 400.
    #[serde(default)]
    pub background: bool,
    /// Tools whose calls wait for a person's approval in this run, on top of those the
    /// operator's `approval` policy names (a request adds approvals, never removes one): a
    /// tool name (`http_get`), every tool of an MCP server (`mcp:files`), one MCP tool
    /// (`mcp:files/write_file`), or a name pattern (`*` for every tool). A call that needs
    /// approval ends the stream with `tool.approval` and `response.done` whose `stop_reason`
    /// is `approval_required`; decide with `POST /v1/response/{id}/approval`. Needs a server
    /// that stores its runs and native tool calls (not `features.tool_mode: text`).
    #[serde(default)]
    #[schema(example = json!(["http_get", "mcp:files"]))]
    pub require_approval: Vec<String>,
}

fn yes() -> bool {
    true
}

/// The one redacted-secret type of every Skein crate: API keys and tokens a request may carry.
pub use messages::Secret;

// `Secret` as the OpenAPI document shows it: the type lives in `messages`, which knows nothing
// of OpenAPI, so its fields name this schema (`value_type`) and the document is unchanged.
/// A secret string (an API key): deserialised, never serialised, shown as `<redacted>`.
#[derive(ToSchema)]
#[schema(as = Secret, value_type = String, format = Password)]
#[expect(dead_code, reason = "never built: only its schema is used")]
pub(crate) struct SecretSchema(String);

/// `model_config`: the model to call and how to reach it.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RequestModelConfig {
    /// The provider's model id, e.g. `gpt-4o`, `claude-sonnet-4-5`, `gemini-2.5-flash`, or
    /// `echo` (the offline debug model).
    #[schema(example = "echo")]
    pub model_id: String,
    /// The protocol: `openai`/`gpt`, `anthropic`/`claude`, `google`/`gemini`, `openrouter`.
    /// Absent: detected from the model id (OpenAI-compatible when unknown).
    #[serde(default)]
    pub model: Option<String>,
    /// API key. Absent: the server's key for the provider (from its environment), which is
    /// only ever sent to the server's own endpoint for that provider.
    #[serde(default)]
    #[schema(value_type = Option<SecretSchema>)]
    pub api_key: Option<Secret>,
    /// A custom endpoint in the provider's convention (OpenAI `…/v1`, Anthropic the host,
    /// Gemini `…/v1beta`). Refused unless the server allows request base URLs.
    #[serde(default)]
    pub base_url: Option<String>,
    /// `chat` (default) or `responses` (OpenAI Responses API).
    #[serde(default)]
    pub api_format: Option<String>,
    /// Headers sent with every provider request.
    #[serde(default)]
    pub default_headers: BTreeMap<String, String>,
    /// The model's context window in tokens, overriding the registry (drives compression).
    #[serde(default)]
    #[schema(minimum = 1)]
    pub context_window: Option<u32>,
    /// Output token limit; wins over the request's `max_tokens`.
    #[serde(default)]
    #[schema(minimum = 1, maximum = 1048576)]
    pub max_output_tokens: Option<u32>,
    /// Seconds to wait for the provider's first byte, and the longest silence in a stream
    /// (default 120).
    #[serde(default)]
    #[schema(example = 120.0)]
    pub timeout: Option<f64>,
    /// Retries of a failed provider request (default 3, at most 10; more is refused with 422).
    #[serde(default)]
    #[schema(example = 3, maximum = 10)]
    pub max_retries: Option<u32>,
    /// First retry delay in seconds, doubled on each retry (default 1.0).
    #[serde(default)]
    #[schema(example = 1.0)]
    pub retry_delay: Option<f64>,
    /// A model resource name. Not supported: Skein has no model resources.
    #[serde(default)]
    pub model_name: Option<String>,
    /// A model resource namespace. Not supported.
    #[serde(default)]
    pub model_namespace: Option<String>,
}

/// `tools`: the tools the agent may use.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolsConfig {
    /// Built-in tools by name, each `{"enabled": true}`: `calculator`, `read_file`,
    /// `list_files`, `http_get`, `web_search` (each but `calculator` only where the server's
    /// operator configured it, else the request is refused) and `knowledge_base_search` (the
    /// knowledge bases this caller is offered, or those its `kb_ids` name). The `silent_exit`
    /// tool comes with `metadata.is_subscription`.
    #[serde(default)]
    pub builtin: BTreeMap<String, BuiltinTool>,
    /// Client-side function tools. Not supported: must be empty.
    #[serde(default)]
    #[schema(value_type = Vec<Object>)]
    pub custom: Vec<Value>,
    /// MCP servers whose tools the model may call, by the names the operator gave them
    /// (`mcp_servers` in the server's configuration).
    #[serde(default)]
    pub mcp_servers: Vec<McpServerRef>,
    /// Skills the model may load with the `load_skill` tool, from the skill directories the
    /// operator configured (`skills_dirs`).
    #[serde(default)]
    pub skills: Vec<SkillRef>,
    /// How many tool rounds the agent may run before it must answer (default 10).
    #[serde(default)]
    #[schema(minimum = 0, example = 10)]
    pub max_tool_calls: Option<u32>,
    /// Time limit of one tool call in seconds (default 60).
    #[serde(default)]
    #[schema(example = 60.0)]
    pub tool_timeout_seconds: Option<f64>,
}

/// One entry of `tools.builtin`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BuiltinTool {
    /// Whether the tool is offered (default true).
    #[serde(default = "yes")]
    #[schema(default = true)]
    pub enabled: bool,
    /// Result limit of search tools. Not supported: Skein's built-in tools have none.
    #[serde(default)]
    pub max_results: Option<u32>,
    /// The knowledge bases `knowledge_base_search` searches, by name, each one the server
    /// offers this caller (its `knowledge_bases`, and the token's `token_knowledge_bases`;
    /// another is refused with 422); left out, all the bases offered. Only that tool takes
    /// them.
    #[serde(default)]
    #[schema(value_type = Vec<Object>)]
    pub kb_ids: Option<Vec<Value>>,
}

/// One entry of `tools.mcp_servers`: a server the operator configured, by name. A client
/// never says what to start or where to connect.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct McpServerRef {
    /// The server's name.
    pub name: String,
    /// Not accepted: servers are configured by the operator.
    #[serde(default)]
    pub url: Option<String>,
    /// Not accepted: servers are configured by the operator.
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
    /// Not accepted: servers are configured by the operator.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub auth: Option<Value>,
}

/// One entry of `tools.skills`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SkillRef {
    /// The skill's name (its `SKILL.md` front matter `name`).
    pub name: String,
    /// A version. Not supported: skills are read from their directories as they are.
    #[serde(default)]
    pub version: Option<String>,
    /// Load it from the start instead of waiting for the model to.
    #[serde(default)]
    pub preload: bool,
}

/// `features`: optional behaviour.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FeaturesConfig {
    /// Ask the model to reason before answering (reasoning effort / thinking budget).
    #[serde(default)]
    pub deep_thinking: bool,
    /// Clarifying questions. Not supported: must be false.
    #[serde(default)]
    pub clarification: bool,
    /// Stream server-sent events (default true); false answers with one JSON body.
    #[serde(default = "yes")]
    #[schema(default = true)]
    pub streaming: bool,
    /// Compress the context when it nears the model's window (default true).
    #[serde(default = "yes")]
    #[schema(default = true)]
    pub message_compression: bool,
    /// Offer the `web_search` tool, as `tools.builtin.web_search` does; the search backend is
    /// the server's (a server without one refuses the request).
    #[serde(default)]
    pub web_search: bool,
    /// Search engine for web search. Not supported.
    #[serde(default)]
    pub search_engine: Option<String>,
    /// How the model calls tools: `native` (the provider's function calling, the default),
    /// or a text protocol in which the model writes its tool calls as `json` or `yaml` in an
    /// `action` section (for models without function calling).
    #[serde(default)]
    pub tool_mode: ToolModeName,
    /// The sections of a text protocol: `markdown` (`## Action`, the default) or `xml`
    /// (`<action>`). Only with a text `tool_mode`.
    #[serde(default)]
    pub text_format: Option<TextFormatName>,
    /// Mark the tools, the system prompt and the conversation so far as cacheable (Anthropic
    /// cache breakpoints; OpenAI caches by itself). Never changes an answer.
    #[serde(default)]
    pub prompt_cache: bool,
}

/// `features.tool_mode`.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ToolModeName {
    /// The provider's function calling.
    #[default]
    Native,
    /// Tool calls as JSON in a text protocol.
    Json,
    /// Tool calls as YAML in a text protocol.
    Yaml,
}

/// `features.text_format`.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TextFormatName {
    /// Markdown headings.
    Markdown,
    /// XML elements.
    Xml,
}

impl Default for FeaturesConfig {
    fn default() -> Self {
        FeaturesConfig {
            deep_thinking: false,
            clarification: false,
            streaming: true,
            message_compression: true,
            web_search: false,
            search_engine: None,
            tool_mode: ToolModeName::Native,
            text_format: None,
            prompt_cache: false,
        }
    }
}

/// An id that clients send as a string or a number.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq, ToSchema)]
#[serde(untagged)]
pub enum Label {
    /// A numeric id.
    Number(i64),
    /// A textual id.
    Text(String),
}

impl fmt::Display for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Label::Number(n) => n.fmt(f),
            Label::Text(text) => f.write_str(text),
        }
    }
}

/// `metadata`: correlation ids and conversation keys. The ids are correlation labels: they are
/// recorded on the request's tracing span (the server's logs) and `request_id` is echoed as
/// `X-Request-ID`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Metadata {
    /// The request id (else the `X-Request-ID` header, else a new `req-…`).
    #[serde(default)]
    pub request_id: Option<String>,
    /// The conversation to continue.
    #[serde(default)]
    pub conversation_id: Option<String>,
    /// The task; `task-{task_id}` is the conversation when no other key is given, so every
    /// request of one task continues the same conversation.
    #[serde(default)]
    pub task_id: Option<Label>,
    /// Correlation label.
    #[serde(default)]
    pub user_id: Option<Label>,
    /// Correlation label.
    #[serde(default)]
    pub user_name: Option<String>,
    /// Correlation label.
    #[serde(default)]
    pub team_id: Option<Label>,
    /// Correlation label.
    #[serde(default)]
    pub team_name: Option<String>,
    /// Correlation label.
    #[serde(default)]
    pub subtask_id: Option<Label>,
    /// Correlation label.
    #[serde(default)]
    pub user_subtask_id: Option<Label>,
    /// Correlation label.
    #[serde(default)]
    pub message_id: Option<Label>,
    /// Correlation label.
    #[serde(default)]
    pub user_message_id: Option<Label>,
    /// Correlation label.
    #[serde(default)]
    pub bot_name: Option<String>,
    /// Correlation label.
    #[serde(default)]
    pub bot_namespace: Option<String>,
    /// Correlation label.
    #[serde(default)]
    pub trace_id: Option<String>,
    /// `single` (default). `group` is not supported.
    #[serde(default)]
    pub chat_type: Option<String>,
    /// Group-chat participants. Not supported: must be empty.
    #[serde(default)]
    #[schema(value_type = Vec<Object>)]
    pub participants: Option<Vec<Value>>,
    /// Keep only the last `history_limit` turns of the stored conversation.
    #[serde(default)]
    pub history_limit: Option<u32>,
    /// Subscription run: offers the `silent_exit` tool, which ends the run without a reply.
    #[serde(default)]
    pub is_subscription: bool,
    /// Not supported: must be empty (name skills in `tools.skills`).
    #[serde(default)]
    #[schema(value_type = Vec<Object>)]
    pub skill_names: Option<Vec<Value>>,
    /// Not supported: must be empty (name skills in `tools.skills`).
    #[serde(default)]
    #[schema(value_type = Object)]
    pub skill_configs: Option<Value>,
    /// Not supported: must be empty (`tools.skills` entries take `preload`).
    #[serde(default)]
    #[schema(value_type = Vec<Object>)]
    pub preload_skills: Option<Vec<Value>>,
    /// Not supported: must be empty (name skills in `tools.skills`).
    #[serde(default)]
    #[schema(value_type = Vec<Object>)]
    pub user_selected_skills: Option<Vec<Value>>,
    /// Not supported: must be empty. Knowledge bases are searched by the
    /// `knowledge_base_search` tool (`tools.builtin.knowledge_base_search`, its `kb_ids`
    /// naming them), or excerpts are sent in `knowledge_context`.
    #[serde(default)]
    #[schema(value_type = Vec<Object>)]
    pub knowledge_base_ids: Option<Vec<Value>>,
    /// Documents. Not supported: must be empty.
    #[serde(default)]
    #[schema(value_type = Vec<Object>)]
    pub document_ids: Option<Vec<Value>>,
    /// Qualifies `knowledge_base_ids`; only the default (true) is accepted.
    #[serde(default)]
    pub is_user_selected_kb: Option<bool>,
    /// Table contexts. Not supported: must be empty.
    #[serde(default)]
    #[schema(value_type = Vec<Object>)]
    pub table_contexts: Option<Vec<Value>>,
    /// Data for MCP placeholders. Not supported: the MCP servers are the operator's, named in
    /// `tools.mcp_servers`, and take no placeholders.
    #[serde(default)]
    #[schema(value_type = Object)]
    pub task_data: Option<Value>,
    /// A backend token. Not supported: authenticate with the `Authorization` header.
    #[serde(default)]
    #[schema(value_type = Option<SecretSchema>)]
    pub auth_token: Option<Secret>,
}

/// One entry of `attachments`: exactly one of `content` (text) and `data` (base64).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Attachment {
    /// Client-side id, for reference.
    #[serde(default)]
    pub id: Option<Label>,
    /// The file name, shown to the model.
    pub filename: String,
    /// The MIME type, e.g. `text/plain`, `image/png`, `application/pdf`.
    pub mime_type: String,
    /// Text content (sent as text).
    #[serde(default)]
    pub content: Option<String>,
    /// Base64 bytes (sent as a media part).
    #[serde(default)]
    pub data: Option<String>,
}

/// `knowledge_context`: excerpts added to the system prompt.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct KnowledgeContext {
    /// The excerpts.
    pub contexts: Vec<KnowledgeExcerpt>,
    /// Instructions placed before the excerpts.
    #[serde(default)]
    pub meta_prompt: Option<String>,
}

/// One knowledge-base excerpt.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct KnowledgeExcerpt {
    /// The knowledge base's id.
    pub kb_id: Label,
    /// Its name.
    pub kb_name: String,
    /// The excerpt.
    pub content: String,
}

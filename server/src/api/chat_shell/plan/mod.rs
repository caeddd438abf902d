//! From a [`ResponseRequest`] to a [`RunSpec`]: every field honoured or refused.
//!
//! No field is accepted and then ignored (a client would believe its `temperature`,
//! `tool_choice`, `max_tool_calls` or `streaming` took effect): each field either changes the
//! run as documented on [`ResponseRequest`], or — when it asks for something Skein does not
//! do (MCP servers, skills, knowledge bases, client-side tools) or has a value that makes no
//! sense — the request is answered 422 with every such field named in `details`.

mod input;

pub use service::options::{
    MAX_OUTPUT_TOKENS_LIMIT, OptionProblem, RunOption, RunOptions, TEMPERATURE_RANGE,
    check_max_rounds, check_max_tokens, check_run_options, check_temperature,
};

use std::time::Duration;

use agent_loop::approval::{ApprovalPolicy, Requirement, ToolSelector};
use conversation_tree::ConversationId;
use http::StatusCode;
use providers::{ApiFormat, ModelInfo, Provider, RetryPolicy, Timeouts, ToolChoice};
use serde_json::{Value, json};
use service::{
    DEFAULT_TOOL_ROUNDS, ModelRequest, RunSpec, SectionFormat, ServiceConfig, ToolProtocol,
};
use tools::WEB_SEARCH;

use crate::api::chat_shell::schema::{
    McpServerRef, Metadata, ResponseRequest, SkillRef, TextFormatName, ToolModeName, ToolsConfig,
};
use crate::api::error::ApiError;
use crate::api::response_format::{self, Layout};

/// The temperature of a request that names none (unless the model reasons).
pub const DEFAULT_TEMPERATURE: f64 = 0.7;
/// The output token limit of a request that names none.
pub const DEFAULT_MAX_TOKENS: u32 = 32_768;
/// The tool timeout in seconds of a request that names none.
pub const DEFAULT_TOOL_TIMEOUT_SECS: f64 = 60.0;
/// Highest `model_config.max_retries` a request may ask for.
pub const MAX_RETRIES: u32 = 10;
/// The provider timeout in seconds of a request that names none.
pub const DEFAULT_MODEL_TIMEOUT_SECS: f64 = 120.0;

/// A planned request: the run, and how to answer.
#[derive(Debug)]
pub struct Planned {
    /// The run.
    pub spec: RunSpec,
    /// Whether to stream events (else one JSON body).
    pub streaming: bool,
    /// Whether the run goes on with no client attached (`background`).
    pub background: bool,
    /// The request id (`X-Request-ID`).
    pub request_id: String,
    /// The correlation labels of `metadata`, as `name=value` pairs, for the logs.
    pub labels: String,
    /// The approvals the request adds to the operator's (`require_approval`): every call of
    /// the tools it names waits for a person.
    pub approval: ApprovalPolicy,
}

/// Fields that cannot be honoured, collected so that one answer names them all.
#[derive(Debug, Default)]
pub(crate) struct Problems {
    unsupported: Vec<Value>,
    invalid: Vec<Value>,
}

impl Problems {
    /// A field asking for something this server does not do.
    fn unsupported(&mut self, field: &str, reason: &str) {
        self.unsupported
            .push(json!({"field": field, "reason": reason}));
    }

    /// A field with a value that makes no sense.
    fn invalid(&mut self, field: &str, reason: &str) {
        self.invalid.push(json!({"field": field, "reason": reason}));
    }

    /// A run option refused by the rule `skein run` applies too.
    fn option(&mut self, problem: &OptionProblem) {
        self.invalid(problem.option.field(), &problem.reason);
    }

    fn into_error(self) -> Option<ApiError> {
        let code = if self.invalid.is_empty() {
            "unsupported_field"
        } else {
            "invalid_field"
        };
        let all: Vec<Value> = self.invalid.into_iter().chain(self.unsupported).collect();
        let first = all.first()?;
        let message = format!(
            "{} field(s) cannot be honoured; first: `{}`: {}",
            all.len(),
            first["field"].as_str().unwrap_or_default(),
            first["reason"].as_str().unwrap_or_default()
        );
        Some(
            ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, code, message)
                .with_details(json!({ "fields": all })),
        )
    }
}

/// Plans `request` of a caller who may search the knowledge bases `offered_bases` (the
/// server's `knowledge_bases`, and its token's). `header_request_id` is the `X-Request-ID`
/// header, if any.
pub fn plan(
    request: ResponseRequest,
    config: &ServiceConfig,
    offered_bases: &[String],
    header_request_id: Option<&str>,
) -> Result<Planned, ApiError> {
    let mut problems = Problems::default();
    let background = request.background;
    let metadata = request.metadata.unwrap_or_default();
    let features = request.features;

    // The model.
    let mc = request.model_config;
    if mc.model_id.trim().is_empty() {
        problems.invalid(
            "model_config.model_id",
            "name the model, e.g. `gpt-4o` or `echo`",
        );
    }
    let mut model = ModelRequest::new(mc.model_id.trim());
    // A protocol name Skein does not know would silently give way to the model id's guess
    // (the echo model speaks none: any name goes with it).
    if let Some(Err(_)) = mc.model.as_deref().map(str::parse::<Provider>)
        && model.config.model_id != providers::ECHO_MODEL_ID
    {
        problems.invalid(
            "model_config.model",
            &format!(
                "`{}` is not a protocol; use openai (gpt), anthropic (claude), google (gemini) \
                 or openrouter",
                mc.model.as_deref().unwrap_or_default().trim()
            ),
        );
    }
    model.config.model = mc.model;
    model.config.api_key = mc.api_key.map(|key| key.expose().to_owned());
    model.config.default_headers = mc.default_headers;
    match mc.api_format.as_deref().map(str::parse::<ApiFormat>) {
        None => {}
        // The Responses API is OpenAI's: another protocol's model would be refused when built.
        Some(Ok(ApiFormat::Responses)) if model.config.provider() != Provider::OpenAi => problems
            .invalid(
                "model_config.api_format",
                &format!(
                    "`responses` is OpenAI's Responses API, but `{}` speaks the {} protocol; \
                     set `model` to `openai` for an OpenAI-compatible endpoint",
                    model.config.model_id,
                    model.config.provider()
                ),
            ),
        Some(Ok(format)) => model.config.api_format = Some(format),
        Some(Err(_)) => problems.invalid(
            "model_config.api_format",
            &format!(
                "`{}` is not an API format; use `chat` or `responses`",
                mc.api_format.as_deref().unwrap_or_default()
            ),
        ),
    }
    if let Some(base_url) = mc.base_url {
        if config.allow_request_base_url {
            model.config.base_url = Some(base_url);
            model.custom_endpoint = true;
        } else {
            problems.unsupported(
                "model_config.base_url",
                "this server does not accept request endpoints (`allow_request_base_url` is off); \
                 its operator configures the endpoints",
            );
        }
    }
    let timeout = seconds(
        "model_config.timeout",
        mc.timeout.unwrap_or(DEFAULT_MODEL_TIMEOUT_SECS),
        &mut problems,
    );
    model.config.timeouts = Timeouts {
        first_byte: timeout,
        idle: timeout,
        ..Timeouts::default()
    };
    model.config.retry = RetryPolicy {
        max_retries: match mc.max_retries {
            Some(n) if n > MAX_RETRIES => {
                problems.invalid(
                    "model_config.max_retries",
                    &format!("must be at most {MAX_RETRIES}: each retry is another provider call"),
                );
                MAX_RETRIES as usize
            }
            Some(n) => n as usize,
            None => 3,
        },
        initial_backoff: seconds(
            "model_config.retry_delay",
            mc.retry_delay.unwrap_or(1.0),
            &mut problems,
        ),
        ..RetryPolicy::default()
    };
    if let Some(window) = mc.context_window {
        if window == 0 {
            problems.invalid("model_config.context_window", "must be at least 1");
        }
        model.context_window = Some(window);
    }
    for (field, value) in [
        ("model_config.model_name", mc.model_name.is_some()),
        ("model_config.model_namespace", mc.model_namespace.is_some()),
    ] {
        if value {
            problems.unsupported(field, "Skein has no model resources; leave it out");
        }
    }
    let info = ModelInfo::lookup(model.config.provider(), &model.config.model_id);
    let reasoning_model = info.known && info.supports_reasoning;

    // Sampling and limits.
    // The checks `skein run` applies too (`service::options`).
    let temperature = match request.temperature.map(check_temperature) {
        Some(Ok(t)) => Some(t),
        Some(Err(problem)) => {
            problems.option(&problem);
            None
        }
        None if features.deep_thinking || reasoning_model => None,
        None => Some(DEFAULT_TEMPERATURE),
    };
    let max_tokens = match mc
        .max_output_tokens
        .or(request.max_tokens)
        .map(check_max_tokens)
    {
        Some(Err(problem)) => {
            problems.option(&problem);
            None
        }
        Some(Ok(tokens)) => Some(tokens),
        // The default, within what the model can produce (a known model rejects more).
        None if info.known => Some(DEFAULT_MAX_TOKENS.min(info.max_output_tokens)),
        None => Some(DEFAULT_MAX_TOKENS),
    };

    // Input and system prompt.
    let run_input = input::run_input(
        request.input,
        request.attachments.unwrap_or_default(),
        &mut problems,
    );
    let system = input::system_prompt(request.system, request.knowledge_context);
    if request
        .tool_results
        .is_some_and(|results| !results.is_empty())
    {
        problems.unsupported(
            "tool_results",
            "Skein runs no client-side tools, so there are no results to continue with",
        );
    }

    // Tools.
    let mut tools_config = request.tools.unwrap_or_default();
    let max_rounds = tools_config
        .max_tool_calls
        .map_or(DEFAULT_TOOL_ROUNDS, |n| n as usize);
    if let Err(problem) = check_max_rounds(max_rounds, config.max_tool_rounds) {
        problems.option(&problem);
    }
    let tool_timeout = seconds(
        "tools.tool_timeout_seconds",
        tools_config
            .tool_timeout_seconds
            .unwrap_or(DEFAULT_TOOL_TIMEOUT_SECS),
        &mut problems,
    );
    let skill_refs = std::mem::take(&mut tools_config.skills);
    let mcp_servers = mcp_servers(
        &std::mem::take(&mut tools_config.mcp_servers),
        &mut problems,
    );
    let (mut tools, knowledge_bases) = builtin_tools(tools_config, offered_bases, &mut problems);
    // `features.web_search` offers the `web_search` tool (whether the server has a backend is
    // the service's to say, as for any built-in tool).
    if features.web_search && !tools.iter().any(|tool| tool == WEB_SEARCH) {
        tools.push(WEB_SEARCH.to_owned());
    }
    let (skills, preload_skills) = skills(&skill_refs, &mut problems);
    let tool_choice = tool_choice(request.tool_choice, &tools, &mut problems);
    let response_format = request.response_format.and_then(|format| {
        response_format::parse("response_format", format, Layout::Chat)
            .map_err(|fault| problems.invalid(&fault.field, &fault.reason))
            .ok()
    });

    // Features.
    if features.clarification {
        problems.unsupported(
            "features.clarification",
            "clarifying questions are not supported",
        );
    }
    if features.search_engine.is_some() {
        problems.unsupported(
            "features.search_engine",
            "the search backend is the operator's choice (`tools.web_search` in the server's \
             configuration); leave it out",
        );
    }
    let tool_protocol = tool_protocol(features.tool_mode, features.text_format, &mut problems);

    // Metadata.
    let conversation = conversation(request.session_id, &metadata, &mut problems);
    check_metadata(&metadata, &mut problems);
    let request_id = header_request_id
        .map(str::to_owned)
        .or_else(|| metadata.request_id.clone())
        .unwrap_or_else(new_request_id);
    let labels = labels(&metadata);
    let approval = approval(&request.require_approval, &mut problems);

    if let Some(error) = problems.into_error() {
        return Err(error);
    }
    let Some(run_input) = run_input else {
        return Err(ApiError::internal("the input was refused without a reason"));
    };
    let spec = RunSpec {
        system,
        tools,
        silent_exit_tool: metadata.is_subscription,
        tool_choice,
        max_rounds,
        tool_timeout: Some(tool_timeout),
        temperature,
        max_tokens,
        response_format,
        deep_thinking: features.deep_thinking,
        compression: features.message_compression,
        tool_protocol,
        skills,
        preload_skills,
        mcp_servers,
        knowledge_bases,
        prompt_cache: features.prompt_cache,
        conversation,
        include_history: request.include_history,
        history_limit: metadata.history_limit.map(|n| n as usize),
        response_id: None,
        log: true,
        ..RunSpec::new(model, run_input)
    };
    Ok(Planned {
        spec,
        streaming: features.streaming,
        background,
        request_id,
        labels,
        approval,
    })
}

/// The policy of `require_approval`: every call of each named tool waits; each entry that is
/// not a selector is a problem of its own.
fn approval(selectors: &[String], problems: &mut Problems) -> ApprovalPolicy {
    let mut policy = ApprovalPolicy::new();
    for (index, text) in selectors.iter().enumerate() {
        match text.parse::<ToolSelector>() {
            Ok(selector) => policy = policy.require(selector, Requirement::Always),
            Err(error) => {
                problems.invalid(&format!("require_approval[{index}]"), &error.to_string())
            }
        }
    }
    policy
}

/// The tool protocol `features.tool_mode` and `features.text_format` ask for.
pub(crate) fn tool_protocol(
    mode: ToolModeName,
    format: Option<TextFormatName>,
    problems: &mut Problems,
) -> ToolProtocol {
    let syntax = match mode {
        ToolModeName::Native => None,
        ToolModeName::Json => Some(agent_loop::TextSyntax::Json),
        ToolModeName::Yaml => Some(agent_loop::TextSyntax::Yaml),
    };
    let format = format.map(|format| match format {
        TextFormatName::Markdown => SectionFormat::Markdown,
        TextFormatName::Xml => SectionFormat::Xml,
    });
    ToolProtocol::of(syntax, format).unwrap_or_else(|reason| {
        problems.invalid("features.text_format", reason);
        ToolProtocol::Native
    })
}

/// A positive, finite number of seconds.
fn seconds(field: &str, value: f64, problems: &mut Problems) -> Duration {
    match Duration::try_from_secs_f64(value) {
        Ok(duration) if !duration.is_zero() => duration,
        _ => {
            problems.invalid(field, "must be a positive number of seconds");
            Duration::from_secs(1)
        }
    }
}

/// The MCP servers named (`tools.mcp_servers`). Whether each exists is the service's to
/// say; how to reach one is never the client's.
fn mcp_servers(refs: &[McpServerRef], problems: &mut Problems) -> Vec<String> {
    let mut names = Vec::new();
    for (index, server) in refs.iter().enumerate() {
        for (field, given) in [
            ("url", server.url.is_some()),
            ("type", server.kind.is_some()),
            ("auth", server.auth.is_some()),
        ] {
            if given {
                problems.unsupported(
                    &format!("tools.mcp_servers[{index}].{field}"),
                    "MCP servers are configured by the operator; name one of them",
                );
            }
        }
        if !names.contains(&server.name) {
            names.push(server.name.clone());
        }
    }
    names
}

/// The skills offered (`tools.skills`), and those loaded from the start. Whether each exists
/// is the service's to say: it holds the operator's skill directories.
fn skills(refs: &[SkillRef], problems: &mut Problems) -> (Vec<String>, Vec<String>) {
    let mut offered = Vec::new();
    let mut preload = Vec::new();
    for (index, skill) in refs.iter().enumerate() {
        if skill.version.is_some() {
            problems.unsupported(
                &format!("tools.skills[{index}].version"),
                "skills are read from their directories as they are; leave the version out",
            );
        }
        if offered.contains(&skill.name) {
            continue;
        }
        offered.push(skill.name.clone());
        if skill.preload {
            preload.push(skill.name.clone());
        }
    }
    (offered, preload)
}

/// The built-in tools enabled, and the knowledge bases `knowledge_base_search` searches: those
/// its `kb_ids` name, each one of the `offered` ones, else all the `offered` ones.
fn builtin_tools(
    tools: ToolsConfig,
    offered: &[String],
    problems: &mut Problems,
) -> (Vec<String>, Vec<String>) {
    if !tools.custom.is_empty() {
        problems.unsupported(
            "tools.custom",
            &format!(
                "only the built-in tools ({}, {}) are offered",
                tools::BUILTIN_TOOL_NAMES.join(", "),
                knowledge_base::TOOL_NAME
            ),
        );
    }
    let mut names = Vec::new();
    let mut bases = Vec::new();
    for (name, tool) in tools.builtin {
        if tool.max_results.is_some() {
            problems.unsupported(
                &format!("tools.builtin.{name}.max_results"),
                "the built-in tools have no result limit to set",
            );
        }
        let ids = tool.kb_ids.unwrap_or_default();
        if name == knowledge_base::TOOL_NAME {
            if tool.enabled {
                bases.extend(knowledge_bases(&ids, offered, problems));
            }
            continue;
        }
        if !ids.is_empty() {
            problems.unsupported(
                &format!("tools.builtin.{name}.kb_ids"),
                "only knowledge_base_search takes knowledge bases",
            );
        }
        if tool.enabled {
            names.push(name);
        }
    }
    (names, bases)
}

/// The knowledge bases `knowledge_base_search` searches: those its `kb_ids` name, else all the
/// `offered` ones (and a problem when there are none). A base that is not offered is refused
/// whether or not the store holds it, so the answer tells nothing of the store's other bases.
fn knowledge_bases(ids: &[Value], offered: &[String], problems: &mut Problems) -> Vec<String> {
    let field = format!("tools.builtin.{}.kb_ids", knowledge_base::TOOL_NAME);
    if ids.is_empty() {
        if offered.is_empty() {
            problems.invalid(
                &field,
                "this server offers you no knowledge base to search; its operator offers them \
                 with `skein serve --kb NAME` (`knowledge_bases`, or `token_knowledge_bases` \
                 for one token, in its configuration)",
            );
        }
        return offered.to_vec();
    }
    let mut bases = Vec::new();
    for (index, id) in ids.iter().enumerate() {
        let base = match id {
            Value::String(base) => base.clone(),
            Value::Number(number) => number.to_string(),
            _ => {
                problems.invalid(
                    &format!("{field}[{index}]"),
                    "must be a knowledge base name",
                );
                continue;
            }
        };
        if offered.contains(&base) {
            bases.push(base);
        } else {
            problems.invalid(&format!("{field}[{index}]"), &not_offered(&base, offered));
        }
    }
    bases
}

/// Why knowledge base `base` cannot be searched by a caller offered `offered`, and what to do.
fn not_offered(base: &str, offered: &[String]) -> String {
    let fix = "its operator offers bases with `skein serve --kb NAME` (`knowledge_bases`, or \
               `token_knowledge_bases` for one token, in its configuration)";
    if offered.is_empty() {
        format!("knowledge base `{base}` is not offered to you: this server offers you none; {fix}")
    } else {
        format!(
            "knowledge base `{base}` is not offered to you; name one of {} or leave `kb_ids` out \
             to search them all; {fix}",
            offered
                .iter()
                .map(|name| format!("`{name}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    }
}

fn tool_choice(
    value: Option<Value>,
    tools: &[String],
    problems: &mut Problems,
) -> Option<ToolChoice> {
    let choice = match value? {
        Value::String(text) => match text.as_str() {
            // The provider's own default; forcing it would change nothing.
            "auto" => return None,
            "none" => ToolChoice::None,
            "required" | "any" => ToolChoice::Required,
            other => {
                problems.invalid(
                    "tool_choice",
                    &format!("`{other}` is not a tool choice; use auto, none, required or {{\"type\": \"function\", \"function\": {{\"name\": …}}}}"),
                );
                return None;
            }
        },
        object => match object.pointer("/function/name").and_then(Value::as_str) {
            Some(name) if object.get("type").and_then(Value::as_str) == Some("function") => {
                ToolChoice::Tool(name.to_owned())
            }
            _ => {
                problems.invalid(
                    "tool_choice",
                    "an object tool choice is {\"type\": \"function\", \"function\": {\"name\": …}}",
                );
                return None;
            }
        },
    };
    if let ToolChoice::Tool(name) = &choice
        && !tools.contains(name)
    {
        problems.invalid(
            "tool_choice",
            &format!("tool `{name}` is not among the enabled tools"),
        );
    }
    if tools.is_empty() && choice != ToolChoice::None {
        problems.invalid(
            "tool_choice",
            "no tools are enabled, so no tool can be required",
        );
    }
    Some(choice)
}

/// The conversation named by `session_id`, `metadata.conversation_id` or (failing both)
/// `metadata.task_id` as `task-{id}`.
fn conversation(
    session_id: Option<String>,
    metadata: &Metadata,
    problems: &mut Problems,
) -> Option<ConversationId> {
    let named = match (session_id, &metadata.conversation_id) {
        (Some(a), Some(b)) if a != *b => {
            problems.invalid(
                "session_id",
                "`session_id` and `metadata.conversation_id` name different conversations",
            );
            return None;
        }
        (Some(id), _) => Some(("session_id", id)),
        (None, Some(id)) => Some(("metadata.conversation_id", id.clone())),
        (None, None) => metadata
            .task_id
            .as_ref()
            .map(|task| ("metadata.task_id", format!("task-{task}"))),
    };
    let (field, id) = named?;
    match ConversationId::new(id) {
        Ok(id) => Some(id),
        Err(err) => {
            problems.invalid(field, &err.to_string());
            None
        }
    }
}

fn check_metadata(metadata: &Metadata, problems: &mut Problems) {
    let non_empty = |list: &Option<Vec<Value>>| list.as_ref().is_some_and(|l| !l.is_empty());
    let skills = "skills are named in `tools.skills` (the operator's skill directories)";
    let kbs = "knowledge bases are searched by the `knowledge_base_search` tool: enable \
               `tools.builtin.knowledge_base_search` (its `kb_ids` name the bases), or send \
               excerpts in `knowledge_context`";
    let documents = "documents and tables are not supported; send excerpts in \
                     `knowledge_context`";
    let checks: [(&str, bool, &str); 10] = [
        (
            "metadata.participants",
            non_empty(&metadata.participants),
            "group chats are not supported",
        ),
        (
            "metadata.skill_names",
            non_empty(&metadata.skill_names),
            skills,
        ),
        (
            "metadata.skill_configs",
            metadata
                .skill_configs
                .as_ref()
                .is_some_and(|v| !v.is_null() && v != &json!({})),
            skills,
        ),
        (
            "metadata.preload_skills",
            non_empty(&metadata.preload_skills),
            skills,
        ),
        (
            "metadata.user_selected_skills",
            non_empty(&metadata.user_selected_skills),
            skills,
        ),
        (
            "metadata.knowledge_base_ids",
            non_empty(&metadata.knowledge_base_ids),
            kbs,
        ),
        (
            "metadata.document_ids",
            non_empty(&metadata.document_ids),
            documents,
        ),
        (
            "metadata.is_user_selected_kb",
            metadata.is_user_selected_kb == Some(false),
            kbs,
        ),
        (
            "metadata.table_contexts",
            non_empty(&metadata.table_contexts),
            documents,
        ),
        (
            "metadata.task_data",
            metadata.task_data.as_ref().is_some_and(|v| !v.is_null()),
            "task data fills MCP placeholders, which the operator's MCP servers \
             (`tools.mcp_servers`) do not take",
        ),
    ];
    for (field, refused, reason) in checks {
        if refused {
            problems.unsupported(field, reason);
        }
    }
    match metadata.chat_type.as_deref() {
        None | Some("single") => {}
        Some("group") => {
            problems.unsupported("metadata.chat_type", "group chats are not supported")
        }
        Some(other) => problems.invalid(
            "metadata.chat_type",
            &format!("`{other}` is not a chat type; use `single`"),
        ),
    }
    if metadata.auth_token.is_some() {
        problems.unsupported(
            "metadata.auth_token",
            "send the bearer token in the Authorization header instead",
        );
    }
}

/// `user_id=7 task_id=12 …` from the correlation labels that are set.
fn labels(metadata: &Metadata) -> String {
    let fields: [(&str, Option<String>); 13] = [
        (
            "user_id",
            metadata.user_id.as_ref().map(ToString::to_string),
        ),
        ("user_name", metadata.user_name.clone()),
        (
            "team_id",
            metadata.team_id.as_ref().map(ToString::to_string),
        ),
        ("team_name", metadata.team_name.clone()),
        (
            "task_id",
            metadata.task_id.as_ref().map(ToString::to_string),
        ),
        (
            "subtask_id",
            metadata.subtask_id.as_ref().map(ToString::to_string),
        ),
        (
            "user_subtask_id",
            metadata.user_subtask_id.as_ref().map(ToString::to_string),
        ),
        (
            "message_id",
            metadata.message_id.as_ref().map(ToString::to_string),
        ),
        (
            "user_message_id",
            metadata.user_message_id.as_ref().map(ToString::to_string),
        ),
        ("bot_name", metadata.bot_name.clone()),
        ("bot_namespace", metadata.bot_namespace.clone()),
        ("trace_id", metadata.trace_id.clone()),
        ("request_id", metadata.request_id.clone()),
    ];
    fields
        .into_iter()
        .filter_map(|(name, value)| value.map(|value| format!("{name}={value}")))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `req-` and the 32 hex digits of a random UUID v4 (122 random bits).
fn new_request_id() -> String {
    format!("req-{}", uuid::Uuid::new_v4().simple())
}

#[cfg(test)]
mod tests;

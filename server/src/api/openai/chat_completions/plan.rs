//! A Chat Completions request to a [`GatewayCall`]: the messages in Skein's model, the
//! client's tools declared (never run), each option honoured or refused by name.

use messages::{ContentPart, Message, Reasoning, Role, ToolCall, ToolResponse, ToolSpec};
use providers::{ChatOptions, ChatRequest, ReasoningEffort, ToolChoice};
use serde_json::{Value, json};
use service::{GatewayCall, Logging, ModelRequest, Thread};

use super::extra::ExtraContent;
use super::schema::{
    ChatCompletionRequest, ChatContent, ChatContentPart, ChatMessage, ChatTool, ChatToolCall,
    FileInput, InputReasoningDetail,
};
use crate::api::openai::error::OpenAiError;
use crate::api::openai::media;
use crate::api::openai::options::{SharedFields, given, unserved};
use crate::api::openai::signed_ids;
use crate::api::response_format::{self, Layout};

/// The most choices OpenAI answers in one request.
const MOST_CHOICES: u32 = 128;

/// The call `request` asks for, or the first field that cannot be honoured.
pub(crate) fn chat_completion(request: ChatCompletionRequest) -> Result<GatewayCall, OpenAiError> {
    if let Some(n) = request.n
        && !(1..=MOST_CHOICES).contains(&n)
    {
        return Err(OpenAiError::invalid(
            "n",
            format!("`n` is {n}; it must be from 1 to {MOST_CHOICES}"),
        ));
    }
    check_common(&request.model, request.temperature)?;
    let unsupported = unserved([
        // One answer per request: several choices are refused, or answered with one when the
        // operator drops what cannot be honoured.
        ("n", request.n.is_some_and(|n| n > 1)),
        ("audio", given(request.audio.as_ref())),
        (
            "modalities",
            request
                .modalities
                .as_ref()
                .is_some_and(|kinds| kinds.iter().any(|kind| kind != "text")),
        ),
        ("prediction", given(request.prediction.as_ref())),
        (
            "web_search_options",
            given(request.web_search_options.as_ref()),
        ),
        ("moderation", given(request.moderation.as_ref())),
    ]);
    let messages = conversation(request.messages)?;
    let tools = match (request.tools, request.functions) {
        (Some(_), Some(_)) => {
            return Err(OpenAiError::invalid(
                "functions",
                "`functions` is the former name of `tools`; send one of them, not both",
            ));
        }
        (Some(tools), None) => tools
            .into_iter()
            .enumerate()
            .map(|(index, tool)| tool_spec(index, tool))
            .collect::<Result<Vec<_>, _>>()?,
        (None, functions) => functions
            .unwrap_or_default()
            .into_iter()
            .enumerate()
            .map(|(index, function)| {
                function_tool(
                    &format!("functions[{index}]"),
                    "function",
                    function.name,
                    function.description,
                    (function.parameters, "parameters"),
                )
            })
            .collect::<Result<Vec<_>, _>>()?,
    };
    let tool_choice = match (request.tool_choice, request.function_call) {
        (Some(_), Some(_)) => {
            return Err(OpenAiError::invalid(
                "function_call",
                "`function_call` is the former name of `tool_choice`; send one of them, not both",
            ));
        }
        (Some(choice), None) => Some(tool_choice(choice)?),
        (None, Some(call)) => Some(function_call(call)?),
        (None, None) => None,
    };
    let options = ChatOptions {
        temperature: request.temperature,
        max_tokens: request.max_completion_tokens.or(request.max_tokens),
        stop: stop_sequences(request.stop)?,
        tool_choice,
        response_format: request
            .response_format
            .map(|format| {
                response_format::parse("response_format", format, Layout::Chat)
                    .map_err(|fault| OpenAiError::invalid(fault.field, fault.reason))
            })
            .transpose()?,
        reasoning_effort: request
            .reasoning_effort
            .map(|effort| reasoning_effort("reasoning_effort", &effort))
            .transpose()?,
        ..ChatOptions::default()
    };
    let options = SharedFields {
        top_p: request.top_p,
        seed: request.seed,
        presence_penalty: request.presence_penalty,
        frequency_penalty: request.frequency_penalty,
        logit_bias: request.logit_bias,
        logprobs: request.logprobs.unwrap_or(false),
        top_logprobs: request.top_logprobs,
        parallel_tool_calls: request.parallel_tool_calls,
        verbosity: request.verbosity.map(|value| ("verbosity", value)),
        user: request.user,
        safety_identifier: request.safety_identifier,
        service_tier: request.service_tier,
        metadata: request.metadata,
        prompt_cache_key: request.prompt_cache_key,
        prompt_cache_retention: request.prompt_cache_retention,
    }
    .into_options(options)?;
    let stream = request.stream.unwrap_or(false);
    let include_usage = request
        .stream_options
        .and_then(|options| options.include_usage)
        .unwrap_or(false);
    let logging = match request.store {
        Some(false) => Logging::Off,
        _ => Logging::On,
    };
    Ok(GatewayCall {
        logging,
        model: ModelRequest::new(request.model.trim()),
        request: ChatRequest::new(messages)
            .with_tools(tools)
            .with_options(options),
        stream,
        include_usage,
        thread: Thread::Opening,
        label: None,
        unsupported,
    })
}

/// The deprecated `function_call`: `none`, `auto`, or `{"name": …}`.
fn function_call(value: Value) -> Result<ToolChoice, OpenAiError> {
    match &value {
        Value::String(mode) if mode == "none" => Ok(ToolChoice::None),
        Value::String(mode) if mode == "auto" => Ok(ToolChoice::Auto),
        _ => value
            .get("name")
            .and_then(Value::as_str)
            .map(|name| ToolChoice::Tool(name.to_owned()))
            .ok_or_else(|| {
                OpenAiError::invalid(
                    "function_call",
                    r#"`function_call` must be none, auto or {"name": …}"#,
                )
            }),
    }
}

/// The checks both OpenAI endpoints make: a model named and a temperature in range.
pub(crate) fn check_common(model: &str, temperature: Option<f64>) -> Result<(), OpenAiError> {
    if model.trim().is_empty() {
        return Err(OpenAiError::invalid(
            "model",
            "`model` is empty; name a model",
        ));
    }
    if let Some(temperature) = temperature
        && !(0.0..=2.0).contains(&temperature)
    {
        return Err(OpenAiError::invalid(
            "temperature",
            format!("`temperature` is {temperature}; it must be between 0 and 2"),
        ));
    }
    Ok(())
}

fn conversation(items: Vec<ChatMessage>) -> Result<Vec<Message>, OpenAiError> {
    if items.is_empty() {
        return Err(OpenAiError::invalid(
            "messages",
            "`messages` is empty; send at least one user message",
        ));
    }
    let mut messages: Vec<Message> = Vec::with_capacity(items.len());
    for (index, item) in items.into_iter().enumerate() {
        let field = format!("messages[{index}]");
        let message = match item.role.as_str() {
            // Anywhere, as OpenAI takes them: each provider's adapter places a later one
            // (Anthropic and Gemini take one system prompt).
            "system" | "developer" => Message::new(Role::System, text_parts(&field, item.content)?),
            "user" => Message::new(Role::Human, parts(&field, item.content)?),
            "assistant" => assistant(&field, item)?,
            "tool" => tool_response(&field, item, &messages)?,
            other => {
                return Err(OpenAiError::invalid(
                    format!("{field}.role"),
                    format!(
                        "`{field}.role` is `{other}`; use system, developer, user, assistant or \
                         tool"
                    ),
                ));
            }
        };
        messages.push(message);
    }
    Ok(messages)
}

fn assistant(field: &str, item: ChatMessage) -> Result<Message, OpenAiError> {
    let mut parts = Vec::new();
    if let Some(details) = item.reasoning_details.filter(|details| !details.is_empty()) {
        parts.extend(details.into_iter().map(|detail| {
            ContentPart::Reasoning(match detail {
                InputReasoningDetail::Text {
                    text,
                    signature,
                    id,
                } => Reasoning {
                    id,
                    text,
                    signature,
                    encrypted: None,
                },
                InputReasoningDetail::Encrypted { data, id } => Reasoning {
                    id,
                    encrypted: Some(data),
                    ..Reasoning::default()
                },
            })
        }));
    } else if let Some(reasoning) = item.reasoning_content.filter(|text| !text.is_empty()) {
        parts.push(ContentPart::Reasoning(Reasoning {
            text: reasoning,
            ..Reasoning::default()
        }));
    }
    parts.extend(text_parts(field, item.content)?);
    if let Some(refusal) = item.refusal.filter(|text| !text.is_empty()) {
        parts.push(ContentPart::text(refusal));
    }
    for (index, call) in item.tool_calls.unwrap_or_default().into_iter().enumerate() {
        parts.push(ContentPart::ToolCall(tool_call(
            &format!("{field}.tool_calls[{index}]"),
            call,
        )?));
    }
    Ok(Message::new(Role::Ai, parts))
}

fn tool_call(field: &str, call: ChatToolCall) -> Result<ToolCall, OpenAiError> {
    if call.kind != "function" {
        return Err(OpenAiError::invalid(
            format!("{field}.type"),
            format!(
                "`{field}.type` is `{}`; only `function` calls exist",
                call.kind
            ),
        ));
    }
    // An id from `/v1/responses` (`store: false`) may carry the signature; Gemini's own field
    // wins when the client kept both.
    let (id, carried) = signed_ids::parse(&format!("{field}.id"), call.id)?;
    Ok(ToolCall {
        reasoning: call
            .extra_content
            .and_then(ExtraContent::reasoning)
            .or(carried),
        ..ToolCall::new(id, call.function.name, call.function.arguments)
    })
}

fn tool_response(
    field: &str,
    item: ChatMessage,
    earlier: &[Message],
) -> Result<Message, OpenAiError> {
    let Some(id) = item.tool_call_id else {
        return Err(OpenAiError::invalid(
            format!("{field}.tool_call_id"),
            format!("`{field}` is a tool message without `tool_call_id`; name the call it answers"),
        ));
    };
    let (id, _) = signed_ids::parse(&format!("{field}.tool_call_id"), id)?;
    let name = earlier
        .iter()
        .rev()
        .flat_map(Message::tool_calls)
        .find(|call| call.id == id)
        .map(|call| call.name.clone())
        .ok_or_else(|| {
            OpenAiError::invalid(
                format!("{field}.tool_call_id"),
                format!(
                    "`{field}.tool_call_id` is `{id}`, but no earlier assistant message made \
                     that call"
                ),
            )
        })?;
    let text = text_of(field, item.content)?;
    Ok(Message::new(
        Role::Tool,
        vec![ContentPart::ToolResponse(ToolResponse::new(id, name, text))],
    ))
}

/// Text and images.
fn parts(field: &str, content: Option<ChatContent>) -> Result<Vec<ContentPart>, OpenAiError> {
    match content {
        None => Ok(Vec::new()),
        Some(ChatContent::Text(text)) => Ok(vec![ContentPart::text(text)]),
        Some(ChatContent::Parts(items)) => items
            .into_iter()
            .enumerate()
            .map(|(index, part)| {
                let field = format!("{field}.content[{index}]");
                match part {
                    ChatContentPart::Text { text } => Ok(ContentPart::text(text)),
                    ChatContentPart::ImageUrl { image_url } => {
                        media::image(&field, &image_url.url, image_url.detail)
                    }
                    ChatContentPart::File { file } => file_part(&format!("{field}.file"), file),
                    ChatContentPart::InputAudio { input_audio } => {
                        media::audio(&field, &input_audio.data, &input_audio.format)
                    }
                }
            })
            .collect(),
    }
}

/// Text only (system, assistant and tool messages).
fn text_parts(field: &str, content: Option<ChatContent>) -> Result<Vec<ContentPart>, OpenAiError> {
    let text = text_of(field, content)?;
    Ok(if text.is_empty() {
        Vec::new()
    } else {
        vec![ContentPart::text(text)]
    })
}

fn text_of(field: &str, content: Option<ChatContent>) -> Result<String, OpenAiError> {
    match content {
        None => Ok(String::new()),
        Some(ChatContent::Text(text)) => Ok(text),
        Some(ChatContent::Parts(items)) => {
            let mut text = String::new();
            for (index, part) in items.into_iter().enumerate() {
                match part {
                    ChatContentPart::Text { text: piece } => text.push_str(&piece),
                    ChatContentPart::ImageUrl { .. }
                    | ChatContentPart::File { .. }
                    | ChatContentPart::InputAudio { .. } => {
                        return Err(OpenAiError::invalid(
                            format!("{field}.content[{index}]"),
                            format!(
                                "`{field}` may hold text only; images, files and audio go in \
                                 user messages"
                            ),
                        ));
                    }
                }
            }
            Ok(text)
        }
    }
}

/// A `file` part at `field`: inline data; an uploaded file's id is refused by name.
fn file_part(field: &str, file: FileInput) -> Result<ContentPart, OpenAiError> {
    match (file.file_data, file.file_id) {
        (Some(data), _) => media::file_data(field, &data, file.filename.as_deref()),
        (None, Some(_)) => Err(media::file_id(&format!("{field}.file_id"))),
        (None, None) => Err(OpenAiError::invalid(
            format!("{field}.file_data"),
            format!("`{field}` has no `file_data`; send the file as a `data:` URL"),
        )),
    }
}

fn tool_spec(index: usize, tool: ChatTool) -> Result<ToolSpec, OpenAiError> {
    let function = tool.function;
    function_tool(
        &format!("tools[{index}]"),
        &tool.kind,
        function.name,
        function.description,
        (function.parameters, "function.parameters"),
    )
}

/// A client's function tool declared at `field`: only `function` tools exist, and their
/// parameters (at `field.{parameters.1}`) must be a JSON Schema object.
pub(crate) fn function_tool(
    field: &str,
    kind: &str,
    name: String,
    description: Option<String>,
    parameters: (Option<Value>, &str),
) -> Result<ToolSpec, OpenAiError> {
    if kind != "function" {
        return Err(OpenAiError::invalid(
            format!("{field}.type"),
            format!(
                "`{field}.type` is `{kind}`; only `function` tools can be declared (this server \
                 hosts no built-in tools for clients)"
            ),
        ));
    }
    let (parameters, parameters_field) = parameters;
    let parameters = parameters.unwrap_or_else(|| json!({"type": "object", "properties": {}}));
    if !parameters.is_object() {
        return Err(OpenAiError::invalid(
            format!("{field}.{parameters_field}"),
            format!("`{field}.{parameters_field}` must be a JSON Schema object"),
        ));
    }
    Ok(ToolSpec {
        name,
        description: description.unwrap_or_default(),
        parameters,
    })
}

fn tool_choice(value: Value) -> Result<ToolChoice, OpenAiError> {
    named_tool_choice(
        value,
        "/function/name",
        r#"{"type": "function", "function": {"name": …}}"#,
    )
}

/// `tool_choice`: a mode, or a function whose name is at `name_at` (each API nests it its
/// own way, written out in `form`).
pub(crate) fn named_tool_choice(
    value: Value,
    name_at: &str,
    form: &str,
) -> Result<ToolChoice, OpenAiError> {
    match &value {
        Value::String(mode) => match mode.as_str() {
            "auto" => Ok(ToolChoice::Auto),
            "none" => Ok(ToolChoice::None),
            "required" => Ok(ToolChoice::Required),
            other => Err(OpenAiError::invalid(
                "tool_choice",
                format!("`tool_choice` is `{other}`; use auto, none, required or a function"),
            )),
        },
        _ => value
            .pointer(name_at)
            .and_then(Value::as_str)
            .filter(|_| value.get("type").and_then(Value::as_str) == Some("function"))
            .map(|name| ToolChoice::Tool(name.to_owned()))
            .ok_or_else(|| {
                OpenAiError::invalid(
                    "tool_choice",
                    format!("`tool_choice` must be auto, none, required or {form}"),
                )
            }),
    }
}

fn stop_sequences(stop: Option<Value>) -> Result<Vec<String>, OpenAiError> {
    match stop {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(one)) => Ok(vec![one]),
        Some(Value::Array(items)) => items
            .into_iter()
            .map(|item| match item {
                Value::String(text) => Ok(text),
                _ => Err(OpenAiError::invalid(
                    "stop",
                    "`stop` must be a string or a list of strings",
                )),
            })
            .collect(),
        Some(_) => Err(OpenAiError::invalid(
            "stop",
            "`stop` must be a string or a list of strings",
        )),
    }
}

/// A reasoning effort named in `field`.
pub(crate) fn reasoning_effort(field: &str, effort: &str) -> Result<ReasoningEffort, OpenAiError> {
    serde_json::from_value(Value::String(effort.to_owned())).map_err(|_| {
        OpenAiError::invalid(
            field,
            format!("`{field}` is `{effort}`; use minimal, low, medium or high"),
        )
    })
}

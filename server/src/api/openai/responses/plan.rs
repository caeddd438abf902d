//! A Responses request to a [`GatewayCall`]: the input items as Skein messages, the client's
//! function tools declared (never run), each option honoured or refused by name.

use messages::{ContentPart, Message, Role, ToolCall, ToolResponse, ToolSpec};
use providers::{ChatOptions, ChatRequest, ToolChoice};
use serde_json::{Value, json};
use service::{GatewayCall, Logging, ModelRequest, Thread};

use super::mcp::{McpTool, ResponseToolEntry};
use super::schema::{CreateResponseRequest, Includable, InputItem, ItemContent, ResponseTool};
use super::schema::{InputSummaryText, ResponseContentPart};
use crate::api::openai::chat_completions::plan::{
    check_common, function_tool, named_tool_choice, reasoning_effort,
};
use crate::api::openai::error::OpenAiError;
use crate::api::openai::media;
use crate::api::openai::options::{EndpointFields, given, unserved};
use crate::api::openai::responses::encode::{
    ReasoningSettings, ResponseSettings, TextSettings, reasoning_block,
};
use crate::api::openai::signed_ids;
use crate::api::response_format::{self, Layout};

/// A planned Responses request: the call on the new input, and what the answer repeats.
#[derive(Debug)]
pub(crate) struct ResponsesCall {
    /// The call; its messages are this request's input alone (the system prompt first), the
    /// history of `previous_response_id` not yet in front.
    pub(crate) call: GatewayCall,
    /// The response this one continues.
    pub(crate) previous_response_id: Option<String>,
    /// The system prompt of this response.
    pub(crate) instructions: Option<String>,
    /// The declared tools, as the answer repeats them.
    pub(crate) tools: Vec<Value>,
    /// The tool choice, as the answer repeats it.
    pub(crate) tool_choice: Value,
    /// The other settings the answer repeats.
    pub(crate) settings: ResponseSettings,
    /// The `mcp` tools declared, each with its index in `tools`, not yet checked against the
    /// operator's servers.
    pub(crate) mcp: Vec<(usize, McpTool)>,
    /// The `mcp_approval_response` items of the input, in order: decisions about the
    /// approval requests of the response `previous_response_id` names.
    pub(crate) approvals: Vec<Approval>,
}

/// An `mcp_approval_response` input item.
#[derive(Clone, Debug)]
pub(crate) struct Approval {
    /// Where it is in the request (`input[3]`).
    pub(crate) field: String,
    /// The `mcp_approval_request` it answers.
    pub(crate) approval_request_id: String,
    /// Whether the call may run.
    pub(crate) approve: bool,
    /// Why, for a declined call (the model reads it).
    pub(crate) reason: Option<String>,
}

/// The call `request` asks for, or the first field that cannot be honoured.
pub(crate) fn response_call(request: CreateResponseRequest) -> Result<ResponsesCall, OpenAiError> {
    check_common(&request.model, request.shared.temperature)?;
    if let Some(truncation) = request.truncation.as_deref()
        && !matches!(truncation, "auto" | "disabled")
    {
        return Err(OpenAiError::invalid(
            "truncation",
            format!("`truncation` is `{truncation}`; use auto or disabled"),
        ));
    }
    let unsupported = unserved([
        ("truncation", request.truncation.as_deref() == Some("auto")),
        ("prompt", given(request.prompt.as_ref())),
        ("conversation", given(request.conversation.as_ref())),
        (
            "context_management",
            request
                .context_management
                .as_ref()
                .is_some_and(|entries| !entries.is_empty()),
        ),
        ("moderation", given(request.shared.moderation.as_ref())),
    ]);
    if let Some(summary) = request
        .reasoning
        .as_ref()
        .and_then(|reasoning| reasoning.summary.as_deref())
        && !matches!(summary, "auto" | "concise" | "detailed")
    {
        return Err(OpenAiError::invalid(
            "reasoning.summary",
            format!("`reasoning.summary` is `{summary}`; use auto, concise or detailed"),
        ));
    }
    let settings = settings(&request);
    let (mut messages, approvals) = match request.input {
        None | Some(Value::Null) => (Vec::new(), Vec::new()),
        Some(Value::String(text)) => (vec![Message::human(text)], Vec::new()),
        Some(Value::Array(items)) => input_messages(items)?,
        Some(_) => {
            return Err(OpenAiError::invalid(
                "input",
                "`input` must be a string or a list of items",
            ));
        }
    };
    let instructions = request.instructions.filter(|text| !text.is_empty());
    if let Some(instructions) = &instructions {
        match messages.first_mut() {
            Some(first) if first.role == Role::System => {
                first
                    .parts
                    .insert(0, ContentPart::text(instructions.clone()));
            }
            _ => messages.insert(0, Message::system(instructions.clone())),
        }
    }
    // Answers to approval requests are what a continuation of a paused response answers.
    if approvals.is_empty() && !messages.iter().any(|message| message.role != Role::System) {
        return Err(OpenAiError::invalid(
            "input",
            "`input` holds nothing to answer; send a message, a function call output or an \
             `mcp_approval_response`",
        ));
    }
    let mut echoed_tools = Vec::new();
    let mut tools = Vec::new();
    let mut mcp = Vec::new();
    for (index, entry) in request.tools.unwrap_or_default().into_iter().enumerate() {
        match entry {
            ResponseToolEntry::Function(tool) => {
                echoed_tools.push(echo_tool(&tool));
                tools.push(tool_spec(index, tool)?);
            }
            ResponseToolEntry::Mcp(tool) => {
                echoed_tools.push(echo_mcp_tool(&tool));
                mcp.push((index, tool));
            }
        }
    }
    let echoed_choice = request.tool_choice.clone().unwrap_or_else(|| json!("auto"));
    let (format, verbosity) = request
        .text
        .map_or((None, None), |text| (text.format, text.verbosity));
    let options = ChatOptions {
        temperature: request.shared.temperature,
        max_tokens: request.max_output_tokens,
        tool_choice: request.tool_choice.map(tool_choice).transpose()?,
        response_format: format
            .map(|format| {
                response_format::parse("text.format", format, Layout::Responses)
                    .map_err(|fault| OpenAiError::invalid(fault.field, fault.reason))
            })
            .transpose()?,
        reasoning_effort: request
            .reasoning
            .and_then(|reasoning| reasoning.effort)
            .map(|effort| reasoning_effort("reasoning.effort", &effort))
            .transpose()?,
        ..ChatOptions::default()
    };
    // The one includable that asks the model for something; the others concern OpenAI's
    // built-in tools, which the gateway does not offer.
    let logprobs = request
        .include
        .iter()
        .flatten()
        .any(|include| *include == Includable::OutputTextLogprobs);
    let own = EndpointFields {
        logprobs,
        verbosity: verbosity.map(|value| ("text.verbosity", value)),
        ..EndpointFields::default()
    };
    let options = request.shared.into_options(own, options)?;
    let logging = match request.store {
        Some(false) => Logging::Off,
        _ => Logging::On,
    };
    Ok(ResponsesCall {
        call: GatewayCall {
            model: ModelRequest::new(request.model.trim()),
            request: ChatRequest::new(messages)
                .with_tools(tools)
                .with_options(options),
            stream: request.stream.unwrap_or(false),
            include_usage: true,
            logging,
            thread: Thread::Opening,
            label: None,
            unsupported,
        },
        previous_response_id: request.previous_response_id,
        instructions,
        tools: echoed_tools,
        tool_choice: echoed_choice,
        settings,
        mcp,
        approvals,
    })
}

/// What the response object repeats of `request` beyond tools, temperature and limits: each
/// setting as given, OpenAI's default where it was left out.
fn settings(request: &CreateResponseRequest) -> ResponseSettings {
    let defaults = ResponseSettings::default();
    let shared = &request.shared;
    let text = request.text.as_ref();
    let reasoning = request.reasoning.as_ref();
    ResponseSettings {
        top_p: shared.top_p.unwrap_or(defaults.top_p),
        top_logprobs: shared.top_logprobs.unwrap_or(defaults.top_logprobs),
        text: TextSettings {
            format: text
                .and_then(|text| text.format.clone())
                .unwrap_or(defaults.text.format),
            verbosity: text
                .and_then(|text| text.verbosity.clone())
                .unwrap_or(defaults.text.verbosity),
        },
        reasoning: ReasoningSettings {
            effort: reasoning.and_then(|reasoning| reasoning.effort.clone()),
            summary: reasoning.and_then(|reasoning| {
                reasoning
                    .summary
                    .clone()
                    .or_else(|| reasoning.generate_summary.clone())
            }),
        },
        truncation: request.truncation.clone().unwrap_or(defaults.truncation),
        user: shared.user.clone(),
        safety_identifier: shared.safety_identifier.clone(),
        prompt_cache_key: shared.prompt_cache_key.clone(),
        prompt_cache_retention: shared.prompt_cache_retention.clone(),
        service_tier: shared.service_tier.clone().unwrap_or(defaults.service_tier),
        background: request.background.unwrap_or(defaults.background),
        max_tool_calls: request.max_tool_calls,
    }
}

/// Puts `history` (a stored conversation) before the new `input`: the history's own system
/// prompt gives way to this request's instructions, which a continued response does not
/// inherit. Then names the tool of every function call output.
///
/// A stored answer that ended with function calls was read back with a stand-in output for
/// each (a stored conversation must always continue); the outputs this request brings
/// replace those stand-ins.
pub(crate) fn continue_after(
    history: Vec<Message>,
    input: Vec<Message>,
) -> Result<Vec<Message>, OpenAiError> {
    // The system messages that open the input are this request's instructions; later ones
    // stay where the client put them.
    let mut input = input;
    let opening = input
        .iter()
        .take_while(|message| message.role == Role::System)
        .count();
    let system: Vec<Message> = input.drain(..opening).collect();
    let answered: Vec<&str> = input
        .iter()
        .flat_map(|message| &message.parts)
        .filter_map(|part| match part {
            ContentPart::ToolResponse(response) => Some(response.tool_call_id.as_str()),
            _ => None,
        })
        .collect();
    let history_opening = history
        .iter()
        .take_while(|message| message.role == Role::System)
        .count();
    let mut history: Vec<Message> = history.into_iter().skip(history_opening).collect();
    for message in history
        .iter_mut()
        .filter(|message| message.role == Role::Tool)
    {
        message.parts.retain(|part| {
            !matches!(part, ContentPart::ToolResponse(response)
                if response.content == chain_ast::FALLBACK_RESPONSE_CONTENT
                    && answered.contains(&response.tool_call_id.as_str()))
        });
    }
    history.retain(|message| message.role != Role::Tool || !message.parts.is_empty());
    let mut messages = system;
    messages.extend(history);
    messages.extend(input);
    name_outputs(&mut messages)?;
    Ok(messages)
}

/// Names the tool of each function call output from the call it answers, or says which
/// output answers no call.
pub(crate) fn name_outputs(messages: &mut [Message]) -> Result<(), OpenAiError> {
    let mut calls: Vec<(String, String)> = Vec::new();
    for message in messages.iter_mut() {
        for part in &mut message.parts {
            match part {
                ContentPart::ToolCall(call) => calls.push((call.id.clone(), call.name.clone())),
                ContentPart::ToolResponse(response) if response.name.is_empty() => {
                    let Some((_, name)) = calls
                        .iter()
                        .rev()
                        .find(|(id, _)| *id == response.tool_call_id)
                    else {
                        return Err(OpenAiError::invalid(
                            "input",
                            format!(
                                "a `function_call_output` answers `{}`, but no function call \
                                 before it has that `call_id`",
                                response.tool_call_id
                            ),
                        ));
                    };
                    response.name.clone_from(name);
                }
                _ => {}
            }
        }
    }
    Ok(())
}

fn input_messages(items: Vec<Value>) -> Result<(Vec<Message>, Vec<Approval>), OpenAiError> {
    let mut messages: Vec<Message> = Vec::with_capacity(items.len());
    // The model's turn being gathered: its reasoning, message and calls are separate items.
    let mut answer: Vec<ContentPart> = Vec::new();
    let mut approvals: Vec<Approval> = Vec::new();
    for (index, mut value) in items.into_iter().enumerate() {
        let field = format!("input[{index}]");
        if let Value::Object(item) = &mut value
            && !item.contains_key("type")
        {
            item.insert("type".into(), Value::String("message".into()));
        }
        let item: InputItem = serde_path_to_error::deserialize(value).map_err(|error| {
            let path = error.path().to_string();
            let field = match path.as_str() {
                "." => field.clone(),
                path => format!("{field}.{path}"),
            };
            OpenAiError::invalid(field.clone(), format!("`{field}`: {}", error.into_inner()))
        })?;
        match item {
            InputItem::Message { role, content, .. } if role == "assistant" => {
                answer.extend(text(&field, content)?.map(ContentPart::text));
            }
            InputItem::FunctionCall {
                call_id,
                name,
                arguments,
                ..
            } => {
                let (id, reasoning) = signed_ids::parse(&format!("{field}.call_id"), call_id)?;
                answer.push(ContentPart::ToolCall(ToolCall {
                    reasoning,
                    ..ToolCall::new(id, name, arguments)
                }));
            }
            InputItem::Reasoning {
                summary,
                content,
                encrypted_content,
                ..
            } => {
                let text = joined(content.unwrap_or_default());
                let text = if text.is_empty() {
                    joined(summary)
                } else {
                    text
                };
                answer.push(ContentPart::Reasoning(reasoning_block(
                    text,
                    encrypted_content,
                )));
            }
            InputItem::Message { role, content, .. } => {
                close_answer(&mut messages, &mut answer);
                let message = request_message(&field, &role, content)?;
                messages.push(message);
            }
            InputItem::McpApprovalResponse {
                approval_request_id,
                approve,
                reason,
                ..
            } => approvals.push(Approval {
                field,
                approval_request_id,
                approve,
                reason,
            }),
            InputItem::FunctionCallOutput {
                call_id, output, ..
            } => {
                close_answer(&mut messages, &mut answer);
                // The id of the call it answers, as the provider knows it.
                let (call_id, _) = signed_ids::parse(&format!("{field}.call_id"), call_id)?;
                let output = text(&field, output)?.unwrap_or_default();
                // The tool's name is filled in from its call, which may be in the stored history.
                messages.push(Message::new(
                    Role::Tool,
                    vec![ContentPart::ToolResponse(ToolResponse::new(
                        call_id,
                        String::new(),
                        output,
                    ))],
                ));
            }
        }
    }
    close_answer(&mut messages, &mut answer);
    Ok((messages, approvals))
}

/// The model's turn gathered so far, as one AI message before what follows it.
fn close_answer(messages: &mut Vec<Message>, answer: &mut Vec<ContentPart>) {
    if !answer.is_empty() {
        messages.push(Message::new(Role::Ai, std::mem::take(answer)));
    }
}

/// A user or system message.
fn request_message(field: &str, role: &str, content: ItemContent) -> Result<Message, OpenAiError> {
    match role {
        "user" => Ok(Message::new(Role::Human, parts(field, content)?)),
        // Anywhere, as OpenAI takes them: each provider's adapter places a later one
        // (Anthropic and Gemini take one system prompt).
        "system" | "developer" => Ok(Message::new(
            Role::System,
            text(field, content)?
                .map(ContentPart::text)
                .into_iter()
                .collect(),
        )),
        other => Err(OpenAiError::invalid(
            format!("{field}.role"),
            format!("`{field}.role` is `{other}`; use user, assistant, system or developer"),
        )),
    }
}

fn joined(parts: Vec<InputSummaryText>) -> String {
    parts
        .into_iter()
        .map(|part| part.text)
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// Text and images (user messages).
fn parts(field: &str, content: ItemContent) -> Result<Vec<ContentPart>, OpenAiError> {
    match content {
        ItemContent::Text(text) => Ok(vec![ContentPart::text(text)]),
        ItemContent::Parts(items) => items
            .into_iter()
            .enumerate()
            .map(|(index, part)| {
                let field = format!("{field}.content[{index}]");
                match part {
                    ResponseContentPart::InputText { text }
                    | ResponseContentPart::OutputText { text } => Ok(ContentPart::text(text)),
                    ResponseContentPart::Refusal { refusal } => Ok(ContentPart::text(refusal)),
                    ResponseContentPart::InputImage {
                        image_url: Some(url),
                        detail,
                        ..
                    } => media::image(&field, &url, detail),
                    ResponseContentPart::InputImage {
                        file_id: Some(_), ..
                    } => Err(media::file_id(&format!("{field}.file_id"))),
                    ResponseContentPart::InputImage { .. } => Err(OpenAiError::invalid(
                        field.clone(),
                        format!(
                            "`{field}` has no `image_url`; send the image as a URL or a `data:` \
                             URL"
                        ),
                    )),
                    ResponseContentPart::InputFile {
                        file_data: Some(data),
                        filename,
                        ..
                    } => media::file_data(&field, &data, filename.as_deref()),
                    ResponseContentPart::InputFile {
                        file_url: Some(url),
                        ..
                    } => Err(OpenAiError::invalid(
                        format!("{field}.file_url"),
                        format!("`{field}.file_url` `{url}` was not fetched; send `file_data`"),
                    )),
                    ResponseContentPart::InputFile {
                        file_id: Some(_), ..
                    } => Err(media::file_id(&format!("{field}.file_id"))),
                    ResponseContentPart::InputFile { .. } => Err(OpenAiError::invalid(
                        format!("{field}.file_data"),
                        format!("`{field}` has no `file_data` or `file_url`; send one"),
                    )),
                }
            })
            .collect(),
    }
}

/// Text only (assistant, system and tool output content); `None` when empty.
fn text(field: &str, content: ItemContent) -> Result<Option<String>, OpenAiError> {
    let text = match content {
        ItemContent::Text(text) => text,
        ItemContent::Parts(items) => {
            let mut text = String::new();
            for (index, part) in items.into_iter().enumerate() {
                match part {
                    ResponseContentPart::InputText { text: piece }
                    | ResponseContentPart::OutputText { text: piece }
                    | ResponseContentPart::Refusal { refusal: piece } => text.push_str(&piece),
                    ResponseContentPart::InputImage { .. }
                    | ResponseContentPart::InputFile { .. } => {
                        return Err(OpenAiError::invalid(
                            format!("{field}.content[{index}]"),
                            format!(
                                "`{field}` may hold text only; images and files go in user \
                                 messages"
                            ),
                        ));
                    }
                }
            }
            text
        }
    };
    Ok((!text.is_empty()).then_some(text))
}

fn echo_tool(tool: &ResponseTool) -> Value {
    json!({
        "type": tool.kind,
        "name": tool.name,
        "description": tool.description,
        "parameters": tool.parameters,
        "strict": tool.strict,
    })
}

/// An `mcp` tool as the answer repeats it: what the client declared, its credentials never.
fn echo_mcp_tool(tool: &McpTool) -> Value {
    json!({
        "type": "mcp",
        "server_label": tool.server_label,
        "server_url": tool.server_url,
        "server_description": tool.server_description,
        "allowed_tools": tool.allowed_tools,
        "require_approval": tool.require_approval.clone().unwrap_or_else(|| json!("always")),
        "headers": null,
    })
}

fn tool_spec(index: usize, tool: ResponseTool) -> Result<ToolSpec, OpenAiError> {
    function_tool(
        &format!("tools[{index}]"),
        &tool.kind,
        tool.name,
        tool.description,
        (tool.parameters, "parameters"),
    )
}

fn tool_choice(value: Value) -> Result<ToolChoice, OpenAiError> {
    named_tool_choice(value, "/name", r#"{"type": "function", "name": …}"#)
}

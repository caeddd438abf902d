//! [`ChatRequest`] → the Messages API request body (`POST {base}/v1/messages`).

use std::borrow::Cow;
use std::time::Duration;

use messages::ToolSpec;
use serde::Serialize;
use serde_json::Value;

use super::content::{Anchor, Block, CacheControl, Conversation, Turn};
use crate::{
    CacheBreakpoint, ChatRequest, ProviderError, ReasoningEffort, ReasoningReplay, ResponseFormat,
    ToolChoice,
};

/// The beta that lets `cache_control` take a one-hour `ttl`.
const EXTENDED_CACHE_TTL_BETA: &str = "extended-cache-ttl-2025-04-11";
/// Most breakpoints one request may carry.
const MAX_BREAKPOINTS: usize = 4;
/// Longest lifetime of the default cache (a longer [`PromptCache::ttl`](crate::PromptCache)
/// asks for the one-hour cache).
const DEFAULT_CACHE_TTL: Duration = Duration::from_secs(5 * 60);

/// The request body.
#[derive(Debug, Serialize)]
pub(super) struct Body<'a> {
    model: &'a str,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    system: Vec<Block<'a>>,
    messages: Vec<Turn<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Tool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<WireToolChoice<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    stop_sequences: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<Thinking>,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_config: Option<OutputConfig<'a>>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    stream: bool,
}

#[derive(Debug, Serialize)]
struct Tool<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: Cow<'a, Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<CacheControl>,
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireToolChoice<'a> {
    Auto,
    Any,
    None,
    Tool { name: &'a str },
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Thinking {
    Enabled { budget_tokens: u32 },
}

#[derive(Debug, Serialize)]
struct OutputConfig<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    effort: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    format: Option<OutputFormat<'a>>,
}

/// `output_config.format`: structured output, for the models that have it.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum OutputFormat<'a> {
    JsonSchema { schema: &'a Value },
}

/// The tool a model without `output_config.format` is made to call with its answer as input
/// (its calls come back to the caller as text).
pub(super) const ANSWER_TOOL: &str = "json_answer";

/// How a model takes a JSON [`ResponseFormat`](crate::ResponseFormat).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum JsonOutput {
    /// `output_config.format` (Claude 4.5 models on).
    Native,
    /// A forced call of [`ANSWER_TOOL`] whose input schema is the answer's.
    ForcedTool,
}

impl JsonOutput {
    /// How `request` asks this model for JSON, if it does: `json_object` has no native form
    /// (a format needs a schema), so it always goes through the tool.
    pub(super) fn for_request(self, request: &ChatRequest) -> Option<JsonOutput> {
        match request.options.response_format.as_ref()? {
            ResponseFormat::Text => None,
            ResponseFormat::JsonObject => Some(JsonOutput::ForcedTool),
            ResponseFormat::JsonSchema(_) => Some(self),
        }
    }
}

/// A body plus the `anthropic-beta` features it needs; serialises as the body alone.
#[derive(Debug)]
pub(super) struct Built<'a> {
    pub(super) body: Body<'a>,
    pub(super) betas: Vec<&'static str>,
}

impl Serialize for Built<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.body.serialize(serializer)
    }
}

/// Builds the body for `request` to `model`; `max_tokens` is the limit to send when the
/// request sets none (the API requires one).
///
/// - Thinking and redacted-thinking blocks go back on the assistant turns `replay` covers
///   (with thinking on, the API rejects a tool-use turn that lost its thinking, so a policy of
///   `never` suits only conversations without it).
/// - `thinking_budget` turns on extended thinking (`thinking.budget_tokens`); the API then
///   accepts only temperature 1, so a requested temperature is sent as 1.0 instead of
///   failing with a 400. A forced tool choice with thinking is left for the API to refuse.
/// - `reasoning_effort` is `output_config.effort` (`minimal` is sent as `low`, the lowest the
///   API knows); it does not turn thinking on by itself.
/// - Cache breakpoints become `cache_control` on the last tool, the last system block, or the
///   last block of the prefix ending at a message (thinking blocks cannot carry one). The API
///   takes at most four: past that, the earliest are dropped, since later breakpoints cover
///   longer prefixes.
pub(super) fn build_replaying<'a>(
    model: &'a str,
    max_tokens: u32,
    replay: ReasoningReplay,
    json: JsonOutput,
    request: &'a ChatRequest,
    stream: bool,
) -> Result<Built<'a>, ProviderError> {
    let replayed = replay.replayed(&request.messages);
    let mut conversation = Conversation::new(&request.messages, &replayed)?;
    let mut tools: Vec<Tool<'a>> = request.tools.iter().map(tool).collect();
    let mut tool_choice = request.tool_choice().map(self::tool_choice);
    let json = json.for_request(request);
    if json == Some(JsonOutput::ForcedTool) {
        // Alone, the answer tool is forced; beside the caller's tools the model must call
        // one of them, so a tool round still works and the answer still comes as the tool's
        // input.
        tool_choice = Some(if tools.is_empty() {
            WireToolChoice::Tool { name: ANSWER_TOOL }
        } else {
            WireToolChoice::Any
        });
        tools.push(answer_tool(request));
    }
    if tools.is_empty() {
        tools = tools_used(request);
        if !tools.is_empty() {
            tool_choice = Some(WireToolChoice::None);
        }
    }
    let mut betas = Vec::new();

    let anchors = anchors(request, &conversation, !tools.is_empty())?;
    if !anchors.is_empty() {
        let ttl = request.options.cache.ttl.map(|ttl| {
            if ttl > DEFAULT_CACHE_TTL {
                betas.push(EXTENDED_CACHE_TTL_BETA);
                "1h"
            } else {
                "5m"
            }
        });
        let control = CacheControl {
            kind: "ephemeral",
            ttl,
        };
        for anchor in anchors {
            match anchor {
                Anchor::Tools => {
                    if let Some(last) = tools.last_mut() {
                        last.cache_control = Some(control);
                    }
                }
                other => {
                    if let Some(block) = conversation.block_mut(other) {
                        block.set_cache_control(control);
                    }
                }
            }
        }
    }

    let thinking = request
        .options
        .thinking_budget
        .map(|budget_tokens| Thinking::Enabled { budget_tokens });
    let temperature = match (request.options.temperature, &thinking) {
        (Some(_), Some(_)) => Some(1.0),
        (temperature, _) => temperature,
    };
    let body = Body {
        model,
        max_tokens: request.options.max_tokens.unwrap_or(max_tokens),
        system: conversation.system,
        messages: conversation.turns,
        tools,
        tool_choice,
        temperature,
        stop_sequences: &request.options.stop,
        thinking,
        output_config: output_config(request, json),
        stream,
    };
    Ok(Built { body, betas })
}

/// [`build_replaying`] with every thinking block sent back, the registry's default for
/// Claude models.
#[cfg(test)]
pub(super) fn build<'a>(
    model: &'a str,
    max_tokens: u32,
    request: &'a ChatRequest,
    stream: bool,
) -> Result<Built<'a>, ProviderError> {
    build_replaying(
        model,
        max_tokens,
        ReasoningReplay::Always,
        JsonOutput::Native,
        request,
        stream,
    )
}

/// `output_config`: the effort and, for a native JSON answer, the schema.
fn output_config<'a>(
    request: &'a ChatRequest,
    json: Option<JsonOutput>,
) -> Option<OutputConfig<'a>> {
    let effort = request.options.reasoning_effort.map(|effort| match effort {
        ReasoningEffort::Minimal | ReasoningEffort::Low => "low",
        ReasoningEffort::Medium => "medium",
        ReasoningEffort::High => "high",
    });
    let format = match (json, &request.options.response_format) {
        (Some(JsonOutput::Native), Some(ResponseFormat::JsonSchema(format))) => {
            Some(OutputFormat::JsonSchema {
                schema: &format.schema,
            })
        }
        _ => None,
    };
    (effort.is_some() || format.is_some()).then_some(OutputConfig { effort, format })
}

/// The tool whose input is the answer, for models without `output_config.format`.
fn answer_tool(request: &ChatRequest) -> Tool<'_> {
    let (description, input_schema) = match &request.options.response_format {
        Some(ResponseFormat::JsonSchema(format)) => (
            format
                .description
                .as_deref()
                .unwrap_or("Give your final answer: the input of this tool is the answer."),
            Cow::Borrowed(&format.schema),
        ),
        _ => (
            "Give your final answer: the input of this tool is the answer, a JSON object.",
            Cow::Owned(serde_json::json!({"type": "object"})),
        ),
    };
    Tool {
        name: ANSWER_TOOL,
        description,
        input_schema,
        cache_control: None,
    }
}

fn tool(spec: &ToolSpec) -> Tool<'_> {
    // `input_schema` is required; a tool without parameters takes an empty object.
    let input_schema = match &spec.parameters {
        Value::Null => Cow::Owned(serde_json::json!({"type": "object", "properties": {}})),
        schema => Cow::Borrowed(schema),
    };
    Tool {
        name: &spec.name,
        description: &spec.description,
        input_schema,
        cache_control: None,
    }
}

/// The tools called in `request`'s history, declared with an open schema.
///
/// The API refuses a request whose history holds `tool_use` / `tool_result` blocks but that
/// defines no tools, which is exactly the request an agent sends when it wants a final answer
/// without tools (the tool-limit notice). Declaring the tools already used, with
/// `tool_choice: none`, keeps the history valid and still forbids new calls.
fn tools_used(request: &ChatRequest) -> Vec<Tool<'_>> {
    let mut names: Vec<&str> = Vec::new();
    for call in request
        .messages
        .iter()
        .flat_map(|message| message.tool_calls())
    {
        if !names.contains(&call.name.as_str()) {
            names.push(&call.name);
        }
    }
    names
        .into_iter()
        .map(|name| Tool {
            name,
            description: "",
            input_schema: Cow::Owned(serde_json::json!({"type": "object"})),
            cache_control: None,
        })
        .collect()
}

fn tool_choice(choice: &ToolChoice) -> WireToolChoice<'_> {
    match choice {
        ToolChoice::Auto => WireToolChoice::Auto,
        ToolChoice::None => WireToolChoice::None,
        ToolChoice::Required => WireToolChoice::Any,
        ToolChoice::Tool(name) => WireToolChoice::Tool { name },
    }
}

/// The request's cache breakpoints as distinct anchors in prompt order, at most
/// [`MAX_BREAKPOINTS`] (the latest ones).
fn anchors(
    request: &ChatRequest,
    conversation: &Conversation<'_>,
    has_tools: bool,
) -> Result<Vec<Anchor>, ProviderError> {
    let mut anchors = Vec::new();
    for breakpoint in &request.options.cache.breakpoints {
        let anchor = match *breakpoint {
            CacheBreakpoint::Tools => has_tools.then_some(Anchor::Tools),
            CacheBreakpoint::System => conversation.system.len().checked_sub(1).map(Anchor::System),
            CacheBreakpoint::Message(index) => *conversation.ends.get(index).ok_or_else(|| {
                ProviderError::config(format!(
                    "cache breakpoint after message {index}, but the request has {} messages; \
                     breakpoints index `ChatRequest::messages`",
                    request.messages.len()
                ))
            })?,
            CacheBreakpoint::LastMessage => conversation.ends.last().copied().flatten(),
        };
        anchors.extend(anchor);
    }
    anchors.sort_unstable();
    anchors.dedup();
    let excess = anchors.len().saturating_sub(MAX_BREAKPOINTS);
    anchors.drain(..excess);
    Ok(anchors)
}

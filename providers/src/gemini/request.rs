//! [`ChatRequest`] → the `generateContent` / `streamGenerateContent` JSON body.
//!
//! ```json
//! {"systemInstruction": {"parts": [{"text": "…"}]},
//!  "contents": [{"role": "user", "parts": […]}, {"role": "model", "parts": […]}, …],
//!  "tools": [{"functionDeclarations": [{"name", "description", "parameters"}]}],
//!  "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": […]}},
//!  "generationConfig": {"temperature", "maxOutputTokens", "stopSequences",
//!                       "responseMimeType": "application/json", "responseJsonSchema",
//!                       "thinkingConfig": {"thinkingBudget" | "thinkingLevel", "includeThoughts"}}}
//! ```
//!
//! The body is typed serde structs borrowing from the request; as in `parts`, fields are
//! declared in alphabetical order (of their camelCase names), so the keys go out sorted and
//! the bytes of a request stay the same from one version to the next.

use std::borrow::Cow;

use messages::{Message, Role, ToolCall};
use serde::Serialize;
use serde_json::Value;

use super::parts::{self, Part, ToolTurn};
use super::schema;
use crate::{
    ChatRequest, ModelInfo, ProviderError, ReasoningEffort, ReasoningReplay, ResponseFormat,
    ToolChoice,
};

/// What the body depends on besides the request.
pub(super) struct Target<'a> {
    pub(super) info: &'a ModelInfo,
    /// The configuration's default output limit.
    pub(super) max_tokens: Option<u32>,
    /// Whether signatures go back: the configured policy, else the registry's.
    pub(super) replay: ReasoningReplay,
}

impl Target<'_> {
    /// Whether calls of the current turn need a signature: any model but one the registry
    /// knows does not think (unknown ids are usually new, thinking, models).
    fn checks_signatures(&self) -> bool {
        !self.info.known || self.info.supports_reasoning
    }

    /// Gemini 1.x and 2.x take a thinking budget only; `thinkingLevel` is Gemini 3's.
    fn takes_budget_only(&self) -> bool {
        let id = self.id();
        id.starts_with("gemini-1") || id.starts_with("gemini-2")
    }

    /// The `thinkingLevel` for `effort`: the level itself where the model takes it, else the
    /// nearest one it does. Gemini 3 Pro takes only `low` and `high`, Gemini 3.x Pro no
    /// `minimal`; the others (Gemini 3 Flash) take all four, and a model answers 400 to a level
    /// it does not take.
    fn thinking_level(&self, effort: ReasoningEffort) -> &'static str {
        let id = self.id();
        let pro = id.starts_with("gemini-3") && id.contains("-pro");
        let first_pro = id.starts_with("gemini-3-pro");
        match effort {
            ReasoningEffort::Minimal if pro => "low",
            ReasoningEffort::Medium if first_pro => "high",
            effort => effort.as_str(),
        }
    }

    /// The model id, lowercase, without the API's `models/` prefix.
    fn id(&self) -> String {
        self.info
            .id
            .trim()
            .trim_start_matches("models/")
            .to_ascii_lowercase()
    }
}

/// A `generateContent` request body.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Body<'a> {
    contents: Vec<Content<'a>>,
    #[serde(skip_serializing_if = "GenerationConfig::is_empty")]
    generation_config: GenerationConfig<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    system_instruction: Option<SystemInstruction<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_config: Option<ToolConfig<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Tools<'a>>,
}

/// One turn of `contents`.
#[derive(Debug, Serialize)]
struct Content<'a> {
    parts: Vec<Part<'a>>,
    role: &'static str,
}

#[derive(Debug, Serialize)]
struct SystemInstruction<'a> {
    parts: Vec<SystemText<'a>>,
}

#[derive(Debug, Serialize)]
struct SystemText<'a> {
    text: Cow<'a, str>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Tools<'a> {
    function_declarations: Vec<FunctionDeclaration<'a>>,
}

#[derive(Debug, Serialize)]
struct FunctionDeclaration<'a> {
    description: &'a str,
    name: &'a str,
    /// The tool's JSON Schema converted to Gemini's `Schema`; none for a tool without
    /// parameters.
    #[serde(skip_serializing_if = "Option::is_none")]
    parameters: Option<Value>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ToolConfig<'a> {
    function_calling_config: FunctionCallingConfig<'a>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct FunctionCallingConfig<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    allowed_function_names: Option<[&'a str; 1]>,
    mode: &'static str,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct GenerationConfig<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    max_output_tokens: Option<u32>,
    /// The answer's JSON Schema, as the caller gave it (Gemini reads JSON Schema itself here,
    /// unlike the OpenAPI subset of `responseSchema`).
    #[serde(skip_serializing_if = "Option::is_none")]
    response_json_schema: Option<&'a Value>,
    /// `application/json` for a JSON answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    response_mime_type: Option<&'static str>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    stop_sequences: &'a [String],
    /// The caller's temperature, as given.
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking_config: Option<ThinkingConfig>,
}

impl GenerationConfig<'_> {
    fn is_empty(&self) -> bool {
        self.max_output_tokens.is_none()
            && self.response_mime_type.is_none()
            && self.stop_sequences.is_empty()
            && self.temperature.is_none()
            && self.thinking_config.is_none()
    }
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ThinkingConfig {
    include_thoughts: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking_budget: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking_level: Option<&'static str>,
}

/// The body for `request`.
pub(super) fn body<'a>(
    target: &Target<'_>,
    request: &'a ChatRequest,
) -> Result<Body<'a>, ProviderError> {
    let system: Vec<SystemText<'a>> = request
        .messages
        .iter()
        .filter(|m| m.role == Role::System)
        .map(|m| SystemText { text: text_of(m) })
        .collect();
    let declarations: Vec<FunctionDeclaration<'a>> = request
        .tools
        .iter()
        .map(|tool| FunctionDeclaration {
            description: &tool.description,
            name: &tool.name,
            parameters: schema::parameters(&tool.parameters),
        })
        .collect();
    let tool_config = request.tool_choice().map(|choice| {
        let (mode, allowed_function_names) = match choice {
            ToolChoice::Auto => ("AUTO", None),
            ToolChoice::None => ("NONE", None),
            ToolChoice::Required => ("ANY", None),
            ToolChoice::Tool(name) => ("ANY", Some([name.as_str()])),
        };
        ToolConfig {
            function_calling_config: FunctionCallingConfig {
                allowed_function_names,
                mode,
            },
        }
    });
    Ok(Body {
        contents: contents(target, &request.messages)?,
        generation_config: generation_config(target, request),
        system_instruction: (!system.is_empty()).then_some(SystemInstruction { parts: system }),
        tool_config,
        tools: if declarations.is_empty() {
            Vec::new()
        } else {
            vec![Tools {
                function_declarations: declarations,
            }]
        },
    })
}

/// The text parts of `message` joined with `"\n"` (as [`Message::text`]), borrowed when there
/// is only one.
fn text_of(message: &Message) -> Cow<'_, str> {
    let mut texts = message.parts.iter().filter_map(|part| part.as_text());
    match (texts.next(), texts.next()) {
        (None, _) => Cow::Borrowed(""),
        (Some(text), None) => Cow::Borrowed(text),
        _ => Cow::Owned(message.text()),
    }
}

/// `contents`: human messages are `user` turns, AI messages `model` turns, and each run of
/// tool messages one `user` turn of function responses (Gemini wants every response of a
/// parallel round in one turn). System messages went to `systemInstruction`.
fn contents<'a>(
    target: &Target<'_>,
    messages: &'a [Message],
) -> Result<Vec<Content<'a>>, ProviderError> {
    let current_turn = messages
        .iter()
        .rposition(|m| m.role == Role::Human && m.parts.iter().any(|p| p.as_text().is_some()))
        .map_or(0, |index| index + 1);
    let replayed = target.replay.replayed(messages);
    let mut contents = Vec::new();
    let mut calls: Vec<Vec<&ToolCall>> = Vec::new();
    let mut tool_messages: Vec<&Message> = Vec::new();
    for (index, message) in messages.iter().enumerate() {
        if message.role != Role::Tool && !tool_messages.is_empty() {
            push(
                &mut contents,
                "user",
                tool_turn(calls.last(), &tool_messages)?,
            );
            tool_messages.clear();
        }
        match message.role {
            Role::System => {}
            Role::Human => push(&mut contents, "user", parts::user(message)),
            Role::Ai => {
                calls.push(message.tool_calls().collect());
                let sign = index >= current_turn && target.checks_signatures();
                push(
                    &mut contents,
                    "model",
                    parts::model(message, sign, replayed[index]),
                );
            }
            Role::Tool => tool_messages.push(message),
        }
    }
    if !tool_messages.is_empty() {
        push(
            &mut contents,
            "user",
            tool_turn(calls.last(), &tool_messages)?,
        );
    }
    Ok(contents)
}

fn tool_turn<'a>(
    calls: Option<&Vec<&'a ToolCall>>,
    messages: &[&'a Message],
) -> Result<Vec<Part<'a>>, ProviderError> {
    let mut turn = ToolTurn::new(calls.map_or(&[], Vec::as_slice));
    for message in messages {
        turn.add(message)?;
    }
    Ok(turn.parts())
}

/// Appends a turn; Gemini rejects a turn without parts.
fn push<'a>(contents: &mut Vec<Content<'a>>, role: &'static str, parts: Vec<Part<'a>>) {
    if !parts.is_empty() {
        contents.push(Content { parts, role });
    }
}

fn generation_config<'a>(target: &Target<'_>, request: &'a ChatRequest) -> GenerationConfig<'a> {
    let budget = request.options.thinking_budget.or_else(|| {
        request
            .options
            .reasoning_effort
            .filter(|_| target.takes_budget_only())
            .map(effort_budget)
    });
    let thinking_config = match (budget, request.options.reasoning_effort) {
        (Some(budget), _) => Some(ThinkingConfig {
            include_thoughts: budget > 0,
            thinking_budget: Some(budget),
            thinking_level: None,
        }),
        (None, Some(effort)) => Some(ThinkingConfig {
            include_thoughts: true,
            thinking_budget: None,
            thinking_level: Some(target.thinking_level(effort)),
        }),
        (None, None) => None,
    };
    let format = request.options.response_format.as_ref();
    GenerationConfig {
        max_output_tokens: request.options.max_tokens.or(target.max_tokens),
        response_json_schema: format.and_then(ResponseFormat::schema),
        // `text/plain` is Gemini's default: a text format sends nothing.
        response_mime_type: format
            .filter(|format| format.is_json())
            .map(|_| "application/json"),
        stop_sequences: &request.options.stop,
        temperature: request.options.temperature,
        thinking_config,
    }
}

/// A reasoning effort as a Gemini 2.x thinking budget: Google's own mapping for its
/// OpenAI-compatible endpoint (low 1,024, medium 8,192, high 24,576 tokens), and for
/// `minimal` the smallest budget every 2.5 model accepts (512).
fn effort_budget(effort: ReasoningEffort) -> u32 {
    match effort {
        ReasoningEffort::Minimal => 512,
        ReasoningEffort::Low => 1_024,
        ReasoningEffort::Medium => 8_192,
        ReasoningEffort::High => 24_576,
    }
}

#[cfg(test)]
mod tests {
    use messages::ContentPart;
    use serde_json::json;

    use super::*;
    use crate::{ChatOptions, Provider};

    /// Keys go out sorted, as the map-built bodies sent them: the bytes of a request do not
    /// depend on how the body was built.
    #[test]
    fn keys_are_sent_sorted() {
        let info = ModelInfo::lookup(Provider::Google, "gemini-2.5-flash");
        let target = Target {
            info: &info,
            max_tokens: Some(10),
            replay: ReasoningReplay::Always,
        };
        let mut call = ToolCall::new("call_1", "f", "{}");
        call.reasoning = Some(messages::Reasoning::signature("sig"));
        let request = ChatRequest {
            tools: vec![messages::ToolSpec {
                name: "f".into(),
                description: "F.".into(),
                parameters: json!({"type": "object", "properties": {"a": {"type": "string"}}}),
            }],
            options: ChatOptions {
                temperature: Some(0.5),
                stop: vec!["x".into()],
                tool_choice: Some(ToolChoice::Tool("f".into())),
                reasoning_effort: Some(ReasoningEffort::Low),
                ..ChatOptions::default()
            },
            ..ChatRequest::new(vec![
                Message::system("s"),
                Message::human("hi"),
                Message::new(Role::Ai, vec![ContentPart::ToolCall(call)]),
                Message::tool_response("call_1", "f", "done"),
            ])
        };
        let body = body(&target, &request).expect("builds");
        let typed = serde_json::to_string(&body).expect("encodes");
        let sorted = serde_json::to_value(&body).expect("encodes").to_string();
        assert_eq!(typed, sorted);
    }
}

//! [`ChatRequest`] → the `generateContent` / `streamGenerateContent` JSON body.
//!
//! ```json
//! {"systemInstruction": {"parts": [{"text": "…"}]},
//!  "contents": [{"role": "user", "parts": […]}, {"role": "model", "parts": […]}, …],
//!  "tools": [{"functionDeclarations": [{"name", "description", "parameters"}]}],
//!  "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": […]}},
//!  "generationConfig": {"temperature", "maxOutputTokens", "stopSequences",
//!                       "thinkingConfig": {"thinkingBudget" | "thinkingLevel", "includeThoughts"}}}
//! ```

use messages::{Message, Role, ToolCall};
use serde_json::{Map, Value, json};

use super::parts::{self, ToolTurn};
use super::schema;
use crate::{ChatRequest, ModelInfo, ProviderError, ReasoningEffort, ToolChoice};

/// What the body depends on besides the request.
pub(super) struct Target<'a> {
    pub(super) info: &'a ModelInfo,
    /// The configuration's default output limit.
    pub(super) max_tokens: Option<u32>,
}

impl Target<'_> {
    /// Whether calls of the current turn need a signature: any model but one the registry
    /// knows does not think (unknown ids are usually new, thinking, models).
    fn checks_signatures(&self) -> bool {
        !self.info.known || self.info.supports_reasoning
    }

    /// Gemini 1.x and 2.x take a thinking budget only; `thinkingLevel` is Gemini 3's.
    fn takes_budget_only(&self) -> bool {
        let id = self.info.id.trim().trim_start_matches("models/");
        id.starts_with("gemini-1") || id.starts_with("gemini-2")
    }
}

/// The JSON body for `request`.
pub(super) fn body(target: &Target<'_>, request: &ChatRequest) -> Result<Value, ProviderError> {
    let mut body = Map::new();
    let system: Vec<Value> = request
        .messages
        .iter()
        .filter(|m| m.role == Role::System)
        .map(|m| json!({"text": m.text()}))
        .collect();
    if !system.is_empty() {
        body.insert("systemInstruction".into(), json!({ "parts": system }));
    }
    body.insert(
        "contents".into(),
        contents(target, &request.messages)?.into(),
    );
    if !request.tools.is_empty() {
        let declarations: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| {
                let mut declaration = json!({"name": tool.name, "description": tool.description});
                if let Some(parameters) = schema::parameters(&tool.parameters) {
                    declaration["parameters"] = parameters;
                }
                declaration
            })
            .collect();
        body.insert(
            "tools".into(),
            json!([{ "functionDeclarations": declarations }]),
        );
    }
    if let Some(choice) = &request.options.tool_choice {
        let config = match choice {
            ToolChoice::Auto => json!({"mode": "AUTO"}),
            ToolChoice::None => json!({"mode": "NONE"}),
            ToolChoice::Required => json!({"mode": "ANY"}),
            ToolChoice::Tool(name) => json!({"mode": "ANY", "allowedFunctionNames": [name]}),
        };
        body.insert(
            "toolConfig".into(),
            json!({ "functionCallingConfig": config }),
        );
    }
    let generation = generation_config(target, request);
    if !generation.is_empty() {
        body.insert("generationConfig".into(), generation.into());
    }
    Ok(Value::Object(body))
}

/// `contents`: human messages are `user` turns, AI messages `model` turns, and each run of
/// tool messages one `user` turn of function responses (Gemini wants every response of a
/// parallel round in one turn). System messages went to `systemInstruction`.
fn contents(target: &Target<'_>, messages: &[Message]) -> Result<Vec<Value>, ProviderError> {
    let current_turn = messages
        .iter()
        .rposition(|m| m.role == Role::Human && m.parts.iter().any(|p| p.as_text().is_some()))
        .map_or(0, |index| index + 1);
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
                push(&mut contents, "model", parts::model(message, sign));
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

fn tool_turn(
    calls: Option<&Vec<&ToolCall>>,
    messages: &[&Message],
) -> Result<Vec<Value>, ProviderError> {
    let mut turn = ToolTurn::new(calls.map_or(&[], Vec::as_slice));
    for message in messages {
        turn.add(message)?;
    }
    Ok(turn.parts())
}

/// Appends a turn; Gemini rejects a turn without parts.
fn push(contents: &mut Vec<Value>, role: &str, parts: Vec<Value>) {
    if !parts.is_empty() {
        contents.push(json!({"role": role, "parts": parts}));
    }
}

fn generation_config(target: &Target<'_>, request: &ChatRequest) -> Map<String, Value> {
    let mut config = Map::new();
    if let Some(temperature) = request.options.temperature {
        config.insert("temperature".into(), temperature.into());
    }
    if let Some(max) = request.options.max_tokens.or(target.max_tokens) {
        config.insert("maxOutputTokens".into(), max.into());
    }
    if !request.options.stop.is_empty() {
        config.insert("stopSequences".into(), json!(request.options.stop));
    }
    let budget = request.options.thinking_budget.or_else(|| {
        request
            .options
            .reasoning_effort
            .filter(|_| target.takes_budget_only())
            .map(effort_budget)
    });
    let thinking = match (budget, request.options.reasoning_effort) {
        (Some(budget), _) => Some(json!({"thinkingBudget": budget, "includeThoughts": budget > 0})),
        (None, Some(effort)) => {
            Some(json!({"thinkingLevel": effort.as_str(), "includeThoughts": true}))
        }
        (None, None) => None,
    };
    if let Some(thinking) = thinking {
        config.insert("thinkingConfig".into(), thinking);
    }
    config
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

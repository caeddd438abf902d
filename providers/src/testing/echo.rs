//! [`EchoModel`]: the `echo` debug model.

use std::collections::BTreeSet;

use async_trait::async_trait;
use messages::{ContentPart, Message, Role, ToolCall};
use serde_json::{Value, json};

use super::{example_for_schema, instance_with_text, replay, word_deltas};
use crate::assemble::{Chunk, UsageUpdate};
use crate::{
    ChatModel, ChatRequest, ChatResponse, ECHO_MODEL_ID, EventStream, ModelInfo, Provider,
    ProviderError, ResponseFormat, ToolChoice, collect,
};

/// The `echo` debug model: answers with what it was sent, like simonw's `llm-echo`. No key,
/// no network.
///
/// - The answer is pretty JSON with `prompt` (the last human message), `system`, `previous`
///   (earlier human messages), `attachments`, `tool_results` (tool responses since the last
///   human message) and `options` (temperature, max tokens, stop, tool names).
/// - Offered tools (and `tool_choice` not `None`), it first calls every tool not yet called
///   since the last human message, all in one turn, with arguments built by
///   [`example_for_schema`]; ids are `echo_call_N`, unique in the conversation. Once every tool
///   was called it answers.
/// - Asked for JSON valid for a schema ([`ResponseFormat::JsonSchema`]), it answers (once
///   every tool was called) with a compact instance of the schema built by
///   [`instance_with_text`]: free strings hold the prompt, numbers 0 or the bound nearest it, enums
///   their first value, arrays one item, every property present. Asked for any JSON object
///   ([`ResponseFormat::JsonObject`]), it answers an instance of the first JSON Schema the
///   system prompt or the last prompt holds (clients in a "JSON mode" put the schema there),
///   and otherwise the usual report, which is one.
/// - A prompt that is a JSON object `{"raw": "text"}` is answered with `text` verbatim; one
///   with `{"tool_calls": [{"name": …, "arguments": {…}}]}` makes it call exactly those tools.
/// - The same object may also set, for trying out interruptions: `"reasoning": "text"`
///   (streamed as reasoning first), `"delay_ms": N` (a pause before every streamed event
///   after the first, at most 10 s) and `"error": "message"` (the stream fails with that
///   message after the answer's events instead of ending).
/// - Usage counts whitespace-separated words; text streams word by word.
///
/// ```
/// use providers::testing::EchoModel;
/// use providers::{ChatModel, ChatRequest, Message};
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let answer = EchoModel::new()
///     .complete(ChatRequest::new(vec![Message::human(r#"{"raw": "pong"}"#)]))
///     .await?;
/// assert_eq!(answer.message.text(), "pong");
/// # Ok::<(), providers::ProviderError>(())
/// # }).unwrap();
/// ```
#[derive(Debug)]
pub struct EchoModel {
    info: ModelInfo,
}

impl EchoModel {
    /// The echo model.
    pub fn new() -> Self {
        EchoModel {
            info: ModelInfo {
                known: true,
                ..ModelInfo::unknown(Provider::OpenAi, ECHO_MODEL_ID)
            },
        }
    }
}

impl Default for EchoModel {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl ChatModel for EchoModel {
    fn info(&self) -> &ModelInfo {
        &self.info
    }

    async fn complete(&self, request: ChatRequest) -> Result<ChatResponse, ProviderError> {
        collect(self.stream(request).await?).await
    }

    async fn stream(&self, request: ChatRequest) -> Result<EventStream, ProviderError> {
        self.stream_borrowed(&request).await
    }

    async fn stream_borrowed(&self, request: &ChatRequest) -> Result<EventStream, ProviderError> {
        let knobs = Knobs::of(request);
        let mut chunks: Vec<Chunk> = knobs
            .reasoning
            .iter()
            .flat_map(|text| word_deltas(text))
            .map(|text| Chunk::ReasoningDelta { key: 0, text })
            .collect();
        chunks.extend(answer(request));
        let input_words: usize = request.messages.iter().map(|m| words(&m.text())).sum();
        let output_words: usize = chunks
            .iter()
            .map(|chunk| match chunk {
                Chunk::Text(text) => words(text),
                _ => 0,
            })
            .sum();
        chunks.push(Chunk::Usage(UsageUpdate {
            input_tokens: Some(input_words as u64),
            output_tokens: Some(output_words as u64),
            ..Default::default()
        }));
        let failure = knobs.error.map(|message| ProviderError::Stream {
            provider: Provider::OpenAi,
            error_type: Some("echo_error".to_owned()),
            message,
            retryable: false,
        });
        Ok(replay(chunks, knobs.delay, failure))
    }
}

/// What the last human prompt asks of the stream itself.
#[derive(Default)]
struct Knobs {
    reasoning: Option<String>,
    delay: std::time::Duration,
    error: Option<String>,
}

impl Knobs {
    /// Longest pause between events.
    const MAX_DELAY_MS: u64 = 10_000;

    fn of(request: &ChatRequest) -> Knobs {
        let prompt = request
            .messages
            .iter()
            .rfind(|m| m.role == Role::Human)
            .map(Message::text);
        let Some(Value::Object(object)) = prompt.and_then(|p| serde_json::from_str(&p).ok()) else {
            return Knobs::default();
        };
        let text = |key: &str| object.get(key).and_then(Value::as_str).map(str::to_owned);
        Knobs {
            reasoning: text("reasoning"),
            delay: std::time::Duration::from_millis(
                object
                    .get("delay_ms")
                    .and_then(Value::as_u64)
                    .unwrap_or(0)
                    .min(Self::MAX_DELAY_MS),
            ),
            error: text("error"),
        }
    }
}

fn words(text: &str) -> usize {
    text.split_whitespace().count()
}

fn answer(request: &ChatRequest) -> Vec<Chunk> {
    let messages = &request.messages;
    let last_human = messages.iter().rposition(|m| m.role == Role::Human);
    let prompt = last_human.map(|i| messages[i].text()).unwrap_or_default();
    let since_prompt = &messages[last_human.map_or(0, |i| i + 1)..];
    let prompt_json: Option<Value> = serde_json::from_str(&prompt).ok();

    if let Some(raw) = prompt_json
        .as_ref()
        .and_then(|v| v.get("raw"))
        .and_then(Value::as_str)
    {
        return text_chunks(raw);
    }
    let called: BTreeSet<&str> = since_prompt
        .iter()
        .flat_map(Message::tool_calls)
        .map(|call| call.name.as_str())
        .collect();
    let already_called_any = !called.is_empty();
    let mut calls: Vec<(String, String)> = Vec::new();
    if let Some(requested) = prompt_json
        .as_ref()
        .and_then(|v| v.get("tool_calls"))
        .and_then(Value::as_array)
    {
        if !already_called_any {
            for call in requested {
                let name = call.get("name").and_then(Value::as_str).unwrap_or_default();
                let arguments = call.get("arguments").cloned().unwrap_or_else(|| json!({}));
                calls.push((name.to_owned(), arguments.to_string()));
            }
        }
    } else if request.options.tool_choice != Some(ToolChoice::None) {
        for tool in &request.tools {
            let wanted = match &request.options.tool_choice {
                Some(ToolChoice::Tool(name)) => *name == tool.name,
                _ => true,
            };
            if wanted && !called.contains(tool.name.as_str()) {
                calls.push((
                    tool.name.clone(),
                    example_for_schema(&tool.parameters).to_string(),
                ));
            }
        }
    }
    if !calls.is_empty() {
        let earlier = messages.iter().flat_map(Message::tool_calls).count();
        return calls
            .into_iter()
            .enumerate()
            .map(|(i, (name, arguments))| {
                Chunk::ToolCall(Box::new(ToolCall::new(
                    format!("echo_call_{}", earlier + i + 1),
                    name,
                    arguments,
                )))
            })
            .collect();
    }
    if let Some(schema) = request
        .options
        .response_format
        .as_ref()
        .and_then(ResponseFormat::schema)
    {
        let instance = instance_with_text(schema, &prompt);
        return text_chunks(&instance.to_string());
    }
    if request.options.response_format == Some(ResponseFormat::JsonObject) {
        let mut texts = messages
            .iter()
            .filter(|m| m.role == Role::System)
            .chain(last_human.map(|i| &messages[i]))
            .map(Message::text);
        if let Some(schema) = texts.find_map(|text| schema_in(&text)) {
            return text_chunks(&instance_with_text(&schema, &prompt).to_string());
        }
    }
    let report = json!({
        "prompt": prompt,
        "system": messages.iter().filter(|m| m.role == Role::System).map(Message::text).collect::<Vec<_>>().join("\n"),
        "previous": messages[..last_human.unwrap_or(0)]
            .iter()
            .filter(|m| m.role == Role::Human)
            .map(|m| json!({"prompt": m.text()}))
            .collect::<Vec<_>>(),
        "attachments": last_human
            .map(|i| messages[i].parts.iter().filter_map(attachment).collect::<Vec<_>>())
            .unwrap_or_default(),
        "tool_results": since_prompt
            .iter()
            .flat_map(Message::tool_responses)
            .map(|r| json!({"tool_call_id": r.tool_call_id, "name": r.name, "output": r.content}))
            .collect::<Vec<_>>(),
        "options": {
            "temperature": request.options.temperature,
            "max_tokens": request.options.max_tokens,
            "stop": request.options.stop,
            "tools": request.tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
        },
    });
    let text = serde_json::to_string_pretty(&report).unwrap_or_else(|_| report.to_string());
    text_chunks(&text)
}

/// The first JSON object in `text` that looks like a JSON Schema of an object (it has
/// `properties`). Each `{` starts at most one parse and a parsed value is skipped whole, so a
/// long text costs a bounded number of parses.
fn schema_in(text: &str) -> Option<Value> {
    const MOST_ATTEMPTS: usize = 256;
    let mut from = 0;
    for _ in 0..MOST_ATTEMPTS {
        let start = from + text.get(from..)?.find('{')?;
        let mut values = serde_json::Deserializer::from_str(&text[start..]).into_iter::<Value>();
        match values.next() {
            Some(Ok(value)) if value.get("properties").is_some_and(Value::is_object) => {
                return Some(value);
            }
            Some(Ok(_)) => from = start + values.byte_offset(),
            _ => from = start + 1,
        }
    }
    None
}

fn attachment(part: &ContentPart) -> Option<Value> {
    match part {
        ContentPart::ImageUrl { url, .. } => Some(json!({"type": "image_url", "url": url})),
        ContentPart::Binary { mime_type, data } => {
            Some(json!({"type": mime_type, "bytes": data.len()}))
        }
        _ => None,
    }
}

fn text_chunks(text: &str) -> Vec<Chunk> {
    word_deltas(text).into_iter().map(Chunk::Text).collect()
}

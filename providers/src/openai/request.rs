//! Chat Completions request bodies (`POST {base}/chat/completions`).

use messages::{ContentPart, Message, Role};
use serde_json::{Map, Value, json};

use super::wire::{data_url, file_name};
use super::{Target, common_options};
use crate::{ChatRequest, ProviderError, ToolChoice};

/// The JSON body for `request`.
pub(crate) fn body(
    target: &Target<'_>,
    request: &ChatRequest,
    stream: bool,
) -> Result<Value, ProviderError> {
    let echo_reasoning = target.echo_reasoning_content(&request.messages);
    let mut messages = Vec::new();
    let mut pending_media: Vec<Value> = Vec::new();
    for message in &request.messages {
        if message.role != Role::Tool {
            flush_media(&mut messages, &mut pending_media);
        }
        match message.role {
            Role::System => messages.push(json!({"role": "system", "content": message.text()})),
            Role::Human => messages.push(json!({"role": "user", "content": user_content(message)})),
            Role::Ai => messages.push(assistant(message, echo_reasoning)),
            Role::Tool => {
                for response in message.tool_responses() {
                    messages.push(json!({
                        "role": "tool",
                        "tool_call_id": response.tool_call_id,
                        "content": response.content,
                    }));
                }
                // Chat tool messages take only text: media goes in a user message right after
                // the run of tool messages (a user message between them would break the
                // assistant → tool pairing).
                pending_media.extend(message.parts.iter().filter_map(media));
            }
        }
    }
    flush_media(&mut messages, &mut pending_media);

    let mut body = Map::new();
    body.insert("model".into(), target.model.into());
    body.insert("messages".into(), Value::Array(messages));
    if !request.tools.is_empty() {
        let tools = request
            .tools
            .iter()
            .map(|tool| {
                json!({"type": "function", "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.parameters,
                }})
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    if let Some(choice) = &request.options.tool_choice {
        let choice = match choice {
            ToolChoice::Auto => json!("auto"),
            ToolChoice::None => json!("none"),
            ToolChoice::Required => json!("required"),
            ToolChoice::Tool(name) => json!({"type": "function", "function": {"name": name}}),
        };
        body.insert("tool_choice".into(), choice);
    }
    // OpenAI's reasoning models reject the legacy `max_tokens`; compatible servers (DeepSeek,
    // vLLM, Ollama, …) implement only `max_tokens`.
    let max_tokens_key = if target.official {
        "max_completion_tokens"
    } else {
        "max_tokens"
    };
    common_options(target, request, max_tokens_key, &mut body);
    if !request.options.stop.is_empty() {
        body.insert("stop".into(), json!(request.options.stop));
    }
    if let Some(effort) = request.options.reasoning_effort {
        body.insert("reasoning_effort".into(), effort.as_str().into());
    }
    if stream {
        body.insert("stream".into(), true.into());
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    Ok(Value::Object(body))
}

fn flush_media(messages: &mut Vec<Value>, media: &mut Vec<Value>) {
    if !media.is_empty() {
        messages.push(json!({"role": "user", "content": std::mem::take(media)}));
    }
}

/// A user message's content: a plain string when it is only text, else typed parts.
fn user_content(message: &Message) -> Value {
    if message.parts.iter().all(|part| part.as_text().is_some()) {
        return message.text().into();
    }
    let parts = message
        .parts
        .iter()
        .filter_map(|part| match part {
            ContentPart::Text { text, .. } => Some(json!({"type": "text", "text": text})),
            other => media(other),
        })
        .collect();
    Value::Array(parts)
}

/// A media part as a Chat content part.
fn media(part: &ContentPart) -> Option<Value> {
    match part {
        ContentPart::ImageUrl { url, detail } => {
            let mut image = json!({"url": url});
            if let Some(detail) = detail {
                image["detail"] = detail.as_str().into();
            }
            Some(json!({"type": "image_url", "image_url": image}))
        }
        ContentPart::Binary { mime_type, data } if mime_type.starts_with("image/") => {
            Some(json!({"type": "image_url", "image_url": {"url": data_url(mime_type, data)}}))
        }
        ContentPart::Binary { mime_type, data } if mime_type.starts_with("audio/") => {
            let format = mime_type
                .trim_start_matches("audio/")
                .replace("mpeg", "mp3");
            Some(json!({"type": "input_audio", "input_audio": {
                "data": base64_of(data),
                "format": format,
            }}))
        }
        ContentPart::Binary { mime_type, data } => Some(json!({"type": "file", "file": {
            "filename": file_name(mime_type),
            "file_data": data_url(mime_type, data),
        }})),
        _ => None,
    }
}

fn base64_of(data: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(data)
}

/// An assistant message: text, tool calls and — for servers that need it back —
/// `reasoning_content`. Responses reasoning items and signatures have no Chat form.
fn assistant(message: &Message, echo_reasoning: bool) -> Value {
    let text = message.text();
    let calls: Vec<Value> = message
        .tool_calls()
        .map(|call| {
            json!({"id": call.id, "type": "function", "function": {
                "name": call.name,
                "arguments": call.arguments,
            }})
        })
        .collect();
    let mut out = Map::new();
    out.insert("role".into(), "assistant".into());
    out.insert(
        "content".into(),
        if text.is_empty() && !calls.is_empty() {
            Value::Null
        } else {
            text.into()
        },
    );
    if echo_reasoning && !calls.is_empty() {
        let reasoning: String = message
            .parts
            .iter()
            .filter_map(|part| match part {
                ContentPart::Reasoning(r) => Some(r.text.as_str()),
                _ => None,
            })
            .collect();
        out.insert("reasoning_content".into(), reasoning.into());
    }
    if !calls.is_empty() {
        out.insert("tool_calls".into(), Value::Array(calls));
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ChatOptions;
    use crate::{ModelInfo, Provider};

    #[test]
    fn output_limit_is_named_for_the_server() {
        let info = ModelInfo::lookup(Provider::OpenAi, "o3");
        let request = ChatRequest {
            options: ChatOptions {
                max_tokens: Some(100),
                ..ChatOptions::default()
            },
            ..ChatRequest::new(vec![Message::human("hi")])
        };
        for (official, key, other) in [
            (true, "max_completion_tokens", "max_tokens"),
            (false, "max_tokens", "max_completion_tokens"),
        ] {
            let target = Target {
                model: "o3",
                info: &info,
                max_tokens: None,
                official,
            };
            let body = body(&target, &request, false).expect("builds");
            assert_eq!(body[key], 100);
            assert!(body.get(other).is_none());
        }
    }
}

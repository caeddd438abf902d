//! Responses API request bodies (`POST {base}/responses`, `api_format = "responses"`).
//!
//! Requests are stateless (`store: false`): the conversation is sent whole every time, and
//! reasoning items come back from [`Reasoning`] parts with their id, summary and
//! `encrypted_content` unchanged, right before the items that followed them.

use messages::{ContentPart, Message, Reasoning, Role};
use serde_json::{Map, Value, json};

use crate::openai::wire::{data_url, file_name};
use crate::openai::{Target, common_options};
use crate::{ChatRequest, Provider, ProviderError, ToolChoice};

/// The JSON body for `request`.
pub(in crate::openai) fn body(
    target: &Target<'_>,
    request: &ChatRequest,
    stream: bool,
) -> Result<Value, ProviderError> {
    if !request.options.stop.is_empty() {
        return Err(ProviderError::Unsupported {
            provider: Provider::OpenAi,
            what: "stop sequences: the Responses API has no `stop`; use the Chat Completions API (api_format `chat`)".into(),
        });
    }
    let mut instructions = Vec::new();
    let mut input = Vec::new();
    let mut pending_media: Vec<Value> = Vec::new();
    for message in &request.messages {
        if message.role != Role::Tool && !pending_media.is_empty() {
            input.push(json!({"role": "user", "content": std::mem::take(&mut pending_media)}));
        }
        match message.role {
            Role::System => instructions.push(message.text()),
            Role::Human => input.push(json!({"role": "user", "content": user_content(message)})),
            Role::Ai => assistant_items(message, &mut input),
            Role::Tool => {
                for response in message.tool_responses() {
                    input.push(json!({
                        "type": "function_call_output",
                        "call_id": response.tool_call_id,
                        "output": response.content,
                    }));
                }
                pending_media.extend(message.parts.iter().filter_map(media));
            }
        }
    }
    if !pending_media.is_empty() {
        input.push(json!({"role": "user", "content": pending_media}));
    }

    let mut body = Map::new();
    body.insert("model".into(), target.model.into());
    if !instructions.is_empty() {
        body.insert("instructions".into(), instructions.join("\n\n").into());
    }
    body.insert("input".into(), Value::Array(input));
    if !request.tools.is_empty() {
        let tools = request
            .tools
            .iter()
            .map(|tool| {
                json!({
                    "type": "function",
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.parameters,
                })
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    if let Some(choice) = &request.options.tool_choice {
        let choice = match choice {
            ToolChoice::Auto => json!("auto"),
            ToolChoice::None => json!("none"),
            ToolChoice::Required => json!("required"),
            ToolChoice::Tool(name) => json!({"type": "function", "name": name}),
        };
        body.insert("tool_choice".into(), choice);
    }
    common_options(target, request, "max_output_tokens", &mut body);
    if let Some(effort) = request.options.reasoning_effort {
        body.insert("reasoning".into(), json!({"effort": effort.as_str()}));
    }
    // Reasoning items can only come back if the server returns them encrypted; models
    // without reasoning reject the include.
    if target.info.supports_reasoning {
        body.insert("include".into(), json!(["reasoning.encrypted_content"]));
    }
    body.insert("store".into(), false.into());
    body.insert("stream".into(), stream.into());
    Ok(Value::Object(body))
}

fn user_content(message: &Message) -> Value {
    if message.parts.iter().all(|part| part.as_text().is_some()) {
        return message.text().into();
    }
    let parts = message
        .parts
        .iter()
        .filter_map(|part| match part {
            ContentPart::Text { text, .. } => Some(json!({"type": "input_text", "text": text})),
            other => media(other),
        })
        .collect();
    Value::Array(parts)
}

fn media(part: &ContentPart) -> Option<Value> {
    match part {
        ContentPart::ImageUrl { url, detail } => {
            let mut image = json!({"type": "input_image", "image_url": url});
            if let Some(detail) = detail {
                image["detail"] = detail.as_str().into();
            }
            Some(image)
        }
        ContentPart::Binary { mime_type, data } if mime_type.starts_with("image/") => {
            Some(json!({"type": "input_image", "image_url": data_url(mime_type, data)}))
        }
        ContentPart::Binary { mime_type, data } => Some(json!({
            "type": "input_file",
            "filename": file_name(mime_type),
            "file_data": data_url(mime_type, data),
        })),
        _ => None,
    }
}

/// An AI message as input items, in the order of its parts.
fn assistant_items(message: &Message, input: &mut Vec<Value>) {
    for part in &message.parts {
        match part {
            ContentPart::Reasoning(reasoning) => {
                if let Some(item) = reasoning_item(reasoning) {
                    input.push(item);
                }
            }
            ContentPart::Text { text, .. } if !text.is_empty() => input.push(json!({
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": text}],
            })),
            ContentPart::ToolCall(call) => input.push(json!({
                "type": "function_call",
                "call_id": call.id,
                "name": call.name,
                "arguments": call.arguments,
            })),
            _ => {}
        }
    }
}

/// A reasoning item exactly as received. Reasoning without an item id came from another
/// provider (an Anthropic thinking block, DeepSeek text) and has no Responses form.
fn reasoning_item(reasoning: &Reasoning) -> Option<Value> {
    let id = reasoning.id.as_ref()?;
    // The summary parts were joined into one text (their own text contains blank lines, so
    // they cannot be split again); one part carries all of it. The server restores the
    // reasoning from `encrypted_content`, not from the summary.
    let summary: Vec<Value> = if reasoning.text.is_empty() {
        Vec::new()
    } else {
        vec![json!({"type": "summary_text", "text": reasoning.text})]
    };
    let mut item = json!({"type": "reasoning", "id": id, "summary": summary});
    if let Some(encrypted) = &reasoning.encrypted {
        item["encrypted_content"] = encrypted.as_str().into();
    }
    Some(item)
}

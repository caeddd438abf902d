//! Responses API request bodies (`POST {base}/responses`, `api_format = "responses"`).
//!
//! Requests are stateless (`store: false`): the conversation is sent whole every time, and
//! reasoning items come back from [`Reasoning`] parts with their id, summary and
//! `encrypted_content` unchanged, right before the items that followed them — on the AI
//! messages the target's [`ReasoningReplay`](crate::ReasoningReplay) policy covers. An item
//! without `encrypted_content` is left out: without `store` it cannot be referred to by id.
//!
//! As in the Chat body, every struct declares its fields in alphabetical order, so the keys go
//! out sorted and the bytes of a request stay the same from one version to the next.

use std::borrow::Cow;

use messages::{ContentPart, Message, Reasoning, Role};
use serde::Serialize;
use serde_json::Value;

use crate::openai::wire::{data_url, file_name};
use crate::openai::{Target, common_options};
use crate::{ChatRequest, Provider, ProviderError, ResponseFormat, ToolChoice};

/// A Responses API request body.
#[derive(Debug, Serialize)]
pub(in crate::openai) struct ResponsesBody<'a> {
    /// `["reasoning.encrypted_content"]` for reasoning models.
    #[serde(skip_serializing_if = "<[&str]>::is_empty")]
    include: &'static [&'static str],
    input: Vec<Item<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    instructions: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_output_tokens: Option<u32>,
    model: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_cache_key: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning: Option<ReasoningOptions>,
    store: bool,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    /// `text.format`: the shape the answer must take.
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<TextOptions<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<WireToolChoice<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Tool<'a>>,
}

/// The `text` object. [`ResponseFormat`] serialises as the API's `text.format`.
#[derive(Debug, Serialize)]
struct TextOptions<'a> {
    format: &'a ResponseFormat,
}

#[derive(Debug, Serialize)]
struct ReasoningOptions {
    effort: &'static str,
}

/// One `input` item.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum Item<'a> {
    /// A user message.
    User {
        content: Content<'a>,
        role: &'static str,
    },
    /// An assistant text message.
    Message {
        content: [OutputText<'a>; 1],
        role: &'static str,
        #[serde(rename = "type")]
        kind: &'static str,
    },
    FunctionCall {
        arguments: &'a str,
        call_id: &'a str,
        name: &'a str,
        #[serde(rename = "type")]
        kind: &'static str,
    },
    FunctionCallOutput {
        call_id: &'a str,
        output: &'a str,
        #[serde(rename = "type")]
        kind: &'static str,
    },
    Reasoning {
        #[serde(skip_serializing_if = "Option::is_none")]
        encrypted_content: Option<&'a str>,
        id: &'a str,
        summary: Vec<SummaryText<'a>>,
        #[serde(rename = "type")]
        kind: &'static str,
    },
}

/// A user message's content: a plain string when it is only text, else typed parts.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum Content<'a> {
    Text(Cow<'a, str>),
    Parts(Vec<Part<'a>>),
}

/// An `input_text`, `input_image` or `input_file` part.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum Part<'a> {
    Text {
        text: &'a str,
        #[serde(rename = "type")]
        kind: &'static str,
    },
    Image {
        #[serde(skip_serializing_if = "Option::is_none")]
        detail: Option<&'a str>,
        image_url: Cow<'a, str>,
        #[serde(rename = "type")]
        kind: &'static str,
    },
    File {
        file_data: String,
        filename: String,
        #[serde(rename = "type")]
        kind: &'static str,
    },
}

#[derive(Debug, Serialize)]
struct OutputText<'a> {
    text: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
}

#[derive(Debug, Serialize)]
struct SummaryText<'a> {
    text: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
}

#[derive(Debug, Serialize)]
struct Tool<'a> {
    description: &'a str,
    name: &'a str,
    parameters: &'a Value,
    #[serde(rename = "type")]
    kind: &'static str,
}

/// `tool_choice`: a mode, or the one function to call.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum WireToolChoice<'a> {
    Mode(&'static str),
    Function {
        name: &'a str,
        #[serde(rename = "type")]
        kind: &'static str,
    },
}

/// The body for `request` to `target`; `stream` asks for server-sent events.
pub(in crate::openai) fn body<'a>(
    target: &Target<'a>,
    request: &'a ChatRequest,
    stream: bool,
) -> Result<ResponsesBody<'a>, ProviderError> {
    if !request.options.stop.is_empty() {
        return Err(ProviderError::Unsupported {
            provider: Provider::OpenAi,
            what: "stop sequences: the Responses API has no `stop`; use the Chat Completions API (api_format `chat`)".into(),
        });
    }
    let replayed = target.replay.replayed(&request.messages);
    let mut instructions = Vec::new();
    let mut input = Vec::new();
    let mut pending_media: Vec<Part<'a>> = Vec::new();
    for (message, replayed) in request.messages.iter().zip(replayed) {
        if message.role != Role::Tool && !pending_media.is_empty() {
            input.push(Item::User {
                content: Content::Parts(std::mem::take(&mut pending_media)),
                role: "user",
            });
        }
        match message.role {
            Role::System => instructions.push(message.text()),
            Role::Human => input.push(Item::User {
                content: user_content(message),
                role: "user",
            }),
            Role::Ai => assistant_items(message, replayed, &mut input),
            Role::Tool => {
                for response in message.tool_responses() {
                    input.push(Item::FunctionCallOutput {
                        call_id: &response.tool_call_id,
                        output: &response.content,
                        kind: "function_call_output",
                    });
                }
                pending_media.extend(message.parts.iter().filter_map(media));
            }
        }
    }
    if !pending_media.is_empty() {
        input.push(Item::User {
            content: Content::Parts(pending_media),
            role: "user",
        });
    }

    let tools = request
        .tools
        .iter()
        .map(|tool| Tool {
            description: &tool.description,
            name: &tool.name,
            parameters: &tool.parameters,
            kind: "function",
        })
        .collect();
    let tool_choice = request.tool_choice().map(|choice| match choice {
        ToolChoice::Auto => WireToolChoice::Mode("auto"),
        ToolChoice::None => WireToolChoice::Mode("none"),
        ToolChoice::Required => WireToolChoice::Mode("required"),
        ToolChoice::Tool(name) => WireToolChoice::Function {
            name,
            kind: "function",
        },
    });
    let common = common_options(target, request);
    Ok(ResponsesBody {
        // Reasoning items can only come back if the server returns them encrypted; models
        // without reasoning reject the include.
        include: if target.info.supports_reasoning {
            &["reasoning.encrypted_content"]
        } else {
            &[]
        },
        input,
        instructions: (!instructions.is_empty()).then(|| instructions.join("\n\n")),
        max_output_tokens: common.max_tokens,
        model: target.model,
        prompt_cache_key: common.prompt_cache_key,
        reasoning: request
            .options
            .reasoning_effort
            .map(|effort| ReasoningOptions {
                effort: effort.as_str(),
            }),
        store: false,
        stream,
        temperature: common.temperature,
        text: request
            .options
            .response_format
            .as_ref()
            .map(|format| TextOptions { format }),
        tool_choice,
        tools,
    })
}

fn user_content(message: &Message) -> Content<'_> {
    if message.parts.iter().all(|part| part.as_text().is_some()) {
        return Content::Text(crate::openai::request::joined_text(message));
    }
    let parts = message
        .parts
        .iter()
        .filter_map(|part| match part {
            ContentPart::Text { text, .. } => Some(Part::Text {
                text,
                kind: "input_text",
            }),
            other => media(other),
        })
        .collect();
    Content::Parts(parts)
}

fn media(part: &ContentPart) -> Option<Part<'_>> {
    match part {
        ContentPart::ImageUrl { url, detail } => Some(Part::Image {
            detail: detail.as_deref(),
            image_url: Cow::Borrowed(url),
            kind: "input_image",
        }),
        ContentPart::Binary { mime_type, data } if mime_type.starts_with("image/") => {
            Some(Part::Image {
                detail: None,
                image_url: Cow::Owned(data_url(mime_type, data)),
                kind: "input_image",
            })
        }
        ContentPart::Binary { mime_type, data } => Some(Part::File {
            file_data: data_url(mime_type, data),
            filename: file_name(mime_type),
            kind: "input_file",
        }),
        _ => None,
    }
}

/// An AI message as input items, in the order of its parts; its reasoning items only when
/// `replay_reasoning`.
fn assistant_items<'a>(message: &'a Message, replay_reasoning: bool, input: &mut Vec<Item<'a>>) {
    for part in &message.parts {
        match part {
            ContentPart::Reasoning(reasoning) if replay_reasoning => {
                input.extend(reasoning_item(reasoning));
            }
            ContentPart::Text { text, .. } if !text.is_empty() => input.push(Item::Message {
                content: [OutputText {
                    text,
                    kind: "output_text",
                }],
                role: "assistant",
                kind: "message",
            }),
            ContentPart::ToolCall(call) => input.push(Item::FunctionCall {
                arguments: &call.arguments,
                call_id: &call.id,
                name: &call.name,
                kind: "function_call",
            }),
            _ => {}
        }
    }
}

/// A reasoning item exactly as received. Reasoning without an item id came from another
/// provider (an Anthropic thinking block, DeepSeek text) and has no Responses form; an item
/// without `encrypted_content` (a model not asked for it, a response stored server-side) can
/// only be referred to by id, which a `store: false` request cannot do: OpenAI answers 404 and
/// asks for the item to be removed from the input.
fn reasoning_item(reasoning: &Reasoning) -> Option<Item<'_>> {
    let id = reasoning.id.as_deref()?;
    let encrypted_content = Some(reasoning.encrypted.as_deref()?);
    // The summary parts were joined into one text (their own text contains blank lines, so
    // they cannot be split again); one part carries all of it. The server restores the
    // reasoning from `encrypted_content`, not from the summary.
    let summary = if reasoning.text.is_empty() {
        Vec::new()
    } else {
        vec![SummaryText {
            text: &reasoning.text,
            kind: "summary_text",
        }]
    };
    Some(Item::Reasoning {
        encrypted_content,
        id,
        summary,
        kind: "reasoning",
    })
}

#[cfg(test)]
mod tests {
    use messages::ToolCall;
    use serde_json::json;

    use super::*;
    use crate::openai::Endpoint;
    use crate::{ChatOptions, ModelConfig, ModelInfo};

    /// Keys go out sorted, as the map-built bodies sent them: the bytes of a request do not
    /// depend on how the body was built.
    #[test]
    fn keys_are_sent_sorted() {
        let info = ModelInfo::lookup(Provider::OpenAi, "o3");
        let config = ModelConfig {
            base_url: Some("http://127.0.0.1:9/v1".into()),
            ..ModelConfig::new("o3")
        };
        let endpoint = Endpoint::new(&config, &info, Provider::OpenAi);
        let mut human = Message::human("look");
        human.parts.push(ContentPart::ImageUrl {
            url: "https://x.test/a.png".into(),
            detail: Some("high".into()),
        });
        human
            .parts
            .push(ContentPart::binary("application/pdf", vec![2]));
        let mut ai = Message::ai_tool_calls(Some("ok".into()), vec![ToolCall::new("c", "f", "{}")]);
        ai.parts.insert(
            0,
            ContentPart::Reasoning(Reasoning {
                id: Some("rs_1".into()),
                text: "summary".into(),
                encrypted: Some("gAAA".into()),
                ..Default::default()
            }),
        );
        let mut tool = Message::tool_response("c", "f", "done");
        tool.parts.push(ContentPart::binary("image/png", vec![1]));
        let request = ChatRequest {
            tools: vec![messages::ToolSpec {
                name: "f".into(),
                description: "F.".into(),
                parameters: json!({"type": "object"}),
            }],
            options: ChatOptions {
                temperature: Some(0.5),
                max_tokens: Some(9),
                tool_choice: Some(ToolChoice::Tool("f".into())),
                reasoning_effort: Some(crate::ReasoningEffort::High),
                cache: crate::PromptCache {
                    key: Some("k".into()),
                    ..Default::default()
                },
                ..ChatOptions::default()
            },
            ..ChatRequest::new(vec![
                Message::system("s"),
                human,
                ai,
                tool,
                Message::ai("x"),
            ])
        };
        let target = endpoint.target(crate::openai::request::ReasoningField::Content);
        let body = body(&target, &request, true).expect("builds");
        let typed = serde_json::to_string(&body).expect("encodes");
        let sorted = serde_json::to_value(&body).expect("encodes").to_string();
        assert_eq!(typed, sorted);
        assert!(typed.contains(r#""encrypted_content":"gAAA""#));
    }
}

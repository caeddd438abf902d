//! Chat Completions request bodies (`POST {base}/chat/completions`).
//!
//! [`body`] builds a [`ChatBody`], typed serde structs borrowing from the request. Every
//! struct declares its fields in alphabetical order: serde writes keys in declaration order,
//! and sorted keys are what this adapter has always sent, so the bytes on the wire stay the
//! same from one version to the next (a test checks the order). A
//! [`Dialect`](super::dialect::Dialect) of the protocol takes the body [`body`] builds, may
//! change it, and adds its own fields beside it with `#[serde(flatten)]` (OpenRouter's
//! `reasoning` object).
//!
//! Reasoning goes back on assistant messages only where the [`ReasoningReplay`] policy of the
//! target covers them, in the field the server reads ([`ReasoningField`]):
//!
//! - `reasoning_content` (DeepSeek and most compatible servers): the text of the message's
//!   Chat-style reasoning (text without an item id, signature or encrypted data, which is
//!   what `reasoning_content` produced). A tool-call message gets the field even without
//!   reasoning (empty) when the model is a DeepSeek model or the conversation holds
//!   Chat-style reasoning: a server in a thinking mode rejects a tool-call message without
//!   it.
//! - `reasoning_details` (OpenRouter's dialect; Skein's own server reads it too): one entry per
//!   reasoning part, `reasoning.text` with its signature or `reasoning.encrypted` with its
//!   data, with the part's id and its `index` among the message's entries. Reasoning keeps no
//!   `format`, so none is sent.
//! - Nothing to OpenAI's own endpoint, which rejects both fields.
//!
//! [`ReasoningReplay`]: crate::ReasoningReplay

use std::borrow::Cow;

use messages::{ContentPart, Message, Reasoning, Role};
use serde::Serialize;
use serde_json::Value;

use super::wire::{data_url, file_name};
use super::{Target, common_options};
use crate::{ChatRequest, JsonSchemaFormat, ProviderError, ResponseFormat, ToolChoice};

/// Where a Chat assistant message carries its reasoning back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ReasoningField {
    /// Nowhere: the server takes no reasoning (OpenAI's own endpoint).
    None,
    /// `reasoning_content`, a string.
    Content,
    /// `reasoning_details`, OpenRouter's list of typed entries.
    Details,
}

/// A Chat Completions request body. Fields are public to the crate so that a dialect can
/// adjust the body before wrapping it (OpenRouter replaces `reasoning_effort` with its own
/// `reasoning` object).
#[derive(Debug, Serialize)]
pub(crate) struct ChatBody<'a> {
    /// The output limit under the name OpenAI's reasoning models require.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) max_completion_tokens: Option<u32>,
    /// The output limit under the name compatible servers implement.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) max_tokens: Option<u32>,
    /// The conversation.
    pub(crate) messages: Vec<ChatMessage<'a>>,
    /// The model id.
    pub(crate) model: &'a str,
    /// OpenAI's routing key for prompt caching.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) prompt_cache_key: Option<&'a str>,
    /// `minimal`, `low`, `medium` or `high`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) reasoning_effort: Option<&'static str>,
    /// The shape the answer must take.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) response_format: Option<WireResponseFormat<'a>>,
    /// Stop sequences.
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    pub(crate) stop: &'a [String],
    /// Whether the answer comes as server-sent events (sent only when it does).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) stream: bool,
    /// With `stream`: usage in the last chunk.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) stream_options: Option<StreamOptions>,
    /// The caller's temperature, as given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) temperature: Option<f64>,
    /// Whether and which tool the model must call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tool_choice: Option<WireToolChoice<'a>>,
    /// The tools on offer.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) tools: Vec<Tool<'a>>,
    /// For each request message, the index in `messages` of the last entry it became (`None`
    /// while it became none yet): where a dialect places markers that end at a message.
    #[serde(skip)]
    pub(crate) ends: Vec<Option<usize>>,
}

/// `response_format`: Chat Completions nests the schema under `json_schema`.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum WireResponseFormat<'a> {
    /// `{"type": "text"}`.
    Text,
    /// `{"type": "json_object"}`.
    JsonObject,
    /// `{"type": "json_schema", "json_schema": {…}}`.
    JsonSchema {
        /// The named schema, in the Responses API's field names.
        json_schema: &'a JsonSchemaFormat,
    },
}

impl<'a> WireResponseFormat<'a> {
    /// The Chat Completions form of `format`.
    pub(crate) fn of(format: &'a ResponseFormat) -> Self {
        match format {
            ResponseFormat::Text => WireResponseFormat::Text,
            ResponseFormat::JsonObject => WireResponseFormat::JsonObject,
            ResponseFormat::JsonSchema(json_schema) => {
                WireResponseFormat::JsonSchema { json_schema }
            }
        }
    }
}

/// `stream_options`.
#[derive(Debug, Serialize)]
pub(crate) struct StreamOptions {
    include_usage: bool,
}

/// One `messages` entry.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(crate) enum ChatMessage<'a> {
    /// A system, developer or user message.
    Text {
        content: Content<'a>,
        role: &'static str,
    },
    /// An assistant message.
    Assistant(Assistant<'a>),
    /// One tool response.
    Tool {
        content: &'a str,
        role: &'static str,
        tool_call_id: &'a str,
    },
}

/// A user message's content: a plain string when it is only text, else typed parts.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(crate) enum Content<'a> {
    Text(Cow<'a, str>),
    Parts(Vec<Part<'a>>),
}

/// A typed content part.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(crate) enum Part<'a> {
    Text {
        /// A prompt-cache marker (OpenRouter): the prefix up to this part is cached.
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
        text: Cow<'a, str>,
        #[serde(rename = "type")]
        kind: &'static str,
    },
    ImageUrl {
        image_url: ImageUrl<'a>,
        #[serde(rename = "type")]
        kind: &'static str,
    },
    InputAudio {
        input_audio: InputAudio,
        #[serde(rename = "type")]
        kind: &'static str,
    },
    File {
        file: File,
        #[serde(rename = "type")]
        kind: &'static str,
    },
}

/// `cache_control` on a content part: `{"type": "ephemeral"}`, with `ttl` `5m` or `1h`.
#[derive(Clone, Copy, Debug, Serialize)]
pub(crate) struct CacheControl {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) ttl: Option<&'static str>,
    #[serde(rename = "type")]
    pub(crate) kind: &'static str,
}

impl<'a> ChatMessage<'a> {
    /// Marks the end of this message as a cache breakpoint: its last text part gets
    /// `control` (a plain-text content becomes one text part). `false` for a message that
    /// cannot carry one (assistant and tool messages, content without text: an empty text
    /// cannot be a breakpoint).
    pub(crate) fn mark_cached(&mut self, control: CacheControl) -> bool {
        let ChatMessage::Text { content, .. } = self else {
            return false;
        };
        if let Content::Text(text) = content {
            if text.is_empty() {
                return false;
            }
            let text = std::mem::take(text);
            *content = Content::Parts(vec![Part::Text {
                cache_control: None,
                text,
                kind: "text",
            }]);
        }
        let Content::Parts(parts) = content else {
            return false;
        };
        match parts
            .iter_mut()
            .rev()
            .find(|part| matches!(part, Part::Text { text, .. } if !text.is_empty()))
        {
            Some(Part::Text { cache_control, .. }) => {
                *cache_control = Some(control);
                true
            }
            _ => false,
        }
    }
}

#[derive(Debug, Serialize)]
pub(crate) struct ImageUrl<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    detail: Option<&'a str>,
    url: Cow<'a, str>,
}

#[derive(Debug, Serialize)]
pub(crate) struct InputAudio {
    data: String,
    format: String,
}

#[derive(Debug, Serialize)]
pub(crate) struct File {
    file_data: String,
    filename: String,
}

/// An assistant message: text, tool calls and the reasoning the server takes back.
#[derive(Debug, Serialize)]
pub(crate) struct Assistant<'a> {
    /// `null` when the message is only tool calls.
    content: Option<Cow<'a, str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_content: Option<Cow<'a, str>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    reasoning_details: Vec<ReasoningDetail<'a>>,
    role: &'static str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<ToolCall<'a>>,
}

/// One `reasoning_details` entry (OpenRouter).
#[derive(Debug, Serialize)]
pub(crate) struct ReasoningDetail<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a str>,
    index: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    signature: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<&'a str>,
    #[serde(rename = "type")]
    kind: &'static str,
}

#[derive(Debug, Serialize)]
pub(crate) struct ToolCall<'a> {
    function: FunctionCall<'a>,
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
}

#[derive(Debug, Serialize)]
struct FunctionCall<'a> {
    arguments: &'a str,
    name: &'a str,
}

/// A tool definition.
#[derive(Debug, Serialize)]
pub(crate) struct Tool<'a> {
    function: Function<'a>,
    #[serde(rename = "type")]
    kind: &'static str,
}

#[derive(Debug, Serialize)]
struct Function<'a> {
    description: &'a str,
    name: &'a str,
    parameters: &'a Value,
}

/// `tool_choice`: a mode, or the one function to call.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(crate) enum WireToolChoice<'a> {
    Mode(&'static str),
    Function {
        function: FunctionName<'a>,
        #[serde(rename = "type")]
        kind: &'static str,
    },
}

#[derive(Debug, Serialize)]
pub(crate) struct FunctionName<'a> {
    name: &'a str,
}

/// The body for `request` to `target`; `stream` asks for server-sent events.
pub(crate) fn body<'a>(
    target: &Target<'a>,
    request: &'a ChatRequest,
    stream: bool,
) -> Result<ChatBody<'a>, ProviderError> {
    let replayed = match target.reasoning_field {
        ReasoningField::None => vec![false; request.messages.len()],
        _ => target.replay.replayed(&request.messages),
    };
    let empty_on_calls = target.reasoning_field == ReasoningField::Content
        && (target.info.requires_reasoning_content_on_calls()
            || holds_chat_reasoning(&request.messages));
    let mut messages = Vec::with_capacity(request.messages.len());
    let mut ends = Vec::with_capacity(request.messages.len());
    let mut pending_media: Vec<Part<'a>> = Vec::new();
    for (message, replayed) in request.messages.iter().zip(replayed) {
        if message.role != Role::Tool {
            flush_media(&mut messages, &mut pending_media);
        }
        match message.role {
            Role::System => messages.push(ChatMessage::Text {
                content: Content::Text(joined_text(message)),
                role: target.system_role.as_str(),
            }),
            Role::Human => messages.push(ChatMessage::Text {
                content: user_content(message),
                role: "user",
            }),
            Role::Ai => {
                let reasoning = replayed.then_some(target.reasoning_field);
                messages.push(assistant(message, reasoning, empty_on_calls));
            }
            Role::Tool => {
                for response in message.tool_responses() {
                    messages.push(ChatMessage::Tool {
                        content: &response.content,
                        role: "tool",
                        tool_call_id: &response.tool_call_id,
                    });
                }
                // Chat tool messages take only text: media goes in a user message right after
                // the run of tool messages (a user message between them would break the
                // assistant → tool pairing).
                pending_media.extend(message.parts.iter().filter_map(media));
            }
        }
        ends.push(messages.len().checked_sub(1));
    }
    flush_media(&mut messages, &mut pending_media);

    let tools = request
        .tools
        .iter()
        .map(|tool| Tool {
            function: Function {
                description: &tool.description,
                name: &tool.name,
                parameters: &tool.parameters,
            },
            kind: "function",
        })
        .collect();
    let tool_choice = request.tool_choice().map(|choice| match choice {
        ToolChoice::Auto => WireToolChoice::Mode("auto"),
        ToolChoice::None => WireToolChoice::Mode("none"),
        ToolChoice::Required => WireToolChoice::Mode("required"),
        ToolChoice::Tool(name) => WireToolChoice::Function {
            function: FunctionName { name },
            kind: "function",
        },
    });
    let common = common_options(target, request);
    // OpenAI's reasoning models reject the legacy `max_tokens`; compatible servers (DeepSeek,
    // vLLM, Ollama, …) implement only `max_tokens`.
    let (max_completion_tokens, max_tokens) = if target.official {
        (common.max_tokens, None)
    } else {
        (None, common.max_tokens)
    };
    Ok(ChatBody {
        max_completion_tokens,
        max_tokens,
        messages,
        model: target.model,
        prompt_cache_key: common.prompt_cache_key,
        reasoning_effort: request.options.reasoning_effort.map(|e| e.as_str()),
        response_format: request
            .options
            .response_format
            .as_ref()
            .map(WireResponseFormat::of),
        stop: &request.options.stop,
        stream,
        stream_options: stream.then_some(StreamOptions {
            include_usage: true,
        }),
        temperature: common.temperature,
        tool_choice,
        tools,
        ends,
    })
}

/// Whether an AI message of `messages` holds Chat-style reasoning: then the server answered
/// in a thinking mode.
fn holds_chat_reasoning(messages: &[Message]) -> bool {
    messages
        .iter()
        .filter(|m| m.role == Role::Ai)
        .flat_map(|m| &m.parts)
        .any(
            |part| matches!(part, ContentPart::Reasoning(r) if chat_style(r) && !r.text.is_empty()),
        )
}

/// Reasoning as `reasoning_content` produces it: text alone, without an item id, signature or
/// encrypted data (those came from APIs whose reasoning has no `reasoning_content` form).
fn chat_style(reasoning: &Reasoning) -> bool {
    reasoning.id.is_none() && reasoning.signature.is_none() && reasoning.encrypted.is_none()
}

fn flush_media<'a>(messages: &mut Vec<ChatMessage<'a>>, media: &mut Vec<Part<'a>>) {
    if !media.is_empty() {
        messages.push(ChatMessage::Text {
            content: Content::Parts(std::mem::take(media)),
            role: "user",
        });
    }
}

/// The text parts of `message` joined with `"\n"` (as [`Message::text`]), borrowed when there
/// is only one.
pub(super) fn joined_text(message: &Message) -> Cow<'_, str> {
    let mut texts = message.parts.iter().filter_map(ContentPart::as_text);
    match (texts.next(), texts.next()) {
        (None, _) => Cow::Borrowed(""),
        (Some(text), None) => Cow::Borrowed(text),
        _ => Cow::Owned(message.text()),
    }
}

/// A user message's content: a plain string when it is only text, else typed parts.
fn user_content(message: &Message) -> Content<'_> {
    if message.parts.iter().all(|part| part.as_text().is_some()) {
        return Content::Text(joined_text(message));
    }
    let parts = message
        .parts
        .iter()
        .filter_map(|part| match part {
            ContentPart::Text { text, .. } => Some(Part::Text {
                cache_control: None,
                text: Cow::Borrowed(text),
                kind: "text",
            }),
            other => media(other),
        })
        .collect();
    Content::Parts(parts)
}

/// A media part as a Chat content part.
fn media(part: &ContentPart) -> Option<Part<'_>> {
    match part {
        ContentPart::ImageUrl { url, detail } => Some(Part::ImageUrl {
            image_url: ImageUrl {
                detail: detail.as_deref(),
                url: Cow::Borrowed(url),
            },
            kind: "image_url",
        }),
        ContentPart::Binary { mime_type, data } if mime_type.starts_with("image/") => {
            Some(Part::ImageUrl {
                image_url: ImageUrl {
                    detail: None,
                    url: Cow::Owned(data_url(mime_type, data)),
                },
                kind: "image_url",
            })
        }
        ContentPart::Binary { mime_type, data } if mime_type.starts_with("audio/") => {
            Some(Part::InputAudio {
                input_audio: InputAudio {
                    data: base64_of(data),
                    format: mime_type
                        .trim_start_matches("audio/")
                        .replace("mpeg", "mp3"),
                },
                kind: "input_audio",
            })
        }
        ContentPart::Binary { mime_type, data } => Some(Part::File {
            file: File {
                file_data: data_url(mime_type, data),
                filename: file_name(mime_type),
            },
            kind: "file",
        }),
        _ => None,
    }
}

fn base64_of(data: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(data)
}

/// An assistant message: text, tool calls and — when `reasoning` names a field (the replay
/// policy covers this message) — its reasoning in that field. With `empty_on_calls`, a
/// tool-call message without Chat-style reasoning gets an empty `reasoning_content`.
fn assistant<'a>(
    message: &'a Message,
    reasoning: Option<ReasoningField>,
    empty_on_calls: bool,
) -> ChatMessage<'a> {
    let text = joined_text(message);
    let tool_calls: Vec<ToolCall<'a>> = message
        .tool_calls()
        .map(|call| ToolCall {
            function: FunctionCall {
                arguments: &call.arguments,
                name: &call.name,
            },
            id: &call.id,
            kind: "function",
        })
        .collect();
    let reasonings = || {
        message.parts.iter().filter_map(|part| match part {
            ContentPart::Reasoning(r) => Some(r),
            _ => None,
        })
    };
    let (reasoning_content, reasoning_details) = match reasoning {
        Some(ReasoningField::Content) => {
            let mut chat = reasonings()
                .filter(|r| chat_style(r))
                .map(|r| r.text.as_str());
            let joined = match (chat.next(), chat.next()) {
                (None, _) => Cow::Borrowed(""),
                (Some(one), None) => Cow::Borrowed(one),
                (Some(first), Some(second)) => {
                    Cow::Owned([first, second].into_iter().chain(chat).collect::<String>())
                }
            };
            let send = !joined.is_empty() || (empty_on_calls && !tool_calls.is_empty());
            (send.then_some(joined), Vec::new())
        }
        Some(ReasoningField::Details) => (None, details(reasonings())),
        Some(ReasoningField::None) | None => (None, Vec::new()),
    };
    ChatMessage::Assistant(Assistant {
        content: (!text.is_empty() || tool_calls.is_empty()).then_some(text),
        reasoning_content,
        reasoning_details,
        role: "assistant",
        tool_calls,
    })
}

/// Reasoning parts as `reasoning_details` entries, numbered in order. Parts with nothing to
/// send (no text, signature or data) are left out.
fn details<'a>(parts: impl Iterator<Item = &'a Reasoning>) -> Vec<ReasoningDetail<'a>> {
    parts
        .filter(|r| !r.text.is_empty() || r.signature.is_some() || r.encrypted.is_some())
        .enumerate()
        .map(|(index, r)| match &r.encrypted {
            Some(data) => ReasoningDetail {
                data: Some(data),
                id: r.id.as_deref(),
                index,
                signature: None,
                text: None,
                kind: "reasoning.encrypted",
            },
            None => ReasoningDetail {
                data: None,
                id: r.id.as_deref(),
                index,
                signature: r.signature.as_deref(),
                text: Some(&r.text),
                kind: "reasoning.text",
            },
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use messages::ToolCall as Call;
    use serde_json::json;

    use super::*;
    use crate::registry::SystemRole;
    use crate::{ChatOptions, ModelInfo, Provider, ReasoningReplay};

    fn target<'a>(info: &'a ModelInfo, official: bool) -> Target<'a> {
        Target {
            model: &info.id,
            info,
            max_tokens: None,
            official,
            replay: info.reasoning_replay(),
            reasoning_field: if official {
                ReasoningField::None
            } else {
                ReasoningField::Content
            },
            system_role: match info.system_role() {
                SystemRole::Developer if !official => SystemRole::System,
                role => role,
            },
        }
    }

    fn sent(target: &Target<'_>, request: &ChatRequest) -> Value {
        serde_json::to_value(body(target, request, false).expect("builds")).expect("encodes")
    }

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
            let body = sent(&target(&info, official), &request);
            assert_eq!(body[key], 100);
            assert!(body.get(other).is_none());
        }
    }

    /// OpenAI's endpoint: `developer` for the reasoning models since o1-2024-12-17, user text
    /// for o1-mini and o1-preview (which refuse both roles), `system` for the chat models.
    #[test]
    fn system_prompt_role_on_openais_endpoint() {
        let request = ChatRequest::new(vec![Message::system("Be terse."), Message::human("hi")]);
        for (model, role) in [
            ("o1", "developer"),
            ("o1-2024-12-17", "developer"),
            ("o3", "developer"),
            ("o3-mini", "developer"),
            ("o4-mini", "developer"),
            ("gpt-5", "developer"),
            ("gpt-5-mini-2025-08-07", "developer"),
            ("o1-mini", "user"),
            ("o1-mini-2024-09-12", "user"),
            ("o1-preview", "user"),
            ("o1-preview-2024-09-12", "user"),
            ("gpt-4o", "system"),
            ("gpt-4.1-mini", "system"),
            ("my-fine-tune", "system"),
        ] {
            let info = ModelInfo::lookup(Provider::OpenAi, model);
            let body = sent(&target(&info, true), &request);
            assert_eq!(
                body["messages"][0],
                json!({"content": "Be terse.", "role": role}),
                "{model}"
            );
            assert_eq!(body["messages"][1]["role"], "user", "{model}");
        }
    }

    /// OpenAI's endpoint takes no reasoning back, whatever the policy says.
    #[test]
    fn openais_endpoint_never_gets_reasoning_content() {
        let info = ModelInfo::lookup(Provider::OpenAi, "deepseek-reasoner");
        let mut ai = Message::ai_tool_calls(None, vec![Call::new("call_1", "f", "{}")]);
        ai.parts.insert(
            0,
            ContentPart::Reasoning(Reasoning {
                text: "thought".into(),
                ..Default::default()
            }),
        );
        let request = ChatRequest::new(vec![Message::human("hi"), ai]);
        let mut official = target(&info, true);
        official.replay = ReasoningReplay::Always;
        let body = sent(&official, &request);
        assert!(body["messages"][1].get("reasoning_content").is_none());
        assert!(body["messages"][1].get("reasoning_details").is_none());
        let compatible = sent(&target(&info, false), &request);
        assert_eq!(compatible["messages"][1]["reasoning_content"], "thought");
    }

    /// Keys go out sorted, as the map-built bodies sent them: the bytes of a request do not
    /// depend on how the body was built.
    #[test]
    fn keys_are_sent_sorted() {
        let info = ModelInfo::lookup(Provider::OpenRouter, "deepseek/deepseek-r1");
        let mut image = Message::human("look");
        image.parts.push(ContentPart::ImageUrl {
            url: "https://x.test/a.png".into(),
            detail: Some("low".into()),
        });
        image.parts.push(ContentPart::binary("audio/mpeg", vec![1]));
        image
            .parts
            .push(ContentPart::binary("application/pdf", vec![2]));
        let mut ai = Message::ai_tool_calls(Some("ok".into()), vec![Call::new("c", "f", "{}")]);
        ai.parts.push(ContentPart::Reasoning(Reasoning {
            id: Some("r1".into()),
            text: "t".into(),
            signature: Some("s".into()),
            ..Default::default()
        }));
        ai.parts.push(ContentPart::Reasoning(Reasoning {
            encrypted: Some("e".into()),
            ..Default::default()
        }));
        let request = ChatRequest {
            tools: vec![messages::ToolSpec {
                name: "f".into(),
                description: "F.".into(),
                parameters: json!({"type": "object"}),
            }],
            options: ChatOptions {
                temperature: Some(0.5),
                max_tokens: Some(9),
                stop: vec!["x".into()],
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
                image,
                ai,
                Message::tool_response("c", "f", "done"),
            ])
        };
        for (official, field) in [
            (true, ReasoningField::None),
            (false, ReasoningField::Content),
            (false, ReasoningField::Details),
        ] {
            let mut target = target(&info, official);
            target.reasoning_field = field;
            target.replay = ReasoningReplay::Always;
            let body = body(&target, &request, true).expect("builds");
            let typed = serde_json::to_string(&body).expect("encodes");
            let sorted = serde_json::to_value(&body).expect("encodes").to_string();
            assert_eq!(typed, sorted);
        }
    }
}

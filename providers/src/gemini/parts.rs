//! One message → Gemini `parts`.
//!
//! | Skein | Gemini part |
//! |---|---|
//! | `Text` (+ `reasoning.signature`) | `{"text", "thoughtSignature"}` |
//! | `Reasoning` with a signature (came on a thought part) | `{"text", "thought": true, "thoughtSignature"}` |
//! | `Reasoning` without one (a thought summary) | not sent |
//! | `ToolCall` (+ `reasoning.signature`) | `{"functionCall": {"name", "args", "id"?}, "thoughtSignature"}` |
//! | `ToolResponse` | `{"functionResponse": {"name", "response": {"output": text}, "id"?, "parts"?}}` |
//! | `Binary`, `data:` `ImageUrl` | `{"inlineData": {"mimeType", "data"}}` (in a tool message: in the response's `parts`) |
//! | other `ImageUrl` | `{"fileData": {"fileUri", "mimeType"?}}` |
//!
//! Ids go on the wire only when Gemini (or someone other than this adapter) issued them.
//! Signatures and signed thoughts go back only on the model messages the replay policy
//! covers ([`ReasoningReplay`](crate::ReasoningReplay)).

use std::borrow::Cow;

use base64::Engine as _;
use messages::{ContentPart, Message, Reasoning, ToolCall, ToolResponse};
use serde::Serialize;
use serde_json::{Value, json};

use super::{MINTED_ID_PREFIX, SKIP_SIGNATURE};
use crate::ProviderError;

/// One Gemini part. Fields are declared in alphabetical order (of their camelCase names), so
/// the keys go out sorted and the bytes of a request stay the same from one version to the
/// next.
#[derive(Debug, Serialize)]
#[serde(untagged, rename_all_fields = "camelCase")]
pub(super) enum Part<'a> {
    /// Text, with the signature that came on it.
    Text {
        text: Cow<'a, str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        thought_signature: Option<&'a str>,
    },
    /// A signed thought summary.
    Thought {
        text: &'a str,
        thought: bool,
        thought_signature: &'a str,
    },
    FunctionCall {
        function_call: FunctionCall<'a>,
        #[serde(skip_serializing_if = "Option::is_none")]
        thought_signature: Option<&'a str>,
    },
    FunctionResponse {
        function_response: FunctionResponse<'a>,
    },
    InlineData {
        inline_data: Blob<'a>,
    },
    FileData {
        file_data: FileData<'a>,
    },
}

#[derive(Debug, Serialize)]
pub(super) struct FunctionCall<'a> {
    /// The arguments as an object (parsed: Gemini takes no JSON text).
    args: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a str>,
    name: &'a str,
}

#[derive(Debug, Serialize)]
pub(super) struct FunctionResponse<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a str>,
    name: &'a str,
    /// Media that came with the response.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    parts: Vec<Part<'a>>,
    response: Output<'a>,
}

/// A tool's text result as the object Gemini wants.
#[derive(Debug, Serialize)]
pub(super) struct Output<'a> {
    output: &'a str,
}

#[derive(Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Blob<'a> {
    data: Cow<'a, str>,
    mime_type: &'a str,
}

#[derive(Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct FileData<'a> {
    file_uri: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    mime_type: Option<&'static str>,
}

/// The id to send for `id`: none for an empty or minted one.
fn wire_id(id: &str) -> Option<&str> {
    (!id.is_empty() && !id.starts_with(MINTED_ID_PREFIX)).then_some(id)
}

fn signature(reasoning: Option<&Reasoning>) -> Option<&str> {
    reasoning.and_then(|r| r.signature.as_deref())
}

/// The parts of a user (human) message.
pub(super) fn user(message: &Message) -> Vec<Part<'_>> {
    message
        .parts
        .iter()
        .filter_map(|part| match part {
            ContentPart::Text { text, .. } => Some(Part::Text {
                text: Cow::Borrowed(text),
                thought_signature: None,
            }),
            other => media(other),
        })
        .collect()
}

/// The parts of a system message after the conversation began: its text, marked as a system
/// instruction, in a user turn (see `system_prompt`).
pub(super) fn later_system(message: &Message) -> Vec<Part<'_>> {
    message
        .parts
        .iter()
        .filter_map(ContentPart::as_text)
        .filter(|text| !text.is_empty())
        .map(|text| Part::Text {
            text: Cow::Owned(crate::system_prompt::as_user_text(text)),
            thought_signature: None,
        })
        .collect()
}

/// The parts of a model message. Signatures and signed thoughts go back only with
/// `replay_reasoning` (the replay policy covers the message). With `sign_first_call`, the
/// first call gets [`SKIP_SIGNATURE`] if it has no signature to send (see the module docs of
/// `gemini`): Gemini rejects the request otherwise, whatever the policy.
pub(super) fn model(
    message: &Message,
    sign_first_call: bool,
    replay_reasoning: bool,
) -> Vec<Part<'_>> {
    let replayed = |reasoning| signature(reasoning).filter(|_| replay_reasoning);
    let mut first_call = true;
    let mut parts = Vec::new();
    for content in &message.parts {
        let part = match content {
            ContentPart::Text { text, reasoning } => {
                let thought_signature = replayed(reasoning.as_ref());
                if text.is_empty() && thought_signature.is_none() {
                    continue;
                }
                Part::Text {
                    text: Cow::Borrowed(text),
                    thought_signature,
                }
            }
            ContentPart::Reasoning(reasoning) => match replayed(Some(reasoning)) {
                Some(thought_signature) => Part::Thought {
                    text: &reasoning.text,
                    thought: true,
                    thought_signature,
                },
                None => continue,
            },
            ContentPart::ToolCall(call) => {
                let fallback = (first_call && sign_first_call).then_some(SKIP_SIGNATURE);
                first_call = false;
                function_call(call, replayed(call.reasoning.as_ref()).or(fallback))
            }
            ContentPart::ToolResponse(_) => continue,
            other => match media(other) {
                Some(part) => part,
                None => continue,
            },
        };
        parts.push(part);
    }
    parts
}

fn function_call<'a>(call: &'a ToolCall, thought_signature: Option<&'a str>) -> Part<'a> {
    Part::FunctionCall {
        function_call: FunctionCall {
            args: arguments(&call.arguments),
            id: wire_id(&call.id),
            name: &call.name,
        },
        thought_signature,
    }
}

/// Gemini takes arguments as an object. Text that is not a JSON object (a model's broken
/// output kept in the history) is wrapped as `{"arguments": "<text>"}` rather than failing
/// the whole request.
fn arguments(text: &str) -> Value {
    if text.trim().is_empty() {
        return json!({});
    }
    match serde_json::from_str::<Value>(text) {
        Ok(object @ Value::Object(_)) => object,
        _ => json!({"arguments": text}),
    }
}

/// A media part as a top-level Gemini part.
fn media(part: &ContentPart) -> Option<Part<'_>> {
    match part {
        ContentPart::ImageUrl { url, .. } => Some(match inline_url(url) {
            Some(inline_data) => Part::InlineData { inline_data },
            None => Part::FileData {
                file_data: file_data(url),
            },
        }),
        ContentPart::Binary { mime_type, data } => Some(inline(mime_type, data)),
        _ => None,
    }
}

/// Bytes as an inline part.
fn inline<'a>(mime_type: &'a str, data: &[u8]) -> Part<'a> {
    Part::InlineData {
        inline_data: Blob {
            data: Cow::Owned(base64_of(data)),
            mime_type,
        },
    }
}

fn base64_of(data: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(data)
}

/// A `data:` URL as an inline blob (`data:<mime>[;base64],<data>`).
fn inline_url(url: &str) -> Option<Blob<'_>> {
    let (header, data) = url.strip_prefix("data:")?.split_once(',')?;
    let (mime_type, is_base64) = match header.strip_suffix(";base64") {
        Some(mime_type) => (mime_type, true),
        None => (header, false),
    };
    let mime_type = if mime_type.is_empty() {
        "text/plain"
    } else {
        mime_type
    };
    let data = if is_base64 {
        Cow::Borrowed(data)
    } else {
        Cow::Owned(base64_of(data.as_bytes()))
    };
    Some(Blob { data, mime_type })
}

/// A URL Gemini fetches itself, with the MIME type its extension implies when it has a
/// common one.
fn file_data(url: &str) -> FileData<'_> {
    let path = url.split(['?', '#']).next().unwrap_or(url);
    let extension = path
        .rsplit_once('.')
        .map(|(_, ext)| ext.to_ascii_lowercase());
    let mime_type = match extension.as_deref() {
        Some("png") => Some("image/png"),
        Some("jpg" | "jpeg") => Some("image/jpeg"),
        Some("webp") => Some("image/webp"),
        Some("gif") => Some("image/gif"),
        Some("heic") => Some("image/heic"),
        Some("pdf") => Some("application/pdf"),
        Some("mp3") => Some("audio/mpeg"),
        Some("wav") => Some("audio/wav"),
        Some("mp4") => Some("video/mp4"),
        _ => None,
    };
    FileData {
        file_uri: url,
        mime_type,
    }
}

/// The user turn answering a model turn's calls: one `functionResponse` per response, in the
/// order of the calls, built from a run of consecutive tool messages.
pub(super) struct ToolTurn<'c, 'a> {
    calls: &'c [&'a ToolCall],
    responses: Vec<Response<'a>>,
    /// Parts that are not responses (media by URL, stray text), after the responses.
    others: Vec<Part<'a>>,
}

struct Response<'a> {
    /// Position of the answered call in the model turn (unknown calls go last).
    order: usize,
    response: &'a ToolResponse,
    name: &'a str,
    media: Vec<Part<'a>>,
}

impl<'c, 'a> ToolTurn<'c, 'a> {
    /// A turn answering `calls` (the calls of the last model message).
    pub(super) fn new(calls: &'c [&'a ToolCall]) -> Self {
        ToolTurn {
            calls,
            responses: Vec::new(),
            others: Vec::new(),
        }
    }

    /// Adds the parts of one tool message. A response without a tool name takes the name of
    /// the call it answers.
    pub(super) fn add(&mut self, message: &'a Message) -> Result<(), ProviderError> {
        for content in &message.parts {
            match content {
                ContentPart::ToolResponse(response) => self.response(response)?,
                ContentPart::Text { text, .. } => self.others.push(Part::Text {
                    text: Cow::Borrowed(text),
                    thought_signature: None,
                }),
                ContentPart::ImageUrl { url, .. } => {
                    match (inline_url(url), self.responses.last_mut()) {
                        (Some(inline_data), Some(last)) => {
                            last.media.push(Part::InlineData { inline_data });
                        }
                        _ => self.others.extend(media(content)),
                    }
                }
                ContentPart::Binary { mime_type, data } => {
                    let inline = inline(mime_type, data);
                    match self.responses.last_mut() {
                        Some(last) => last.media.push(inline),
                        None => self.others.push(inline),
                    }
                }
                ContentPart::Reasoning(_) | ContentPart::ToolCall(_) => {}
            }
        }
        Ok(())
    }

    fn response(&mut self, response: &'a ToolResponse) -> Result<(), ProviderError> {
        let call = self
            .calls
            .iter()
            .position(|call| call.id == response.tool_call_id);
        let name = match (response.name.as_str(), call) {
            ("", Some(index)) => self.calls.get(index).map_or("", |call| &call.name),
            (name, _) => name,
        };
        if name.is_empty() {
            return Err(ProviderError::config(format!(
                "the tool response to call `{}` names no tool and answers no call of the previous AI message; Gemini matches responses by tool name: set `ToolResponse::name`",
                response.tool_call_id
            )));
        }
        self.responses.push(Response {
            order: call.unwrap_or(usize::MAX),
            response,
            name,
            media: Vec::new(),
        });
        Ok(())
    }

    /// The turn's parts.
    pub(super) fn parts(mut self) -> Vec<Part<'a>> {
        // Stable: responses to the same or unknown calls keep their order.
        self.responses.sort_by_key(|r| r.order);
        let mut parts: Vec<Part<'a>> = self
            .responses
            .into_iter()
            .map(|r| Part::FunctionResponse {
                function_response: FunctionResponse {
                    id: wire_id(&r.response.tool_call_id),
                    name: r.name,
                    parts: r.media,
                    response: Output {
                        output: &r.response.content,
                    },
                },
            })
            .collect();
        parts.append(&mut self.others);
        parts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_objects() {
        assert_eq!(arguments(""), json!({}));
        assert_eq!(arguments(r#"{"a": 1}"#), json!({"a": 1}));
        assert_eq!(arguments("[1]"), json!({"arguments": "[1]"}));
        assert_eq!(arguments("{broken"), json!({"arguments": "{broken"}));
    }

    fn json(value: impl Serialize) -> Value {
        serde_json::to_value(value).expect("encodes")
    }

    #[test]
    fn urls() {
        assert_eq!(
            inline_url("data:image/png;base64,iVBO").map(json),
            Some(json!({"mimeType": "image/png", "data": "iVBO"}))
        );
        assert_eq!(
            inline_url("data:,hi").map(json),
            Some(json!({"mimeType": "text/plain", "data": "aGk="}))
        );
        assert_eq!(inline_url("https://x/a.png"), None);
        assert_eq!(
            json(Part::FileData {
                file_data: file_data("https://x.test/cat.JPG?size=2")
            }),
            json!({"fileData": {"fileUri": "https://x.test/cat.JPG?size=2", "mimeType": "image/jpeg"}})
        );
        assert_eq!(
            json(file_data("gs://bucket/blob")),
            json!({"fileUri": "gs://bucket/blob"})
        );
    }

    /// Keys go out sorted, as the map-built bodies sent them: the bytes of a request do not
    /// depend on how the body was built.
    #[test]
    fn keys_are_sent_sorted() {
        let mut call = ToolCall::new("call_1", "f", r#"{"b": 1, "a": 2}"#);
        call.reasoning = Some(Reasoning::signature("sig"));
        let message = Message::new(
            messages::Role::Ai,
            vec![
                ContentPart::Reasoning(Reasoning {
                    text: "thought".into(),
                    signature: Some("s1".into()),
                    ..Default::default()
                }),
                ContentPart::Text {
                    text: "hi".into(),
                    reasoning: Some(Reasoning::signature("s2")),
                },
                ContentPart::ToolCall(call),
                ContentPart::image_url("https://x.test/a.png"),
                ContentPart::image_url("data:image/png;base64,iVBO"),
            ],
        );
        let mut parts = model(&message, true, true);
        let calls: Vec<&ToolCall> = message.tool_calls().collect();
        let mut tool = Message::tool_response("call_1", "", "4");
        tool.parts.push(ContentPart::binary("image/png", vec![1]));
        let mut turn = ToolTurn::new(&calls);
        turn.add(&tool).expect("answers a call");
        parts.extend(turn.parts());
        let typed = serde_json::to_string(&parts).expect("encodes");
        assert_eq!(typed, json(&parts).to_string());
        assert!(typed.contains(r#""thoughtSignature":"sig""#), "{typed}");
    }

    #[test]
    fn minted_ids_stay_home() {
        assert_eq!(wire_id("gemini_call_abc_0"), None);
        assert_eq!(wire_id(""), None);
        assert_eq!(wire_id("call_123"), Some("call_123"));
    }
}

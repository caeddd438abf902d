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

use base64::Engine as _;
use messages::{ContentPart, Message, Reasoning, ToolCall, ToolResponse};
use serde_json::{Map, Value, json};

use super::{MINTED_ID_PREFIX, SKIP_SIGNATURE};
use crate::ProviderError;

/// The id to send for `id`: none for an empty or minted one.
fn wire_id(id: &str) -> Option<&str> {
    (!id.is_empty() && !id.starts_with(MINTED_ID_PREFIX)).then_some(id)
}

fn signature(reasoning: Option<&Reasoning>) -> Option<&str> {
    reasoning.and_then(|r| r.signature.as_deref())
}

/// A part object from fields, leaving out `None` values.
fn part<const N: usize>(fields: [(&str, Option<Value>); N]) -> Value {
    let map: Map<String, Value> = fields
        .into_iter()
        .filter_map(|(key, value)| Some((key.to_owned(), value?)))
        .collect();
    Value::Object(map)
}

/// The parts of a user (human) message.
pub(super) fn user(message: &Message) -> Vec<Value> {
    message
        .parts
        .iter()
        .filter_map(|part| match part {
            ContentPart::Text { text, .. } => Some(json!({"text": text})),
            other => media(other),
        })
        .collect()
}

/// The parts of a model message. With `sign_first_call`, the first call gets
/// [`SKIP_SIGNATURE`] if it has no signature of its own (see the module docs of `gemini`).
pub(super) fn model(message: &Message, sign_first_call: bool) -> Vec<Value> {
    let mut first_call = true;
    let mut parts = Vec::new();
    for content in &message.parts {
        let value = match content {
            ContentPart::Text { text, reasoning } => {
                let signature = signature(reasoning.as_ref());
                if text.is_empty() && signature.is_none() {
                    continue;
                }
                part([
                    ("text", Some(text.as_str().into())),
                    ("thoughtSignature", signature.map(Value::from)),
                ])
            }
            ContentPart::Reasoning(reasoning) => match &reasoning.signature {
                Some(signature) => json!({
                    "text": reasoning.text,
                    "thought": true,
                    "thoughtSignature": signature,
                }),
                None => continue,
            },
            ContentPart::ToolCall(call) => {
                let fallback = (first_call && sign_first_call).then_some(SKIP_SIGNATURE);
                first_call = false;
                function_call(call, signature(call.reasoning.as_ref()).or(fallback))
            }
            ContentPart::ToolResponse(_) => continue,
            other => match media(other) {
                Some(value) => value,
                None => continue,
            },
        };
        parts.push(value);
    }
    parts
}

fn function_call(call: &ToolCall, signature: Option<&str>) -> Value {
    let call_json = part([
        ("name", Some(call.name.as_str().into())),
        ("args", Some(arguments(&call.arguments))),
        ("id", wire_id(&call.id).map(Value::from)),
    ]);
    part([
        ("functionCall", Some(call_json)),
        ("thoughtSignature", signature.map(Value::from)),
    ])
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
fn media(part: &ContentPart) -> Option<Value> {
    match part {
        ContentPart::ImageUrl { url, .. } => Some(match inline_url(url) {
            Some(blob) => json!({ "inlineData": blob }),
            None => file_data(url),
        }),
        ContentPart::Binary { mime_type, data } => {
            Some(json!({ "inlineData": blob(mime_type, &base64_of(data)) }))
        }
        _ => None,
    }
}

fn blob(mime_type: &str, data: &str) -> Value {
    json!({"mimeType": mime_type, "data": data})
}

fn base64_of(data: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(data)
}

/// A `data:` URL as an inline blob (`data:<mime>[;base64],<data>`).
fn inline_url(url: &str) -> Option<Value> {
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
    Some(if is_base64 {
        blob(mime_type, data)
    } else {
        blob(mime_type, &base64_of(data.as_bytes()))
    })
}

/// A URL Gemini fetches itself, with the MIME type its extension implies when it has a
/// common one.
fn file_data(url: &str) -> Value {
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
    json!({"fileData": part([
        ("fileUri", Some(url.into())),
        ("mimeType", mime_type.map(Value::from)),
    ])})
}

/// The user turn answering a model turn's calls: one `functionResponse` per response, in the
/// order of the calls, built from a run of consecutive tool messages.
pub(super) struct ToolTurn<'a> {
    calls: &'a [&'a ToolCall],
    responses: Vec<Response<'a>>,
    /// Parts that are not responses (media by URL, stray text), after the responses.
    others: Vec<Value>,
}

struct Response<'a> {
    /// Position of the answered call in the model turn (unknown calls go last).
    order: usize,
    response: &'a ToolResponse,
    name: &'a str,
    media: Vec<Value>,
}

impl<'a> ToolTurn<'a> {
    /// A turn answering `calls` (the calls of the last model message).
    pub(super) fn new(calls: &'a [&'a ToolCall]) -> Self {
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
                ContentPart::Text { text, .. } => self.others.push(json!({"text": text})),
                ContentPart::ImageUrl { url, .. } => {
                    match (inline_url(url), self.responses.last_mut()) {
                        (Some(blob), Some(last)) => last.media.push(json!({ "inlineData": blob })),
                        _ => self.others.extend(media(content)),
                    }
                }
                ContentPart::Binary { mime_type, data } => {
                    let inline = json!({ "inlineData": blob(mime_type, &base64_of(data)) });
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
            ("", Some(index)) => self.calls.get(index).map_or("", |call| call.name.as_str()),
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
    pub(super) fn parts(mut self) -> Vec<Value> {
        // Stable: responses to the same or unknown calls keep their order.
        self.responses.sort_by_key(|r| r.order);
        let mut parts: Vec<Value> = self
            .responses
            .into_iter()
            .map(|r| {
                let media = (!r.media.is_empty()).then_some(Value::Array(r.media));
                let response = part([
                    ("name", Some(r.name.into())),
                    ("response", Some(json!({"output": r.response.content}))),
                    ("id", wire_id(&r.response.tool_call_id).map(Value::from)),
                    ("parts", media),
                ]);
                json!({ "functionResponse": response })
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

    #[test]
    fn urls() {
        assert_eq!(
            inline_url("data:image/png;base64,iVBO"),
            Some(json!({"mimeType": "image/png", "data": "iVBO"}))
        );
        assert_eq!(
            inline_url("data:,hi"),
            Some(json!({"mimeType": "text/plain", "data": "aGk="}))
        );
        assert_eq!(inline_url("https://x/a.png"), None);
        assert_eq!(
            file_data("https://x.test/cat.JPG?size=2"),
            json!({"fileData": {"fileUri": "https://x.test/cat.JPG?size=2", "mimeType": "image/jpeg"}})
        );
        assert_eq!(
            file_data("gs://bucket/blob"),
            json!({"fileData": {"fileUri": "gs://bucket/blob"}})
        );
    }

    #[test]
    fn minted_ids_stay_home() {
        assert_eq!(wire_id("gemini_call_abc_0"), None);
        assert_eq!(wire_id(""), None);
        assert_eq!(wire_id("call_123"), Some("call_123"));
    }
}

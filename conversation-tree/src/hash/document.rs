//! The JSON documents that are hashed.
//!
//! Fields are declared in sorted order, so serde writes them canonically; text is borrowed, so a
//! megabyte prompt is streamed into the hasher without a copy.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use messages::{ContentPart, Message};
use serde::Serialize;

use super::{attachment_hash, tool_call_hash, tool_result_hash};
use crate::HashOptions;

#[derive(Serialize)]
pub(super) struct PromptDoc<'a> {
    messages: Vec<MessageDoc<'a>>,
    options: OptionsDoc<'a>,
}

impl<'a> PromptDoc<'a> {
    pub(super) fn new(turn: &'a [Message], options: &'a HashOptions) -> Self {
        PromptDoc {
            messages: turn.iter().map(MessageDoc::new).collect(),
            options: OptionsDoc::new(options),
        }
    }
}

#[derive(Serialize)]
pub(super) struct MessageDoc<'a> {
    parts: Vec<PartDoc<'a>>,
    role: &'static str,
}

impl<'a> MessageDoc<'a> {
    pub(super) fn new(message: &'a Message) -> Self {
        let mut parts = Vec::with_capacity(message.parts.len());
        let mut rest = message.parts.as_slice();
        while let Some((part, after)) = rest.split_first() {
            rest = after;
            let doc = match part {
                ContentPart::Text { text, .. } => PartDoc::Text(text),
                ContentPart::ToolCall(call) => PartDoc::ToolCall(tool_call_hash(call)),
                ContentPart::ToolResponse(response) => {
                    // Media right after a tool response came back from that tool.
                    let media = rest.iter().take_while(|part| part.is_media()).count();
                    let (attachments, after_media) = rest.split_at(media);
                    rest = after_media;
                    PartDoc::ToolResult(tool_result_hash(response, attachments))
                }
                ContentPart::ImageUrl { .. } | ContentPart::Binary { .. } => {
                    match attachment_hash(part) {
                        Some(hash) => PartDoc::Attachment(hash),
                        None => continue,
                    }
                }
                // Opaque provider data: signatures differ between identical answers, and
                // clients often strip reasoning before sending a history back.
                ContentPart::Reasoning(_) => continue,
            };
            parts.push(doc);
        }
        MessageDoc {
            parts,
            role: message.role.as_str(),
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "snake_case")]
enum PartDoc<'a> {
    Attachment(String),
    Text(&'a str),
    ToolCall(String),
    ToolResult(String),
}

#[derive(Serialize)]
struct OptionsDoc<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    stop: Vec<&'a str>,
    /// `Some(0)` when the temperature is exactly zero; written as the integer `0`, so the hash
    /// does not depend on how a float zero is printed.
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<u8>,
}

impl<'a> OptionsDoc<'a> {
    fn new(options: &'a HashOptions) -> Self {
        let mut stop: Vec<&str> = options.stop.iter().map(String::as_str).collect();
        stop.sort_unstable();
        stop.dedup();
        OptionsDoc {
            max_tokens: options.max_tokens,
            stop,
            temperature: options.is_deterministic().then_some(0),
        }
    }
}

/// The bytes of a base64 `data:` URL (`data:image/png;base64,…`), if `url` is one.
pub(super) fn data_url_bytes(url: &str) -> Option<Vec<u8>> {
    let rest = url.strip_prefix("data:")?;
    let (header, payload) = rest.split_once(',')?;
    if !header.ends_with(";base64") {
        return None;
    }
    STANDARD.decode(payload.trim()).ok()
}

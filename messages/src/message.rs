use serde::{Deserialize, Serialize};

use crate::{ContentPart, Role, ToolCall, ToolResponse};

/// One message of a conversation: who wrote it and what it holds, in order.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Who wrote the message.
    pub role: Role,
    /// The message's content, in order.
    pub parts: Vec<ContentPart>,
}

impl Message {
    /// A message from parts.
    pub fn new(role: Role, parts: Vec<ContentPart>) -> Self {
        Message { role, parts }
    }

    /// A system message with one text part.
    pub fn system(text: impl Into<String>) -> Self {
        Self::new(Role::System, vec![ContentPart::text(text)])
    }

    /// A human message with one text part.
    pub fn human(text: impl Into<String>) -> Self {
        Self::new(Role::Human, vec![ContentPart::text(text)])
    }

    /// An AI message with one text part.
    pub fn ai(text: impl Into<String>) -> Self {
        Self::new(Role::Ai, vec![ContentPart::text(text)])
    }

    /// An AI message that calls tools, optionally after some text.
    pub fn ai_tool_calls(text: Option<String>, calls: Vec<ToolCall>) -> Self {
        let parts = text
            .into_iter()
            .map(ContentPart::text)
            .chain(calls.into_iter().map(ContentPart::ToolCall))
            .collect();
        Self::new(Role::Ai, parts)
    }

    /// A tool message answering the call `tool_call_id`.
    pub fn tool_response(
        tool_call_id: impl Into<String>,
        name: impl Into<String>,
        content: impl Into<String>,
    ) -> Self {
        Self::new(
            Role::Tool,
            vec![ContentPart::ToolResponse(ToolResponse::new(
                tool_call_id,
                name,
                content,
            ))],
        )
    }

    /// All text parts joined with `"\n"`; reasoning, media and tool parts are left out.
    pub fn text(&self) -> String {
        let mut texts = self.parts.iter().filter_map(ContentPart::as_text);
        let Some(first) = texts.next() else {
            return String::new();
        };
        texts.fold(first.to_owned(), |mut all, text| {
            all.push('\n');
            all.push_str(text);
            all
        })
    }

    /// The tool calls in this message, in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.parts.iter().filter_map(|part| match part {
            ContentPart::ToolCall(call) => Some(call),
            _ => None,
        })
    }

    /// The tool responses in this message, in order.
    pub fn tool_responses(&self) -> impl Iterator<Item = &ToolResponse> {
        self.parts.iter().filter_map(|part| match part {
            ContentPart::ToolResponse(response) => Some(response),
            _ => None,
        })
    }
}

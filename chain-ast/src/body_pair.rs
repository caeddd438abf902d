//! [`BodyPair`]: an AI message and the tool messages that answer it.

use std::fmt;

use messages::{ContentPart, Message, Reasoning, Role, ToolCall, ToolResponse};

use crate::header::check_role;
use crate::size::{message_size, parts_size};
use crate::{
    ChainError, FAKE_THOUGHT_SIGNATURE, IdTemplate, SUMMARIZATION_TOOL_ARGS,
    SUMMARIZATION_TOOL_NAME, SUMMARIZED_CONTENT_PREFIX, ToolCallsInfo,
};

/// What kind of body pair an AI message makes, derived from its content.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BodyPairKind {
    /// The AI message calls tools; tool messages answer them.
    RequestResponse,
    /// The AI message calls no tool; no tool messages follow.
    Completion,
    /// The AI message's first tool call is [`SUMMARIZATION_TOOL_NAME`]; exactly one tool message
    /// carries the summary.
    Summarization,
}

impl BodyPairKind {
    /// The kind an AI message makes: decided by its first tool call, if any.
    pub fn of(ai: &Message) -> BodyPairKind {
        match ai.tool_calls().next() {
            None => BodyPairKind::Completion,
            Some(call) if call.name == SUMMARIZATION_TOOL_NAME => BodyPairKind::Summarization,
            Some(_) => BodyPairKind::RequestResponse,
        }
    }

    /// The kind's name: `request-response`, `completion` or `summarization`.
    pub const fn as_str(self) -> &'static str {
        match self {
            BodyPairKind::RequestResponse => "request-response",
            BodyPairKind::Completion => "completion",
            BodyPairKind::Summarization => "summarization",
        }
    }

    /// Whether pairs of this kind carry tool calls.
    pub(crate) fn has_calls(self) -> bool {
        self != BodyPairKind::Completion
    }
}

impl fmt::Display for BodyPairKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One AI message and the tool messages that answer its calls.
///
/// The kind is derived from the AI message when the pair is made and the size is cached; both
/// stay exact because the fields are private and every change goes through a method.
#[derive(Clone, Debug, PartialEq)]
pub struct BodyPair {
    kind: BodyPairKind,
    ai: Message,
    tools: Vec<Message>,
    size: usize,
}

impl BodyPair {
    /// A body pair from an AI message and its tool messages; the kind follows from `ai`.
    ///
    /// The pairing of calls and responses is not checked here (see [`BodyPair::is_valid`]): an
    /// agent adds the AI message first and the responses as the tools finish. The messages are
    /// kept as given: no part of the caller's AI message is dropped.
    ///
    /// # Errors
    ///
    /// [`ChainError::WrongRole`] if `ai` is not an AI message or a tool message is not a tool
    /// message.
    pub fn new(ai: Message, tools: Vec<Message>) -> Result<BodyPair, ChainError> {
        check_role("BodyPair::new", 0, Role::Ai, Some(&ai))?;
        for (i, tool) in tools.iter().enumerate() {
            check_role("BodyPair::new", i + 1, Role::Tool, Some(tool))?;
        }
        let mut pair = BodyPair::from_ai(ai);
        pair.size += tools.iter().map(message_size).sum::<usize>();
        pair.tools = tools;
        Ok(pair)
    }

    /// A body pair from a run of messages: an AI message, then tool messages.
    ///
    /// Like [`BodyPair::new`], this does not check that calls and responses pair up: an AI
    /// message without calls followed by a tool message makes a completion pair that is not
    /// [valid](BodyPair::is_valid).
    ///
    /// # Errors
    ///
    /// [`ChainError::EmptyBodyPair`] for no messages; [`ChainError::WrongRole`] if the first is
    /// not an AI message or a later one is not a tool message.
    pub fn from_messages(
        messages: impl IntoIterator<Item = Message>,
    ) -> Result<BodyPair, ChainError> {
        let mut messages = messages.into_iter();
        let ai = messages.next().ok_or(ChainError::EmptyBodyPair)?;
        check_role("BodyPair::from_messages", 0, Role::Ai, Some(&ai))?;
        let tools = messages
            .enumerate()
            .map(|(i, tool)| {
                check_role("BodyPair::from_messages", i + 1, Role::Tool, Some(&tool))?;
                Ok(tool)
            })
            .collect::<Result<Vec<_>, ChainError>>()?;
        let mut pair = BodyPair::from_ai(ai);
        pair.size += tools.iter().map(message_size).sum::<usize>();
        pair.tools = tools;
        Ok(pair)
    }

    /// A completion pair: an AI message with one text part.
    pub fn from_completion(text: impl Into<String>) -> BodyPair {
        BodyPair::from_ai(Message::ai(text))
    }

    /// A summarization pair: an AI message calling [`SUMMARIZATION_TOOL_NAME`] with
    /// [`SUMMARIZATION_TOOL_ARGS`], and one tool message whose response content is `text`.
    ///
    /// The call id comes from `id_template` (e.g. `call_{r:24:x}`; see [`IdTemplate`]) so that it
    /// looks like the ids of the provider the chain goes to. With `add_fake_signature` the call
    /// carries the reasoning signature [`FAKE_THOUGHT_SIGNATURE`], which Gemini accepts in place
    /// of the thought signatures of the calls the summary replaced; pass
    /// [`contains_tool_call_reasoning`](crate::contains_tool_call_reasoning) of those messages.
    pub fn from_summarization(
        text: impl Into<String>,
        id_template: &IdTemplate,
        add_fake_signature: bool,
    ) -> BodyPair {
        BodyPair::summarization(text.into(), id_template, add_fake_signature, Vec::new())
    }

    /// Like [`BodyPair::from_summarization`], with the parts of `reasoning` (e.g. from
    /// [`extract_reasoning_message`](crate::extract_reasoning_message)) before the call, for
    /// providers that want reasoning before every tool call of the current turn (Kimi's
    /// `reasoning_content`).
    pub fn from_summarization_with_reasoning(
        text: impl Into<String>,
        id_template: &IdTemplate,
        add_fake_signature: bool,
        reasoning: Message,
    ) -> BodyPair {
        BodyPair::summarization(
            text.into(),
            id_template,
            add_fake_signature,
            reasoning.parts,
        )
    }

    fn summarization(
        text: String,
        id_template: &IdTemplate,
        add_fake_signature: bool,
        mut parts: Vec<ContentPart>,
    ) -> BodyPair {
        let id = id_template.generate(SUMMARIZATION_TOOL_NAME);
        let call = ToolCall {
            reasoning: add_fake_signature.then(|| Reasoning::signature(FAKE_THOUGHT_SIGNATURE)),
            ..ToolCall::new(id.clone(), SUMMARIZATION_TOOL_NAME, SUMMARIZATION_TOOL_ARGS)
        };
        parts.push(ContentPart::ToolCall(call));
        let mut pair = BodyPair::from_ai(Message::new(Role::Ai, parts));
        pair.push_tool(Message::tool_response(id, SUMMARIZATION_TOOL_NAME, text));
        pair
    }

    /// A pair of just an AI message whose role the caller has checked.
    pub(crate) fn from_ai(ai: Message) -> BodyPair {
        BodyPair {
            kind: BodyPairKind::of(&ai),
            size: message_size(&ai),
            ai,
            tools: Vec::new(),
        }
    }

    /// The pair's kind, derived from the AI message.
    pub fn kind(&self) -> BodyPairKind {
        self.kind
    }

    /// The AI message.
    pub fn ai(&self) -> &Message {
        &self.ai
    }

    /// The tool messages, in order.
    pub fn tools(&self) -> &[Message] {
        &self.tools
    }

    /// Size in bytes of the AI and tool messages (see [`message_size`]).
    pub fn size(&self) -> usize {
        self.size
    }

    /// The pair's messages: the AI message, then the tool messages.
    pub fn messages(&self) -> Vec<Message> {
        self.iter().cloned().collect()
    }

    /// The pair's messages by reference, in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Message> {
        std::iter::once(&self.ai).chain(&self.tools)
    }

    /// Number of messages in the pair.
    pub(crate) fn len(&self) -> usize {
        1 + self.tools.len()
    }

    /// The AI message and the tool messages, consuming the pair.
    pub fn into_parts(self) -> (Message, Vec<Message>) {
        (self.ai, self.tools)
    }

    /// Which calls are answered, which are not, and which responses answer nothing.
    pub fn tool_calls_info(&self) -> ToolCallsInfo<'_> {
        ToolCallsInfo::of(&self.ai, &self.tools)
    }

    /// Whether the pair is complete for its kind: a completion has no tool messages, a
    /// request-response pair at least one, a summarization pair exactly one; and every call is
    /// answered exactly once, with no response to an id that was not called.
    pub fn is_valid(&self) -> bool {
        let tools_ok = match self.kind {
            BodyPairKind::Completion => self.tools.is_empty(),
            BodyPairKind::RequestResponse => !self.tools.is_empty(),
            BodyPairKind::Summarization => self.tools.len() == 1,
        };
        let info = self.tool_calls_info();
        tools_ok && info.pending.is_empty() && info.unmatched.is_empty()
    }

    /// Whether the pair is a summary made earlier: a summarization pair, or a completion whose
    /// text starts with [`SUMMARIZED_CONTENT_PREFIX`].
    pub fn is_summary(&self) -> bool {
        match self.kind {
            BodyPairKind::Summarization => true,
            BodyPairKind::RequestResponse => false,
            BodyPairKind::Completion => matches!(
                self.ai.parts.first(),
                Some(ContentPart::Text { text, .. }) if text.starts_with(SUMMARIZED_CONTENT_PREFIX)
            ),
        }
    }

    /// The responses in the tool messages that answer `id`.
    pub(crate) fn responses_to<'a, 'id>(
        &'a self,
        id: &'id str,
    ) -> impl Iterator<Item = &'a ToolResponse> + use<'a, 'id> {
        self.tools
            .iter()
            .flat_map(Message::tool_responses)
            .filter(move |response| response.tool_call_id == id)
    }

    /// Appends a tool message.
    pub(crate) fn push_tool(&mut self, tool: Message) {
        self.size += message_size(&tool);
        self.tools.push(tool);
    }

    /// Appends parts to the first tool message (creating it if there is none): the one tool
    /// message of a summarization pair.
    pub(crate) fn extend_first_tool(&mut self, parts: impl IntoIterator<Item = ContentPart>) {
        if self.tools.is_empty() {
            self.tools.push(Message::new(Role::Tool, Vec::new()));
        }
        if let Some(tool) = self.tools.first_mut() {
            let start = tool.parts.len();
            tool.parts.extend(parts);
            self.size += parts_size(&tool.parts[start..]);
        }
    }

    /// Appends a tool call to the AI message. Never changes the kind: only pairs that already
    /// call tools get calls added, after their first call.
    pub(crate) fn push_call(&mut self, call: ToolCall) {
        let part = ContentPart::ToolCall(call);
        self.size += crate::size::part_size(&part);
        self.ai.parts.push(part);
    }

    /// Answers call `id`: replaces the content of an existing response (keeping its name), or
    /// appends a response to the last tool message, or adds a tool message.
    pub(crate) fn answer(&mut self, id: &str, name: &str, content: &str) {
        let existing = self
            .tools
            .iter_mut()
            .flat_map(|tool| tool.parts.iter_mut())
            .find_map(|part| match part {
                ContentPart::ToolResponse(response) if response.tool_call_id == id => {
                    Some(response)
                }
                _ => None,
            });
        if let Some(response) = existing {
            self.size -= response.content.len();
            self.size += content.len();
            content.clone_into(&mut response.content);
            return;
        }
        let part = ContentPart::ToolResponse(ToolResponse::new(id, name, content));
        match self.tools.last_mut() {
            Some(tool) => {
                self.size += crate::size::part_size(&part);
                tool.parts.push(part);
            }
            None => self.push_tool(Message::new(Role::Tool, vec![part])),
        }
    }

    /// Lets `edit` change the AI message and the tool messages (not their number), then
    /// derives the kind and the size again.
    pub(crate) fn edit(&mut self, edit: impl FnOnce(&mut Message, &mut [Message])) {
        edit(&mut self.ai, &mut self.tools);
        self.kind = BodyPairKind::of(&self.ai);
        self.size = self.iter().map(message_size).sum();
    }
}

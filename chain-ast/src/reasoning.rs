//! Reasoning helpers: where tool-call reasoning is, and clearing it on a provider switch.

use messages::{ContentPart, Message, Role};

use crate::ChainAst;

/// Whether any tool call in `messages` carries reasoning (a Gemini thought signature rides on
/// the call). Reasoning on text parts and standalone reasoning parts does not count: only calls
/// are checked by providers when the chain comes back. Empty reasoning counts (it is present).
///
/// When summarised content had such calls, pass `true` as `add_fake_signature` to
/// [`BodyPair::from_summarization`](crate::BodyPair::from_summarization).
pub fn contains_tool_call_reasoning(messages: &[Message]) -> bool {
    messages
        .iter()
        .flat_map(Message::tool_calls)
        .any(|call| call.reasoning.is_some())
}

/// Whether the message has a tool call part.
pub fn has_tool_calls(message: &Message) -> bool {
    message.tool_calls().next().is_some()
}

/// The first piece of reasoning in an AI message of `messages`, as a new AI message holding just
/// that part: a text part with non-empty reasoning (text and reasoning kept), or a non-empty
/// standalone reasoning part. `None` if there is none.
///
/// Skein keeps Anthropic thinking blocks and OpenAI reasoning items as standalone parts, so
/// those count too, not only reasoning on text parts.
pub fn extract_reasoning_message(messages: &[Message]) -> Option<Message> {
    messages
        .iter()
        .filter(|message| message.role == Role::Ai)
        .flat_map(|message| &message.parts)
        .find(|part| match part {
            ContentPart::Text {
                reasoning: Some(reasoning),
                ..
            } => !reasoning.is_empty(),
            ContentPart::Reasoning(reasoning) => !reasoning.is_empty(),
            _ => false,
        })
        .map(|part| Message::new(Role::Ai, vec![part.clone()]))
}

/// Removes reasoning from a message: standalone reasoning parts go, text parts and tool calls
/// lose theirs.
fn clear_message_reasoning(message: &mut Message) {
    message
        .parts
        .retain(|part| !matches!(part, ContentPart::Reasoning(_)));
    for part in &mut message.parts {
        match part {
            ContentPart::Text { reasoning, .. } => *reasoning = None,
            ContentPart::ToolCall(call) => call.reasoning = None,
            _ => {}
        }
    }
}

impl ChainAst {
    /// Removes all reasoning from every message (headers included): standalone reasoning parts
    /// are dropped, text parts and tool calls lose theirs.
    ///
    /// Signatures are only valid for the provider (and often the model) that made them; call
    /// this when a chain moves to another one. Sizes do not change: reasoning is never counted.
    pub fn clear_reasoning(&mut self) {
        self.edit_sections(|section| {
            section.edit_header(|header| header.edit_messages(clear_message_reasoning));
            for index in 0..section.body().len() {
                section.edit_pair(index, |pair| {
                    pair.edit(|ai, tools| {
                        clear_message_reasoning(ai);
                        tools.iter_mut().for_each(clear_message_reasoning);
                    })
                });
            }
        });
    }
}

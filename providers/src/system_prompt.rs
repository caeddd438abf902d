//! System messages for providers that take one system prompt (Anthropic, Gemini).
//!
//! OpenAI takes a system message anywhere in a conversation, and clients use that: pydantic-ai
//! adds one when it retries a failed validation, agents add reminders between turns. The
//! system messages that open the conversation form the provider's system prompt; a later one
//! is sent where it stands, as text of a user turn marked as a system instruction.
//!
//! Why not merge a later one into the system prompt: the instruction is about the turn it
//! follows ("your last answer failed validation"), so the model should read it there, and the
//! system prompt is the start of the cached prompt prefix — changing it on every such message
//! would make Anthropic and Gemini re-read (and bill) the whole conversation uncached.

use messages::{Message, Role};

/// How many messages open `messages` as system messages: these form the system prompt.
pub(crate) fn leading(messages: &[Message]) -> usize {
    messages
        .iter()
        .take_while(|message| message.role == Role::System)
        .count()
}

/// A later system message's text as it goes into a user turn.
pub(crate) fn as_user_text(text: &str) -> String {
    format!("<system_instruction>\n{text}\n</system_instruction>")
}

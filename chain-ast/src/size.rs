//! How big a message is, in bytes.

use messages::{ContentPart, Message};

/// The size of one part in bytes.
///
/// | part | counted |
/// |---|---|
/// | text | the text's UTF-8 bytes (its reasoning is not counted) |
/// | image URL | the URL's bytes (the detail hint is not counted) |
/// | binary | the data's bytes (the MIME type is not counted) |
/// | tool call | id + name + arguments (its reasoning is not counted) |
/// | tool response | tool call id + name + content |
/// | reasoning | 0: reasoning is never counted |
///
/// Reasoning is left out because providers drop or ignore it in earlier turns; what a chain costs
/// is the text the model reads again.
pub fn part_size(part: &ContentPart) -> usize {
    match part {
        ContentPart::Text { text, .. } => text.len(),
        ContentPart::ImageUrl { url, .. } => url.len(),
        ContentPart::Binary { data, .. } => data.len(),
        ContentPart::Reasoning(_) => 0,
        ContentPart::ToolCall(call) => call.id.len() + call.name.len() + call.arguments.len(),
        ContentPart::ToolResponse(response) => {
            response.tool_call_id.len() + response.name.len() + response.content.len()
        }
    }
}

/// The size of a message in bytes: the sum of its parts' [`part_size`]s. The role is not counted.
///
/// ```
/// use chain_ast::message_size;
/// use messages::{Message, ToolCall};
///
/// assert_eq!(message_size(&Message::human("Hello world")), 11);
/// let call = Message::ai_tool_calls(None, vec![ToolCall::new("call-1", "test_function", "{}")]);
/// assert_eq!(message_size(&call), 6 + 13 + 2);
/// ```
pub fn message_size(message: &Message) -> usize {
    parts_size(&message.parts)
}

/// The summed [`part_size`] of some parts.
pub(crate) fn parts_size(parts: &[ContentPart]) -> usize {
    parts.iter().map(part_size).sum()
}

//! The texts the agent itself adds to a conversation.

use messages::ToolCall;
use messages::{Message, Role, ToolResponse};

/// Sent as a human message when the tool rounds are spent; the model then answers without
/// tools. The wording is fixed (see `COMPAT.md`).
pub const TOOL_LIMIT_REACHED_MESSAGE: &str = "[SYSTEM NOTICE] Tool call limit reached. You have made too many tool calls in this conversation.\n\nPlease provide your final response to the user based on the information you have gathered so far. Do NOT attempt to call any more tools - simply summarize your findings and provide a helpful response.";

/// The result of a call made after the tool rounds were spent: it is answered, so the chain
/// stays valid, but not run.
pub const TOOL_CALL_NOT_EXECUTED: &str =
    "Not executed: the tool call limit of this conversation was reached.";

/// How many answers in a row may have their tool calls cut off at the output limit.
pub const MAX_TRUNCATION_RETRIES: usize = 3;

/// The result of a tool call cut off at the output token limit: the call is answered with it,
/// not run, and the model is told how to retry.
pub fn truncated_call_notice(attempt: usize) -> String {
    format!(
        "[SYSTEM ERROR] Your previous response was truncated due to reaching the maximum token \
         limit before completing the tool call(s).\n\nThe incomplete tool call(s) could not be \
         executed because the parameters were cut off.\n\nPlease adjust your approach:\n- Use \
         shorter or more concise parameters\n- Break complex operations into smaller, separate \
         tool calls\n- Simplify your response to stay within token limits\n\nTruncation reason: \
         length\nAttempt: {attempt}/{MAX_TRUNCATION_RETRIES}\n\nPlease try again with a \
         different approach."
    )
}

/// One tool message per call, each answering it with `content` (calls that were not run).
pub(crate) fn answer_all<'a>(
    calls: impl IntoIterator<Item = &'a ToolCall>,
    content: &str,
) -> Vec<Message> {
    calls
        .into_iter()
        .map(|call| {
            Message::new(
                Role::Tool,
                vec![messages::ContentPart::ToolResponse(ToolResponse::new(
                    call.id.clone(),
                    call.name.clone(),
                    content,
                ))],
            )
        })
        .collect()
}

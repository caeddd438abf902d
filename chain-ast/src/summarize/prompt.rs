//! The prompt a summarizer gets: instructions, then the user's requests and the rest as light
//! XML. Reasoning is never included: it is the provider's, and often opaque.

use std::fmt::Write as _;

use messages::{ContentPart, Message, Role};

use crate::{SUMMARIZATION_TOOL_NAME, SUMMARIZED_CONTENT_PREFIX};

/// Instructions when there are both user requests and replies.
const INSTRUCTIONS_FULL: &str = "
Summarize the conversation below so that the work can go on from the summary alone.

- <tasks> holds what the user asked; <messages> holds the assistant's replies, its tool calls and \
the tool results.
- Keep every detail later work may need: commands and their arguments, file paths, URLs, names, \
versions, numbers, errors and results.
- A tool call named \"{tool}\" with its result, or text that starts with \"{prefix}\", is an \
earlier summary: keep all of its points.
- Follow the order in which the work was done; say what is finished and what is still open.
- Answer the user's requests as the replies did; do not add new conclusions.
- Write only the summary: no preamble, no XML tags.
";

/// Instructions when there are only replies.
const INSTRUCTIONS_REPLIES: &str = "
Summarize the assistant's replies, tool calls and tool results in <messages> so that the work can \
go on from the summary alone.

- Keep every detail later work may need: commands and their arguments, file paths, URLs, names, \
versions, numbers, errors and results.
- A tool call named \"{tool}\" with its result, or text that starts with \"{prefix}\", is an \
earlier summary: keep all of its points.
- Follow the order in which the work was done; say what is finished and what is still open.
- Write only the summary: no preamble, no XML tags.
";

/// Instructions when there are only user requests.
const INSTRUCTIONS_TASKS: &str = "
Restate the user's requests in <tasks> as a short list of requirements, in the imperative, \
keeping every detail (names, paths, numbers, constraints). Write only the list: no preamble, no \
XML tags.
";

/// Builds the prompt for summarising `messages` (in chain order; human messages become tasks).
pub(super) fn build(messages: &[&Message]) -> String {
    let has_tasks = messages.iter().any(|message| message.role == Role::Human);
    let has_replies = messages.iter().any(|message| message.role != Role::Human);
    let instructions = match (has_tasks, has_replies) {
        (true, true) => INSTRUCTIONS_FULL,
        (true, false) => INSTRUCTIONS_TASKS,
        _ => INSTRUCTIONS_REPLIES,
    };
    let instructions = instructions
        .replace("{tool}", SUMMARIZATION_TOOL_NAME)
        .replace("{prefix}", SUMMARIZED_CONTENT_PREFIX.trim_end());

    let mut prompt = format!("<instructions>{instructions}</instructions>\n\n");
    if has_tasks {
        prompt.push_str("<tasks>\n");
        for (id, message) in numbered(messages, |role| role == Role::Human) {
            let _ = writeln!(prompt, "<task id=\"{id}\">");
            for part in &message.parts {
                write_part(&mut prompt, part, false);
            }
            prompt.push_str("</task>\n");
        }
        prompt.push_str("</tasks>\n");
    }
    if has_replies {
        prompt.push_str("<messages>\n");
        for (id, message) in numbered(messages, |role| role != Role::Human) {
            let _ = writeln!(prompt, "<message id=\"{id}\" role=\"{}\">", message.role);
            for part in &message.parts {
                write_part(&mut prompt, part, true);
            }
            prompt.push_str("</message>\n");
        }
        prompt.push_str("</messages>\n");
    }
    prompt
}

/// The messages whose role passes `keep`, with their index among all messages.
fn numbered<'a>(
    messages: &'a [&'a Message],
    keep: impl Fn(Role) -> bool + 'a,
) -> impl Iterator<Item = (usize, &'a Message)> + 'a {
    messages
        .iter()
        .enumerate()
        .filter(move |(_, message)| keep(message.role))
        .map(|(id, message)| (id, *message))
}

/// Writes one part; text is wrapped in `<content>` inside `<messages>`.
fn write_part(prompt: &mut String, part: &ContentPart, wrap_text: bool) {
    let _ = match part {
        ContentPart::Text { text, .. } if wrap_text => {
            writeln!(prompt, "<content>\n{text}\n</content>")
        }
        ContentPart::Text { text, .. } => writeln!(prompt, "{text}"),
        ContentPart::ImageUrl { url, .. } => writeln!(prompt, "<image url=\"{url}\"/>"),
        ContentPart::Binary { mime_type, data } => {
            writeln!(
                prompt,
                "<binary mime=\"{mime_type}\" bytes=\"{}\"/>",
                data.len()
            )
        }
        ContentPart::ToolCall(call) => writeln!(
            prompt,
            "<tool_call name=\"{}\" id=\"{}\">\n{}\n</tool_call>",
            call.name, call.id, call.arguments
        ),
        ContentPart::ToolResponse(response) => writeln!(
            prompt,
            "<tool_result name=\"{}\" id=\"{}\">\n{}\n</tool_result>",
            response.name, response.tool_call_id, response.content
        ),
        ContentPart::Reasoning(_) => Ok(()),
    };
}

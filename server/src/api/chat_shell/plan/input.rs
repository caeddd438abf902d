//! `input`, `attachments` and `knowledge_context` into messages and content parts.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use chain_ast::ChainAst;
use messages::{ContentPart, Message, Role, ToolCall, ToolResponse};
use service::RunInput;

use super::Problems;
use crate::api::chat_shell::schema::{
    Attachment, ContentItem, InputConfig, InputMessage, KnowledgeContext, MessageContent,
};

/// The run input of `input` with `attachments` added to the human message.
pub(super) fn run_input(
    input: InputConfig,
    attachments: Vec<Attachment>,
    problems: &mut Problems,
) -> Option<RunInput> {
    let attached: Vec<ContentPart> = attachments
        .into_iter()
        .enumerate()
        .filter_map(|(i, attachment)| attachment_part(i, attachment, problems))
        .collect();
    let given = [
        input.text.is_some(),
        input.content.is_some(),
        input.messages.is_some(),
    ];
    if given.iter().filter(|given| **given).count() != 1 {
        problems.invalid(
            "input",
            "give exactly one of `input.text`, `input.content` and `input.messages`",
        );
        return None;
    }
    if let Some(text) = input.text {
        if text.trim().is_empty() && attached.is_empty() {
            problems.invalid("input.text", "the input text is empty");
            return None;
        }
        let mut parts = vec![ContentPart::text(text)];
        parts.extend(attached);
        return Some(RunInput::Parts(parts));
    }
    if let Some(items) = input.content {
        if items.is_empty() {
            problems.invalid("input.content", "the content list is empty");
            return None;
        }
        let mut parts = content_parts("input.content", items, problems)?;
        parts.extend(attached);
        return Some(RunInput::Parts(parts));
    }
    let mut messages = conversation(input.messages.unwrap_or_default(), problems)?;
    if !attached.is_empty() {
        match messages.last_mut() {
            Some(last) if last.role == Role::Human => last.parts.extend(attached),
            _ => {
                problems.invalid(
                    "attachments",
                    "attachments go with a user message, but `input.messages` ends with another role",
                );
                return None;
            }
        }
    }
    Some(RunInput::Messages(messages))
}

fn content_parts(
    field: &str,
    items: Vec<ContentItem>,
    problems: &mut Problems,
) -> Option<Vec<ContentPart>> {
    let count = items.len();
    let parts: Vec<ContentPart> = items
        .into_iter()
        .enumerate()
        .filter_map(|(i, item)| content_part(&format!("{field}[{i}]"), item, problems))
        .collect();
    (parts.len() == count).then_some(parts)
}

fn content_part(field: &str, item: ContentItem, problems: &mut Problems) -> Option<ContentPart> {
    match (item.kind.as_str(), item.text, item.source) {
        ("text", Some(text), None) => Some(ContentPart::text(text)),
        ("image", None, Some(source)) => match STANDARD.decode(source.data.trim()) {
            Ok(bytes) => Some(ContentPart::binary(source.media_type, bytes)),
            Err(err) => {
                problems.invalid(
                    &format!("{field}.source.data"),
                    &format!("not valid base64: {err}"),
                );
                None
            }
        },
        ("text" | "image", _, _) => {
            problems.invalid(
                field,
                "a `text` part has `text` only, an `image` part has `source` only",
            );
            None
        }
        (other, _, _) => {
            problems.invalid(
                &format!("{field}.type"),
                &format!("unknown part type `{other}`; use `text` or `image`"),
            );
            None
        }
    }
}

/// `input.messages` as a valid chain ending with what to answer.
fn conversation(items: Vec<InputMessage>, problems: &mut Problems) -> Option<Vec<Message>> {
    if items.is_empty() {
        problems.invalid("input.messages", "the message list is empty");
        return None;
    }
    let count = items.len();
    let mut messages = Vec::with_capacity(count);
    for (i, item) in items.into_iter().enumerate() {
        let field = format!("input.messages[{i}]");
        if let Some(message) = message(&field, item, &messages, problems) {
            messages.push(message);
        }
    }
    if messages.len() != count {
        return None;
    }
    if let Err(error) = ChainAst::new(&messages, false) {
        let rule = error
            .rule()
            .map(|rule| format!("{rule}: "))
            .unwrap_or_default();
        problems.invalid(
            "input.messages",
            &format!("the conversation is not a valid chain: {rule}{error}"),
        );
        return None;
    }
    if messages.last().is_some_and(|last| last.role == Role::Ai) {
        problems.invalid(
            "input.messages",
            "the last message is an assistant message, so there is nothing to answer; end with a \
             user message or tool results",
        );
        return None;
    }
    Some(messages)
}

fn message(
    field: &str,
    item: InputMessage,
    earlier: &[Message],
    problems: &mut Problems,
) -> Option<Message> {
    let role = match item.role.as_str() {
        "system" => Role::System,
        "user" | "human" => Role::Human,
        "assistant" | "ai" => Role::Ai,
        "tool" => Role::Tool,
        other => {
            problems.invalid(
                &format!("{field}.role"),
                &format!("unknown role `{other}`; use system, user, assistant or tool"),
            );
            return None;
        }
    };
    let mut parts = match item.content {
        None => Vec::new(),
        Some(MessageContent::Text(text)) => vec![ContentPart::text(text)],
        Some(MessageContent::Parts(items)) => {
            content_parts(&format!("{field}.content"), items, problems)?
        }
    };
    let misplaced = |what: &str, problems: &mut Problems| {
        problems.invalid(
            &format!("{field}.{what}"),
            &format!("`{what}` belongs on {} messages only", allowed_on(what)),
        );
    };
    match role {
        Role::Tool => {
            let Some(id) = item.tool_call_id else {
                problems.invalid(
                    &format!("{field}.tool_call_id"),
                    "a tool message needs the `tool_call_id` of the call it answers",
                );
                return None;
            };
            let name = item
                .name
                .or_else(|| tool_name(earlier, &id))
                .unwrap_or_default();
            let content = parts
                .iter()
                .filter_map(ContentPart::as_text)
                .collect::<Vec<_>>()
                .join("\n");
            // Media after the response, as the message model keeps them.
            let media = parts.into_iter().filter(ContentPart::is_media);
            let response = ContentPart::ToolResponse(ToolResponse::new(id, name, content));
            return Some(Message::new(
                role,
                std::iter::once(response).chain(media).collect(),
            ));
        }
        _ if item.tool_call_id.is_some() => misplaced("tool_call_id", problems),
        _ if item.name.is_some() => misplaced("name", problems),
        _ => {}
    }
    if let Some(calls) = item.tool_calls {
        if role != Role::Ai {
            misplaced("tool_calls", problems);
            return None;
        }
        for (i, call) in calls.into_iter().enumerate() {
            if call.kind != "function" {
                problems.invalid(
                    &format!("{field}.tool_calls[{i}].type"),
                    "only `function` tool calls exist",
                );
                return None;
            }
            parts.push(ContentPart::ToolCall(ToolCall::new(
                call.id,
                call.function.name,
                call.function.arguments,
            )));
        }
    }
    Some(Message::new(role, parts))
}

fn allowed_on(field: &str) -> &'static str {
    match field {
        "tool_calls" => "assistant",
        _ => "tool",
    }
}

/// The name of the call `id` made earlier in the conversation.
fn tool_name(earlier: &[Message], id: &str) -> Option<String> {
    earlier
        .iter()
        .rev()
        .flat_map(Message::tool_calls)
        .find(|call| call.id == id)
        .map(|call| call.name.clone())
}

fn attachment_part(
    index: usize,
    attachment: Attachment,
    problems: &mut Problems,
) -> Option<ContentPart> {
    let field = format!("attachments[{index}]");
    match (attachment.content, attachment.data) {
        (Some(content), None) => Some(ContentPart::text(format!(
            "[Attachment: {} ({})]\n{content}",
            attachment.filename, attachment.mime_type
        ))),
        (None, Some(data)) => match STANDARD.decode(data.trim()) {
            Ok(bytes) => Some(ContentPart::binary(attachment.mime_type, bytes)),
            Err(err) => {
                problems.invalid(
                    &format!("{field}.data"),
                    &format!("not valid base64: {err}"),
                );
                None
            }
        },
        _ => {
            problems.invalid(
                &field,
                "an attachment has exactly one of `content` (text) and `data` (base64)",
            );
            None
        }
    }
}

/// The system prompt with the knowledge-base excerpts after it.
pub(super) fn system_prompt(
    system: Option<String>,
    knowledge: Option<KnowledgeContext>,
) -> Option<String> {
    let Some(knowledge) = knowledge.filter(|k| !k.contexts.is_empty()) else {
        return system;
    };
    let mut text = system.map(|s| s + "\n\n").unwrap_or_default();
    text.push_str(
        knowledge.meta_prompt.as_deref().unwrap_or(
            "Answer using the following knowledge-base excerpts where they are relevant.",
        ),
    );
    for excerpt in knowledge.contexts {
        text.push_str(&format!(
            "\n\n<knowledge_base name=\"{}\" id=\"{}\">\n{}\n</knowledge_base>",
            excerpt.kb_name, excerpt.kb_id, excerpt.content
        ));
    }
    Some(text)
}

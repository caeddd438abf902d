//! Building a [`ChainAst`] from messages by following the [`Rules`]' steps.

use messages::{ContentPart, Message, Role, ToolCall, ToolResponse};

use crate::rules::{Action, Fallback, Rules, ToolEdit};
use crate::{
    BodyPair, ChainAst, ChainError, ChainSection, FALLBACK_REQUEST_ARGS, FALLBACK_RESPONSE_CONTENT,
    Header,
};

/// Builds the tree in one pass, cloning each kept message once. Returns the problems repaired
/// (force mode) beside the tree.
pub(crate) fn build(
    messages: &[Message],
    force: bool,
) -> Result<(ChainAst, Vec<ChainError>), ChainError> {
    let mut rules = Rules::new(force);
    let mut ast = ChainAst::empty();
    for (index, message) in messages.iter().enumerate() {
        let step = rules.step(index, message)?;
        if let Some(fallback) = step.fallback {
            add_fallback(&mut ast, fallback);
        }
        place(&mut ast, message, step.action);
    }
    if let Some(fallback) = rules.finish()? {
        add_fallback(&mut ast, fallback);
    }
    Ok((ast, rules.into_repaired()))
}

/// Puts a message where the rules said.
fn place(ast: &mut ChainAst, message: &Message, action: Action<'_>) {
    match action {
        Action::NewSection => {
            let header = match message.role {
                Role::System => Header::from_parts(Some(message.clone()), None),
                _ => Header::from_parts(None, Some(message.clone())),
            };
            ast.add_section(ChainSection::new(header, Vec::new()));
        }
        Action::SetHuman => {
            ast.edit_last_section(|section| {
                section.edit_header(|header| header.set_human(message.clone()))
            });
        }
        Action::MergeHuman => {
            ast.edit_last_section(|section| {
                section.edit_header(|header| header.extend_human(message.parts.iter().cloned()))
            });
        }
        Action::NewPair => {
            ast.edit_last_section(|section| {
                section.add_body_pair(BodyPair::from_ai(message.clone()))
            });
        }
        Action::Tool(edit) => {
            ast.edit_last_section(|section| {
                section.edit_last_pair(|pair| add_tool_message(pair, message, edit))
            });
        }
        Action::Drop => {}
    }
}

/// Adds a tool message to its pair, with the repairs the rules asked for.
fn add_tool_message(pair: &mut BodyPair, message: &Message, edit: ToolEdit<'_>) {
    for (id, name) in edit.add_calls {
        pair.push_call(ToolCall::new(id, name, FALLBACK_REQUEST_ARGS));
    }
    let parts = message
        .parts
        .iter()
        .enumerate()
        // `drop_parts` is in ascending order.
        .filter(|(index, _)| edit.drop_parts.binary_search(index).is_err())
        .map(|(_, part)| part.clone());
    if edit.merge {
        pair.extend_first_tool(parts);
    } else if edit.drop_parts.is_empty() {
        pair.push_tool(message.clone());
    } else {
        pair.push_tool(Message::new(Role::Tool, parts.collect()));
    }
}

/// Answers the unanswered calls of the last pair with [`FALLBACK_RESPONSE_CONTENT`].
fn add_fallback(ast: &mut ChainAst, fallback: Fallback<'_>) {
    let responses = fallback.calls.into_iter().map(|(id, name)| {
        ContentPart::ToolResponse(ToolResponse::new(id, name, FALLBACK_RESPONSE_CONTENT))
    });
    ast.edit_last_section(|section| {
        section.edit_last_pair(|pair| {
            if fallback.into_first_tool {
                pair.extend_first_tool(responses);
            } else {
                responses.for_each(|part| pair.push_tool(Message::new(Role::Tool, vec![part])));
            }
        })
    });
}

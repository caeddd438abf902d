//! `skein logs show`: every response of a conversation as Markdown, in the manner of
//! `llm logs` (a header per response with its hashes and timing, `## Prompt`, `## System`
//! when it changes, tool results, `## Response` with its tool calls, token usage on request).

use std::io::Write;

use conversation_tree::{ConversationSummary, Node, ResponseStatus, Store, Turn};
use messages::{ContentPart, Message, Role};
use serde_json::json;

use super::{summary_json, time, write_json};
use crate::CliError;

pub(super) async fn show(
    store: &dyn Store,
    summary: &ConversationSummary,
    usage: bool,
    json: bool,
    out: &mut impl Write,
) -> Result<(), CliError> {
    let nodes = store.conversation_nodes(&summary.id).await?;
    let mut turns = Vec::with_capacity(nodes.len());
    for node in &nodes {
        turns.push(store.turn(node.id()).await?);
    }
    if json {
        let latest = store.latest_node(&summary.id).await?;
        let messages = match latest {
            Some(node) => store.messages_for_path(node.id()).await?,
            None => Vec::new(),
        };
        let responses: Vec<_> = nodes
            .iter()
            .zip(&turns)
            .map(|(node, turn)| {
                json!({
                    "id": node.id(),
                    "parent": node.parent(),
                    "model": node.model(),
                    "status": node.status(),
                    "datetime_utc": node.datetime_utc().to_string(),
                    "prompt_hash": node.prompt_hash(),
                    "response_hash": node.response_hash(),
                    "path_hash": node.path_hash(),
                    "duration_ms": node.duration().map(|d| d.as_millis()),
                    "ttft_ms": node.ttft().map(|d| d.as_millis()),
                    "usage": node.usage(),
                    "input": turn.input,
                    "response": turn.response,
                })
            })
            .collect();
        let document = json!({
            "conversation": summary_json(summary),
            "responses": responses,
            "messages": messages,
        });
        return write_json(out, &document);
    }
    let mut system: Option<String> = None;
    for (node, turn) in nodes.iter().zip(&turns) {
        write_node(node, turn, summary.id.as_str(), &mut system, usage, out)?;
    }
    Ok(())
}

/// The node's hashes (which input, which answer, which path from the root: what finds it
/// again from a message array, and tells reused answers from new ones) and how
/// long its model call took to start answering and to finish.
fn write_hashes(node: &Node, out: &mut impl Write) -> Result<(), CliError> {
    writeln!(out, "- Prompt hash: `{}`", node.prompt_hash())?;
    writeln!(out, "- Response hash: `{}`", node.response_hash())?;
    writeln!(out, "- Path hash: `{}`", node.path_hash())?;
    let millis = |duration: std::time::Duration| format!("{} ms", duration.as_millis());
    match (node.ttft(), node.duration()) {
        (Some(ttft), Some(duration)) => writeln!(
            out,
            "- Time to first token: {}, whole answer: {}",
            millis(ttft),
            millis(duration)
        )?,
        (None, Some(duration)) => writeln!(out, "- Whole answer: {}", millis(duration))?,
        (Some(ttft), None) => writeln!(out, "- Time to first token: {}", millis(ttft))?,
        (None, None) => {}
    }
    writeln!(out)?;
    Ok(())
}

fn write_node(
    node: &Node,
    turn: &Turn,
    conversation: &str,
    system: &mut Option<String>,
    usage: bool,
    out: &mut impl Write,
) -> Result<(), CliError> {
    writeln!(
        out,
        "# {}    conversation: {conversation} id: {}\n",
        time(node.datetime_utc()),
        node.id()
    )?;
    let parent = node
        .parent()
        .map(|parent| format!(" (after #{parent})"))
        .unwrap_or_default();
    let status = match node.status() {
        ResponseStatus::Completed => String::new(),
        stopped => format!(", {stopped} before it ended"),
    };
    match node.model() {
        Some(model) => writeln!(out, "Model: **{model}**{parent}{status}\n")?,
        None => writeln!(out, "Supplied by the caller{parent}\n")?,
    }
    write_hashes(node, out)?;
    let prompt: Vec<String> = turn
        .input
        .iter()
        .filter(|m| m.role == Role::Human)
        .map(Message::text)
        .collect();
    if !prompt.is_empty() {
        writeln!(out, "## Prompt\n\n{}\n", prompt.join("\n\n"))?;
    }
    if let Some(text) = turn
        .input
        .iter()
        .find(|m| m.role == Role::System)
        .map(Message::text)
        && system.as_deref() != Some(text.as_str())
    {
        writeln!(out, "## System\n\n{text}\n")?;
        *system = Some(text);
    }
    let results: Vec<String> = turn
        .input
        .iter()
        .flat_map(Message::tool_responses)
        .map(|r| format!("- **{}** `{}`: {}", r.name, r.tool_call_id, r.content))
        .collect();
    if !results.is_empty() {
        writeln!(out, "### Tool results\n\n{}\n", results.join("\n"))?;
    }
    let reasoning: Vec<&str> = turn
        .response
        .parts
        .iter()
        .filter_map(|part| match part {
            ContentPart::Reasoning(reasoning) if !reasoning.text.is_empty() => {
                Some(reasoning.text.as_str())
            }
            _ => None,
        })
        .collect();
    if !reasoning.is_empty() {
        writeln!(out, "## Reasoning\n\n{}\n", reasoning.join("\n\n"))?;
    }
    writeln!(out, "## Response\n")?;
    let calls: Vec<String> = turn
        .response
        .tool_calls()
        .map(|call| format!("- **{}** `{}`: `{}`", call.name, call.id, call.arguments))
        .collect();
    if !calls.is_empty() {
        writeln!(out, "### Tool calls\n\n{}\n", calls.join("\n"))?;
    }
    let text = turn.response.text();
    if !text.is_empty() {
        writeln!(out, "{text}\n")?;
    }
    if usage && let Some(usage) = node.usage() {
        writeln!(
            out,
            "## Token usage\n\n{} input, {} output{}{}\n",
            usage.input_tokens,
            usage.output_tokens,
            if usage.cached_input_tokens > 0 {
                format!(", {} cached", usage.cached_input_tokens)
            } else {
                String::new()
            },
            if usage.reasoning_tokens > 0 {
                format!(", {} reasoning", usage.reasoning_tokens)
            } else {
                String::new()
            },
        )?;
    }
    Ok(())
}

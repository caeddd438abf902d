//! `skein logs --tree`: a conversation's responses as a tree, with its branches (the same
//! turn answered differently, by another model or a supplied message) and how often each
//! stored answer was handed back as a cache hit.

use std::collections::BTreeMap;
use std::io::Write;

use conversation_tree::{CallKind, ConversationSummary, Node, NodeId, ResponseStatus, Store, Turn};
use messages::{Message, Role};
use serde_json::json;

use super::{one_line, summary_json, time, write_json};
use crate::CliError;

/// Characters of prompt and answer shown per node.
const SHOWN: usize = 48;

pub(super) async fn draw(
    store: &dyn Store,
    summary: &ConversationSummary,
    json: bool,
    out: &mut impl Write,
) -> Result<(), CliError> {
    let nodes = store.conversation_nodes(&summary.id).await?;
    let mut turns = BTreeMap::new();
    for node in &nodes {
        turns.insert(node.id(), store.turn(node.id()).await?);
    }
    let mut hits: BTreeMap<NodeId, usize> = BTreeMap::new();
    for call in store.calls(&summary.id).await? {
        if call.kind == CallKind::CacheHit {
            *hits.entry(call.node).or_default() += 1;
        }
    }
    let mut children: BTreeMap<Option<NodeId>, Vec<&Node>> = BTreeMap::new();
    for node in &nodes {
        children.entry(node.parent()).or_default().push(node);
    }
    if json {
        let rows: Vec<_> = nodes
            .iter()
            .map(|node| {
                json!({
                    "id": node.id(),
                    "parent": node.parent(),
                    "model": node.model(),
                    "prompt": turns.get(&node.id()).map(prompt),
                    "answer": turns.get(&node.id()).map(|turn| answer(&turn.response)),
                    "cache_hits": hits.get(&node.id()).copied().unwrap_or(0),
                    "children": children.get(&Some(node.id())).map_or(0, Vec::len),
                })
            })
            .collect();
        let document = json!({"conversation": summary_json(summary), "nodes": rows});
        return write_json(out, &document);
    }
    let branches = nodes
        .iter()
        .filter(|node| children.get(&Some(node.id())).is_some_and(|c| c.len() > 1))
        .count()
        + usize::from(children.get(&None).is_some_and(|roots| roots.len() > 1));
    let total_hits: usize = hits.values().sum();
    writeln!(
        out,
        "Conversation {} ({} response{}, {} branch point{}, {} cache hit{}; updated {} UTC)",
        summary.id,
        nodes.len(),
        plural(nodes.len()),
        branches,
        plural(branches),
        total_hits,
        plural(total_hits),
        time(summary.updated_utc),
    )?;
    let view = View {
        turns: &turns,
        hits: &hits,
        children: &children,
    };
    let roots = children.get(&None).cloned().unwrap_or_default();
    for (i, root) in roots.iter().enumerate() {
        view.write(root, "", i + 1 == roots.len(), out)?;
    }
    Ok(())
}

struct View<'a> {
    turns: &'a BTreeMap<NodeId, Turn>,
    hits: &'a BTreeMap<NodeId, usize>,
    children: &'a BTreeMap<Option<NodeId>, Vec<&'a Node>>,
}

impl View<'_> {
    fn write(
        &self,
        node: &Node,
        indent: &str,
        last: bool,
        out: &mut impl Write,
    ) -> Result<(), CliError> {
        let (branch, next_indent) = if last {
            ("└── ", format!("{indent}    "))
        } else {
            ("├── ", format!("{indent}│   "))
        };
        let turn = self.turns.get(&node.id());
        let who = node.model().unwrap_or("supplied");
        let hits = match self.hits.get(&node.id()) {
            Some(&n) if n > 0 => format!("  [cache hit ×{n}]"),
            _ => String::new(),
        };
        let status = match node.status() {
            ResponseStatus::Completed => String::new(),
            stopped => format!("  [{stopped}]"),
        };
        writeln!(
            out,
            "{indent}{branch}#{} {who}: {} → {}{status}{hits}",
            node.id(),
            turn.map(prompt).unwrap_or_default(),
            turn.map(|turn| answer(&turn.response)).unwrap_or_default(),
        )?;
        let children = self
            .children
            .get(&Some(node.id()))
            .cloned()
            .unwrap_or_default();
        for (i, child) in children.iter().enumerate() {
            self.write(child, &next_indent, i + 1 == children.len(), out)?;
        }
        Ok(())
    }
}

/// What the turn asked: its human text, or the tools whose results it carried.
fn prompt(turn: &Turn) -> String {
    let human: Vec<String> = turn
        .input
        .iter()
        .filter(|m| m.role == Role::Human)
        .map(Message::text)
        .collect();
    if !human.is_empty() {
        return format!("\"{}\"", one_line(&human.join(" "), SHOWN));
    }
    let tools: Vec<&str> = turn
        .input
        .iter()
        .flat_map(Message::tool_responses)
        .map(|response| response.name.as_str())
        .collect();
    format!("[results of {}]", tools.join(", "))
}

/// What the answer said: its text, or the tools it called.
fn answer(response: &Message) -> String {
    let text = response.text();
    if !text.trim().is_empty() {
        return format!("\"{}\"", one_line(&text, SHOWN));
    }
    let calls: Vec<&str> = response
        .tool_calls()
        .map(|call| call.name.as_str())
        .collect();
    format!("[calls {}]", calls.join(", "))
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

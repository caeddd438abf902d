//! `Display` for [`ChainAst`]: the tree of sections, headers and body pairs, with sizes.
//!
//! ```text
//! ChainAst: 1 section, 4 messages, 164 bytes
//! └── Section 0: 164 bytes
//!     ├── Header: 52 bytes
//!     │   ├── System: 28 bytes
//!     │   └── Human: 24 bytes
//!     └── Body: 1 pair, 112 bytes
//!         └── BodyPair 0: request-response, 112 bytes
//!             ├── AI: 41 bytes, calls get_weather#tool-1
//!             └── Tool: 71 bytes, answers get_weather#tool-1
//! ```

use std::fmt::{self, Display, Formatter, Write as _};

use messages::{ContentPart, Message};

use crate::{BodyPair, ChainAst, ChainSection, message_size};

impl Display for ChainAst {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "ChainAst: {}, {}, {} bytes",
            plural(self.sections().len(), "section"),
            plural(self.message_count(), "message"),
            self.size()
        )?;
        let count = self.sections().len();
        for (index, section) in self.sections().iter().enumerate() {
            write_section(f, index, section, index + 1 == count)?;
        }
        Ok(())
    }
}

/// Writes one section with the tree prefix for its place.
fn write_section(
    f: &mut Formatter<'_>,
    index: usize,
    section: &ChainSection,
    last: bool,
) -> fmt::Result {
    let (line, indent) = branch(last, "");
    writeln!(f, "{line}Section {index}: {} bytes", section.size())?;

    let header = section.header();
    let (header_branch, header_indent) = branch(false, &indent);
    if header.is_empty() {
        writeln!(f, "{header_branch}Header: empty")?;
    } else {
        writeln!(f, "{header_branch}Header: {} bytes", header.size())?;
        let slots = [("System", header.system()), ("Human", header.human())];
        let present: Vec<_> = slots
            .iter()
            .filter_map(|(name, message)| message.map(|message| (*name, message)))
            .collect();
        for (i, (name, message)) in present.iter().enumerate() {
            let (line, _) = branch(i + 1 == present.len(), &header_indent);
            writeln!(f, "{line}{name}: {}", describe(message, None))?;
        }
    }

    let body = section.body();
    let (body_branch, body_indent) = branch(true, &indent);
    let body_size: usize = body.iter().map(BodyPair::size).sum();
    writeln!(
        f,
        "{body_branch}Body: {}, {body_size} bytes",
        plural(body.len(), "pair")
    )?;
    for (i, pair) in body.iter().enumerate() {
        write_pair(f, i, pair, i + 1 == body.len(), &body_indent)?;
    }
    Ok(())
}

fn write_pair(
    f: &mut Formatter<'_>,
    index: usize,
    pair: &BodyPair,
    last: bool,
    indent: &str,
) -> fmt::Result {
    let (line, inner) = branch(last, indent);
    writeln!(
        f,
        "{line}BodyPair {index}: {}, {} bytes",
        pair.kind(),
        pair.size()
    )?;
    let (ai_line, _) = branch(pair.tools().is_empty(), &inner);
    writeln!(f, "{ai_line}AI: {}", describe(pair.ai(), Some("calls")))?;
    for (i, tool) in pair.tools().iter().enumerate() {
        let (tool_line, _) = branch(i + 1 == pair.tools().len(), &inner);
        writeln!(f, "{tool_line}Tool: {}", describe(tool, Some("answers")))?;
    }
    Ok(())
}

/// The line prefix of a node and the indent of its children.
fn branch(last: bool, indent: &str) -> (String, String) {
    if last {
        (format!("{indent}└── "), format!("{indent}    "))
    } else {
        (format!("{indent}├── "), format!("{indent}│   "))
    }
}

/// A message's size, its part count when more than one, and (with `tool_verb`) its tool calls or
/// responses as `name#id`.
fn describe(message: &Message, tool_verb: Option<&str>) -> String {
    let mut text = format!("{} bytes", message_size(message));
    if message.parts.len() != 1 {
        let _ = write!(text, ", {}", plural(message.parts.len(), "part"));
    }
    if let Some(verb) = tool_verb {
        let tools: Vec<String> = message
            .parts
            .iter()
            .filter_map(|part| match part {
                ContentPart::ToolCall(call) => Some(format!("{}#{}", call.name, call.id)),
                ContentPart::ToolResponse(response) => {
                    Some(format!("{}#{}", response.name, response.tool_call_id))
                }
                _ => None,
            })
            .collect();
        if !tools.is_empty() {
            let _ = write!(text, ", {verb} {}", tools.join(" "));
        }
    }
    text
}

fn plural(count: usize, noun: &str) -> String {
    if count == 1 {
        format!("1 {noun}")
    } else {
        format!("{count} {noun}s")
    }
}

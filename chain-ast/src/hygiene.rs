//! Chain hygiene before a request: tool-call ids in the provider's format, arguments that are
//! JSON. Both matter when a chain moves between providers or comes back from a lenient server.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

use messages::{ContentPart, Message};

use crate::{BodyPair, ChainAst, FALLBACK_REQUEST_ARGS, IdTemplate};

/// Tries at making an id not already used in its body pair, for templates with few ids (Kimi's
/// `{f}:{r:1:d}` has ten per tool).
const UNIQUE_ID_TRIES: usize = 16;

impl ChainAst {
    /// Gives every tool call whose id does not fit `template` a new id from it, and renames the
    /// responses in the same body pair to match. Ids that fit are kept. Returns how many calls
    /// were renamed.
    ///
    /// Use it when a chain moves to a provider that checks the shape of ids. Calls sharing an id
    /// get the same new id, so their pairing survives; a new id avoids the pair's other ids when
    /// the template allows, so renaming does not make two calls of a pair collide.
    pub fn normalize_tool_call_ids(&mut self, template: &IdTemplate) -> usize {
        let mut renamed = 0;
        self.edit_sections(|section| {
            for index in 0..section.body().len() {
                section.edit_pair(index, |pair| renamed += normalize_pair(pair, template));
            }
        });
        renamed
    }

    /// Makes every tool call's arguments JSON: control characters inside strings are escaped
    /// ([`sanitize_json_control_chars`]); what is still not JSON becomes
    /// [`FALLBACK_REQUEST_ARGS`] (`{}`). Returns how many calls changed.
    ///
    /// Servers such as vLLM and llama.cpp emit raw newlines in argument strings or cut them off;
    /// sent back, they fail the whole request, again and again.
    pub fn sanitize_tool_call_arguments(&mut self) -> usize {
        let mut changed = 0;
        self.edit_sections(|section| {
            for index in 0..section.body().len() {
                section.edit_pair(index, |pair| changed += sanitize_pair(pair));
            }
        });
        changed
    }
}

fn normalize_pair(pair: &mut BodyPair, template: &IdTemplate) -> usize {
    let mut renames: HashMap<String, String> = HashMap::new();
    let mut used: HashSet<String> = pair.ai().tool_calls().map(|call| call.id.clone()).collect();
    let mut renamed = 0;
    for call in pair.ai().tool_calls() {
        if template.check(&call.id, &call.name).is_ok() {
            continue;
        }
        renamed += 1;
        if renames.contains_key(&call.id) {
            continue;
        }
        let mut id = template.generate(&call.name);
        for _ in 1..UNIQUE_ID_TRIES {
            if !used.contains(&id) {
                break;
            }
            id = template.generate(&call.name);
        }
        used.insert(id.clone());
        renames.insert(call.id.clone(), id);
    }
    if renames.is_empty() {
        return 0;
    }
    pair.edit(|ai, tools| {
        for part in ai
            .parts
            .iter_mut()
            .chain(tools.iter_mut().flat_map(|tool| &mut tool.parts))
        {
            let old = match part {
                ContentPart::ToolCall(call) => &mut call.id,
                ContentPart::ToolResponse(response) => &mut response.tool_call_id,
                _ => continue,
            };
            if let Some(new) = renames.get(old.as_str()) {
                new.clone_into(old);
            }
        }
    });
    renamed
}

fn sanitize_pair(pair: &mut BodyPair) -> usize {
    let needs = pair.ai().tool_calls().any(|call| !is_json(&call.arguments));
    if !needs {
        return 0;
    }
    let mut changed = 0;
    pair.edit(|ai: &mut Message, _| {
        for part in &mut ai.parts {
            let ContentPart::ToolCall(call) = part else {
                continue;
            };
            if is_json(&call.arguments) {
                continue;
            }
            let fixed = sanitize_json_control_chars(&call.arguments);
            call.arguments = if is_json(&fixed) {
                fixed.into_owned()
            } else {
                FALLBACK_REQUEST_ARGS.to_owned()
            };
            changed += 1;
        }
    });
    changed
}

/// Whether `text` is one JSON value.
fn is_json(text: &str) -> bool {
    serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok()
}

/// Escapes raw control characters (below U+0020) inside the strings of almost-JSON text: `\n`,
/// `\r`, `\t`, `\b`, `\f`, else `\u00xx`. Text that already is JSON comes back unchanged, as does
/// text with nothing to escape; control characters outside strings are left alone.
///
/// ```
/// use chain_ast::sanitize_json_control_chars;
///
/// assert_eq!(sanitize_json_control_chars("{\"cmd\": \"ls\n-la\"}"), "{\"cmd\": \"ls\\n-la\"}");
/// assert_eq!(sanitize_json_control_chars("{broken"), "{broken");
/// ```
pub fn sanitize_json_control_chars(text: &str) -> Cow<'_, str> {
    if is_json(text) || !text.chars().any(|c| c < ' ') {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    let (mut in_string, mut escaped, mut changed) = (false, false, false);
    for c in text.chars() {
        if !in_string {
            in_string = c == '"';
            out.push(c);
        } else if escaped {
            escaped = false;
            out.push(c);
        } else if c == '\\' {
            escaped = true;
            out.push(c);
        } else if c == '"' {
            in_string = false;
            out.push(c);
        } else if c < ' ' {
            changed = true;
            match c {
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '\u{8}' => out.push_str("\\b"),
                '\u{c}' => out.push_str("\\f"),
                _ => {
                    // Writing to a String cannot fail.
                    let _ = write!(out, "\\u{:04x}", u32::from(c));
                }
            }
        } else {
            out.push(c);
        }
    }
    if changed {
        Cow::Owned(out)
    } else {
        Cow::Borrowed(text)
    }
}

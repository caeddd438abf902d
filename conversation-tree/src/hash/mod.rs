//! Prompt, response and path hashes: where a response sits in the tree.
//!
//! Every hash is SHA-256, written as 64 lowercase hex digits, over **canonical JSON**: objects
//! with their keys sorted by code point, no insignificant whitespace, strings as raw UTF-8 with
//! only the escapes JSON requires, integers without a fraction, other numbers in the shortest
//! form that reads back to the same `f64`. The functions are pure: no clock, no I/O, no
//! randomness. Golden tests pin the exact hex of each kind, so a change of encoding cannot pass
//! unnoticed; a change on purpose needs a schema migration that rehashes stored rows.
//!
//! # What goes in
//!
//! A *turn* is the input messages a model answers (an optional system message, human messages,
//! tool messages) and the AI message that answers them. A message is encoded as
//! `{"parts":[…],"role":"system"|"human"|"ai"|"tool"}` with one entry per part, in order:
//!
//! | part | encoded as |
//! |---|---|
//! | `Text` | `{"text":"…"}` (a reasoning signature riding on it is left out) |
//! | `ImageUrl`, `Binary` | `{"attachment":"<attachment hash>"}` |
//! | `ToolCall` | `{"tool_call":"<tool call hash>"}` |
//! | `ToolResponse` | `{"tool_result":"<tool result hash>"}`; media parts right after it are its attachments |
//! | `Reasoning` | left out |
//!
//! - [`prompt_hash`]: `{"messages":[<the turn's input messages>],"options":{…}}`, where
//!   `options` holds only what makes a request deterministic or bounds its output:
//!   `"temperature":0` when the temperature is exactly zero, `"max_tokens"` when set, `"stop"`
//!   (sorted, without duplicates) when not empty.
//! - [`response_hash`]: the AI message's encoding.
//! - [`path_hash`]: a root's path hash is its prompt hash; a child's is
//!   `sha256(parent_path_hash + ":" + prompt_hash)` over those ASCII characters.
//! - [`attachment_hash`]: SHA-256 of the bytes (`Binary`, or an `ImageUrl` holding a base64
//!   `data:` URL), else `"path:"` + SHA-256 of the path of a `file:` URL, else `"url:"` +
//!   SHA-256 of the URL. Equal bytes hash equal wherever they came from; the MIME type and the
//!   `detail` hint are not part of it.
//! - [`tool_call_hash`]: `{"arguments":<the arguments as canonical JSON>,"name":"…"}`; empty
//!   arguments count as `{}`; arguments that are not JSON are hashed as written under
//!   `"raw_arguments"` instead. Call ids are left out.
//! - [`tool_result_hash`]: `{"attachments":[…],"name":"…","output":"…"}`, `attachments` only
//!   when there are some. Call ids are left out.
//!
//! Never in a hash: timestamps, ids (node, conversation, tool call, reasoning item), token
//! counts, durations, the model, a temperature other than zero, reasoning and signatures.
//!
//! # Why the hashed document looks like this
//!
//! Joining `|`-separated components and sorting attachment hashes would lose roles and part
//! order; here one JSON document keeps them, so `[human "a", human "b"]` and `[human "a\nb"]`
//! differ, and reordered images are a different prompt. Reasoning is left out of the response hash
//! so a client that strips thinking blocks before sending the history back still matches the
//! stored answer; the store keeps the full message, so nothing is lost. Stop sequences are a set,
//! so they are sorted.
//!
//! Two consequences of these definitions are worth knowing. The path hash chains prompt
//! hashes only, so two sibling answers to one prompt share a path hash, and so do their
//! subtrees: [`Store::lookup_path_hash`](crate::Store::lookup_path_hash) returns every node with
//! the hash. And options are part of each prompt hash, so a conversation continued with other
//! deterministic options (say `max_tokens`) no longer matches its earlier turns and branches.
//!
//! ```
//! use conversation_tree::{HashOptions, Message, path_hash, prompt_hash};
//!
//! let turn = [Message::system("You are helpful"), Message::human("Capital of France?")];
//! let hot = prompt_hash(&turn, &HashOptions { temperature: Some(0.7), ..Default::default() });
//! // A non-zero temperature is not part of the hash; zero is.
//! assert_eq!(hot, prompt_hash(&turn, &HashOptions::default()));
//! assert_ne!(hot, prompt_hash(&turn, &HashOptions::deterministic()));
//! // A root's path hash is its prompt hash.
//! assert_eq!(path_hash(None, &hot), hot);
//! ```

mod canonical;
mod document;

use std::io;

use messages::{ContentPart, Message, ToolCall, ToolResponse, ToolSpec};
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::HashOptions;

use canonical::Canonical;
pub use canonical::canonical_json;
use document::{MessageDoc, PromptDoc};

/// Hash of a turn's input messages (system?, human, tool responses) under `options`.
///
/// Only the deterministic part of `options` counts: see the [module docs](self).
pub fn prompt_hash(turn: &[Message], options: &HashOptions) -> String {
    sha256_json(&PromptDoc::new(turn, options))
}

/// Hash of a response (an AI message): its text, media and tool calls, without reasoning.
pub fn response_hash(response: &Message) -> String {
    sha256_json(&MessageDoc::new(response))
}

/// Hash of the path from the root to a node: the prompt hash at a root, else
/// `sha256(parent_path_hash + ":" + prompt_hash)`.
pub fn path_hash(parent_path_hash: Option<&str>, prompt_hash: &str) -> String {
    match parent_path_hash {
        None => prompt_hash.to_owned(),
        Some(parent) => {
            let mut hasher = Sha256::new();
            hasher.update(parent.as_bytes());
            hasher.update(b":");
            hasher.update(prompt_hash.as_bytes());
            hex::encode(hasher.finalize())
        }
    }
}

/// Hash of a media part (`ImageUrl` or `Binary`); `None` for any other part.
///
/// Content bytes when they are at hand (inline bytes, or a base64 `data:` URL), else
/// `"path:"` + SHA-256 of a `file:` URL's path, else `"url:"` + SHA-256 of the URL. The function
/// does no I/O: to hash a file by its content, load it into a `Binary` part first.
pub fn attachment_hash(part: &ContentPart) -> Option<String> {
    match part {
        ContentPart::Binary { data, .. } => Some(sha256_hex(data)),
        ContentPart::ImageUrl { url, .. } => Some(url_attachment_hash(url)),
        _ => None,
    }
}

/// Hash of a tool call: its name and its arguments as canonical JSON (so key order and
/// whitespace do not matter). The call id is not part of it.
pub fn tool_call_hash(call: &ToolCall) -> String {
    #[derive(Serialize)]
    struct CallDoc<'a> {
        #[serde(skip_serializing_if = "Option::is_none")]
        arguments: Option<Canonical<'a>>,
        name: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        raw_arguments: Option<&'a str>,
    }
    // Providers send either "" or "{}" for a call without arguments.
    let text = match call.arguments.trim() {
        "" => "{}",
        trimmed => trimmed,
    };
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(value) => sha256_json(&CallDoc {
            arguments: Some(Canonical(&value)),
            name: &call.name,
            raw_arguments: None,
        }),
        Err(_) => sha256_json(&CallDoc {
            arguments: None,
            name: &call.name,
            raw_arguments: Some(&call.arguments),
        }),
    }
}

/// Hash of a tool result: the tool's name, its output and the hashes of the media that came
/// with it (the parts after the response in its message). The call id is not part of it.
pub fn tool_result_hash(response: &ToolResponse, attachments: &[ContentPart]) -> String {
    #[derive(Serialize)]
    struct ResultDoc<'a> {
        #[serde(skip_serializing_if = "Vec::is_empty")]
        attachments: Vec<String>,
        name: &'a str,
        output: &'a str,
    }
    sha256_json(&ResultDoc {
        attachments: attachments.iter().filter_map(attachment_hash).collect(),
        name: &response.name,
        output: &response.content,
    })
}

/// Hash of the tools offered to a model (names, descriptions, canonical schemas, in order).
///
/// Tools change what a model answers but not where the answer sits in the tree, so they are not
/// part of the prompt hash; pass this as
/// [`CallOptions::cache_key`](crate::CallOptions::cache_key) so a stored answer is only reused
/// for a request that offered the same tools.
pub fn tool_specs_hash(tools: &[ToolSpec]) -> String {
    #[derive(Serialize)]
    struct SpecDoc<'a> {
        description: &'a str,
        name: &'a str,
        parameters: Canonical<'a>,
    }
    let docs: Vec<SpecDoc<'_>> = tools
        .iter()
        .map(|tool| SpecDoc {
            description: &tool.description,
            name: &tool.name,
            parameters: Canonical(&tool.parameters),
        })
        .collect();
    sha256_json(&docs)
}

fn url_attachment_hash(url: &str) -> String {
    if let Some(bytes) = document::data_url_bytes(url) {
        return sha256_hex(&bytes);
    }
    match url.strip_prefix("file://") {
        Some(path) => format!("path:{}", sha256_hex(path.as_bytes())),
        None => format!("url:{}", sha256_hex(url.as_bytes())),
    }
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// SHA-256 of `value`'s JSON, streamed into the hasher without building the text.
///
/// The documents hashed here declare their fields in sorted order and wrap free-form JSON in
/// [`Canonical`], so serde's output is already canonical (a property test checks it).
fn sha256_json<T: Serialize + ?Sized>(value: &T) -> String {
    let mut writer = HashWriter(Sha256::new());
    // Writing into a hasher cannot fail, and these documents have only string keys.
    if serde_json::to_writer(&mut writer, value).is_err() {
        unreachable!("hash documents always serialise");
    }
    hex::encode(writer.0.finalize())
}

struct HashWriter(Sha256);

impl io::Write for HashWriter {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0.update(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests;

//! Skein messages → Messages API `system` blocks and `messages`.
//!
//! The rules the API needs:
//!
//! - The system messages that open the chain go to the top-level `system` (as text blocks, in
//!   order). The API takes no `system` role in `messages` (only the newest models accept one,
//!   and only in some places), so a later system message is a text block of a user turn,
//!   marked as a system instruction (`<system_instruction>…</system_instruction>`), where it
//!   stands: see `system_prompt` for why it does not join the top.
//! - Roles alternate between `user` and `assistant`: human messages and tool messages are both
//!   `user` turns, and consecutive messages of one wire role merge into one turn. So every
//!   `tool_result` of a parallel round lands in ONE user message right after the assistant
//!   message that called the tools, followed by any human text.
//! - Assistant content is echoed exactly: `thinking` blocks with their text and `signature`,
//!   `redacted_thinking` blocks with their `data`, text and `tool_use`, in the order received.
//!   Reasoning Anthropic cannot have produced (no signature, or an OpenAI reasoning item id)
//!   is left out: the API would reject it. So are the thinking blocks of assistant messages
//!   the replay policy does not cover ([`ReasoningReplay`](crate::ReasoningReplay)).
//! - Media parts become `image` / `document` blocks; in a tool message they join the
//!   `tool_result` of the response they follow.
//! - Empty text is never sent (the API rejects empty text blocks).

use std::borrow::Cow;

use base64::Engine as _;
use messages::{ContentPart, Message, Reasoning, Role, ToolCall};
use serde::Serialize;
use serde_json::value::RawValue;

use super::wire::PROVIDER;
use crate::{ProviderError, system_prompt};

/// A request content block.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum Block<'a> {
    Text {
        text: Cow<'a, str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    Image {
        source: Source<'a>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    Document {
        source: Source<'a>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    Thinking {
        thinking: &'a str,
        signature: &'a str,
    },
    RedactedThinking {
        data: &'a str,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: Input<'a>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    ToolResult {
        tool_use_id: &'a str,
        content: ToolResultContent<'a>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
}

impl<'a> Block<'a> {
    fn text(text: &'a str) -> Self {
        Block::Text {
            text: Cow::Borrowed(text),
            cache_control: None,
        }
    }

    /// Marks the block as a cache breakpoint (thinking blocks cannot be one: [`Anchor`]s never
    /// point at them).
    pub(super) fn set_cache_control(&mut self, value: CacheControl) {
        match self {
            Block::Text { cache_control, .. }
            | Block::Image { cache_control, .. }
            | Block::Document { cache_control, .. }
            | Block::ToolUse { cache_control, .. }
            | Block::ToolResult { cache_control, .. } => *cache_control = Some(value),
            Block::Thinking { .. } | Block::RedactedThinking { .. } => {}
        }
    }

    fn cacheable(&self) -> bool {
        !matches!(
            self,
            Block::Thinking { .. } | Block::RedactedThinking { .. }
        )
    }
}

/// `tool_result.content`: the text alone, or blocks when media came with it.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(super) enum ToolResultContent<'a> {
    Text(&'a str),
    Blocks(Vec<Block<'a>>),
}

/// Where an `image` / `document` block's bytes come from.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum Source<'a> {
    Base64 {
        media_type: &'a str,
        data: Cow<'a, str>,
    },
    Url {
        url: &'a str,
    },
    /// A plain-text document.
    Text {
        media_type: &'static str,
        data: Cow<'a, str>,
    },
}

/// `cache_control`: the prompt prefix up to and including this block is cached.
#[derive(Clone, Copy, Debug, Serialize)]
pub(super) struct CacheControl {
    #[serde(rename = "type")]
    pub(super) kind: &'static str,
    /// `5m` or `1h`; absent means the API's default (5 minutes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) ttl: Option<&'static str>,
}

/// One `messages` entry.
#[derive(Debug, Serialize)]
pub(super) struct Turn<'a> {
    pub(super) role: &'static str,
    pub(super) content: Vec<Block<'a>>,
}

/// A place a cache breakpoint can go, in prompt order (tools → system → messages).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Anchor {
    /// The last tool definition.
    Tools,
    /// `system[i]`.
    System(usize),
    /// `messages[turn].content[block]`.
    Message { turn: usize, block: usize },
}

/// The converted conversation.
#[derive(Debug, Default)]
pub(super) struct Conversation<'a> {
    pub(super) system: Vec<Block<'a>>,
    pub(super) turns: Vec<Turn<'a>>,
    /// For each request message, the last block of the prompt prefix that ends with it.
    pub(super) ends: Vec<Option<Anchor>>,
}

/// `tool_use.input`: the call's arguments exactly as the model wrote them, or `{}` when they
/// are not a JSON object (empty, cut off or invalid): the API takes only an object.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(super) enum Input<'a> {
    Raw(&'a RawValue),
    Empty {},
}

impl<'a> Conversation<'a> {
    /// Converts `messages`, with the thinking blocks of the AI messages `replayed` marks;
    /// fails only on media the API cannot take.
    pub(super) fn new(messages: &'a [Message], replayed: &[bool]) -> Result<Self, ProviderError> {
        let mut conversation = Conversation::default();
        let mut last = None;
        let system_prompt = system_prompt::leading(messages);
        for (index, message) in messages.iter().enumerate() {
            match message.role {
                Role::System if index >= system_prompt => {
                    let blocks = message
                        .parts
                        .iter()
                        .filter_map(ContentPart::as_text)
                        .filter(|text| !text.is_empty())
                        .map(|text| Block::Text {
                            text: Cow::Owned(system_prompt::as_user_text(text)),
                            cache_control: None,
                        })
                        .collect();
                    conversation.push("user", blocks, &mut last);
                }
                Role::System => {
                    for text in message.parts.iter().filter_map(ContentPart::as_text) {
                        if !text.is_empty() {
                            conversation.system.push(Block::text(text));
                            // The system prompt comes before every message: it ends the
                            // prefix only while no message block exists yet.
                            if !matches!(last, Some(Anchor::Message { .. })) {
                                last = Some(Anchor::System(conversation.system.len() - 1));
                            }
                        }
                    }
                }
                Role::Human => {
                    let blocks = message
                        .parts
                        .iter()
                        .filter_map(user_block)
                        .collect::<Result<Vec<_>, _>>()?;
                    conversation.push("user", blocks, &mut last);
                }
                Role::Tool => {
                    let blocks = tool_blocks(message)?;
                    conversation.push("user", blocks, &mut last);
                }
                Role::Ai => {
                    let thinking = replayed.get(index).copied().unwrap_or(false);
                    let blocks = message
                        .parts
                        .iter()
                        .filter_map(|part| assistant_block(part, thinking))
                        .collect();
                    conversation.push("assistant", blocks, &mut last);
                }
            }
            conversation.ends.push(last);
        }
        Ok(conversation)
    }

    /// Appends `blocks` to the last turn if it has `role`, else starts a turn.
    fn push(&mut self, role: &'static str, blocks: Vec<Block<'a>>, last: &mut Option<Anchor>) {
        if blocks.is_empty() {
            return;
        }
        if self.turns.last().is_none_or(|turn| turn.role != role) {
            self.turns.push(Turn {
                role,
                content: Vec::with_capacity(blocks.len()),
            });
        }
        let index = self.turns.len() - 1;
        let content = &mut self.turns[index].content;
        let start = content.len();
        if let Some(offset) = blocks.iter().rposition(Block::cacheable) {
            *last = Some(Anchor::Message {
                turn: index,
                block: start + offset,
            });
        }
        content.extend(blocks);
    }

    /// The block at `anchor` in the messages or the system prompt.
    pub(super) fn block_mut(&mut self, anchor: Anchor) -> Option<&mut Block<'a>> {
        match anchor {
            Anchor::Tools => None,
            Anchor::System(index) => self.system.get_mut(index),
            Anchor::Message { turn, block } => self.turns.get_mut(turn)?.content.get_mut(block),
        }
    }
}

/// A human message part.
fn user_block(part: &ContentPart) -> Option<Result<Block<'_>, ProviderError>> {
    match part {
        ContentPart::Text { text, .. } if !text.is_empty() => Some(Ok(Block::text(text))),
        ContentPart::ImageUrl { url, .. } => Some(url_block(url)),
        ContentPart::Binary { mime_type, data } => Some(binary_block(mime_type, data)),
        // Tool calls and reasoning do not belong in a user turn.
        _ => None,
    }
}

/// A tool message: one `tool_result` per response; media and text after a response join its
/// content, parts before any response follow the results as plain user blocks.
fn tool_blocks(message: &Message) -> Result<Vec<Block<'_>>, ProviderError> {
    let mut results: Vec<Block<'_>> = Vec::new();
    let mut loose = Vec::new();
    for part in &message.parts {
        if let ContentPart::ToolResponse(response) = part {
            results.push(Block::ToolResult {
                tool_use_id: &response.tool_call_id,
                content: ToolResultContent::Text(&response.content),
                cache_control: None,
            });
            continue;
        }
        let Some(block) = user_block(part).transpose()? else {
            continue;
        };
        match results.last_mut() {
            Some(Block::ToolResult { content, .. }) => {
                if let ToolResultContent::Text(text) = content {
                    let first = (!text.is_empty()).then(|| Block::text(text));
                    *content = ToolResultContent::Blocks(first.into_iter().collect());
                }
                if let ToolResultContent::Blocks(blocks) = content {
                    blocks.push(block);
                }
            }
            _ => loose.push(block),
        }
    }
    results.extend(loose);
    Ok(results)
}

/// An AI message part; reasoning only with `thinking`.
fn assistant_block(part: &ContentPart, thinking: bool) -> Option<Block<'_>> {
    match part {
        ContentPart::Text { text, .. } if !text.is_empty() => Some(Block::text(text)),
        ContentPart::Reasoning(reasoning) if thinking => reasoning_block(reasoning),
        ContentPart::ToolCall(call) => Some(tool_use(call)),
        _ => None,
    }
}

fn reasoning_block(reasoning: &Reasoning) -> Option<Block<'_>> {
    if reasoning.id.is_some() {
        // An OpenAI Responses reasoning item: meaningless to Anthropic.
        return None;
    }
    match (&reasoning.signature, &reasoning.encrypted) {
        (Some(signature), _) => Some(Block::Thinking {
            thinking: &reasoning.text,
            signature,
        }),
        (None, Some(data)) => Some(Block::RedactedThinking { data }),
        // Unsigned thinking (another provider's, or a block cut off before its signature).
        (None, None) => None,
    }
}

fn tool_use(call: &ToolCall) -> Block<'_> {
    let input = serde_json::from_str::<&RawValue>(&call.arguments)
        .ok()
        .filter(|raw| raw.get().starts_with('{'))
        .map_or(Input::Empty {}, Input::Raw);
    Block::ToolUse {
        id: &call.id,
        name: &call.name,
        input,
        cache_control: None,
    }
}

/// An `ImageUrl` part: a `data:` URL is sent inline, anything else by URL.
fn url_block(url: &str) -> Result<Block<'_>, ProviderError> {
    let Some(rest) = url.strip_prefix("data:") else {
        return Ok(Block::Image {
            source: Source::Url { url },
            cache_control: None,
        });
    };
    let Some((media_type, data)) = rest
        .split_once(',')
        .and_then(|(meta, data)| Some((meta.strip_suffix(";base64")?, data)))
    else {
        return Err(unsupported(
            "a `data:` URL that is not base64; send the bytes as a Binary part instead",
        ));
    };
    media_block(media_type, Cow::Borrowed(data))
}

/// A `Binary` part: images and PDFs go inline as base64, text as a plain-text document.
fn binary_block<'a>(mime_type: &'a str, data: &'a [u8]) -> Result<Block<'a>, ProviderError> {
    if mime_type.starts_with("text/") {
        let text = std::str::from_utf8(data).map_err(|_| {
            unsupported(&format!(
                "a `{mime_type}` attachment that is not UTF-8 text"
            ))
        })?;
        return Ok(Block::Document {
            source: Source::Text {
                media_type: "text/plain",
                data: Cow::Borrowed(text),
            },
            cache_control: None,
        });
    }
    let encoded = base64::engine::general_purpose::STANDARD.encode(data);
    media_block(mime_type, Cow::Owned(encoded))
}

fn media_block<'a>(media_type: &'a str, data: Cow<'a, str>) -> Result<Block<'a>, ProviderError> {
    let source = Source::Base64 { media_type, data };
    if media_type.starts_with("image/") {
        Ok(Block::Image {
            source,
            cache_control: None,
        })
    } else if media_type == "application/pdf" {
        Ok(Block::Document {
            source,
            cache_control: None,
        })
    } else {
        Err(unsupported(&format!(
            "`{media_type}` attachments (the Messages API takes images, PDFs and plain text)"
        )))
    }
}

fn unsupported(what: &str) -> ProviderError {
    ProviderError::Unsupported {
        provider: PROVIDER,
        what: what.to_owned(),
    }
}

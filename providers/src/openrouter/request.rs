//! OpenRouter request bodies: a Chat Completions body whose reasoning controls are
//! OpenRouter's one `reasoning` object, and whose prompt-cache breakpoints are `cache_control`
//! markers on content parts.

use std::time::Duration;

use serde::Serialize;

use crate::openai::Endpoint;
use crate::openai::request::{CacheControl, ChatBody};
use crate::{CacheBreakpoint, ChatRequest, ProviderError, Role};

/// Most breakpoints one request may carry (Anthropic's limit, which OpenRouter passes on).
const MAX_BREAKPOINTS: usize = 4;
/// Longest lifetime of the default cache (a longer `PromptCache::ttl` asks for one hour).
const DEFAULT_CACHE_TTL: Duration = Duration::from_secs(5 * 60);

/// The Chat body plus `reasoning`.
#[derive(Debug, Serialize)]
pub(crate) struct Body<'a> {
    #[serde(flatten)]
    chat: ChatBody<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning: Option<Reasoning>,
}

/// `{"effort": "high"}` or `{"max_tokens": 2000}`: OpenRouter translates either into what the
/// serving model takes (an OpenAI effort, an Anthropic or Gemini thinking budget), and
/// accepts only one of them.
#[derive(Debug, Serialize)]
struct Reasoning {
    #[serde(skip_serializing_if = "Option::is_none")]
    effort: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
}

/// The body for `request`.
pub(crate) fn body<'a>(
    endpoint: &'a Endpoint,
    request: &'a ChatRequest,
    stream: bool,
) -> Result<Body<'a>, ProviderError> {
    let mut chat = crate::openai::request::body(&endpoint.target(), request, stream)?;
    chat.reasoning_effort = None;
    let options = &request.options;
    // A budget is the more precise of the two when both are set.
    let reasoning = match (options.thinking_budget, options.reasoning_effort) {
        (Some(tokens), _) => Some(Reasoning {
            effort: None,
            max_tokens: Some(tokens),
        }),
        (None, Some(effort)) => Some(Reasoning {
            effort: Some(effort.as_str()),
            max_tokens: None,
        }),
        (None, None) => None,
    };
    mark_breakpoints(&mut chat, request)?;
    Ok(Body { chat, reasoning })
}

/// Places the request's cache breakpoints: models that cache only what is marked (Anthropic's
/// and Gemini's, at OpenRouter) read `cache_control` on a content part, and the prefix up to
/// that part is cached. A breakpoint goes on the last text of the prefix it ends (a message
/// that takes no marker, an assistant or tool message, leaves it on the text before); tool
/// definitions take none here (a system breakpoint covers them). At most
/// [`MAX_BREAKPOINTS`], the latest, since later ones cover longer prefixes.
fn mark_breakpoints(chat: &mut ChatBody<'_>, request: &ChatRequest) -> Result<(), ProviderError> {
    let cache = &request.options.cache;
    let mut ends = Vec::new();
    for breakpoint in &cache.breakpoints {
        let end = match *breakpoint {
            CacheBreakpoint::Tools => None,
            CacheBreakpoint::System => request
                .messages
                .iter()
                .rposition(|message| message.role == Role::System)
                .and_then(|index| chat.ends[index]),
            CacheBreakpoint::Message(index) => *chat.ends.get(index).ok_or_else(|| {
                ProviderError::config(format!(
                    "cache breakpoint after message {index}, but the request has {} messages; \
                     breakpoints index `ChatRequest::messages`",
                    request.messages.len()
                ))
            })?,
            CacheBreakpoint::LastMessage => chat.ends.iter().rev().find_map(|end| *end),
        };
        ends.extend(end);
    }
    if ends.is_empty() {
        return Ok(());
    }
    let control = CacheControl {
        ttl: cache
            .ttl
            .map(|ttl| if ttl > DEFAULT_CACHE_TTL { "1h" } else { "5m" }),
        kind: "ephemeral",
    };
    // The text each breakpoint lands on: its message, else the nearest text before it.
    let markable = |index: usize, chat: &mut ChatBody<'_>| {
        (0..=index)
            .rev()
            .find(|&at| chat.messages[at].mark_cached(control))
    };
    let mut marked: Vec<usize> = Vec::new();
    ends.sort_unstable();
    ends.dedup();
    // Latest first, so that the cap keeps the longest prefixes.
    for end in ends.into_iter().rev() {
        if marked.len() == MAX_BREAKPOINTS {
            break;
        }
        if let Some(at) = markable(end, chat)
            && !marked.contains(&at)
        {
            marked.push(at);
        }
    }
    Ok(())
}

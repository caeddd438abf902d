//! Prompt-cache breakpoints in a Chat Completions body: `cache_control` markers on content
//! parts, the form OpenRouter passes on to models whose cache covers only what is marked
//! (Anthropic's, Gemini's). OpenAI's own endpoint caches by itself and never gets them.

use std::time::Duration;

use crate::openai::request::{CacheControl, ChatBody};
use crate::{CacheBreakpoint, ChatRequest, ProviderError, Role};

/// Most breakpoints one request may carry (Anthropic's limit, which gateways pass on).
const MAX_BREAKPOINTS: usize = 4;
/// Longest lifetime of the default cache (a longer `PromptCache::ttl` asks for one hour).
const DEFAULT_CACHE_TTL: Duration = Duration::from_secs(5 * 60);

/// Places the request's cache breakpoints: models that cache only what is marked (Anthropic's
/// and Gemini's, behind OpenRouter) read `cache_control` on a content part, and the prefix up to
/// that part is cached. A breakpoint goes on the last text of the prefix it ends (a message
/// that takes no marker, an assistant or tool message, leaves it on the text before); tool
/// definitions take none here (a system breakpoint covers them). At most
/// [`MAX_BREAKPOINTS`], the latest, since later ones cover longer prefixes.
pub(crate) fn mark_breakpoints(
    chat: &mut ChatBody<'_>,
    request: &ChatRequest,
) -> Result<(), ProviderError> {
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

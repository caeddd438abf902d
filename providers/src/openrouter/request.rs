//! OpenRouter request bodies: a Chat Completions body whose reasoning controls are
//! OpenRouter's one `reasoning` object, with prompt-cache breakpoints as `cache_control`
//! markers on content parts (`cache.rs`).

use serde::Serialize;

use crate::openai::request::ChatBody;
use crate::{ChatRequest, ProviderError};

/// The metadata sent: none.
static NO_METADATA: std::collections::BTreeMap<String, String> = std::collections::BTreeMap::new();

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

/// The body for `request`, from the Chat body built for it.
pub(crate) fn body<'a>(
    mut chat: ChatBody<'a>,
    request: &'a ChatRequest,
) -> Result<Body<'a>, ProviderError> {
    chat.reasoning_effort = None;
    // OpenRouter documents no place for these: they only inform, so they are not sent.
    chat.metadata = &NO_METADATA;
    chat.safety_identifier = None;
    chat.service_tier = None;
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
    super::cache::mark_breakpoints(&mut chat, request)?;
    Ok(Body { chat, reasoning })
}

//! Dynamic tools: [`ToolProvider`], and the tool set offered for each request.

use toolchain::{RawToolChainResult, ToolSet, Value};

use crate::ConversationContext;

/// Tools decided before each request, offered beside the agent's own: the tools on offer may
/// change from round to round (a skill loader adding a skill's tools once it is loaded).
///
/// Closures `Fn(&ConversationContext) -> ToolSet` implement it. A provided tool whose name is
/// already on offer is left out.
///
/// ```
/// use agent_loop::{ConversationContext, ToolProvider};
/// use toolchain::ToolSet;
///
/// // Offer extra tools only after the first tool round.
/// let later_tools = ToolSet::new();
/// let provider = move |context: &ConversationContext| {
///     if context.tool_rounds() > 0 { later_tools.clone() } else { ToolSet::new() }
/// };
/// # fn takes(_: impl ToolProvider) {}
/// takes(provider);
/// ```
pub trait ToolProvider: Send + Sync {
    /// The tools to offer for the next request of the run in `context`.
    fn tools(&self, context: &ConversationContext) -> ToolSet;
}

impl<F> ToolProvider for F
where
    F: Fn(&ConversationContext) -> ToolSet + Send + Sync,
{
    fn tools(&self, context: &ConversationContext) -> ToolSet {
        self(context)
    }
}

/// Text added to the system prompt before each request: what a run has learned that should
/// steer it from now on (a loaded skill's instructions). The system prompt is sent with every
/// request, so the addition applies from the next round on without a system message in the
/// middle of the conversation (which Anthropic and Gemini refuse).
///
/// Closures `Fn(&ConversationContext) -> Option<String>` implement it.
///
/// ```
/// use agent_loop::{ConversationContext, PromptModifier};
///
/// // After the first tool round, remind the model to be brief.
/// let modifier = |context: &ConversationContext| {
///     (context.tool_rounds() > 0).then(|| "Be brief from now on.".to_owned())
/// };
/// # fn takes(_: impl PromptModifier) {}
/// takes(modifier);
/// ```
pub trait PromptModifier: Send + Sync {
    /// Text to append to the system prompt for the next request of the run in `context`.
    fn system_addition(&self, context: &ConversationContext) -> Option<String>;
}

impl<F> PromptModifier for F
where
    F: Fn(&ConversationContext) -> Option<String> + Send + Sync,
{
    fn system_addition(&self, context: &ConversationContext) -> Option<String> {
        self(context)
    }
}

/// The system prompt for the next request: `base` with every modifier's addition after it,
/// or `None` when there is neither.
pub(crate) fn system_prompt(
    base: Option<&str>,
    modifiers: &[std::sync::Arc<dyn PromptModifier>],
    context: &ConversationContext,
) -> Option<String> {
    let additions: Vec<String> = modifiers
        .iter()
        .filter_map(|modifier| modifier.system_addition(context))
        .filter(|text| !text.trim().is_empty())
        .collect();
    if additions.is_empty() {
        return base.map(str::to_owned);
    }
    let mut parts: Vec<&str> = base.into_iter().collect();
    parts.extend(additions.iter().map(String::as_str));
    Some(parts.join("\n\n"))
}

/// `base` and every provider's tools for the next request of `context`.
pub(crate) fn offered(
    base: &ToolSet,
    providers: &[std::sync::Arc<dyn ToolProvider>],
    context: &ConversationContext,
) -> ToolSet {
    let mut tools = base.clone();
    for provider in providers {
        let extra = provider.tools(context);
        let fresh = extra.filtered(|tool| !tools.contains(tool.name()));
        if fresh.len() < extra.len() {
            tracing::warn!(
                "a tool provider offered a tool whose name is already on offer; left out"
            );
        }
        // Names are distinct after the filter, so this cannot fail.
        let _ = tools.extend(&fresh);
    }
    tools
}

/// The reason of an MCP-style silent-exit marker in a tool's output: a JSON object
/// `{"__silent_exit__": true, "reason": "…"}`. Unlike
/// [`ToolError::SilentExit`](toolchain::ToolError::SilentExit) it does not stop the run; the
/// run ends normally with the silent-exit flag set.
pub(crate) fn silent_exit_marker(raw: &RawToolChainResult) -> Option<String> {
    raw.results.iter().find_map(|result| {
        let output = result.output.as_ref()?;
        (output.get("__silent_exit__") == Some(&Value::Bool(true))).then(|| {
            output
                .get("reason")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        })
    })
}

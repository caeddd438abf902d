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

use std::sync::Arc;

use messages::{ContentPart, Message, Role, ToolCall, ToolResponse, ToolSpec};

use crate::dyn_tool::parse_arguments;
use crate::json::render_json;
use crate::run::{Prepared, Rendering, Runner, collect};
use crate::{ExecutionContext, MediaTransform, RawToolChainResult, ToolObserver, ToolSet};

/// What the model reads, in a `ToolResponse`, when a call failed.
pub const NATIVE_ERROR_PREFIX: &str = "Tool execution failed: ";

/// Runs provider-native tool calls (the `ToolCall` parts of an AI message from a
/// function-calling model) and answers each with a `Role::Tool` message.
///
/// This is what an agent uses with function-calling models: offer
/// [`tool_specs`](NativeToolChain::tool_specs) in the request, and when the reply carries
/// calls, [`execute`](NativeToolChain::execute) them and append the returned messages. Every
/// call gets its answer, in call order, whatever happened: a failed, unknown, panicking or
/// cancelled call is answered with `Tool execution failed: <error>`, so the conversation stays
/// valid and the model can react (errors are values, never an aborted round).
///
/// ```
/// # use toolchain::{async_trait, ExecutionContext, JsonSchema, Tool, ToolError, ToolResult};
/// # use serde::Deserialize;
/// # #[derive(Deserialize, JsonSchema)] struct Empty {}
/// # struct Ping;
/// # #[async_trait]
/// # impl Tool<Empty, String> for Ping {
/// #     fn name(&self) -> &str { "ping" }
/// #     fn description(&self) -> &str { "Answers pong." }
/// #     async fn call(&self, _: &ExecutionContext, _: Empty) -> Result<ToolResult<String>, ToolError> {
/// #         Ok(ToolResult::text("pong".to_owned()))
/// #     }
/// # }
/// use toolchain::{NativeToolChain, Role, ToolCall, ToolSet};
///
/// let chain = NativeToolChain::new(ToolSet::new().with(Ping)?);
/// let calls = [ToolCall::new("call_a", "ping", "{}"), ToolCall::new("call_b", "pong", "{}")];
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let round = chain.execute(&ExecutionContext::new(), &calls).await;
/// assert_eq!(round.messages[0].role, Role::Tool);
/// assert_eq!(round.messages[0].tool_responses().next().unwrap().content, "pong");
/// assert!(round.messages[1].tool_responses().next().unwrap().content
///     .starts_with("Tool execution failed: unknown tool \"pong\""));
/// # });
/// # Ok::<(), ToolError>(())
/// ```
#[derive(Clone, Default)]
pub struct NativeToolChain {
    runner: Runner,
}

/// The answer to a round of native calls.
#[derive(Clone, Debug)]
pub struct NativeToolChainResult {
    /// One `Role::Tool` message per call, in call order: its `ToolResponse` (the provider's
    /// call id, the tool name, the output or `Tool execution failed: …`) followed by the call's
    /// media parts.
    pub messages: Vec<Message>,
    /// Per-call calls, outputs and errors.
    pub raw: RawToolChainResult,
}

impl NativeToolChainResult {
    /// The reason, if a tool asked for the run to end silently.
    pub fn silent_exit(&self) -> Option<&str> {
        self.raw.silent_exit()
    }
}

impl std::fmt::Debug for NativeToolChain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NativeToolChain")
            .field("tools", &self.runner.tools)
            .finish_non_exhaustive()
    }
}

impl NativeToolChain {
    /// A chain over `tools`.
    pub fn new(tools: ToolSet) -> Self {
        NativeToolChain {
            runner: Runner { tools, media: None },
        }
    }

    /// Passes every media part through `transform` (resize, re-encode, drop).
    #[must_use]
    pub fn with_media_transform(mut self, transform: impl MediaTransform + 'static) -> Self {
        self.runner.media = Some(Arc::new(transform));
        self
    }

    /// The tools.
    pub fn tools(&self) -> &ToolSet {
        &self.runner.tools
    }

    /// The tools' specs, for the request's `tools`.
    pub fn tool_specs(&self) -> Vec<ToolSpec> {
        self.runner.tools.specs()
    }

    /// Runs `calls` and answers each.
    pub async fn execute(
        &self,
        ctx: &ExecutionContext,
        calls: &[ToolCall],
    ) -> NativeToolChainResult {
        self.execute_observed(ctx, calls, &()).await
    }

    /// [`execute`](NativeToolChain::execute), reporting each call's start and end to
    /// `observer` as they happen (for `tool.start` / `tool.done` events).
    pub async fn execute_observed(
        &self,
        ctx: &ExecutionContext,
        calls: &[ToolCall],
        observer: &dyn ToolObserver,
    ) -> NativeToolChainResult {
        let prepared = calls
            .iter()
            .map(|call| Prepared {
                input: parse_arguments(&call.name, &call.arguments),
                call: call.clone(),
            })
            .collect();
        let rendering = Rendering {
            output: render_json,
            error_prefix: NATIVE_ERROR_PREFIX,
        };
        let records = self.runner.run(ctx, prepared, &rendering, observer).await;
        let collected = collect(records);
        let messages = collected
            .raw
            .calls
            .iter()
            .zip(collected.outputs)
            .map(|(call, (content, media))| {
                let response = ToolResponse::new(call.id.clone(), call.name.clone(), content);
                let parts = std::iter::once(ContentPart::ToolResponse(response))
                    .chain(media)
                    .collect();
                Message::new(Role::Tool, parts)
            })
            .collect();
        NativeToolChainResult {
            messages,
            raw: collected.raw,
        }
    }
}

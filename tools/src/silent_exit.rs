//! `silent_exit`: lets a subscription run end without a reply.

use schemars::JsonSchema;
use serde::Deserialize;
use toolchain::{ExecutionContext, Tool, ToolError, ToolResult, async_trait};

/// The `silent_exit` tool, offered to subscription runs (`metadata.is_subscription`): calling
/// it ends the run with `response.done` carrying `silent_exit: true` and the reason.
#[derive(Clone, Copy, Debug, Default)]
pub struct SilentExit;

/// Input of [`SilentExit`].
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SilentExitInput {
    /// Why there is nothing to say.
    #[serde(default)]
    pub reason: String,
}

#[async_trait]
impl Tool<SilentExitInput, ()> for SilentExit {
    fn name(&self) -> &str {
        "silent_exit"
    }

    fn description(&self) -> &str {
        "Ends this run without replying to the user. Call it when the scheduled task has \
         nothing worth reporting; give the reason."
    }

    async fn call(
        &self,
        _ctx: &ExecutionContext,
        input: SilentExitInput,
    ) -> Result<ToolResult<()>, ToolError> {
        Err(ToolError::silent_exit(input.reason))
    }
}

use async_trait::async_trait;
use messages::ToolSpec;
use text_format::{TextFormat, TextSection};

use crate::{ExecutionContext, ToolChainError, ToolChainResult, ToolObserver};

/// Runs the tool calls a model wrote as text in one section of its reply, and formats the
/// results as the observation it reads next.
///
/// The protocol, per round:
///
/// 1. Register [`section`](ToolChain::section) with the conversation's [`TextFormat`] and put
///    [`describe_tools`](ToolChain::describe_tools) and the format's `describe_structure` in the
///    system prompt.
/// 2. Parse the model's reply with the format; pass each content of the tool-call section to
///    [`execute`](ToolChain::execute) with the same format.
/// 3. Send [`ToolChainResult::text`] (and [`media`](ToolChainResult::media)) back as the
///    observation. On `Err`, send [`ToolChainError::observation`] instead.
///
/// Every call's output is rendered (JSON or YAML), wrapped by
/// `format.format_section(tool_name, …)`, and all of them are combined by
/// `format.format_sections`, so the observation follows the same section convention as the
/// model's own output. A failed call is the section `Error: <error>` under the tool's name.
///
/// Implemented by [`JsonToolChain`](crate::JsonToolChain) and
/// [`YamlToolChain`](crate::YamlToolChain). Function-calling models use
/// [`NativeToolChain`](crate::NativeToolChain) instead.
#[async_trait]
pub trait ToolChain: Send + Sync {
    /// Parses the calls in `content` (the text of the tool-call section), runs them and formats
    /// the results with `format`.
    ///
    /// Only a section that does not parse at all is an `Err`; unknown tools, bad input,
    /// failing, panicking, timed-out or cancelled calls are per-call errors in the result.
    async fn execute(
        &self,
        ctx: &ExecutionContext,
        content: &str,
        format: &dyn TextFormat,
    ) -> Result<ToolChainResult, ToolChainError> {
        self.execute_observed(ctx, content, format, &()).await
    }

    /// [`execute`](ToolChain::execute), reporting each call's start and end to `observer` as
    /// they happen.
    async fn execute_observed(
        &self,
        ctx: &ExecutionContext,
        content: &str,
        format: &dyn TextFormat,
        observer: &dyn ToolObserver,
    ) -> Result<ToolChainResult, ToolChainError>;

    /// The prompt text that presents the tools and the exact call syntax (empty when there are
    /// no tools).
    fn describe_tools(&self) -> String;

    /// The tools' specs (name, description, input JSON Schema).
    fn tool_specs(&self) -> Vec<ToolSpec>;

    /// The section the model writes its calls in, to register with the format.
    fn section(&self) -> TextSection;
}

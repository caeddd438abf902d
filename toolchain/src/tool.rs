use async_trait::async_trait;
use messages::ContentPart;
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::{ExecutionContext, Source, ToolError};

/// A typed tool: `I` is what the model sends, `TextOutput` what the tool returns.
///
/// The tool only returns data. Turning the output into text (JSON, YAML), wrapping it in the
/// conversation's section format and passing media along is the [`ToolChain`](crate::ToolChain)'s
/// job, so one tool works unchanged with every chain and format.
///
/// - `I` is deserialised from the model's arguments; its [`JsonSchema`] is the `parameters`
///   schema the model is shown, so doc comments on its fields are the model's documentation.
///   It must be an object (a struct with named fields; use an empty struct for no input).
/// - `TextOutput` is serialised for the model. A `String` output is shown as is.
///
/// Implement it with [`#[async_trait]`](macro@crate::async_trait):
///
/// ```
/// use toolchain::{async_trait, ExecutionContext, JsonSchema, Tool, ToolError, ToolResult};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Deserialize, JsonSchema)]
/// struct AddInput {
///     /// First addend.
///     a: i64,
///     /// Second addend.
///     b: i64,
/// }
///
/// #[derive(Serialize)]
/// struct Sum {
///     sum: i64,
/// }
///
/// struct Add;
///
/// #[async_trait]
/// impl Tool<AddInput, Sum> for Add {
///     fn name(&self) -> &str {
///         "add"
///     }
///     fn description(&self) -> &str {
///         "Adds two integers."
///     }
///     async fn call(&self, _ctx: &ExecutionContext, input: AddInput) -> Result<ToolResult<Sum>, ToolError> {
///         let sum = input.a.checked_add(input.b).ok_or_else(|| ToolError::failed("the sum overflows"))?;
///         Ok(ToolResult::text(Sum { sum }))
///     }
/// }
/// ```
#[async_trait]
pub trait Tool<I, TextOutput>: Send + Sync
where
    I: DeserializeOwned + JsonSchema + Send,
    TextOutput: Serialize + Send,
{
    /// The name the model calls the tool by: 1 to 64 ASCII letters, digits, `_` or `-`.
    fn name(&self) -> &str;

    /// What the tool does and when to use it, for the model.
    fn description(&self) -> &str;

    /// A name for people, which a front end shows while the tool runs (`Web search`). `None`
    /// (the default) lets [`DynTool::display_name`](crate::DynTool::display_name) derive one
    /// from [`name`](Self::name).
    fn display_name(&self) -> Option<&str> {
        None
    }

    /// Runs the tool. Return [`ToolError::failed`] for failures the model should see; a panic
    /// is caught and reported as [`ToolError::Panicked`], and never aborts other calls.
    async fn call(
        &self,
        ctx: &ExecutionContext,
        input: I,
    ) -> Result<ToolResult<TextOutput>, ToolError>;
}

/// What a tool returns: typed data for the text the model reads, media (images, audio) to
/// pass along, and the sources it found for a front end to show under the answer.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolResult<TextOutput> {
    /// The output, formatted by the chain (JSON, YAML) into the model's observation.
    pub text: TextOutput,
    /// Media parts (`ContentPart::Binary`, `ContentPart::ImageUrl`) for the model, in order.
    pub media: Vec<ContentPart>,
    /// What a search tool found (passages, web pages), best first; empty for other tools.
    /// The model reads only `text`: a tool that wants the model to see its sources puts them
    /// there too.
    pub sources: Vec<Source>,
}

impl<TextOutput> ToolResult<TextOutput> {
    /// A result without media or sources.
    pub fn text(text: TextOutput) -> Self {
        ToolResult {
            text,
            media: Vec::new(),
            sources: Vec::new(),
        }
    }

    /// A result with media.
    pub fn with_media(text: TextOutput, media: Vec<ContentPart>) -> Self {
        ToolResult {
            text,
            media,
            sources: Vec::new(),
        }
    }

    /// This result, citing `sources`.
    #[must_use]
    pub fn with_sources(mut self, sources: Vec<Source>) -> Self {
        self.sources = sources;
        self
    }
}

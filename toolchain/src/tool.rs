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

    /// What `output` cites, best first, for a front end to list under the answer (a search's
    /// passages or pages); none by default. The model reads only the output: a tool that wants
    /// the model to see its sources puts them in the output too.
    ///
    /// ```
    /// use toolchain::{async_trait, ExecutionContext, JsonSchema, Source, Tool, ToolError, ToolResult};
    /// use serde::{Deserialize, Serialize};
    ///
    /// #[derive(Deserialize, JsonSchema)]
    /// struct LookupInput {
    ///     /// The word to look up.
    ///     word: String,
    /// }
    ///
    /// #[derive(Serialize)]
    /// struct Entry {
    ///     word: String,
    ///     meaning: String,
    ///     url: String,
    /// }
    ///
    /// struct Dictionary;
    ///
    /// #[async_trait]
    /// impl Tool<LookupInput, Entry> for Dictionary {
    ///     fn name(&self) -> &str {
    ///         "define"
    ///     }
    ///     fn description(&self) -> &str {
    ///         "Looks a word up in the dictionary."
    ///     }
    ///     async fn call(&self, _ctx: &ExecutionContext, input: LookupInput) -> Result<ToolResult<Entry>, ToolError> {
    ///         let url = format!("https://dictionary.example/{}", input.word);
    ///         Ok(ToolResult::text(Entry { word: input.word, meaning: "a greeting".into(), url }))
    ///     }
    ///     fn sources(&self, entry: &Entry) -> Vec<Source> {
    ///         vec![Source {
    ///             title: entry.word.clone(),
    ///             location: entry.url.clone(),
    ///             passage: entry.meaning.clone(),
    ///         }]
    ///     }
    /// }
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let ctx = ExecutionContext::new();
    /// let result = Dictionary.call(&ctx, LookupInput { word: "hello".into() }).await.unwrap();
    /// let sources = Dictionary.sources(&result.text);
    /// assert_eq!(sources[0].location, "https://dictionary.example/hello");
    /// # });
    /// ```
    fn sources(&self, output: &TextOutput) -> Vec<Source> {
        let _ = output;
        Vec::new()
    }
}

/// What a tool returns: typed data for the text the model reads, and media (images, audio) to
/// pass along. What the output cites is not part of the result: it is read from the typed
/// output by [`Tool::sources`].
///
/// Build it with [`ToolResult::text`] or [`ToolResult::with_media`], or as a literal:
///
/// ```
/// use toolchain::ToolResult;
///
/// let result = ToolResult { text: "42", media: Vec::new() };
/// assert_eq!(result, ToolResult::text("42"));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct ToolResult<TextOutput> {
    /// The output, formatted by the chain (JSON, YAML) into the model's observation.
    pub text: TextOutput,
    /// Media parts (`ContentPart::Binary`, `ContentPart::ImageUrl`) for the model, in order.
    pub media: Vec<ContentPart>,
}

impl<TextOutput> ToolResult<TextOutput> {
    /// A result without media.
    pub fn text(text: TextOutput) -> Self {
        ToolResult {
            text,
            media: Vec::new(),
        }
    }

    /// A result with media.
    pub fn with_media(text: TextOutput, media: Vec<ContentPart>) -> Self {
        ToolResult { text, media }
    }
}

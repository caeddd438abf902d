use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use async_trait::async_trait;
use messages::ToolSpec;
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::{ExecutionContext, Source, Tool, ToolError, ToolResult};

/// A tool that takes and returns JSON values, for tools whose input schema is only known at
/// run time (MCP servers, tools loaded from configuration).
///
/// Typed [`Tool`]s are adapted to this trait by [`DynTool::new`]; implement it directly only
/// when there is no Rust input type. The chains guarantee `input` is a JSON object.
#[async_trait]
pub trait JsonTool: Send + Sync {
    /// Name, description and input schema, as offered to the model.
    fn spec(&self) -> &ToolSpec;

    /// A name for people (see [`Tool::display_name`]); `None` (the default) derives one from
    /// the spec's name.
    fn display_name(&self) -> Option<&str> {
        None
    }

    /// Runs the tool on a JSON object.
    async fn call_json(
        &self,
        ctx: &ExecutionContext,
        input: Value,
    ) -> Result<ToolResult<Value>, ToolError>;

    /// Runs the tool on a JSON object and returns what its output cites with the result (see
    /// [`Tool::sources`]). The default is [`call_json`](Self::call_json) citing nothing; the
    /// adapter of a typed tool reads the sources from the typed output before erasing it.
    async fn call_json_with_sources(
        &self,
        ctx: &ExecutionContext,
        input: Value,
    ) -> Result<(ToolResult<Value>, Vec<Source>), ToolError> {
        Ok((self.call_json(ctx, input).await?, Vec::new()))
    }
}

/// A tool with its types erased: JSON in, [`serde_json::Value`] out. What a
/// [`ToolSet`](crate::ToolSet) stores.
///
/// Cloning is cheap (an `Arc`), so the same tool can sit in several sets.
#[derive(Clone)]
pub struct DynTool {
    inner: Arc<dyn JsonTool>,
}

impl DynTool {
    /// Erases a typed tool. Its input schema is generated once, here.
    ///
    /// Fails when the name is not 1 to 64 ASCII letters, digits, `_` or `-` (what every
    /// provider accepts), or when the input is not a JSON object (providers require an object
    /// schema; wrap the value in a struct).
    pub fn new<T, I, O>(tool: T) -> Result<Self, ToolError>
    where
        T: Tool<I, O> + 'static,
        I: DeserializeOwned + JsonSchema + Send + 'static,
        O: Serialize + Send + 'static,
    {
        let spec = ToolSpec {
            name: tool.name().to_owned(),
            description: tool.description().to_owned(),
            parameters: input_schema::<I>(),
        };
        Self::from_json_tool(Typed {
            tool,
            spec,
            types: PhantomData,
        })
    }

    /// Wraps a [`JsonTool`], checking its spec as [`DynTool::new`] does.
    pub fn from_json_tool(tool: impl JsonTool + 'static) -> Result<Self, ToolError> {
        validate(tool.spec())?;
        Ok(DynTool {
            inner: Arc::new(tool),
        })
    }

    /// The tool's name.
    pub fn name(&self) -> &str {
        &self.inner.spec().name
    }

    /// The tool's description.
    pub fn description(&self) -> &str {
        &self.inner.spec().description
    }

    /// The tool's name for people: its own [`Tool::display_name`], else one derived from its
    /// name by [`display_name_of`].
    pub fn display_name(&self) -> Cow<'_, str> {
        match self.inner.display_name() {
            Some(own) if !own.trim().is_empty() => Cow::Borrowed(own),
            _ => Cow::Owned(display_name_of(self.name())),
        }
    }

    /// Name, description and input JSON Schema, in the shape providers' function calling takes.
    pub fn spec(&self) -> &ToolSpec {
        self.inner.spec()
    }

    /// Runs the tool on a JSON value (`null` counts as `{}`). A value that does not fit the
    /// input type is [`ToolError::InvalidInput`] naming the tool and the field.
    pub async fn call_json(
        &self,
        ctx: &ExecutionContext,
        input: Value,
    ) -> Result<ToolResult<Value>, ToolError> {
        let input = self.object(input)?;
        self.inner.call_json(ctx, input).await
    }

    /// Runs the tool as [`call_json`](Self::call_json) does, and returns what its output cites
    /// (its [`Tool::sources`]) with the result.
    pub async fn call_json_with_sources(
        &self,
        ctx: &ExecutionContext,
        input: Value,
    ) -> Result<(ToolResult<Value>, Vec<Source>), ToolError> {
        let input = self.object(input)?;
        self.inner.call_json_with_sources(ctx, input).await
    }

    /// `input` as the object of arguments a tool takes (`null` counts as `{}`).
    fn object(&self, input: Value) -> Result<Value, ToolError> {
        match input {
            Value::Null => Ok(Value::Object(Default::default())),
            Value::Object(_) => Ok(input),
            other => Err(ToolError::InvalidInput {
                tool: self.name().to_owned(),
                path: None,
                message: format!("expected an object of arguments, found {}", kind(&other)),
            }),
        }
    }

    /// Runs the tool on arguments as JSON text (blank text counts as `{}`), as a provider's
    /// native tool call carries them.
    pub async fn call_json_text(
        &self,
        ctx: &ExecutionContext,
        arguments: &str,
    ) -> Result<ToolResult<Value>, ToolError> {
        let input = parse_arguments(self.name(), arguments)?;
        self.call_json(ctx, input).await
    }
}

impl fmt::Debug for DynTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DynTool")
            .field("name", &self.name())
            .finish_non_exhaustive()
    }
}

/// Parses a native call's JSON arguments; blank means no arguments.
pub(crate) fn parse_arguments(tool: &str, arguments: &str) -> Result<Value, ToolError> {
    if arguments.trim().is_empty() {
        return Ok(Value::Null);
    }
    serde_json::from_str(arguments).map_err(|error| ToolError::InvalidInput {
        tool: tool.to_owned(),
        path: None,
        message: format!("the arguments are not valid JSON: {error}"),
    })
}

/// The JSON type of `value`, for messages.
pub(crate) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The JSON Schema of `I` as providers take it: inlined (Gemini rejects `$ref`), without the
/// `$schema` and `title` keys, and without the input type's own doc comment: that is written
/// for Rust readers (`Input of [`Calculator`].`), while the model learns what the tool does
/// from its description. Field descriptions stay: they tell the model what to send.
fn input_schema<I: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .with(|settings| settings.inline_subschemas = true)
        .into_generator();
    let mut schema = generator.into_root_schema_for::<I>().to_value();
    if let Some(object) = schema.as_object_mut() {
        object.remove("$schema");
        object.remove("title");
        object.remove("description");
    }
    schema
}

fn validate(spec: &ToolSpec) -> Result<(), ToolError> {
    let invalid = |reason: String| ToolError::InvalidTool {
        name: spec.name.clone(),
        reason,
    };
    let name = &spec.name;
    if name.is_empty() || name.len() > 64 {
        return Err(invalid(format!(
            "its name is {} bytes long; use 1 to 64",
            name.len()
        )));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-')))
    {
        return Err(invalid(format!(
            "its name contains {c:?}; use only ASCII letters, digits, `_` and `-`"
        )));
    }
    match spec.parameters.get("type") {
        None => Ok(()),
        Some(Value::String(kind)) if kind == "object" => Ok(()),
        Some(other) => Err(invalid(format!(
            "its input schema has type {other}, but tools take a JSON object; use a struct with \
             named fields (an empty struct for no input)"
        ))),
    }
}

/// A name for people derived from a tool name, for tools that give none: `_` and `-` become
/// spaces and the first letter is upper case.
///
/// ```
/// assert_eq!(toolchain::display_name_of("web_search"), "Web search");
/// assert_eq!(toolchain::display_name_of("get-course_outline"), "Get course outline");
/// ```
pub fn display_name_of(name: &str) -> String {
    let words = name
        .split(['_', '-'])
        .filter(|word| !word.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    let mut chars = words.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => name.to_owned(),
    }
}

/// A typed tool seen as a [`JsonTool`].
struct Typed<T, I, O> {
    tool: T,
    spec: ToolSpec,
    types: PhantomData<fn(I) -> O>,
}

#[async_trait]
impl<T, I, O> JsonTool for Typed<T, I, O>
where
    T: Tool<I, O>,
    I: DeserializeOwned + JsonSchema + Send + 'static,
    O: Serialize + Send + 'static,
{
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn display_name(&self) -> Option<&str> {
        self.tool.display_name()
    }

    async fn call_json(
        &self,
        ctx: &ExecutionContext,
        input: Value,
    ) -> Result<ToolResult<Value>, ToolError> {
        let result = self.call_typed(ctx, input).await?;
        self.erase(result)
    }

    async fn call_json_with_sources(
        &self,
        ctx: &ExecutionContext,
        input: Value,
    ) -> Result<(ToolResult<Value>, Vec<Source>), ToolError> {
        let result = self.call_typed(ctx, input).await?;
        // Read from the typed output: once erased, it is only JSON.
        let sources = self.tool.sources(&result.text);
        Ok((self.erase(result)?, sources))
    }
}

impl<T, I, O> Typed<T, I, O>
where
    T: Tool<I, O>,
    I: DeserializeOwned + JsonSchema + Send + 'static,
    O: Serialize + Send + 'static,
{
    /// Deserialises `input` and runs the typed tool on it.
    async fn call_typed(
        &self,
        ctx: &ExecutionContext,
        input: Value,
    ) -> Result<ToolResult<O>, ToolError> {
        let input: I = serde_path_to_error::deserialize(input).map_err(|error| {
            let path = error.path().to_string();
            ToolError::InvalidInput {
                tool: self.spec.name.clone(),
                path: (path != ".").then_some(path),
                message: error.into_inner().to_string(),
            }
        })?;
        self.tool.call(ctx, input).await
    }

    /// `result` with its output serialised to JSON.
    fn erase(&self, result: ToolResult<O>) -> Result<ToolResult<Value>, ToolError> {
        let text = serde_json::to_value(&result.text).map_err(|error| ToolError::Output {
            tool: self.spec.name.clone(),
            message: error.to_string(),
        })?;
        Ok(ToolResult {
            text,
            media: result.media,
        })
    }
}

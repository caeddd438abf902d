//! Typed tools for LLM agents, and the chains that run them.
//!
//! A **tool** is a Rust type implementing [`Tool<I, TextOutput>`](Tool): it receives a typed
//! input `I` (deserialised from what the model sent, described to the model by `I`'s JSON
//! Schema) and returns a typed output plus optional media. That is all a plugin author writes.
//! Tools go in a [`ToolSet`], and a **chain** runs the calls a model makes:
//!
//! | chain | the model… | results come back as |
//! |---|---|---|
//! | [`NativeToolChain`] | uses provider function calling (`ToolCall` parts) | one `Role::Tool` message per call |
//! | [`JsonToolChain`] | writes `{"tool": …, "args": {…}}` in a section of its reply | one observation text, in the reply's [`TextFormat`] |
//! | [`YamlToolChain`] (feature `yaml`) | writes `tool: …` / `args:` in a section | the same, outputs rendered as YAML |
//!
//! The tool never formats anything: the chain renders outputs (JSON, YAML), wraps each in the
//! conversation's section format (`# get_weather` or `<get_weather>`) and passes media along.
//! So one tool works unchanged with every chain, every format and every provider.
//!
//! # Writing a tool
//!
//! ```
//! use serde::{Deserialize, Serialize};
//! use toolchain::{
//!     async_trait, ExecutionContext, JsonSchema, JsonToolChain, Tool, ToolChain, ToolError,
//!     ToolResult, ToolSet, XmlFormat,
//! };
//!
//! /// The input: field doc comments become the schema descriptions the model reads.
//! #[derive(Deserialize, JsonSchema)]
//! struct CustomerQuery {
//!     /// Customer id, such as `C001`.
//!     id: String,
//! }
//!
//! /// The output: any `Serialize` type. The chain renders it for the model.
//! #[derive(Serialize)]
//! struct CustomerInfo {
//!     id: String,
//!     name: String,
//! }
//!
//! struct GetCustomerInfo;
//!
//! #[async_trait]
//! impl Tool<CustomerQuery, CustomerInfo> for GetCustomerInfo {
//!     fn name(&self) -> &str {
//!         "get_customer_info"
//!     }
//!
//!     fn description(&self) -> &str {
//!         "Looks up a customer by id."
//!     }
//!
//!     async fn call(
//!         &self,
//!         _ctx: &ExecutionContext,
//!         input: CustomerQuery,
//!     ) -> Result<ToolResult<CustomerInfo>, ToolError> {
//!         match input.id.as_str() {
//!             "C001" => Ok(ToolResult::text(CustomerInfo { id: input.id, name: "John".into() })),
//!             other => Err(ToolError::failed(format!("no customer with id {other}"))),
//!         }
//!     }
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let tools = ToolSet::new().with(GetCustomerInfo)?;
//! let chain = JsonToolChain::new(tools);
//! let format = XmlFormat::new();
//! let ctx = ExecutionContext::new();
//!
//! // What the model wrote in its <action> section:
//! let action = r#"[{"tool": "get_customer_info", "args": {"id": "C001"}},
//!                  {"tool": "get_customer_info", "args": {"id": "C404"}}]"#;
//! let result = chain.execute(&ctx, action, &format).await?;
//! assert_eq!(
//!     result.text,
//!     "<observation>\n\
//!      <get_customer_info>\n{\"id\":\"C001\",\"name\":\"John\"}\n</get_customer_info>\n\
//!      <get_customer_info>\nError: no customer with id C404\n</get_customer_info>\n\
//!      </observation>"
//! );
//! assert_eq!(result.raw.error_count(), 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```
//!
//! Then the same tool set works with function calling: [`NativeToolChain::tool_specs`] gives
//! the `ToolSpec`s for the request and [`NativeToolChain::execute`] answers the model's
//! `ToolCall`s with `ToolResponse` messages. The runnable `examples/plugin_author.rs` shows both.
//!
//! Rules for tool authors:
//!
//! - **Input** must be a JSON object: a struct with named fields (an empty struct for no
//!   input). Bad input never reaches [`Tool::call`]: the model is told which field was wrong,
//!   e.g. ``invalid input for tool "get_customer_info": missing field `id` ``.
//! - **Output** is any `Serialize` type; a `String` is shown to the model as is.
//! - **Failures** are [`ToolError::failed`] / [`ToolError::from_error`]; the model reads the
//!   message (`Error: …`, or `Tool execution failed: …` natively) and can try again. Panics are
//!   caught and reported the same way; they never take down the other calls.
//! - **Media** (screenshots, audio) go in [`ToolResult::media`] as `ContentPart`s, not in the
//!   text.
//! - **Long work** should watch [`ExecutionContext::cancellation`]; the chain also stops
//!   waiting on cancellation, deadline and timeout by itself.
//! - **Ending the run**: return [`ToolError::silent_exit`] to ask the agent to stop without
//!   replying (a silent exit); agents check [`RawToolChainResult::silent_exit`].
//! - Tools whose schema is only known at run time (MCP) implement [`JsonTool`] instead.
//!
//! # How a round runs
//!
//! Every chain runs calls through the same engine. For each call, in order: the tool is looked
//! up (unknown → [`ToolError::UnknownTool`], listing the available names), the input is
//! deserialised (→ [`ToolError::InvalidInput`] naming the field), one call is taken from the
//! context's budget, and the tool runs under the context's cancellation, deadline and per-call
//! timeout, inside a `tool_call` tracing span, with panics caught. Independent calls run
//! concurrently, at most [`ExecutionContext::max_concurrency`] at once, on the caller's task
//! (nothing is spawned); results are always in call order. Media of every successful call is
//! collected in order, through the chain's optional [`MediaTransform`]. A [`ToolObserver`]
//! hears each call start and finish as it happens.
//!
//! Errors are reported twice: in the text the model reads, and typed in
//! [`RawToolChainResult::errors`] (index-aligned with the calls) for code.
//!
//! # Features
//!
//! - `yaml` (default): [`YamlToolChain`], with serde-saphyr.

mod calls;
mod chain;
mod context;
mod dyn_tool;
mod error;
#[doc(hidden)]
pub mod fuzzing;
mod json;
mod native;
mod observe;
mod result;
mod run;
mod source;
mod text_chain;
mod tool;
mod toolset;
#[cfg(feature = "yaml")]
mod yaml;

pub use chain::ToolChain;
pub use context::{DEFAULT_MAX_CONCURRENCY, ExecutionContext};
pub use dyn_tool::{DynTool, JsonTool, display_name_of};
pub use error::{ToolChainError, ToolError};
pub use json::Json;
pub use native::{NATIVE_ERROR_PREFIX, NativeToolChain, NativeToolChainResult};
pub use observe::{MediaTransform, ToolEvent, ToolObserver};
pub use result::{RawToolCallResult, RawToolChainResult, ToolChainResult};
pub use source::Source;
pub use text_chain::{CallSyntax, DEFAULT_SECTION, JsonToolChain, TextToolChain};
pub use tool::{Tool, ToolResult};
pub use toolset::ToolSet;
#[cfg(feature = "yaml")]
pub use yaml::Yaml;

/// Tool calls as YAML in the `action` section, outputs rendered as YAML (text outputs as is).
///
/// The model writes one call or a list of calls:
///
/// ```text
/// - tool: get_customer_info
///   args:
///     id: C001
/// - tool: get_flight
///   args:
///     number: AA100
/// ```
///
/// An argument whose schema type is `string` keeps its text exactly as written, so
/// `zip: 01234` stays `"01234"` and `answer: yes` stays `"yes"` (YAML alone would read a number
/// and a boolean). A code fence around the calls, `name` for `tool` and `arguments` for `args`
/// are accepted.
///
/// With [`MarkdownFormat`], a YAML comment line (`# …`) outside a code fence is a level-1
/// heading and ends the `action` section; models rarely write comments in calls, and a fenced
/// block (```` ```yaml ````) keeps them safe. [`XmlFormat`] has no such clash.
#[cfg(feature = "yaml")]
pub type YamlToolChain = TextToolChain<Yaml>;

// What the API exposes, so plugin and agent authors need only this crate.
pub use async_trait::async_trait;
pub use messages::{ContentPart, Message, Redactor, Role, ToolCall, ToolResponse, ToolSpec};
pub use schemars::{self, JsonSchema};
pub use serde_json::{self, Value};
pub use text_format::{
    FormattedSection, Line, MarkdownFormat, ParseError, ParsedSections, SectionNameError,
    TextFormat, TextSection, XmlFormat,
};
pub use tokio_util::sync::CancellationToken;

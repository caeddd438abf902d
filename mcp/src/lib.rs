//! Model Context Protocol servers as Skein tools.
//!
//! An MCP server — a program started as a child process speaking MCP on stdio, or a
//! streamable-HTTP endpoint — is connected once with [`McpServer::connect`], which runs the
//! handshake and lists all its tools. Each tool becomes a [`toolchain::DynTool`] named
//! `{server}__{tool}` whose input schema is the server's own, so the tools go in a
//! [`ToolSet`](toolchain::ToolSet) beside native ones and run with every chain:
//!
//! ```no_run
//! use mcp::{McpServer, McpServerConfig};
//! use toolchain::{ExecutionContext, ToolSet, Value};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! // The command-line form: NAME=COMMAND ARG… (or NAME=https://host/mcp).
//! let config = McpServerConfig::parse("everything=npx -y @modelcontextprotocol/server-everything")?;
//! let server = McpServer::connect(config).await?;
//! for tool in server.tool_list() {
//!     println!("{}  ({} on the server): {}", tool.name, tool.original_name, tool.description);
//! }
//!
//! let mut tools = ToolSet::new();
//! for tool in server.tools() {
//!     tools.add_dyn(tool)?;
//! }
//! let echo = tools.get("everything__echo").expect("server-everything has `echo`");
//! let result = echo
//!     .call_json(&ExecutionContext::new(), serde_json::json!({"message": "hi"}))
//!     .await?;
//! assert_eq!(result.text, Value::String("Echo: hi".into()));
//! server.close().await;
//! # Ok(())
//! # }
//! ```
//!
//! # What a call does
//!
//! - **Arguments** are the model's, passed through: the server validates them against the
//!   schema it published (a server's validation error comes back as its own `isError` text).
//! - **Results**: text blocks become the output text; images and audio become
//!   [`ContentPart::Binary`](messages::ContentPart::Binary) media (decoded bytes, the server's
//!   MIME type); an embedded text resource becomes text after a line naming its URI, a binary
//!   one becomes media plus a line; a resource link becomes a line; `structuredContent` is the
//!   output when there is no text. `isError: true` fails the call with
//!   [`ToolError::Failed`](toolchain::ToolError::Failed) whose message is the server's text, so
//!   the model reads it.
//! - **Cancellation and time**: the call ends when the [`ExecutionContext`](toolchain::ExecutionContext)'s
//!   token is cancelled, or after the server's timeout (or the context's call timeout or
//!   deadline if sooner), and the request is then cancelled on the server
//!   (`notifications/cancelled`).
//! - **A server that stops** (its process exits, its HTTP endpoint goes away) fails the call in
//!   flight and every later call at once with a [`ToolError`](toolchain::ToolError) carrying
//!   [`McpError::Stopped`], which tells the model to carry on without those tools. Nothing
//!   panics and the run goes on.
//!
//! # Servers
//!
//! See [`McpServerConfig`] for the command-line and file forms and [`Transport`] for what a
//! child process inherits. Stdio children run in their own process group; they are shut down
//! (stdin closed, SIGTERM, SIGKILL) by [`McpServer::close`] or, in the background, when the
//! server and all its tools are dropped. HTTP servers take an optional bearer token
//! ([`Secret`], never shown in `Debug` output, errors or logs).
//!
//! The MCP SDK (`rmcp`) is used only inside this crate's private adapter module; the public API
//! is this crate's own types.

mod adapter;
mod config;
mod error;
mod frames;
mod guard;
mod names;
mod notifications;
mod result;
mod server;
mod stdio;
#[cfg(feature = "testing")]
pub mod testing;

pub use config::{
    ConfigError, DEFAULT_TIMEOUT, MAX_SERVER_NAME_LEN, McpServerConfig, Secret, Transport,
};
pub use error::McpError;
pub use server::{McpServer, McpServerInfo, McpToolInfo};

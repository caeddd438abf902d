//! [`McpServer`]: a connected server and its tools as [`DynTool`]s.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use messages::ToolSpec;
use serde_json::{Map, Value};
use tokio::time::Instant;
use toolchain::{DynTool, ExecutionContext, JsonTool, ToolError, ToolResult};

use crate::adapter::{RemoteTool, Session};
use crate::config::McpServerConfig;
use crate::error::McpError;
use crate::names::model_names;

/// A connected MCP server: a child process or an HTTP session, and the tools it listed when it
/// connected.
///
/// [`tools`](McpServer::tools) gives them as [`DynTool`]s for a
/// [`ToolSet`](toolchain::ToolSet); they keep the connection alive, so the `McpServer` itself
/// may be dropped once they are taken. The connection ends when the server and every tool are
/// dropped (a child process is then shut down in the background; call
/// [`close`](McpServer::close) to wait for it).
pub struct McpServer {
    shared: Arc<Shared>,
    tools: Vec<McpToolInfo>,
    info: McpServerInfo,
}

/// One tool of a server, as [`McpServer::tool_list`] shows it (`skein mcp list`).
#[derive(Clone, Debug, PartialEq)]
pub struct McpToolInfo {
    /// The name the model calls it by: `{server}__{tool}`, sanitized (see
    /// [`McpServer::connect`]).
    pub name: String,
    /// The tool's name on the server, used for calls.
    pub original_name: String,
    /// The tool's human-readable title, if the server gave one.
    pub title: Option<String>,
    /// The description the model reads.
    pub description: String,
    /// The JSON Schema of the tool's input, as the server gave it (with `"type": "object"`
    /// added when missing).
    pub input_schema: Value,
}

/// What a server said about itself when it connected.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct McpServerInfo {
    /// The implementation's name (`serverInfo.name`).
    pub name: Option<String>,
    /// The implementation's version.
    pub version: Option<String>,
    /// Instructions for using the server, if it gave any.
    pub instructions: Option<String>,
}

/// What the server and its tools share.
struct Shared {
    name: String,
    timeout: Duration,
    session: Session,
    /// Set once the server is known to be gone (what was seen, its stderr's tail): every later
    /// call fails with it at once.
    stopped: Mutex<Option<(String, Option<String>)>>,
    /// The server's secrets, removed from every error its calls fail with.
    redactor: messages::Redactor,
}

impl McpServer {
    /// Starts (stdio) or reaches (HTTP) the server, runs the MCP handshake and lists all its
    /// tools (every page), within `config.timeout`.
    ///
    /// Tools are named `{server}__{tool}`: characters of the tool's name outside
    /// `[A-Za-z0-9_-]` become `_` and the whole is cut to 64 bytes; when two tools would get the
    /// same name, the one whose original name sorts first keeps it and the others get `_2`,
    /// `_3`…, whatever the order the server lists them in. Calls use the original name. A tool
    /// whose input schema is not an object schema is left out (with a warning in the log).
    pub async fn connect(config: McpServerConfig) -> Result<McpServer, McpError> {
        let redactor = config.redactor();
        let (session, remote_tools, info) = Session::connect(&config)
            .await
            .map_err(|error| error.redacted(&redactor))?;
        let remote_tools: Vec<RemoteTool> = remote_tools
            .into_iter()
            .filter(|tool| {
                let kind = tool.input_schema.get("type");
                let object = kind.is_none_or(|kind| kind == "object");
                if !object {
                    let kind = kind.map(ToString::to_string).unwrap_or_default();
                    tracing::warn!(
                        server = %config.name,
                        tool = %tool.name,
                        "MCP tool left out: its input schema has type {kind}, not object"
                    );
                }
                object
            })
            .collect();
        let originals: Vec<&str> = remote_tools.iter().map(|tool| tool.name.as_str()).collect();
        let names = model_names(&config.name, &originals);
        let tools = remote_tools
            .into_iter()
            .zip(names)
            .map(|(tool, name)| {
                let description = tool
                    .description
                    .filter(|description| !description.trim().is_empty())
                    .or_else(|| tool.title.clone().filter(|title| !title.trim().is_empty()))
                    .unwrap_or_else(|| {
                        format!("Tool `{}` of the MCP server `{}`.", tool.name, config.name)
                    });
                let mut schema = tool.input_schema;
                schema
                    .entry("type")
                    .or_insert_with(|| Value::String("object".to_owned()));
                McpToolInfo {
                    name,
                    original_name: tool.name,
                    title: tool.title,
                    description,
                    input_schema: Value::Object(schema),
                }
            })
            .collect();
        Ok(McpServer {
            shared: Arc::new(Shared {
                name: config.name,
                timeout: config.timeout,
                session,
                stopped: Mutex::new(None),
                redactor,
            }),
            tools,
            info,
        })
    }

    /// The server's configured name (the prefix of its tools' names).
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// What the server said about itself.
    pub fn info(&self) -> &McpServerInfo {
        &self.info
    }

    /// The server's tools as the model sees them, in the server's order.
    pub fn tool_list(&self) -> &[McpToolInfo] {
        &self.tools
    }

    /// One [`DynTool`] per tool, for a [`ToolSet`](toolchain::ToolSet).
    ///
    /// A call sends the model's arguments as they are (the server validates them) and maps the
    /// result: text blocks to the output text, images and audio to
    /// [`ContentPart::Binary`](messages::ContentPart::Binary) media, embedded resources to text
    /// (with their URI) or media, resource links to a text line, `structuredContent` to the
    /// output when there is no text. `isError: true` fails the call with
    /// [`ToolError::Failed`] whose message is the server's text. The call is cancelled on the
    /// server (`notifications/cancelled`) when the context's token is cancelled
    /// ([`ToolError::Cancelled`]) or when it runs out of time: the server's timeout
    /// ([`ToolError::Timeout`]), or the context's call timeout or deadline if sooner
    /// ([`ToolError::Timeout`], [`ToolError::DeadlineExceeded`]). A server that stops fails the
    /// call, and every later one at once, with [`ToolError::Failed`] carrying
    /// [`McpError::Stopped`]; the run goes on.
    pub fn tools(&self) -> Vec<DynTool> {
        self.tools
            .iter()
            .filter_map(|info| {
                let tool = McpTool {
                    spec: ToolSpec {
                        name: info.name.clone(),
                        description: info.description.clone(),
                        parameters: info.input_schema.clone(),
                    },
                    original_name: info.original_name.clone(),
                    display_name: display_name(info),
                    shared: Arc::clone(&self.shared),
                };
                DynTool::from_json_tool(tool)
                    .inspect_err(|error| {
                        tracing::warn!(server = %self.shared.name, "MCP tool left out: {error}");
                    })
                    .ok()
            })
            .collect()
    }

    /// Whether the server is known to be gone (its process exited, its connection closed, a
    /// call saw it stop, or it was closed): its tools then fail at once, and a caller that
    /// wants them back connects again.
    pub fn is_stopped(&self) -> bool {
        let seen = self
            .shared
            .stopped
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .is_some();
        seen || self.shared.session.is_closed()
    }

    /// The process id of the server's child process (stdio servers only).
    pub fn process_id(&self) -> Option<u32> {
        self.shared.session.pid()
    }

    /// Shuts the server down and waits for it: a child process gets its stdin closed, then
    /// SIGTERM, then SIGKILL (a few seconds apart at most); an HTTP session is ended. Tools
    /// taken from this server fail as stopped afterwards.
    pub async fn close(self) {
        self.shared.mark_stopped("it was closed", None);
        self.shared.session.close().await;
    }
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("name", &self.shared.name)
            .field("tools", &self.tools.len())
            .finish_non_exhaustive()
    }
}

impl Shared {
    fn mark_stopped(&self, detail: &str, stderr: Option<&str>) {
        let mut stopped = self
            .stopped
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        stopped.get_or_insert_with(|| (detail.to_owned(), stderr.map(str::to_owned)));
    }

    /// A call's failure: `error` without the server's secrets, as a tool error.
    fn failed(&self, error: McpError) -> ToolError {
        ToolError::from_error(error.redacted(&self.redactor))
    }

    /// The error of a server known to be gone, if it is.
    async fn stopped_error(&self) -> Option<McpError> {
        let seen = self
            .stopped
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone();
        if let Some((detail, stderr)) = seen {
            return Some(McpError::Stopped {
                server: self.name.clone(),
                detail,
                stderr,
            });
        }
        if self.session.is_closed() {
            return Some(self.session.stopped().await);
        }
        None
    }
}

/// Longest display name taken from a server, in characters: every tool event and every block
/// of an answer repeats it, so a server cannot make them large with a long title.
const MAX_DISPLAY_NAME_CHARS: usize = 80;

/// The name people see for a tool: the server's title on one line, cut to
/// [`MAX_DISPLAY_NAME_CHARS`], else the tool's own name made readable (without the server
/// prefix the model sees).
fn display_name(info: &McpToolInfo) -> String {
    let title = info
        .title
        .as_deref()
        .map(|title| title.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|title| !title.is_empty());
    match title {
        Some(title) => match title.char_indices().nth(MAX_DISPLAY_NAME_CHARS) {
            Some((end, _)) => format!("{}…", &title[..end]),
            None => title,
        },
        None => toolchain::display_name_of(&info.original_name),
    }
}

/// One MCP tool as a [`JsonTool`].
struct McpTool {
    spec: ToolSpec,
    original_name: String,
    /// The server's title for the tool, else its own name made readable (without the
    /// server prefix the model sees).
    display_name: String,
    shared: Arc<Shared>,
}

#[async_trait]
impl JsonTool for McpTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn display_name(&self) -> Option<&str> {
        Some(&self.display_name)
    }

    async fn call_json(
        &self,
        ctx: &ExecutionContext,
        input: Value,
    ) -> Result<ToolResult<Value>, ToolError> {
        let tool = &self.spec.name;
        if ctx.is_cancelled() {
            return Err(ToolError::Cancelled { tool: tool.clone() });
        }
        if let Some(error) = self.shared.stopped_error().await {
            return Err(self.shared.failed(error));
        }
        let arguments = match input {
            Value::Object(arguments) => arguments,
            _ => Map::new(),
        };
        let (deadline, late) = self.bound(ctx);
        let call = self.shared.session.call(&self.original_name, arguments);
        // Losing the race drops `call`, which cancels the request on the server.
        let outcome = tokio::select! {
            biased;
            () = ctx.cancellation().cancelled() => {
                return Err(ToolError::Cancelled { tool: tool.clone() });
            }
            outcome = call => outcome,
            () = tokio::time::sleep_until(deadline) => return Err(late),
        };
        match outcome {
            Ok(output) => output.into_tool_result(tool),
            Err(error) => {
                let error = error.redacted(&self.shared.redactor);
                if let McpError::Stopped { detail, stderr, .. } = &error {
                    self.shared.mark_stopped(detail, stderr.as_deref());
                }
                Err(ToolError::from_error(error))
            }
        }
    }
}

impl McpTool {
    /// When a call starting now must end, and the error it then ends with: the earliest of the
    /// server's timeout, the context's call timeout and its deadline (on a tie, the first of
    /// these).
    fn bound(&self, ctx: &ExecutionContext) -> (Instant, ToolError) {
        let now = Instant::now();
        let timeout = |timeout: Duration| {
            let error = ToolError::Timeout {
                tool: self.spec.name.clone(),
                timeout,
            };
            (now + timeout, error)
        };
        let deadline = ctx.deadline().map(|deadline| {
            let error = ToolError::DeadlineExceeded {
                tool: self.spec.name.clone(),
            };
            (Instant::from_std(deadline), error)
        });
        [ctx.call_timeout().map(timeout), deadline]
            .into_iter()
            .flatten()
            .fold(timeout(self.shared.timeout), |best, next| {
                if next.0 < best.0 { next } else { best }
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(original_name: &str, title: Option<&str>) -> McpToolInfo {
        McpToolInfo {
            name: format!("srv__{original_name}"),
            original_name: original_name.to_owned(),
            title: title.map(str::to_owned),
            description: String::new(),
            input_schema: Value::Object(Map::new()),
        }
    }

    #[test]
    fn a_tool_is_shown_by_its_title_on_one_line_and_cut_else_by_its_own_name() {
        assert_eq!(
            display_name(&info("get-sum", Some(" Add\ntwo  numbers "))),
            "Add two numbers"
        );
        assert_eq!(display_name(&info("get-sum", Some("  "))), "Get sum");
        assert_eq!(display_name(&info("read_file", None)), "Read file");
        let long = "é".repeat(10_000);
        let shown = display_name(&info("x", Some(&long)));
        assert_eq!(shown.chars().count(), MAX_DISPLAY_NAME_CHARS + 1);
        assert!(shown.ends_with('…'));
    }
}

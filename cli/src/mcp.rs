//! `skein mcp list NAME=COMMAND|URL…`: connects to MCP servers and shows the tools they offer,
//! named as a model sees them.

use std::io::Write;

use clap::{Args, Subcommand};

use crate::error::CliError;
use crate::sanitize::for_terminal as terminal_safe;

/// `skein mcp`.
#[derive(Debug, Args)]
pub(crate) struct McpArgs {
    #[command(subcommand)]
    command: McpCommand,
}

#[derive(Debug, Subcommand)]
enum McpCommand {
    /// Connect to MCP servers and list their tools: `skein mcp list
    /// 'everything=npx -y @modelcontextprotocol/server-everything'` or `skein mcp list
    /// docs=https://example.com/mcp`.
    List {
        /// The servers: NAME=COMMAND [ARG…] (stdio) or NAME=URL (streamable HTTP).
        #[arg(required = true, value_name = "NAME=COMMAND|URL")]
        servers: Vec<String>,
        /// Print each tool as a JSON line (name, server, original name, description, input
        /// schema) instead of a table.
        #[arg(long)]
        json: bool,
    },
}

/// Runs `skein mcp …`, writing to `out`.
pub(crate) async fn run(args: &McpArgs, out: &mut impl Write) -> Result<(), CliError> {
    match &args.command {
        McpCommand::List { servers, json } => list(servers, *json, out).await,
    }
}

async fn list(specs: &[String], json: bool, out: &mut impl Write) -> Result<(), CliError> {
    for spec in specs {
        let config = mcp::McpServerConfig::parse(spec)
            .map_err(|error| CliError::Usage(format!("{spec}: {error}")))?;
        let server = mcp::McpServer::connect(config)
            .await
            .map_err(|error| CliError::Usage(error.to_string()))?;
        let info = server.info();
        if !json {
            writeln!(
                out,
                "{}{}: {} tool(s)",
                server.name(),
                about(info.name.as_deref(), info.version.as_deref())
                    .map(|about| format!(" ({})", terminal_safe(&about)))
                    .unwrap_or_default(),
                server.tool_list().len()
            )?;
        }
        for tool in server.tool_list() {
            if json {
                let line = serde_json::json!({
                    "name": tool.name,
                    "server": server.name(),
                    "original_name": tool.original_name,
                    "description": tool.description,
                    "input_schema": tool.input_schema,
                });
                writeln!(out, "{line}")?;
            } else {
                let summary = tool.description.lines().next().unwrap_or_default();
                writeln!(out, "  {:<40} {}", tool.name, terminal_safe(summary))?;
            }
        }
        server.close().await;
    }
    Ok(())
}

/// What a server says about itself in its handshake, `NAME VERSION`, or `None` when it says
/// nothing. Servers send empty strings for what they do not know (an unset package version):
/// those count as absent, so that no blank is left dangling inside the parentheses.
fn about(name: Option<&str>, version: Option<&str>) -> Option<String> {
    let parts: Vec<&str> = [name, version]
        .into_iter()
        .flatten()
        .map(str::trim)
        .filter(|part| !part.is_empty())
        .collect();
    (!parts.is_empty()).then(|| parts.join(" "))
}

#[cfg(test)]
mod tests {
    use super::about;

    #[test]
    fn about_joins_the_name_and_version_a_server_reports() {
        assert_eq!(
            about(Some("skein-test-fastmcp"), Some("1.2.0")).as_deref(),
            Some("skein-test-fastmcp 1.2.0")
        );
        assert_eq!(about(Some("py"), None).as_deref(), Some("py"));
        assert_eq!(about(None, Some("1.2.0")).as_deref(), Some("1.2.0"));
        assert_eq!(about(None, None), None);
    }

    #[test]
    fn about_treats_an_empty_or_blank_version_or_name_as_absent() {
        for blank in ["", " ", "\t\n"] {
            assert_eq!(
                about(Some("skein-test-fastmcp"), Some(blank)).as_deref(),
                Some("skein-test-fastmcp"),
                "{blank:?}"
            );
            assert_eq!(about(Some(blank), Some("1.2.0")).as_deref(), Some("1.2.0"));
            assert_eq!(about(Some(blank), Some(blank)), None);
        }
    }
}

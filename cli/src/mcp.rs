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
            let about = [info.name.as_deref(), info.version.as_deref()]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join(" ");
            writeln!(
                out,
                "{}{}: {} tool(s)",
                server.name(),
                if about.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", terminal_safe(&about))
                },
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

//! MCP servers the operator (or the CLI's user) named, connected once at start: their tools,
//! namespaced `server__tool`, by server name. A request may use only these servers, by name,
//! so no client can make the server start a program or reach a URL of its choosing.

use std::collections::BTreeMap;

use toolchain::ToolSet;

/// The tools of each connected MCP server.
#[derive(Clone, Debug, Default)]
pub struct McpTools {
    servers: BTreeMap<String, ToolSet>,
}

/// A configured MCP server that cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpToolsError {
    /// It could not be connected.
    #[cfg(feature = "mcp")]
    #[error("MCP server `{name}`: {source}")]
    Connect {
        /// The server's name.
        name: String,
        /// Why.
        source: mcp::McpError,
    },
    /// Two servers have one name.
    #[error("two MCP servers are named `{0}`; give each its own name")]
    Duplicate(String),
    /// Its tools clash with each other (a bug in the server's tool list).
    #[error("MCP server `{name}`: its tools cannot be offered: {source}")]
    Tools {
        /// The server's name.
        name: String,
        /// Why.
        source: toolchain::ToolError,
    },
}

impl McpTools {
    /// Connects every server of `configs` at once, listing their tools.
    ///
    /// # Errors
    ///
    /// The first server that cannot be connected, two servers of one name.
    #[cfg(feature = "mcp")]
    pub async fn connect(configs: &[mcp::McpServerConfig]) -> Result<Self, McpToolsError> {
        let connected = futures::future::join_all(configs.iter().map(|config| async move {
            mcp::McpServer::connect(config.clone())
                .await
                .map_err(|source| McpToolsError::Connect {
                    name: config.name.clone(),
                    source,
                })
        }))
        .await;
        let mut tools = McpTools::default();
        for server in connected {
            let server = server?;
            // The tools keep the connection; the server handle may go.
            tools.insert(server.name(), server.tools())?;
        }
        Ok(tools)
    }

    /// Adds the tools of the server `name`.
    ///
    /// # Errors
    ///
    /// A second server of that name, or tools whose names clash.
    pub fn insert(
        &mut self,
        name: &str,
        tools: Vec<toolchain::DynTool>,
    ) -> Result<(), McpToolsError> {
        if self.servers.contains_key(name) {
            return Err(McpToolsError::Duplicate(name.to_owned()));
        }
        let mut set = ToolSet::new();
        for tool in tools {
            set.add_dyn(tool).map_err(|source| McpToolsError::Tools {
                name: name.to_owned(),
                source,
            })?;
        }
        self.servers.insert(name.to_owned(), set);
        Ok(())
    }

    /// The servers' names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.servers.keys().map(String::as_str)
    }

    /// The tools of the server `name`.
    pub fn tools(&self, name: &str) -> Option<&ToolSet> {
        self.servers.get(name)
    }

    /// Whether no server is connected.
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }
}

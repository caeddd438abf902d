//! MCP servers the operator (or the CLI's user) named, connected once at start: their tools,
//! namespaced `server__tool`, by server name. A request may use only these servers, by name,
//! so no client can make the server start a program or reach a URL of its choosing.
//!
//! A server that stops (its process crashed, its HTTP endpoint restarted) fails its calls for
//! the rest of that run; the next run that uses it connects it again ([`McpTools::revive`]), at
//! most once per [`REVIVE_BACKOFF`] while it keeps failing. So a long-lived `skein serve` or
//! `skein chat` recovers without a restart, and a server that cannot start is not spawned
//! again for every request.

use std::collections::BTreeMap;
#[cfg(feature = "mcp")]
use std::sync::Arc;
use std::sync::{PoisonError, RwLock};
use std::time::Duration;

use toolchain::ToolSet;

/// How long after a failed reconnection the next one may be tried.
pub const REVIVE_BACKOFF: Duration = Duration::from_secs(10);

/// The tools of each connected MCP server.
#[derive(Default)]
pub struct McpTools {
    /// The servers' names, sorted; fixed at construction.
    names: Vec<String>,
    servers: RwLock<BTreeMap<String, Entry>>,
}

/// One server's tools, and how to connect it again.
struct Entry {
    tools: ToolSet,
    #[cfg(feature = "mcp")]
    live: Option<Live>,
}

/// A server this process connected (rather than tools handed to [`McpTools::insert`]).
#[cfg(feature = "mcp")]
struct Live {
    config: mcp::McpServerConfig,
    server: mcp::McpServer,
    /// When the last reconnection failed.
    failed_at: Option<std::time::Instant>,
    /// One reconnection at a time: runs that need the server wait for it instead of starting
    /// a second copy.
    reviving: Arc<tokio::sync::Mutex<()>>,
}

impl std::fmt::Debug for McpTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpTools")
            .field("servers", &self.names)
            .finish_non_exhaustive()
    }
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
        let connected = futures::future::join_all(configs.iter().map(connect)).await;
        let mut tools = McpTools::default();
        for (config, server) in configs.iter().zip(connected) {
            let (server, set) = server?;
            let live = Live {
                config: config.clone(),
                server,
                failed_at: None,
                reviving: Arc::default(),
            };
            tools.add(&config.name, set, Some(live))?;
        }
        Ok(tools)
    }

    /// Adds the tools of the server `name`, which this process did not connect (they are
    /// never reconnected).
    ///
    /// # Errors
    ///
    /// A second server of that name, or tools whose names clash.
    pub fn insert(
        &mut self,
        name: &str,
        tools: Vec<toolchain::DynTool>,
    ) -> Result<(), McpToolsError> {
        let set = tool_set(name, tools)?;
        #[cfg(feature = "mcp")]
        return self.add(name, set, None);
        #[cfg(not(feature = "mcp"))]
        return self.add(name, set);
    }

    fn add(
        &mut self,
        name: &str,
        tools: ToolSet,
        #[cfg(feature = "mcp")] live: Option<Live>,
    ) -> Result<(), McpToolsError> {
        let servers = self
            .servers
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner);
        if servers.contains_key(name) {
            return Err(McpToolsError::Duplicate(name.to_owned()));
        }
        servers.insert(
            name.to_owned(),
            Entry {
                tools,
                #[cfg(feature = "mcp")]
                live,
            },
        );
        self.names = servers.keys().cloned().collect();
        Ok(())
    }

    /// The servers' names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.names.iter().map(String::as_str)
    }

    /// The tools of the server `name`, as they are now (a stopped server's fail at once until
    /// [`revive`](Self::revive) connects it again).
    pub fn tools(&self, name: &str) -> Option<ToolSet> {
        self.servers
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(name)
            .map(|entry| entry.tools.clone())
    }

    /// A redactor that knows the secrets of every server this process connected (bearer
    /// tokens, credential-like environment values).
    pub fn redactor(&self) -> messages::Redactor {
        let mut redactor = messages::Redactor::new();
        #[cfg(feature = "mcp")]
        for entry in self
            .servers
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
        {
            if let Some(live) = &entry.live {
                redactor.extend(&live.config.redactor());
            }
        }
        redactor
    }

    /// Whether no server is connected.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// Connects again those of the servers `names` that stopped, unless their last attempt
    /// failed less than [`REVIVE_BACKOFF`] ago; a server that still cannot be connected keeps
    /// its stopped tools (their calls say why) and is logged. Unknown names are ignored.
    pub async fn revive(&self, names: &[&str]) {
        #[cfg(feature = "mcp")]
        for name in names {
            self.revive_one(name).await;
        }
        #[cfg(not(feature = "mcp"))]
        let _ = names;
    }

    #[cfg(feature = "mcp")]
    async fn revive_one(&self, name: &str) {
        let Some(reviving) = self.due(name) else {
            return;
        };
        let _one = reviving.lock().await;
        // Another run may have reconnected it while this one waited.
        let Some(config) = self
            .due(name)
            .and_then(|_| self.with_live(name, |live| live.config.clone()))
        else {
            return;
        };
        match connect(&config).await {
            Ok((server, tools)) => {
                tracing::info!(server = %name, "MCP server connected again");
                let mut servers = self.servers.write().unwrap_or_else(PoisonError::into_inner);
                if let Some(entry) = servers.get_mut(name)
                    && let Some(live) = &mut entry.live
                {
                    entry.tools = tools;
                    live.server = server;
                    live.failed_at = None;
                }
            }
            Err(error) => {
                tracing::warn!(
                    server = %name,
                    "MCP server stopped and cannot be connected again (next try in {}s): {error}",
                    REVIVE_BACKOFF.as_secs()
                );
                let mut servers = self.servers.write().unwrap_or_else(PoisonError::into_inner);
                if let Some(live) = servers.get_mut(name).and_then(|entry| entry.live.as_mut()) {
                    live.failed_at = Some(std::time::Instant::now());
                }
            }
        }
    }

    /// The reconnection lock of `name` if it stopped and may be tried again now.
    #[cfg(feature = "mcp")]
    fn due(&self, name: &str) -> Option<Arc<tokio::sync::Mutex<()>>> {
        self.with_live(name, |live| {
            let waited = live
                .failed_at
                .is_none_or(|failed| failed.elapsed() >= REVIVE_BACKOFF);
            (waited && live.server.is_stopped()).then(|| Arc::clone(&live.reviving))
        })
        .flatten()
    }

    #[cfg(feature = "mcp")]
    fn with_live<T>(&self, name: &str, read: impl FnOnce(&Live) -> T) -> Option<T> {
        self.servers
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(name)
            .and_then(|entry| entry.live.as_ref())
            .map(read)
    }
}

/// Connects the server of `config` and takes its tools.
#[cfg(feature = "mcp")]
async fn connect(
    config: &mcp::McpServerConfig,
) -> Result<(mcp::McpServer, ToolSet), McpToolsError> {
    let server = mcp::McpServer::connect(config.clone())
        .await
        .map_err(|source| McpToolsError::Connect {
            name: config.name.clone(),
            source,
        })?;
    let tools = tool_set(&config.name, server.tools())?;
    Ok((server, tools))
}

fn tool_set(name: &str, tools: Vec<toolchain::DynTool>) -> Result<ToolSet, McpToolsError> {
    let mut set = ToolSet::new();
    for tool in tools {
        set.add_dyn(tool).map_err(|source| McpToolsError::Tools {
            name: name.to_owned(),
            source,
        })?;
    }
    Ok(set)
}

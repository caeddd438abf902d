//! End-to-end tests of the `mcp` crate against real MCP servers, installed by
//! `cargo xtask mcp-servers` under `target/xtask-mcp/`: the reference server
//! `@modelcontextprotocol/server-everything` over stdio, and the Python SDK's `MCPServer`
//! (FastMCP) over streamable HTTP. A missing install fails the tests: they never skip.

#[path = "it/everything.rs"]
mod everything;
#[path = "it/fastmcp.rs"]
mod fastmcp;
#[path = "it/local.rs"]
mod local;
#[path = "it/support.rs"]
mod support;

//! The integration tests of `cli`, linked into one test binary: each file under `tests/`
//! is a module of this one, so the workspace links one executable per crate instead of one per
//! file (each is tens of megabytes, and CI machines have little disk to spare).

#[path = "approval.rs"]
mod approval;
#[path = "cli.rs"]
mod cli;
#[path = "hardening.rs"]
mod hardening;
#[path = "interruptions.rs"]
mod interruptions;
#[path = "kb.rs"]
mod kb;
#[path = "mcp.rs"]
mod mcp;
#[path = "mcp_serve.rs"]
mod mcp_serve;
#[path = "serve_hostile_clients.rs"]
mod serve_hostile_clients;
#[path = "skills.rs"]
mod skills;
#[path = "support.rs"]
mod support;
#[path = "tool_protocols.rs"]
mod tool_protocols;
#[path = "web_search.rs"]
mod web_search;

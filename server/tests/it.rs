//! The integration tests of `server`, linked into one test binary: each file under `tests/`
//! is a module of this one, so the workspace links one executable per crate instead of one per
//! file (each is tens of megabytes, and CI machines have little disk to spare).

#[path = "background.rs"]
mod background;
#[path = "background_agent.rs"]
mod background_agent;
#[path = "chat_completions.rs"]
mod chat_completions;
#[path = "chat_shell_approval.rs"]
mod chat_shell_approval;
#[path = "chat_shell_runs.rs"]
mod chat_shell_runs;
#[path = "embeddings.rs"]
mod embeddings;
#[path = "fuzz_targets.rs"]
mod fuzz_targets;
#[path = "hostile_clients.rs"]
mod hostile_clients;
#[path = "hostile_provider.rs"]
mod hostile_provider;
#[path = "inputs.rs"]
mod inputs;
#[path = "interruptions.rs"]
mod interruptions;
#[path = "knowledge.rs"]
mod knowledge;
#[path = "limits.rs"]
mod limits;
#[path = "logprobs.rs"]
mod logprobs;
#[path = "mcp.rs"]
mod mcp;
#[path = "metadata.rs"]
mod metadata;
#[path = "openai_responses.rs"]
mod openai_responses;
#[path = "providers.rs"]
mod providers;
#[path = "reasoning_resent.rs"]
mod reasoning_resent;
#[path = "request_fields.rs"]
mod request_fields;
#[path = "request_log.rs"]
mod request_log;
#[path = "responses.rs"]
mod responses;
#[path = "responses_approval.rs"]
mod responses_approval;
#[path = "responses_echo.rs"]
mod responses_echo;
#[path = "routes.rs"]
mod routes;
#[path = "runs.rs"]
mod runs;
#[path = "structured_output.rs"]
mod structured_output;
#[path = "support/mod.rs"]
mod support;
#[path = "tool_protocols.rs"]
mod tool_protocols;
#[path = "web_search.rs"]
mod web_search;

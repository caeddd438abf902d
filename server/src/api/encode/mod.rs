//! One encoder per protocol: the agent's domain events ([`agent_loop::AgentEvent`]) written as
//! each protocol spells them, with typed payloads that derive their OpenAPI schemas.

pub mod chat_completions;
pub mod chat_shell;
pub mod failure;
pub mod openai_error;
pub mod responses;

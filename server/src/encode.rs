//! One encoder per protocol: the agent's domain events ([`agent_loop::AgentEvent`]) written as
//! each protocol spells them, with typed payloads that derive their OpenAPI schemas. Each lives
//! in its protocol's folder; they are gathered here for embedders and the CLI.

pub use crate::api::chat_shell::encode as chat_shell;
pub use crate::api::failure;
pub use crate::api::openai::chat_completions::encode as chat_completions;
pub use crate::api::openai::error as openai_error;
pub use crate::api::openai::responses::encode as responses;

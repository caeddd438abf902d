//! The wire types of the HTTP API, with their OpenAPI schemas.
//!
//! - [`ResponseRequest`] and its parts: the body of `POST /v1/response`.
//! - [`ResponseBody`]: the answer when `features.streaming` is false.
//! - The SSE events are `agent_loop::AgentEvent`s: their names and payloads are defined there.

mod input;
mod request;
mod response;

pub use input::{
    ContentItem, ImageSource, InputConfig, InputFunction, InputMessage, InputToolCall,
    MessageContent,
};
pub use request::{
    Attachment, BuiltinTool, FeaturesConfig, KnowledgeContext, KnowledgeExcerpt, Label, Metadata,
    RequestModelConfig, ResponseRequest, Secret, ToolsConfig,
};
pub use response::{CancelResponse, HealthBody, ResponseBody, ToolActivity};

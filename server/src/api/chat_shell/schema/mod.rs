//! Chat Shell's wire types, with their OpenAPI schemas.
//!
//! - [`ResponseRequest`] and its parts: the body of `POST /v1/response`.
//! - [`ResponseBody`]: the answer when `features.streaming` is false.
//! - The SSE events' payloads are the encoder's types ([`crate::encode::chat_shell`]).

mod input;
mod request;
mod response;

pub use input::{
    ContentItem, ImageSource, InputConfig, InputFunction, InputMessage, InputToolCall,
    MessageContent,
};
pub use request::{
    Attachment, BuiltinTool, FeaturesConfig, KnowledgeContext, KnowledgeExcerpt, Label,
    McpServerRef, Metadata, RequestModelConfig, ResponseRequest, Secret, SkillRef, TextFormatName,
    ToolModeName, ToolsConfig,
};
pub use response::{BackgroundResponse, CancelResponse, ResponseBody, ToolActivity};

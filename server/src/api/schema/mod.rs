//! The wire types of the HTTP API, with their OpenAPI schemas.
//!
//! - [`ResponseRequest`] and its parts: the body of `POST /v1/response`.
//! - [`ResponseBody`]: the answer when `features.streaming` is false.
//! - [`ModelList`]: the answer of `GET /v1/models`.
//! - [`ChatCompletionRequest`]: the body of `POST /v1/chat/completions` (OpenAI's shape).
//! - [`CreateResponseRequest`]: the body of `POST /v1/responses` (OpenAI's shape).
//! - The SSE events' payloads are the encoders' types ([`crate::encode`]).

mod bounded;
mod chat_completions;
mod input;
mod models;
mod request;
mod response;
mod responses;

pub use bounded::MAX_REQUEST_MESSAGES;
pub use chat_completions::{
    ChatCompletionRequest, ChatContent, ChatContentPart, ChatMessage, ChatTool, ChatToolCall,
    FunctionCall, FunctionDefinition, ImageUrl, InputReasoningDetail, StreamOptions,
};
pub use input::{
    ContentItem, ImageSource, InputConfig, InputFunction, InputMessage, InputToolCall,
    MessageContent,
};
pub use models::{ModelEntry, ModelList};
pub use request::{
    Attachment, BuiltinTool, FeaturesConfig, KnowledgeContext, KnowledgeExcerpt, Label,
    McpServerRef, Metadata, RequestModelConfig, ResponseRequest, Secret, SkillRef, TextFormatName,
    ToolModeName, ToolsConfig,
};
pub use response::{CancelResponse, HealthBody, ResponseBody, ToolActivity};
pub use responses::{
    CreateResponseRequest, InputItem, InputSummaryText, ItemContent, ReasoningOptions,
    ResponseContentPart, ResponseTool,
};

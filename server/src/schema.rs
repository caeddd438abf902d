//! The wire types of the HTTP API, with their OpenAPI schemas, gathered from each protocol.
//!
//! - [`ResponseRequest`] and its parts: the body of `POST /v1/response` (Chat Shell).
//! - [`ResponseBody`]: its answer when `features.streaming` is false;
//!   [`BackgroundResponse`] that of a `background` run without streaming.
//! - [`ModelList`]: the answer of `GET /v1/models`; [`ModelEntry`] that of `GET /v1/models/{id}`.
//! - [`EmbeddingsRequest`] and [`EmbeddingList`]: `POST /v1/embeddings` (OpenAI's shapes).
//! - [`ChatCompletionRequest`]: the body of `POST /v1/chat/completions` (OpenAI's shape).
//! - [`CreateResponseRequest`]: the body of `POST /v1/responses` (OpenAI's shape).
//! - The SSE events' payloads are the encoders' types ([`crate::encode`]).

pub use crate::api::bounded::MAX_REQUEST_MESSAGES;
pub use crate::api::chat_shell::schema::{
    Attachment, BackgroundResponse, BuiltinTool, CancelResponse, ContentItem, FeaturesConfig,
    ImageSource, InputConfig, InputFunction, InputMessage, InputToolCall, KnowledgeContext,
    KnowledgeExcerpt, Label, McpServerRef, MessageContent, Metadata, RequestModelConfig,
    ResponseBody, ResponseRequest, Secret, SkillRef, TextFormatName, ToolActivity, ToolModeName,
    ToolsConfig,
};
pub use crate::api::health::HealthBody;
pub use crate::api::openai::chat_completions::schema::{
    ChatCompletionRequest, ChatContent, ChatContentPart, ChatMessage, ChatTool, ChatToolCall,
    FunctionCall, FunctionDefinition, ImageUrl, InputReasoningDetail, StreamOptions,
};
pub use crate::api::openai::embeddings::schema::{
    EmbeddingList, EmbeddingObject, EmbeddingUsage, EmbeddingsRequest, EncodingFormat,
};
pub use crate::api::openai::models::schema::{ModelEntry, ModelList};
pub use crate::api::openai::responses::mcp::{McpTool, ResponseToolEntry};
pub use crate::api::openai::responses::schema::{
    CreateResponseRequest, InputItem, InputSummaryText, ItemContent, ReasoningOptions,
    ResponseContentPart, ResponseTool,
};

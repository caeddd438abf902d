//! OpenAI Responses: a model's answer as numbered stream events (`response.created` …
//! `response.completed`), or as one `response` object. Reasoning of any provider is a
//! `reasoning` item whose `encrypted_content` carries what that provider needs back; the
//! client's tool calls are `function_call` items.

mod logprobs;
mod mcp;
mod object;
mod settings;
mod stored;
mod stream;

pub use logprobs::{OutputLogprob, OutputTopLogprob, TextLogprob, TextTopLogprob};
pub use object::{
    IncompleteDetails, InputTokensDetails, ItemStatus, McpCallError, McpListedTool, OutputItem,
    OutputText, OutputTokensDetails, ResponseFailure, ResponseObject, ResponseState, ResponseUsage,
    SummaryText, encrypted_content, reasoning_block,
};
pub use settings::{DEFAULT_TEMPERATURE, ReasoningSettings, ResponseSettings, TextSettings};
pub use stream::{EventKind, ResponseEncoder, ResponseEvent};

#[cfg(test)]
mod tests;

//! OpenAI Chat Completions: `POST /v1/chat/completions`.
//!
//! - `schema`: the request ([`ChatCompletionRequest`](schema::ChatCompletionRequest)).
//! - `plan`: a request to a gateway call, each field honoured or refused.
//! - `encode`: the answer as one `chat.completion` or as `chat.completion.chunk` events.
//! - `handlers`: the handler.

pub mod encode;
pub(crate) mod handlers;
pub(crate) mod plan;
pub(crate) mod schema;

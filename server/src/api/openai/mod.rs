//! The OpenAI-compatible endpoints: Chat Completions, Responses and models, with errors in
//! OpenAI's shape (`error`) so the official SDKs read them.

pub(crate) mod chat_completions;
pub mod error;
pub(crate) mod gateway;
pub(crate) mod models;
pub(crate) mod responses;

//! The Responses API (`POST {base}/responses`, `api_format = "responses"`): request bodies
//! (`request`), the stream of typed events (`stream`) and its in-stream failures (`error`); the
//! protocol impl is `Responses` in `openai/mod.rs`, beside Chat Completions.

mod error;
pub(in crate::openai) mod request;
pub(in crate::openai) mod stream;

//! The Responses API (`POST {base}/responses`, `api_format = "responses"`): request bodies and
//! the stream of typed events.

pub(in crate::openai) mod request;
pub(in crate::openai) mod stream;

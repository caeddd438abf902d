//! The HTTP handlers, one module per concern.

pub(crate) mod chat_completions;
pub(crate) mod events;
pub(crate) mod gateway;
pub(crate) mod misc;
pub(crate) mod models;
pub(crate) mod openapi;
pub(crate) mod response;
pub(crate) mod responses;

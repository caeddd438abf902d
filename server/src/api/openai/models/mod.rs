//! `GET /v1/models`: the model registry in OpenAI's list shape.

pub(crate) mod handlers;
pub(crate) mod schema;

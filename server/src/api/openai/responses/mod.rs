//! OpenAI Responses: `POST /v1/responses`, `GET /v1/responses/{id}`,
//! `POST /v1/responses/{id}/cancel`.
//!
//! - `schema`: the request ([`CreateResponseRequest`](schema::CreateResponseRequest)).
//! - `plan`: a request to a gateway call, continuing a stored response when asked.
//! - `encode`: the answer as numbered stream events or as one `response` object.
//! - `handlers`: the handlers.

pub mod encode;
pub(crate) mod handlers;
pub(crate) mod plan;
pub(crate) mod schema;

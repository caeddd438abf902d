//! Chat Shell: `POST /v1/response` (the agent's events as server-sent events, or one JSON
//! body) and `POST /v1/response/{id}/cancel`.
//!
//! - `schema`: the request ([`ResponseRequest`](schema::ResponseRequest)) and answer types.
//! - `plan`: a request to the service's `RunSpec`, each field honoured or refused.
//! - `encode`: the agent's events as Chat Shell's SSE frames.
//! - `handlers`, `events`: the handler, and the events in the OpenAPI document.

pub mod encode;
pub(crate) mod events;
pub(crate) mod handlers;
pub mod plan;
pub(crate) mod schema;

//! The HTTP layer: how the service is reached (`server`: the router and serving; `state`: what
//! every handler shares; `routes`, `auth`, `guard`, `limit`, `listen`, `schema`, `error`; `plan`: a Chat Shell request to the service's `RunSpec`) and how
//! its events are written (`encode`: one encoder per protocol; `sse`: the event-stream body they
//! are written into).

pub(crate) mod auth;
pub(crate) mod body;
pub mod encode;
pub(crate) mod error;
pub(crate) mod guard;
pub(crate) mod limit;
pub(crate) mod listen;
pub mod plan;
pub(crate) mod routes;
pub mod schema;
pub(crate) mod server;
pub(crate) mod sse;
pub(crate) mod state;

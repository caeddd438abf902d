//! The HTTP layer, one folder per protocol: [`chat_shell`] (`POST /v1/response`) and
//! [`openai`] (Chat Completions, Responses, models), each with its wire types (`schema`), the
//! request to the service's `RunSpec` (`plan`), its encoder (`encode`) and its handlers.
//! Each protocol has its own `router()`, merged in one place (`Server::router`), and its
//! part of the OpenAPI document, merged in `openapi`: adding a protocol is one folder and
//! those two merges.
//!
//! What every protocol shares sits here: `server` (the router and serving), `state` (what
//! every handler shares), `auth`, `guard`, `limit`, `listen`, `body`, `bounded`, `error`,
//! `failure`, `openapi`, `health`, `layers` (what every protocol's routes pass), `sse` (the
//! event-stream body every protocol's encoder writes into) and `request_log` (the one log line
//! of every request).

pub(crate) mod auth;
pub(crate) mod body;
pub(crate) mod bounded;
pub(crate) mod chat_shell;
pub(crate) mod error;
pub mod failure;
pub(crate) mod guard;
pub(crate) mod health;
pub(crate) mod layers;
pub(crate) mod limit;
pub(crate) mod listen;
pub(crate) mod openai;
pub(crate) mod openapi;
pub(crate) mod request_log;
pub(crate) mod response_format;
pub(crate) mod server;
pub(crate) mod sse;
pub(crate) mod state;

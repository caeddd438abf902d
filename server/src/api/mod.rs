//! The HTTP layer, one folder per protocol: [`chat_shell`] (`POST /v1/response`) and
//! [`openai`] (Chat Completions, Responses, models), each with its wire types (`schema`), the
//! request to the service's `RunSpec` (`plan`), its encoder (`encode`) and its handlers.
//!
//! What every protocol shares sits here: `server` (the router and serving), `state` (what
//! every handler shares), `auth`, `guard`, `limit`, `listen`, `body`, `bounded`, `error`,
//! `failure`, `openapi`, `misc` (health).

pub(crate) mod auth;
pub(crate) mod body;
pub(crate) mod bounded;
pub(crate) mod chat_shell;
pub(crate) mod error;
pub mod failure;
pub(crate) mod guard;
pub(crate) mod limit;
pub(crate) mod listen;
pub(crate) mod misc;
pub(crate) mod openai;
pub(crate) mod openapi;
pub(crate) mod server;
pub(crate) mod state;

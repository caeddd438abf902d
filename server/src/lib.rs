//! The Chat Shell service: `POST /v1/response` answers with the agent's events as
//! server-sent events, on axum.
//!
//! ```text
//! POST /v1/response ─► auth (bearer token, or loopback only) ─► body limit ─► parse
//!   ─► plan: every field honoured or refused (422) ─► concurrency slot (else 429)
//!   ─► ChatService::prepare: model (keys, endpoint), tools, agent, stored history
//!   ─► spawned run ─► AgentEvents ─► SSE frames (`response.start` … `response.done`)
//!                       └► every response logged into the conversation tree
//! ```
//!
//! A client that disconnects cancels its run (the model stream is closed, tools stop); so
//! does `POST /v1/response/{id}/cancel`, on any replica of the same database. A `background`
//! run goes on with no client attached, and another replica continues it should this one stop.
//! Every event carries an `id:`, and the run's events are stored as sent:
//! `GET /v1/response/{id}/events` with `Last-Event-ID` replays those after it, then follows. Shutdown refuses new responses, lets those in flight
//! finish for a grace period, then cancels the rest. Provider keys come from the
//! environment and are never echoed: not in errors, logs, `Debug` or events.
//!
//! ```
//! use std::net::SocketAddr;
//! use axum::body::Body;
//! use axum::extract::ConnectInfo;
//! use server::{Server, ServerConfig};
//! use tower::ServiceExt as _;
//!
//! # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
//! // A loopback-only server with an in-memory store. `Server::serve` listens on a socket;
//! // here the router answers one request in-process, as an embedder's would.
//! let server = Server::new(ServerConfig::default()).await?;
//! let body = serde_json::json!({
//!     "model_config": {"model_id": "echo"},           // the offline debug model: no key
//!     "input": {"text": "{\"raw\": \"Hello!\"}"},
//!     "features": {"streaming": false},               // one JSON body instead of events
//! });
//! let mut request = http::Request::post("/v1/response")
//!     .header("content-type", "application/json")                 // JSON bodies only
//!     .body(Body::from(body.to_string()))?;
//! // `serve` records the peer address; loopback is all a server without tokens accepts.
//! request.extensions_mut().insert(ConnectInfo(SocketAddr::from(([127, 0, 0, 1], 40000))));
//!
//! let response = server.router().oneshot(request).await?;
//! assert_eq!(response.status(), 200);
//! let bytes = axum::body::to_bytes(response.into_body(), usize::MAX).await?;
//! let answer: serde_json::Value = serde_json::from_slice(&bytes)?;
//! assert_eq!(answer["content"], "Hello!");
//! assert_eq!(answer["stop_reason"], "end_turn");
//! assert_eq!(answer["usage"]["output_tokens"], 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```
//!
//! # Contents
//!
//! - [`Server`]: the [`Router`], [`serve`](Server::serve) with graceful
//!   shutdown; [`ServerConfig`] (tokens, limits, timeouts, origins, and the
//!   [`ServiceConfig`](service::ServiceConfig) of the service it serves).
//! - [`schema`]: the request ([`ResponseRequest`](schema::ResponseRequest)) and answer
//!   types, with their OpenAPI schemas ([`ApiDoc`], served at `GET /openapi.json`).
//! - [`plan()`]: a request to a [`RunSpec`](service::RunSpec), each field honoured or
//!   refused.
//! - The `service` crate answers: [`ChatService`](service::ChatService) (a
//!   [`RunSpec`](service::RunSpec) to a running agent, which the CLI uses directly), the run
//!   registry, conversation ownership, gateway calls and their logging; it is re-exported as
//!   [`service`], and the built-in tools (`calculator`, `read_file`, `list_files`,
//!   `http_get`, `web_search`, and `silent_exit` for subscription runs) as
//!   [`service::tools`].
//! - [`encode`]: the agent's events as each protocol writes them (Chat Shell's SSE frames).
//! - [`ApiError`], [`ServerError`]: an error answer, a server that cannot start (the
//!   service's errors become HTTP statuses here).
//!
//! # Features
//!
//! - `postgres`: `postgres://` store URLs (conversation-tree's `PostgresStore`).
//! - `testing`: `testing::StreamingProvider`, a loopback provider streaming as slowly and as
//!   long as asked (end-to-end tests, the load bench).

mod api;
pub mod config;
pub mod encode;
#[doc(hidden)]
pub mod fuzzing;
pub mod schema;
#[cfg(feature = "testing")]
pub mod testing;

pub use api::chat_shell::plan;
pub use api::chat_shell::plan::{Planned, plan};
pub use api::error::{ApiError, ErrorBody, ServerError};
pub use api::openapi::ApiDoc;
pub use api::server::Server;
pub use config::ServerConfig;
// The service it answers through: its configuration, its store and its runs are part of this
// API (`ServerConfig::service`, `Server::with_store`, `Server::chat`).
pub use service;

// What the API exposes, so embedders need only this crate.
pub use agent_loop::{AgentEvent, AgentStream, CancellationToken, StopReason};
pub use axum::Router;
pub use conversation_tree::{ConversationId, Store};

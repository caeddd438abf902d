//! The chat service: what a run needs, whatever front end asked for it. A [`RunSpec`] becomes
//! a running agent with its model (`model`, `keys`), tools (the `tools` crate's built-ins,
//! knowledge-base search, MCP servers' tools, skills), stored history (`store`, `owner`) and
//! cancellation ([`Runs`]) through [`ChatService`]; a [`GatewayCall`] becomes one logged
//! model call ([`Service::call`]). Nothing here knows HTTP: the server authenticates a request
//! to a [`Principal`] and maps this crate's errors to its statuses; the CLI runs agents here
//! directly.
//!
//! ```
//! use futures::StreamExt as _;
//! use service::{AgentEvent, ModelRequest, Principal, RunInput, RunSpec, Service, ServiceConfig};
//! use toolchain::ContentPart;
//!
//! # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
//! // An in-memory store, the calculator as the only tool, one shared principal.
//! let service = Service::open(ServiceConfig::default(), &[]).await?;
//! let (conversation, owner) = service.own_conversation(Principal::SHARED, None).await?;
//!
//! // The offline debug model answers what its input's `raw` says.
//! let input = RunInput::Parts(vec![ContentPart::text(r#"{"raw": "Hello!"}"#)]);
//! let mut spec = RunSpec::new(ModelRequest::new("echo"), input);
//! spec.conversation = Some(conversation.stored);
//! spec.owner = owner;
//! let run = service.chat().prepare(spec).await?;
//! let mut events = run.stream(service::CancellationToken::new());
//! let mut answer = String::new();
//! while let Some(event) = events.next().await {
//!     if let AgentEvent::ContentDelta { text, .. } = event {
//!         answer.push_str(&text);
//!     }
//! }
//! assert_eq!(answer, "Hello!");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```
//!
//! # Contents
//!
//! - [`Service`]: built and checked once from a [`ServiceConfig`]: the [`ChatService`], the
//!   one registry of runs in flight of every protocol ([`Runs`]), what each [`Principal`] is
//!   offered, the ownership of conversations ([`Service::own_conversation`]) and the gateway
//!   call with its logging ([`Service::call`]).
//! - [`ChatService`]: a [`RunSpec`] to a running agent (model, tools, history, store).
//! - [`runs`]: the runs in flight ([`Runs`]) and the runs kept in the store, shared by every
//!   replica of one database ([`RunRecords`]: leases, stored events, takeover, retention).
//! - [`options`]: the one rule for a run's sampling and limit options.
//! - [`limit`]: the per-caller concurrency limit ([`ConcurrencyLimit`]), counted across
//!   replicas with a PostgreSQL store ([`Service::concurrency_limit`]).
//! - [`keys`], [`store`], [`mcp`], [`skills`]: provider keys from the environment, stores
//!   from a location, MCP servers, skill folders.
//! - Errors: [`ServiceError`] (a service that cannot be set up), [`RunError`],
//!   [`GatewayError`], [`OwnerError`].
//!
//! # Features
//!
//! - `mcp` (default): MCP servers as tools (`mcp_servers` in the configuration).
//! - `postgres`: `postgres://` store URLs (conversation-tree's `PostgresStore`).

pub mod approval;
mod chat;
pub mod config;
mod embeddings;
mod error;
mod gateway;
pub mod keys;
pub mod limit;
pub mod mcp;
mod model;
pub mod options;
mod owner;
mod principal;
pub mod runs;
#[allow(clippy::module_inception)]
mod service;
pub mod skills;
mod spec;
pub mod store;

pub use chat::{ChatService, PreparedRun, RunError};
pub use config::ServiceConfig;
pub use embeddings::EmbedError;
pub use error::ServiceError;
pub use gateway::{
    Anchor, Answer, Cache, Events, Failure, GatewayCall, GatewayError, Logging, Meter, Provenance,
    Resumed, Stopped, Thread, answer_events, replay_events,
};
pub use limit::{ConcurrencyLimit, LimitError, Slot};
pub use model::{NoKey, resolve_model_config};
pub use owner::{OwnedConversation, OwnerError};
pub use principal::Principal;
pub use runs::{Attached, Ending, Registration, Resume, RunRecords, RunWorker, Runs, RunsConfig};
pub use service::Service;
pub use spec::{DEFAULT_TOOL_ROUNDS, ModelRequest, RunInput, RunSpec, SectionFormat, ToolProtocol};

// What the API exposes, so callers need only this crate.
pub use agent_loop::{AgentEvent, AgentStream, CancellationToken, StopReason};
pub use conversation_tree::{ConversationId, Store};
pub use messages::Secret;
pub use tools;

//! Hashed conversation trees: every model response stored once, at its place in a tree of
//! conversations, found again from nothing but a message array.
//!
//! A conversation is a tree of **nodes**. A node holds one *turn*: the input messages a model
//! answered (system, human, tool responses) and the AI message that answered. Its parent is the
//! node of the turn before. Three hashes place it ([`hash`]): the **prompt hash** of its input,
//! the **response hash** of its answer, and the **path hash** chaining the prompt hashes from
//! the root. Give [`Store::find_or_create_path`] a whole message array (what a chat-completions
//! client sends) and it walks the tree by (conversation, parent, prompt hash), branching where
//! the caller's assistant messages differ from what is stored, and tells where a new answer
//! goes; [`Store::log_response`] stores that answer.
//!
//! Two questions stay apart:
//!
//! - **Where does a response sit?** The hashes decide: model and a non-zero temperature are not
//!   in them, so the same conversation asked of two models (or twice of one sampling model)
//!   gives sibling nodes under one parent, side by side for comparison.
//! - **May a stored answer be returned instead of calling the model?** Only for the same model
//!   id and [`CallOptions::cache_key`], and only when the request is deterministic
//!   (temperature exactly 0) or the caller opts in with [`Reuse::Always`]. Otherwise a stored
//!   answer is an alternative, never a substitute. Every answered request, cache hits
//!   included, is a row of the `calls` table with its own timestamp ([`Store::calls`]).
//!
//! # History is matched by what was said
//!
//! A prompt hash covers the deterministic options its turn was asked with (temperature 0,
//! `max_tokens`, stop sequences), so that a deterministic repeat can be recognised. Those are
//! the options of *that* turn. When a message array is walked, each earlier turn is matched
//! against the stored nodes by its messages and answer, whatever options the stored turn was
//! asked with; only the trailing turn, the one to answer now, is hashed with the new call's
//! options, and they decide only whether a stored answer may stand in for the model. Take the
//! classic example, asked first at the default temperature:
//!
//! ```text
//! [User "Capital of France?", Asst "Paris", User "Germany?"]   at temperature 0
//! ```
//!
//! finds the root "Capital of France?" → "Paris" although it was stored without temperature 0,
//! and hangs "Germany?" below it: continuing with another temperature, output limit, stop list,
//! tool set or model continues the same path instead of copying the history into a new branch.
//! Asking "Germany?" a second time at temperature 0 with the same model is then a cache hit.
//!
//! # Stores
//!
//! - [`SqliteStore`]: the embedded default; one file in WAL mode, versioned migrations that
//!   upgrade older files, refusal of files it did not write or that a newer Skein wrote.
//! - `PostgresStore` (feature `postgres`): the same behaviour on PostgreSQL through a
//!   connection pool, for several server replicas writing at once.
//!
//! Both implement [`Store`], an object-safe async trait: hold them as `Arc<dyn Store>`. Each
//! node is written in one transaction, so a crash never leaves half a node;
//! [`Store::verify`] recomputes every stored hash.
//!
//! # Example: one step of an agent loop
//!
//! ```
//! use conversation_tree::{CallOptions, ConversationId, HashOptions, Message, NewResponse, Reuse, SqliteStore, Store};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), conversation_tree::StoreError> {
//! let store = SqliteStore::open_in_memory().await?;
//! let conversation = ConversationId::random();
//! let options = CallOptions::new("echo").with_hash(HashOptions::deterministic());
//! let mut messages = vec![Message::system("You are helpful"), Message::human("Capital of France?")];
//!
//! // Nothing stored yet: the model must answer messages[0..].
//! let path = store.find_or_create_path(&conversation, &messages, &options).await?;
//! assert!(path.cache_hit.is_none());
//! assert_eq!(path.first_unmatched, 0);
//! let answer = Message::ai("Paris"); // the model's answer
//! let input = path.pending_input(&messages).to_vec();
//! let root = store
//!     .log_response(NewResponse::new(conversation.clone(), path.parent(), input, answer.clone(), &options))
//!     .await?;
//!
//! // The same deterministic request again: a cache hit, no model call.
//! let again = store.find_or_create_path(&conversation, &messages, &options).await?;
//! assert_eq!(again.cache_hit.as_ref().map(|node| node.id()), Some(root.id()));
//!
//! // Extending the conversation finds the root through the assistant message.
//! messages.push(answer);
//! messages.push(Message::human("Germany?"));
//! let next = store.find_or_create_path(&conversation, &messages, &options).await?;
//! assert_eq!(next.parent(), Some(root.id()));
//! assert_eq!(next.first_unmatched, 3);
//!
//! // Continuing later: the full message list of the latest node.
//! let latest = store.latest_node(&conversation).await?.expect("the conversation has nodes");
//! assert_eq!(store.messages_for_path(latest.id()).await?.len(), 3);
//!
//! // A turn asked with other options continues the same path.
//! let other = CallOptions::new("echo").with_hash(HashOptions { temperature: Some(0.7), ..HashOptions::default() });
//! let moved_on = store.find_or_create_path(&conversation, &messages, &other).await?;
//! assert_eq!(moved_on.parent(), Some(root.id()));
//! assert!(moved_on.fully_matched());
//! # Ok(())
//! # }
//! ```
//!
//! # Contents
//!
//! - [`hash`]: [`prompt_hash`], [`response_hash`], [`path_hash`] and the hashes they are made
//!   of; the exact encoding is documented there.
//! - [`Store`], [`PathMatch`], [`NewResponse`], [`PathSummary`]: the API; [`Node`], [`Turn`], [`Call`],
//!   [`ConversationSummary`], [`VerifyReport`]: what it returns.
//! - [`HashOptions`], [`CallOptions`], [`Reuse`]: what enters the hashes, and the reuse policy.
//! - [`SqliteStore`]; `PostgresStore` (feature `postgres`).
//! - [`runs`]: records of runs that outlive their request, their stored events, leases and
//!   change notifications ([`RunStore`], which every [`Store`] is).
//! - [`slots`]: per-caller concurrency slots counted across every replica on one database
//!   ([`slots::SlotStore`], which every [`Store`] is too).
//! - [`migrate`]: the migration runner of schemas versioned in a meta table, which the
//!   PostgreSQL store and the knowledge bases (`knowledge-base`) use.
//! - `pg_connect` (feature `postgres`): how both PostgreSQL stores connect: the URL, TLS
//!   (`sslmode`, `sslrootcert`) and the pool.
//! - `testing` (feature `testing`): a throwaway PostgreSQL cluster for tests.

mod error;
pub mod hash;
mod id;
pub mod migrate;
mod node;
mod options;
#[cfg(feature = "postgres")]
pub mod pg_connect;
#[cfg(feature = "postgres")]
mod postgres;
mod record;
pub mod runs;
pub mod slots;
mod sqlite;
mod store;
#[cfg(feature = "testing")]
pub mod testing;
mod walk;

pub use error::{Backend, Result, StoreError, redact_location};
pub use hash::{
    attachment_hash, canonical_json, path_hash, prompt_hash, response_hash, tool_call_hash,
    tool_result_hash, tool_specs_hash,
};
pub use id::{ConversationId, NodeId};
pub use jiff::Timestamp;
pub use messages::{ContentPart, Message, Reasoning, Role, ToolCall, ToolResponse, ToolSpec};
pub use node::{
    Call, CallKind, ConversationSummary, Node, Problem, ProblemKind, ResponseStatus, TokenUsage,
    Turn, UnknownStatus, VerifyReport,
};
pub use options::{CallOptions, HashOptions, Reuse};
#[cfg(feature = "postgres")]
pub use postgres::PostgresStore;
pub use runs::RunStore;
pub use sqlite::SqliteStore;
pub use store::{Claim, MatchedTurn, NewResponse, PathMatch, PathSummary, Store};

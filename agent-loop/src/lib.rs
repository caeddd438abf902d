//! The Skein agent: a model and tools in a loop of rounds, until the model answers.
//!
//! Each round is a step over an immutable [`ConversationContext`]: the chain —
//! always a valid [`ChainAst`](chain_ast::ChainAst) — is compressed if it grew too long, sent
//! to the model, the answer streamed, the tools it called run, and the next context made.
//!
//! - **Termination**: a plain answer ends the run. When the tool rounds
//!   ([`max_rounds`](AgentBuilder::max_rounds), default 2) are spent and the model calls tools
//!   again, its calls are answered (not run), [`TOOL_LIMIT_REACHED_MESSAGE`] is added and the
//!   model answers without tools — with everything it gathered still in the chain, so the final
//!   answer can use it. A failing tool gives the model `Tool execution failed: …` and the loop
//!   goes on. A tool returning `ToolError::SilentExit` ends the run with `silent_exit`.
//! - **Tool modes**: [`ToolMode::Native`] function calling, or [`ToolMode::Text`] with a
//!   [`TextFormat`] (ReAct: `thinking` / `action` / `answer`
//!   sections, calls in JSON or YAML, observations in the same format). Tools may change from
//!   round to round ([`ToolProvider`]).
//! - **Events**: [`Agent::stream`] yields [`AgentEvent`]s that serialise to the `/v1/response`
//!   SSE events (`response.start`, `content.delta`, `reasoning.delta`, `tool.start`,
//!   `tool.done`, then one of `response.done`, `response.cancelled`, `response.error` — or
//!   [`AgentEvent::ApprovalRequired`] for a paused run), with the
//!   provider's tool-call ids and the usage of every round summed.
//! - **Cancellation**: a [`CancellationToken`], or
//!   dropping the stream, closes the model stream and stops running tools at once; the
//!   conversation is left a valid chain.
//! - **Approval** ([`approval`]): calls a person must approve first pause the run before any
//!   of the round's calls runs; the paused run is data ([`approval::PausedRun`]) that
//!   [`Agent::resume`] continues from per-call decisions, at any later time.
//! - **Compression** ([`ContextPolicy`]) before every request: long attachments cut, old
//!   content summarised by the model itself, then whole pairs pruned from the middle (the
//!   task, its first answer and the latest exchange kept); token counts from tiktoken for
//!   OpenAI models ([`TokenCounter`]). Reasoning signatures of the current turn are never
//!   touched.
//! - **Store** (feature `store`): every response logged into a conversation-tree `Store` as it
//!   arrives — a cancelled or failed answer too, with its status and what had arrived — and
//!   stored answers reused when the request is deterministic. [`history::continuation`] loads
//!   a stored conversation so that it always continues, whatever stopped it.
//!
//! ```
//! use std::sync::Arc;
//! use agent_loop::{Agent, AgentEvent, StopReason};
//! use futures::StreamExt;
//! use providers::testing::{ScriptedModel, ScriptedResponse};
//! use tokio_util::sync::CancellationToken;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
//! // A scripted model stands in for a real one (`providers::model_from_config`).
//! let model = Arc::new(ScriptedModel::new([ScriptedResponse::text("Paris.")]));
//! let agent = Agent::builder()
//!     .model(model)
//!     .system("You answer in one word.")
//!     .build()?;
//!
//! let mut events = agent.stream("Capital of France?", CancellationToken::new());
//! let mut text = String::new();
//! while let Some(event) = events.next().await {
//!     match event {
//!         AgentEvent::ContentDelta { text: delta, .. } => text.push_str(&delta),
//!         AgentEvent::ResponseDone { outcome, stop_reason, .. } => {
//!             assert_eq!(outcome.text, "Paris.");
//!             assert_eq!(stop_reason, StopReason::EndTurn);
//!         }
//!         _ => {}
//!     }
//! }
//! assert_eq!(text, "Paris.");
//! # Ok::<(), agent_loop::AgentError>(())
//! # }).unwrap();
//! ```
//!
//! Start reading at [`Agent`] and `run/mod.rs` (the loop); the module list below is the table of
//! contents.
//!
//! # Features
//!
//! - `tiktoken` (default): exact token counts for OpenAI models.
//! - `store` (default): logging into a conversation-tree `Store`.

mod agent;
pub mod approval;
mod builder;
mod call;
mod compress;
mod context;
mod conversation;
mod emit;
mod error;
mod event;
mod gate;
mod handoff;
#[cfg(feature = "store")]
pub mod history;
mod input;
mod notice;
mod outcome;
mod react;
mod run;
#[cfg(feature = "store")]
mod store;
mod tools;
mod typed;

pub use agent::{Agent, AgentStream};
pub use builder::{AgentBuilder, DEFAULT_MAX_ROUNDS, TextSyntax, ToolMode};
pub use compress::{
    ATTACHMENT_TRUNCATE_CHARS, CompressionReport, ContextLimits, ContextPolicy,
    ESTIMATED_BYTES_PER_TOKEN, IMAGE_TOKENS, MESSAGE_OVERHEAD_TOKENS, TokenCounter,
};
pub use context::ConversationContext;
pub use error::AgentError;
pub use event::{AgentEvent, StopReason};
pub use gate::{WakeGated, WakeMark};
pub use handoff::{Giver, Taker, handoff};
pub use input::AgentInput;
pub use notice::{
    MAX_TRUNCATION_RETRIES, TOOL_CALL_NOT_EXECUTED, TOOL_LIMIT_REACHED_MESSAGE,
    truncated_call_notice,
};
pub use outcome::{AgentOutcome, CallTiming, CompressionNotice, RoundRecord};
pub use react::{ANSWER_SECTION, THINKING_SECTION};
pub use tools::{PromptModifier, ToolProvider};
pub use typed::Typed;

// What the API exposes, so callers need no direct dependency for it.
pub use messages::{ContentPart, Message};
pub use providers::{
    ChatModel, ChatOptions, JsonSchemaFormat, ReasoningEffort, ResponseFormat, ToolChoice, Usage,
};
pub use text_format::{MarkdownFormat, TextFormat, XmlFormat};
pub use tokio_util::sync::CancellationToken;
pub use toolchain::{ToolError, ToolSet};

#[cfg(feature = "store")]
pub use conversation_tree::{ConversationId, NodeId, Reuse, Store};
#[cfg(feature = "store")]
pub use store::{Lookup, StoreLog};

//! ChainAST: a message chain as a tree of sections, headers and body pairs, that validates,
//! repairs, measures and summarises LLM conversations without ever separating a tool call from
//! its response.
//!
//! ```text
//! ChainAst
//! └── ChainSection[]            one turn
//!     ├── Header                system message and/or human message
//!     └── BodyPair[]            one AI message and the tool messages answering it
//!         kind: request-response | completion | summarization
//! ```
//!
//! - [`ChainAst::new`] builds the tree from a `&[Message]`. With `force = false` the chain must
//!   follow the seven [`Rule`]s and the first break is a [`ChainError`] naming the rule and the
//!   message index; with `force = true` every break is repaired (human messages merged, missing
//!   responses answered with [`FALLBACK_RESPONSE_CONTENT`], stray tool messages dropped, …) and
//!   the result always passes strict validation. [`ChainAst::repair`] also lists the repairs.
//! - [`ChainAst::messages`] flattens the tree back; for a valid chain it is exactly the input.
//! - Sizes in bytes ([`message_size`]) are cached on every level and exact after every mutation:
//!   [`append_human_message`](ChainAst::append_human_message),
//!   [`add_body_pair`](ChainAst::add_body_pair),
//!   [`add_tool_response`](ChainAst::add_tool_response),
//!   [`normalize_tool_call_ids`](ChainAst::normalize_tool_call_ids), …
//! - [`summarize`] shrinks a chain to a byte or token budget through an async [`Summarizer`],
//!   keeping the system message, the last section's header and every section's last pair.
//! - Reasoning signatures: [`contains_tool_call_reasoning`], and
//!   [`BodyPair::from_summarization`] with the fake Gemini signature [`FAKE_THOUGHT_SIGNATURE`];
//!   tool-call ids in a provider's format from an [`IdTemplate`] such as `call_{r:24:x}`.
//! - `Display` draws the tree with kinds and sizes.
//! - Feature `testing`: predefined chains and generators for tests (module `testing`).
//!
//! ```
//! use chain_ast::{BodyPair, BodyPairKind, ChainAst, ChainError, Rule};
//! use messages::{Message, ToolCall};
//!
//! let chain = vec![
//!     Message::system("You are a helpful assistant."),
//!     Message::human("What's the weather like?"),
//!     Message::ai_tool_calls(None, vec![ToolCall::new("tool-1", "get_weather", "{}")]),
//! ];
//!
//! // Strict: the call has no response, which breaks rule 3.
//! let error = ChainAst::new(&chain, false).unwrap_err();
//! assert_eq!(error.rule(), Some(Rule::ToolCallsAnswered));
//! assert!(matches!(error, ChainError::MissingToolResponses { index: 2, .. }));
//!
//! // Repairing: a fallback response is added, and the result is valid.
//! let mut ast = ChainAst::new(&chain, true)?;
//! assert_eq!(ast.messages().len(), 4);
//! ast.validate()?;
//!
//! // The agent answers the call for real, then the user goes on.
//! ast.add_tool_response("tool-1", "get_weather", "Sunny, 24°C")?;
//! ast.add_body_pair(BodyPair::from_completion("It is sunny and 24°C."))?;
//! ast.append_human_message("Thanks!");
//! assert_eq!(ast.sections().len(), 2);
//! assert_eq!(ast.sections()[0].body()[0].kind(), BodyPairKind::RequestResponse);
//! assert_eq!(ast.size(), ast.messages().iter().map(chain_ast::message_size).sum::<usize>());
//!
//! println!("{ast}");
//! # Ok::<(), ChainError>(())
//! ```

mod ast;
mod body_pair;
mod display;
mod error;
mod header;
mod hygiene;
pub mod id_template;
mod parse;
mod reasoning;
mod rules;
mod section;
mod size;
mod summarize;
#[cfg(feature = "testing")]
pub mod testing;
mod tool_calls;
mod truncate;

pub use ast::ChainAst;
pub use body_pair::{BodyPair, BodyPairKind};
pub use error::{ChainError, Rule};
pub use header::Header;
pub use hygiene::sanitize_json_control_chars;
pub use id_template::{IdMismatch, IdTemplate};
pub use reasoning::{contains_tool_call_reasoning, extract_reasoning_message, has_tool_calls};
pub use section::ChainSection;
pub use size::{message_size, part_size};
pub use summarize::{
    SummarizeError, SummarizeOptions, SummarizeReport, Summarizer, SummaryRequest, summarize,
};
pub use tool_calls::{ToolCallPair, ToolCallsInfo};
pub use truncate::truncate_middle;

pub use messages::{ContentPart, Message, Reasoning, Role, ToolCall, ToolResponse};

/// Arguments of a tool call added by a repair (a response answered an id nobody called), and
/// what [`ChainAst::sanitize_tool_call_arguments`] puts in place of arguments that are not JSON.
pub const FALLBACK_REQUEST_ARGS: &str = "{}";

/// Content of the responses a repair adds for calls that have none.
pub const FALLBACK_RESPONSE_CONTENT: &str = "the call was not handled, please try again";

/// Name of the tool call that marks a summarization body pair.
pub const SUMMARIZATION_TOOL_NAME: &str = "execute_task_and_return_summary";

/// Arguments of the summarization tool call.
pub const SUMMARIZATION_TOOL_ARGS: &str =
    r#"{"question": "delegate and execute the task, then return the summary of the result"}"#;

/// The reasoning signature Gemini accepts in place of a real thought signature, put on
/// summarization calls that replace signed calls.
pub const FAKE_THOUGHT_SIGNATURE: &str = "skip_thought_signature_validator";

/// The generic tool-call id template: `call_` and 24 letters or digits.
pub const TOOL_CALL_ID_TEMPLATE: &str = "call_{r:24:x}";

/// How a summary written as a plain completion starts, so that it is recognised
/// ([`BodyPair::is_summary`]) and not summarised again on its own.
pub const SUMMARIZED_CONTENT_PREFIX: &str = "**summarized content:**\n";

//! Skein's provider-neutral message model.
//!
//! Every other Skein crate speaks in these types: a conversation is a slice of [`Message`]s, each
//! with a [`Role`] and an ordered list of [`ContentPart`]s. Provider adapters map them to and from
//! each provider's wire format; the ChainAST checks their structure; the conversation tree hashes
//! them. The crate does no I/O and depends on nothing of ours.
//!
//! The serde form of these types is Skein's **canonical transcript format**: a JSON array of
//! messages, used by the CLI, the store and fixtures. Binary data is base64 (standard alphabet,
//! padded). [`transcript`] reads and writes it with errors that say where a document went wrong.
//!
//! ```
//! use messages::{ContentPart, Message, Role, ToolCall};
//!
//! let chain = vec![
//!     Message::system("You are a helpful assistant."),
//!     Message::human("What's the weather in Paris?"),
//!     Message::ai_tool_calls(
//!         None,
//!         vec![ToolCall::new("call_1", "get_weather", r#"{"city":"Paris"}"#)],
//!     ),
//!     Message::tool_response("call_1", "get_weather", "18°C, clear"),
//!     Message::ai("It is 18°C and clear in Paris."),
//! ];
//!
//! assert_eq!(chain[4].text(), "It is 18°C and clear in Paris.");
//! assert_eq!(chain[2].tool_calls().count(), 1);
//!
//! // The canonical transcript JSON round-trips exactly.
//! let json = messages::transcript::to_json(&chain);
//! assert_eq!(messages::transcript::from_json(&json)?, chain);
//! assert!(matches!(chain[3].parts[0], ContentPart::ToolResponse(_)));
//! assert_eq!(chain[3].role, Role::Tool);
//! # Ok::<(), messages::TranscriptError>(())
//! ```

mod base64_bytes;
#[doc(hidden)]
pub mod fuzzing;
mod message;
mod part;
pub mod redact;
mod role;
mod secret;
mod tool;
pub mod transcript;

pub use message::Message;
pub use part::{ContentPart, Reasoning};
pub use redact::Redactor;
pub use role::Role;
pub use secret::Secret;
pub use tool::{ToolCall, ToolResponse, ToolSpec};
pub use transcript::TranscriptError;

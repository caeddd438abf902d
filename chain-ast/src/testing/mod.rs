//! Chains for tests (feature `testing`): sixteen predefined chains and generators.
//!
//! The chains are functions that return a fresh `Vec<Message>` each time. Tool calls use the
//! ids `tool-1`, `tool-2`, … and the summarization call `summary-1`; every chain's system
//! message is `You are a helpful assistant.` (the provider-switch chain's is its own).
//!
//! ```
//! use chain_ast::ChainAst;
//! use chain_ast::testing::{basic_conversation_chain, chain_with_tool, generate_chain, ChainConfig};
//!
//! assert!(ChainAst::new(&basic_conversation_chain(), false).is_ok());
//! assert!(ChainAst::new(&chain_with_tool(), false).is_err());
//! let chain = generate_chain(&ChainConfig { sections: 3, ..ChainConfig::default() });
//! assert_eq!(ChainAst::new(&chain, false)?.sections().len(), 3);
//! # Ok::<(), chain_ast::ChainError>(())
//! ```

mod chains;
mod generate;

pub use chains::*;
pub use generate::{ChainConfig, generate_chain, generate_complex_chain};

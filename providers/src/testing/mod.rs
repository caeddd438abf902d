//! Deterministic models for tests and offline use (feature `testing`).
//!
//! - [`ScriptedModel`] replays a script of responses (text, reasoning, tool calls, usage,
//!   errors, delays between deltas) and records every request it got: agent-loop tests use it
//!   for exact round-by-round behaviour, and a slow script for cancellation tests.
//! - [`EchoModel`] (model id `echo`) answers with what it was sent, like simonw's `llm-echo`;
//!   offered tools, it first calls each of them once with arguments valid for the tool's
//!   schema ([`example_for_schema`]). It needs no key, so every CLI command runs offline.
//!
//! Both stream through the same [assembler](crate::collect) as the real adapters, so their
//! streams and `complete` answers have exactly the shape a provider's would.

mod echo;
mod schema;
mod scripted;

use std::time::Duration;

use crate::assemble::{Assembler, Chunk};
use crate::{EventStream, ProviderError, StreamEvent};

pub use echo::EchoModel;
pub use schema::{example_for_schema, instance_with_text};
pub use scripted::{ScriptedModel, ScriptedResponse};

/// Streams the events of `chunks`, sleeping `delay` before each event after the first, and
/// ends with `failure` instead of the final `Done` when one is given.
fn replay(chunks: Vec<Chunk>, delay: Duration, mut failure: Option<ProviderError>) -> EventStream {
    let mut assembler = Assembler::default();
    let mut events = Vec::new();
    for chunk in chunks {
        // A script opening more blocks than an answer may ends the way a provider's would.
        if let Err(overflow) = assembler.push(chunk, &mut events) {
            failure = Some(overflow.into_error(crate::Provider::OpenAi));
            break;
        }
    }
    let mut items: Vec<Result<StreamEvent, ProviderError>> = Vec::new();
    match failure {
        Some(error) => {
            items.extend(events.into_iter().map(Ok));
            items.push(Err(error));
        }
        None => {
            assembler.finish(&mut events);
            items.extend(events.into_iter().map(Ok));
        }
    }
    let stream =
        futures::stream::iter(items.into_iter().enumerate()).then(move |(i, item)| async move {
            if i > 0 && !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            item
        });
    Box::pin(stream)
}

use futures::StreamExt as _;

/// Splits text into word-sized deltas (each keeps its trailing whitespace), the way models
/// stream it.
fn word_deltas(text: &str) -> Vec<String> {
    let mut deltas = Vec::new();
    let mut current = String::new();
    let mut in_space = false;
    for c in text.chars() {
        if in_space && !c.is_whitespace() {
            deltas.push(std::mem::take(&mut current));
        }
        in_space = c.is_whitespace();
        current.push(c);
    }
    if !current.is_empty() {
        deltas.push(current);
    }
    deltas
}

#[cfg(test)]
mod tests {
    use super::word_deltas;

    #[test]
    fn word_deltas_rejoin_to_the_text() {
        for text in ["", "one", "Hello, world!  How are\nyou? ", "  lead"] {
            assert_eq!(word_deltas(text).concat(), text);
        }
        assert_eq!(word_deltas("a b"), ["a ", "b"]);
    }
}

//! [`Emitter`]: where a run sends its events, and the bookkeeping events need (text blocks,
//! the partial answer).

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use messages::ToolCall;
use serde_json::Value;
use toolchain::{ToolEvent, ToolObserver, ToolSet};

use crate::AgentEvent;
use crate::handoff::Giver;

/// Sends a run's events to its stream; `run` has no stream and builds no events.
#[derive(Debug, Default)]
pub(crate) struct Emitter {
    stream: Option<Giver<AgentEvent>>,
    text: Mutex<TextState>,
}

/// Where the next text delta goes: the text of the run itself is kept by its answers, not
/// here.
#[derive(Debug, Default)]
struct TextState {
    /// Text blocks started so far.
    blocks: usize,
    /// The block of the current model answer, once it has text: its id (`text-3`), written
    /// once and copied into each delta's event, and its length in characters.
    current: Option<(String, usize)>,
}

impl Emitter {
    /// An emitter feeding `stream`, or one that drops everything.
    pub(crate) fn new(stream: Option<Giver<AgentEvent>>) -> Self {
        Emitter {
            stream,
            text: Mutex::default(),
        }
    }

    /// Whether anyone listens.
    pub(crate) fn is_enabled(&self) -> bool {
        self.stream.is_some()
    }

    /// Sends an event.
    pub(crate) fn send(&self, event: AgentEvent) {
        if let Some(stream) = &self.stream {
            // A gone reader means the stream was dropped: the run is being dropped, or finished
            // on its own to log its end, and its events have nobody to go to.
            stream.give(event);
        }
    }

    /// A new model answer begins: its text, if any, is a new block.
    pub(crate) fn next_answer(&self) {
        self.state().current = None;
    }

    /// Answer text: a streamed delta is moved into its event, a stored text copied only when
    /// someone listens.
    pub(crate) fn content(&self, text: impl AsRef<str> + Into<String>) {
        if !self.is_enabled() || text.as_ref().is_empty() {
            return;
        }
        let chars = text.as_ref().chars().count();
        let mut state = self.state();
        let TextState { blocks, current } = &mut *state;
        let (block, offset) = current.get_or_insert_with(|| {
            *blocks += 1;
            (format!("text-{blocks}"), 0)
        });
        let (block_id, block_offset) = (block.clone(), *offset);
        *offset += chars;
        drop(state);
        self.send(AgentEvent::ContentDelta {
            text: text.into(),
            block_id,
            block_offset,
        });
    }

    /// Reasoning text.
    pub(crate) fn reasoning(&self, text: impl AsRef<str> + Into<String>) {
        if self.is_enabled() && !text.as_ref().is_empty() {
            self.send(AgentEvent::ReasoningDelta { text: text.into() });
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, TextState> {
        self.text.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Turns a round's tool events into `tool.start` / `tool.done`.
pub(crate) struct ToolEvents<'a> {
    pub(crate) emitter: &'a Emitter,
    /// The round's tools, for their names for people.
    pub(crate) tools: &'a ToolSet,
    /// Prefix of the ids text protocols mint (`r2.`), which repeat from round to round.
    pub(crate) id_prefix: Option<String>,
}

impl ToolEvents<'_> {
    fn id(&self, call: &ToolCall) -> String {
        match &self.id_prefix {
            Some(prefix) => format!("{prefix}{}", call.id),
            None => call.id.clone(),
        }
    }
}

impl ToolObserver for ToolEvents<'_> {
    fn on_event(&self, event: &ToolEvent<'_>) {
        if !self.emitter.is_enabled() {
            return;
        }
        match event {
            ToolEvent::Started { call, .. } => self.emitter.send(AgentEvent::ToolStart {
                id: self.id(call),
                name: call.name.clone(),
                display_name: self.tools.display_name(&call.name),
                input: arguments_json(&call.arguments),
            }),
            ToolEvent::Finished {
                call,
                outcome,
                sources,
                content,
                duration,
                ..
            } => self.emitter.send(AgentEvent::ToolDone {
                id: self.id(call),
                name: call.name.clone(),
                display_name: self.tools.display_name(&call.name),
                output: (*content).to_owned(),
                duration_ms: millis(*duration),
                // A silent exit ends the run normally; the call did not fail.
                error: outcome
                    .as_ref()
                    .err()
                    .filter(|error| error.silent_exit_reason().is_none())
                    .map(ToString::to_string),
                value: outcome.as_ref().ok().map(|value| (*value).clone()),
                sources: sources.to_vec(),
            }),
        }
    }
}

/// A call's arguments as JSON: parsed, or the raw text as a JSON string when it is not JSON.
fn arguments_json(arguments: &str) -> Value {
    if arguments.trim().is_empty() {
        return Value::Object(serde_json::Map::new());
    }
    serde_json::from_str(arguments).unwrap_or_else(|_| Value::String(arguments.to_owned()))
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

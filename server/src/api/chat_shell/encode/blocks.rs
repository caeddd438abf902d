//! The `blocks` of `tool.start`, `tool.done` and `response.done`: the answer so far as an
//! ordered list of text and tool steps, so a client renders it from any one of these events
//! without replaying the deltas before it.

use agent_loop::AgentEvent;
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

/// One step of an answer: text the model wrote, or a tool it called.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Block {
    /// Text of one model answer (`type: "text"`).
    Text(TextBlock),
    /// One tool call (`type: "tool"`).
    Tool(ToolBlock),
}

/// The text of one model answer, as its `content.delta` events spelled it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, ToSchema)]
pub struct TextBlock {
    /// The `block_id` of its `content.delta` events: `text-1`, `text-2`, …
    pub id: String,
    /// The text so far.
    pub content: String,
    /// Whether more text may follow.
    pub status: TextStatus,
}

/// Whether a text block is complete.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TextStatus {
    /// The model is still writing it.
    Streaming,
    /// The model's answer ended.
    Done,
}

/// One tool call, as `tool.start` and `tool.done` reported it.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct ToolBlock {
    /// The tool-call id (the `id` of `tool.start` and `tool.done`).
    pub id: String,
    /// The same id, under the name Chat Shell clients read.
    pub tool_use_id: String,
    /// The tool.
    pub tool_name: String,
    /// The tool's name for people.
    pub display_name: String,
    /// Whether the call is running, finished or failed.
    pub status: ToolStatus,
    /// The arguments, as in `tool.start`.
    #[schema(value_type = Value)]
    pub tool_input: Value,
    /// What the model read back (the output or the error text), once the call finished.
    pub tool_output: Option<String>,
    /// How long the call took, once it finished.
    pub duration_ms: Option<u64>,
}

/// How far a tool call got.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    /// Started, not finished.
    Pending,
    /// Finished with an output.
    Done,
    /// Failed; the model was told why.
    Error,
}

/// The blocks of one run, kept up to date event by event.
#[derive(Debug, Default)]
pub(crate) struct Blocks {
    blocks: Vec<Block>,
}

impl Blocks {
    /// Takes `event` into the blocks.
    pub(crate) fn apply(&mut self, event: &AgentEvent) {
        match event {
            AgentEvent::ContentDelta { text, block_id, .. } => match self.blocks.last_mut() {
                Some(Block::Text(block)) if block.id == *block_id => block.content.push_str(text),
                _ => {
                    self.end_text();
                    self.blocks.push(Block::Text(TextBlock {
                        id: block_id.clone(),
                        content: text.clone(),
                        status: TextStatus::Streaming,
                    }));
                }
            },
            AgentEvent::ToolStart {
                id,
                name,
                display_name,
                input,
            } => {
                // Tools run once the model's answer is whole: its text is complete.
                self.end_text();
                self.blocks.push(Block::Tool(ToolBlock {
                    id: id.clone(),
                    tool_use_id: id.clone(),
                    tool_name: name.clone(),
                    display_name: display_name.clone(),
                    status: ToolStatus::Pending,
                    tool_input: input.clone(),
                    tool_output: None,
                    duration_ms: None,
                }));
            }
            AgentEvent::ToolDone {
                id,
                output,
                duration_ms,
                error,
                ..
            } => {
                let pending = self.blocks.iter_mut().rev().find_map(|block| match block {
                    Block::Tool(tool) if tool.id == *id && tool.status == ToolStatus::Pending => {
                        Some(tool)
                    }
                    _ => None,
                });
                if let Some(tool) = pending {
                    tool.status = match error {
                        Some(_) => ToolStatus::Error,
                        None => ToolStatus::Done,
                    };
                    tool.tool_output = Some(output.clone());
                    tool.duration_ms = Some(*duration_ms);
                }
            }
            AgentEvent::ResponseDone { .. } => self.end_text(),
            _ => {}
        }
    }

    /// The blocks as they stand.
    pub(crate) fn snapshot(&self) -> Vec<Block> {
        self.blocks.clone()
    }

    /// The text being written, if any, is complete.
    fn end_text(&mut self) {
        if let Some(Block::Text(block)) = self.blocks.last_mut() {
            block.status = TextStatus::Done;
        }
    }
}

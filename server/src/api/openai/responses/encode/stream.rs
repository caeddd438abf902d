//! A model's answer as Responses stream events, in the order the Responses API defines: every
//! item announced (`output_item.added`) before its pieces and closed (`output_item.done`)
//! before the next begins, every event numbered.

use messages::Reasoning;
use providers::{FinishReason, StreamEvent, TokenLogprob, ToolCall, Usage};
use serde::Serialize;
use utoipa::ToSchema;

use super::logprobs::{OutputLogprob, TextLogprob};
use super::object::{
    IncompleteDetails, ItemStatus, OutputItem, OutputText, ResponseFailure, ResponseObject,
    ResponseState, ResponseUsage, SummaryText, encrypted_content,
};
use crate::api::openai::signed_ids;

/// One stream event: its kind and its place in the stream.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct ResponseEvent {
    /// What happened.
    #[serde(flatten)]
    pub kind: EventKind,
    /// The event's position in the stream, from 0.
    pub sequence_number: u64,
}

impl ResponseEvent {
    /// The SSE event name: the `type` field.
    pub fn name(&self) -> &'static str {
        self.kind.name()
    }
}

/// What a stream event says.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
#[serde(tag = "type")]
pub enum EventKind {
    /// The response exists: its id is final.
    #[serde(rename = "response.created")]
    Created {
        /// The response, `in_progress`.
        response: Box<ResponseObject>,
    },
    /// The model is answering.
    #[serde(rename = "response.in_progress")]
    InProgress {
        /// The response, `in_progress`.
        response: Box<ResponseObject>,
    },
    /// An output item begins.
    #[serde(rename = "response.output_item.added")]
    OutputItemAdded {
        /// Its position in `output`.
        output_index: usize,
        /// The item as it begins.
        item: OutputItem,
    },
    /// An output item is whole.
    #[serde(rename = "response.output_item.done")]
    OutputItemDone {
        /// Its position in `output`.
        output_index: usize,
        /// The whole item.
        item: OutputItem,
    },
    /// A message's text part begins.
    #[serde(rename = "response.content_part.added")]
    ContentPartAdded {
        /// The message item.
        item_id: String,
        /// Its position in `output`.
        output_index: usize,
        /// The part's position in the message.
        content_index: usize,
        /// The part, empty.
        part: OutputText,
    },
    /// A message's text part is whole.
    #[serde(rename = "response.content_part.done")]
    ContentPartDone {
        /// The message item.
        item_id: String,
        /// Its position in `output`.
        output_index: usize,
        /// The part's position in the message.
        content_index: usize,
        /// The whole part.
        part: OutputText,
    },
    /// Answer text.
    #[serde(rename = "response.output_text.delta")]
    OutputTextDelta {
        /// The message item.
        item_id: String,
        /// Its position in `output`.
        output_index: usize,
        /// The part's position in the message.
        content_index: usize,
        /// The new text.
        delta: String,
        /// The log probabilities of its tokens, when asked for; empty otherwise.
        logprobs: Vec<TextLogprob>,
    },
    /// A text part's whole text.
    #[serde(rename = "response.output_text.done")]
    OutputTextDone {
        /// The message item.
        item_id: String,
        /// Its position in `output`.
        output_index: usize,
        /// The part's position in the message.
        content_index: usize,
        /// The whole text.
        text: String,
        /// The log probabilities of all its tokens, when asked for; empty otherwise.
        logprobs: Vec<TextLogprob>,
    },
    /// A reasoning summary part begins.
    #[serde(rename = "response.reasoning_summary_part.added")]
    ReasoningSummaryPartAdded {
        /// The reasoning item.
        item_id: String,
        /// Its position in `output`.
        output_index: usize,
        /// The part's position in the summary.
        summary_index: usize,
        /// The part, empty.
        part: SummaryText,
    },
    /// A reasoning summary part is whole.
    #[serde(rename = "response.reasoning_summary_part.done")]
    ReasoningSummaryPartDone {
        /// The reasoning item.
        item_id: String,
        /// Its position in `output`.
        output_index: usize,
        /// The part's position in the summary.
        summary_index: usize,
        /// The whole part.
        part: SummaryText,
    },
    /// Reasoning text, whichever provider reasoned.
    #[serde(rename = "response.reasoning_summary_text.delta")]
    ReasoningSummaryTextDelta {
        /// The reasoning item.
        item_id: String,
        /// Its position in `output`.
        output_index: usize,
        /// The part's position in the summary.
        summary_index: usize,
        /// The new text.
        delta: String,
    },
    /// A reasoning summary part's whole text.
    #[serde(rename = "response.reasoning_summary_text.done")]
    ReasoningSummaryTextDone {
        /// The reasoning item.
        item_id: String,
        /// Its position in `output`.
        output_index: usize,
        /// The part's position in the summary.
        summary_index: usize,
        /// The whole text.
        text: String,
    },
    /// Argument text of a function call.
    #[serde(rename = "response.function_call_arguments.delta")]
    FunctionCallArgumentsDelta {
        /// The function call item.
        item_id: String,
        /// Its position in `output`.
        output_index: usize,
        /// Argument text to append.
        delta: String,
    },
    /// A function call's whole arguments.
    #[serde(rename = "response.function_call_arguments.done")]
    FunctionCallArgumentsDone {
        /// The function call item.
        item_id: String,
        /// Its position in `output`.
        output_index: usize,
        /// The tool's name.
        name: String,
        /// The whole arguments.
        arguments: String,
    },
    /// An MCP server's tools are being listed.
    #[serde(rename = "response.mcp_list_tools.in_progress")]
    McpListToolsInProgress {
        /// The `mcp_list_tools` item.
        item_id: String,
        /// Its position in `output`.
        output_index: usize,
    },
    /// An MCP server's tools are listed.
    #[serde(rename = "response.mcp_list_tools.completed")]
    McpListToolsCompleted {
        /// The `mcp_list_tools` item.
        item_id: String,
        /// Its position in `output`.
        output_index: usize,
    },
    /// An MCP call begins.
    #[serde(rename = "response.mcp_call.in_progress")]
    McpCallInProgress {
        /// The `mcp_call` item.
        item_id: String,
        /// Its position in `output`.
        output_index: usize,
    },
    /// Argument text of an MCP call.
    #[serde(rename = "response.mcp_call_arguments.delta")]
    McpCallArgumentsDelta {
        /// The `mcp_call` item.
        item_id: String,
        /// Its position in `output`.
        output_index: usize,
        /// Argument text to append.
        delta: String,
    },
    /// An MCP call's whole arguments.
    #[serde(rename = "response.mcp_call_arguments.done")]
    McpCallArgumentsDone {
        /// The `mcp_call` item.
        item_id: String,
        /// Its position in `output`.
        output_index: usize,
        /// The whole arguments.
        arguments: String,
    },
    /// An MCP call's tool answered.
    #[serde(rename = "response.mcp_call.completed")]
    McpCallCompleted {
        /// The `mcp_call` item.
        item_id: String,
        /// Its position in `output`.
        output_index: usize,
    },
    /// An MCP call's tool failed, or the call was declined.
    #[serde(rename = "response.mcp_call.failed")]
    McpCallFailed {
        /// The `mcp_call` item.
        item_id: String,
        /// Its position in `output`.
        output_index: usize,
    },
    /// The response is done.
    #[serde(rename = "response.completed")]
    Completed {
        /// The whole response.
        response: Box<ResponseObject>,
    },
    /// The response stopped at the output limit or a safety filter.
    #[serde(rename = "response.incomplete")]
    Incomplete {
        /// The response as it stands.
        response: Box<ResponseObject>,
    },
    /// The response failed or was cancelled (`status` says which).
    #[serde(rename = "response.failed")]
    Failed {
        /// The response as it stands, with `error`.
        response: Box<ResponseObject>,
    },
}

impl EventKind {
    /// The `type` field.
    pub fn name(&self) -> &'static str {
        match self {
            EventKind::Created { .. } => "response.created",
            EventKind::InProgress { .. } => "response.in_progress",
            EventKind::OutputItemAdded { .. } => "response.output_item.added",
            EventKind::OutputItemDone { .. } => "response.output_item.done",
            EventKind::ContentPartAdded { .. } => "response.content_part.added",
            EventKind::ContentPartDone { .. } => "response.content_part.done",
            EventKind::OutputTextDelta { .. } => "response.output_text.delta",
            EventKind::OutputTextDone { .. } => "response.output_text.done",
            EventKind::ReasoningSummaryPartAdded { .. } => "response.reasoning_summary_part.added",
            EventKind::ReasoningSummaryPartDone { .. } => "response.reasoning_summary_part.done",
            EventKind::ReasoningSummaryTextDelta { .. } => "response.reasoning_summary_text.delta",
            EventKind::ReasoningSummaryTextDone { .. } => "response.reasoning_summary_text.done",
            EventKind::FunctionCallArgumentsDelta { .. } => {
                "response.function_call_arguments.delta"
            }
            EventKind::FunctionCallArgumentsDone { .. } => "response.function_call_arguments.done",
            EventKind::McpListToolsInProgress { .. } => "response.mcp_list_tools.in_progress",
            EventKind::McpListToolsCompleted { .. } => "response.mcp_list_tools.completed",
            EventKind::McpCallInProgress { .. } => "response.mcp_call.in_progress",
            EventKind::McpCallArgumentsDelta { .. } => "response.mcp_call_arguments.delta",
            EventKind::McpCallArgumentsDone { .. } => "response.mcp_call_arguments.done",
            EventKind::McpCallCompleted { .. } => "response.mcp_call.completed",
            EventKind::McpCallFailed { .. } => "response.mcp_call.failed",
            EventKind::Completed { .. } => "response.completed",
            EventKind::Incomplete { .. } => "response.incomplete",
            EventKind::Failed { .. } => "response.failed",
        }
    }
}

/// The text or reasoning item being streamed.
#[derive(Debug)]
enum Open {
    Reasoning(usize),
    Message(usize),
}

/// The opening piece of a function call, held until the next event: when that event is the
/// whole call, the item is announced with the `call_id` that carries the call's signature
/// (see [`ResponseEncoder::call_id`]), the same id its `output_item.done` gives.
#[derive(Debug)]
struct HeldPiece {
    index: usize,
    id: String,
    name: Option<String>,
    arguments: String,
}

/// A function call being streamed.
#[derive(Debug)]
struct OpenCall {
    /// The provider's index of the call among its calls.
    call_index: usize,
    output_index: usize,
}

/// Turns a model's stream events into Responses events, in order, and keeps the response
/// they describe.
#[derive(Debug)]
pub struct ResponseEncoder {
    pub(super) response: ResponseObject,
    /// The part of the response id after `resp_`, which item ids share.
    suffix: String,
    sequence: u64,
    open: Option<Open>,
    calls: Vec<OpenCall>,
    held: Option<HeldPiece>,
    usage: Option<Usage>,
    /// Log probabilities waiting for the text delta they describe (the provider sends them
    /// just before it).
    logprobs: Option<Vec<TokenLogprob>>,
}

impl ResponseEncoder {
    /// An encoder of `response` (as it begins: `in_progress`, no output).
    pub fn new(response: ResponseObject) -> Self {
        let suffix = response
            .id
            .strip_prefix("resp_")
            .unwrap_or(&response.id)
            .to_owned();
        ResponseEncoder {
            response,
            suffix,
            sequence: 0,
            open: None,
            calls: Vec::new(),
            held: None,
            usage: None,
            logprobs: None,
        }
    }

    /// The encoder numbering its first event `sequence`: a response whose first events were
    /// sent by another worker (a background response taken over) goes on after them.
    #[must_use]
    pub fn starting_at(mut self, sequence: u64) -> Self {
        self.sequence = sequence;
        self
    }

    /// `response.in_progress` alone, with no output: the response begins again on a worker
    /// that took it over, after the events its first worker sent.
    pub fn restart(&mut self) -> Vec<ResponseEvent> {
        let mut events = Vec::with_capacity(1);
        let response = Box::new(self.response.clone());
        self.emit(&mut events, EventKind::InProgress { response });
        events
    }

    /// The encoder of a response whose first worker (before a takeover) sent `stored`, its
    /// output items as its events left them: they stay the response's first items, and the
    /// items encoded from here follow them (their `output_index` and ids go on after them).
    #[must_use]
    pub fn after_output(mut self, stored: Vec<OutputItem>) -> Self {
        self.response.output = stored;
        self
    }

    /// The response goes on, on a worker that took it over, after the events its first
    /// worker sent: `response.in_progress` with the output so far, then
    /// `response.output_item.done` for each item that worker left open, ended `incomplete`.
    pub fn resume(&mut self) -> Vec<ResponseEvent> {
        let mut events = Vec::new();
        let mut open = Vec::new();
        for (index, item) in self.response.output.iter_mut().enumerate() {
            if item.is_open() {
                item.cut_short();
                open.push(index);
            }
        }
        let response = Box::new(self.response.clone());
        self.emit(&mut events, EventKind::InProgress { response });
        for index in open {
            self.item_done(&mut events, index);
        }
        events
    }

    /// The response as the events so far describe it.
    pub fn response(&self) -> &ResponseObject {
        &self.response
    }

    /// The response once its events are all encoded.
    pub fn into_response(self) -> ResponseObject {
        self.response
    }

    /// `response.created` and `response.in_progress`.
    pub fn start(&mut self) -> Vec<ResponseEvent> {
        let mut events = Vec::with_capacity(2);
        let response = Box::new(self.response.clone());
        self.emit(&mut events, EventKind::Created { response });
        let response = Box::new(self.response.clone());
        self.emit(&mut events, EventKind::InProgress { response });
        events
    }

    /// The events `event` stands for.
    pub fn encode(&mut self, event: StreamEvent) -> Vec<ResponseEvent> {
        let mut events = Vec::new();
        let completed = match &event {
            StreamEvent::ToolCall(call) => Some(call),
            _ => None,
        };
        self.release(&mut events, completed);
        match event {
            // A signature, when the call has one, arrives with the whole call, after the piece
            // that opens it.
            StreamEvent::ToolCallDelta {
                index,
                id: Some(id),
                name,
                arguments,
            } if !self.response.store => {
                self.held = Some(HeldPiece {
                    index,
                    id,
                    name,
                    arguments,
                });
            }
            StreamEvent::ReasoningDelta { text } => {
                let index = self.reasoning_item(&mut events);
                self.reasoning_delta(&mut events, index, text);
            }
            StreamEvent::Reasoning(block) => {
                let index = self.reasoning_item(&mut events);
                if self.summary_text(index).is_empty() && !block.text.is_empty() {
                    self.reasoning_delta(&mut events, index, block.text.clone());
                }
                self.close_reasoning(&mut events, index, Some(&block));
            }
            StreamEvent::TextDelta(text) => {
                let index = self.message_item(&mut events);
                self.text_delta(&mut events, index, text);
            }
            StreamEvent::ToolCallDelta {
                index,
                id,
                name,
                arguments,
            } => self.call_delta(&mut events, index, id, name, arguments),
            StreamEvent::ToolCall(call) => self.call_done(&mut events, call),
            StreamEvent::Logprobs(tokens) => match &mut self.logprobs {
                Some(waiting) => waiting.extend(tokens),
                None => self.logprobs = Some(tokens),
            },
            StreamEvent::Usage(usage) => self.usage = Some(usage),
            StreamEvent::Done { finish } => self.done(&mut events, &finish),
            // Gemini's signature on a text part rides in the stored answer, which a
            // continuation reads back whole; a stream event has no field for it.
            StreamEvent::TextReasoning(_) | StreamEvent::Started { .. } => {}
            _ => {}
        }
        events
    }

    /// Ends the response as failed (`Failed`) or cancelled (`Cancelled`): open items close
    /// as incomplete, and `response.failed` carries `error`.
    pub fn fail(&mut self, state: ResponseState, failure: ResponseFailure) -> Vec<ResponseEvent> {
        let mut events = Vec::new();
        self.release(&mut events, None);
        self.close_all(&mut events, ItemStatus::Incomplete);
        self.response.status = state;
        self.response.error = Some(failure);
        self.response.usage = self.usage.as_ref().map(ResponseUsage::from);
        let response = Box::new(self.response.clone());
        self.emit(&mut events, EventKind::Failed { response });
        events
    }

    /// Encodes the held opening piece of a call, with the id `completed` (the event that
    /// follows it, when it is the whole call) gives it.
    fn release(&mut self, events: &mut Vec<ResponseEvent>, completed: Option<&ToolCall>) {
        let Some(held) = self.held.take() else {
            return;
        };
        let id = match completed {
            Some(call) if call.id == held.id => self.call_id(call),
            _ => held.id,
        };
        self.call_delta(events, held.index, Some(id), held.name, held.arguments);
    }

    pub(super) fn emit(&mut self, events: &mut Vec<ResponseEvent>, kind: EventKind) {
        events.push(ResponseEvent {
            kind,
            sequence_number: self.sequence,
        });
        self.sequence += 1;
    }

    pub(super) fn item_id(&self, prefix: &str) -> String {
        format!("{prefix}_{}_{}", self.suffix, self.response.output.len())
    }

    pub(super) fn add_item(&mut self, events: &mut Vec<ResponseEvent>, item: OutputItem) -> usize {
        let output_index = self.response.output.len();
        self.response.output.push(item.clone());
        self.emit(events, EventKind::OutputItemAdded { output_index, item });
        output_index
    }

    pub(super) fn item_done(&mut self, events: &mut Vec<ResponseEvent>, output_index: usize) {
        let item = self.response.output[output_index].clone();
        self.emit(events, EventKind::OutputItemDone { output_index, item });
    }

    /// The open reasoning item, opened after closing what was open.
    fn reasoning_item(&mut self, events: &mut Vec<ResponseEvent>) -> usize {
        if let Some(Open::Reasoning(index)) = self.open {
            return index;
        }
        self.close_open(events, ItemStatus::Completed);
        let item = OutputItem::Reasoning {
            id: self.item_id("rs"),
            summary: Vec::new(),
            encrypted_content: None,
            status: ItemStatus::InProgress,
        };
        let index = self.add_item(events, item);
        self.open = Some(Open::Reasoning(index));
        index
    }

    fn summary_text(&self, index: usize) -> &str {
        match &self.response.output[index] {
            OutputItem::Reasoning { summary, .. } => {
                summary.first().map_or("", |part| part.text.as_str())
            }
            _ => "",
        }
    }

    fn reasoning_delta(&mut self, events: &mut Vec<ResponseEvent>, index: usize, delta: String) {
        let OutputItem::Reasoning { id, summary, .. } = &mut self.response.output[index] else {
            return;
        };
        let item_id = id.clone();
        if summary.is_empty() {
            summary.push(SummaryText::new(String::new()));
            self.emit(
                events,
                EventKind::ReasoningSummaryPartAdded {
                    item_id: item_id.clone(),
                    output_index: index,
                    summary_index: 0,
                    part: SummaryText::new(String::new()),
                },
            );
        }
        if let OutputItem::Reasoning { summary, .. } = &mut self.response.output[index] {
            summary[0].text.push_str(&delta);
        }
        self.emit(
            events,
            EventKind::ReasoningSummaryTextDelta {
                item_id,
                output_index: index,
                summary_index: 0,
                delta,
            },
        );
    }

    fn close_reasoning(
        &mut self,
        events: &mut Vec<ResponseEvent>,
        index: usize,
        block: Option<&Reasoning>,
    ) {
        self.open = None;
        let OutputItem::Reasoning {
            id,
            summary,
            encrypted_content: opaque,
            status,
        } = &mut self.response.output[index]
        else {
            return;
        };
        *status = ItemStatus::Completed;
        *opaque = block.and_then(encrypted_content);
        let item_id = id.clone();
        if let Some(part) = summary.first().cloned() {
            self.emit(
                events,
                EventKind::ReasoningSummaryTextDone {
                    item_id: item_id.clone(),
                    output_index: index,
                    summary_index: 0,
                    text: part.text.clone(),
                },
            );
            self.emit(
                events,
                EventKind::ReasoningSummaryPartDone {
                    item_id,
                    output_index: index,
                    summary_index: 0,
                    part,
                },
            );
        }
        self.item_done(events, index);
    }

    /// The open message item, opened after closing what was open.
    fn message_item(&mut self, events: &mut Vec<ResponseEvent>) -> usize {
        if let Some(Open::Message(index)) = self.open {
            return index;
        }
        self.close_open(events, ItemStatus::Completed);
        let item_id = self.item_id("msg");
        let item = OutputItem::Message {
            id: item_id.clone(),
            status: ItemStatus::InProgress,
            role: "assistant",
            content: Vec::new(),
        };
        let index = self.add_item(events, item);
        if let OutputItem::Message { content, .. } = &mut self.response.output[index] {
            content.push(OutputText::new(String::new()));
        }
        self.emit(
            events,
            EventKind::ContentPartAdded {
                item_id,
                output_index: index,
                content_index: 0,
                part: OutputText::new(String::new()),
            },
        );
        self.open = Some(Open::Message(index));
        index
    }

    fn text_delta(&mut self, events: &mut Vec<ResponseEvent>, index: usize, delta: String) {
        let OutputItem::Message { id, content, .. } = &mut self.response.output[index] else {
            return;
        };
        content[0].text.push_str(&delta);
        let logprobs = match self.logprobs.take() {
            Some(tokens) => {
                let part = &mut content[0].logprobs;
                let first = part.len();
                part.extend(tokens.iter().map(OutputLogprob::from));
                part[first..].iter().map(TextLogprob::from).collect()
            }
            None => Vec::new(),
        };
        let item_id = id.clone();
        self.emit(
            events,
            EventKind::OutputTextDelta {
                item_id,
                output_index: index,
                content_index: 0,
                delta,
                logprobs,
            },
        );
    }

    fn close_message(&mut self, events: &mut Vec<ResponseEvent>, index: usize, end: ItemStatus) {
        self.open = None;
        let OutputItem::Message {
            id,
            content,
            status,
            ..
        } = &mut self.response.output[index]
        else {
            return;
        };
        *status = end;
        let item_id = id.clone();
        let part = content[0].clone();
        self.emit(
            events,
            EventKind::OutputTextDone {
                item_id: item_id.clone(),
                output_index: index,
                content_index: 0,
                text: part.text.clone(),
                logprobs: part.logprobs.iter().map(TextLogprob::from).collect(),
            },
        );
        self.emit(
            events,
            EventKind::ContentPartDone {
                item_id,
                output_index: index,
                content_index: 0,
                part,
            },
        );
        self.item_done(events, index);
    }

    pub(super) fn close_open(&mut self, events: &mut Vec<ResponseEvent>, end: ItemStatus) {
        match self.open {
            Some(Open::Reasoning(index)) => self.close_reasoning(events, index, None),
            Some(Open::Message(index)) => self.close_message(events, index, end),
            None => {}
        }
    }

    fn call_delta(
        &mut self,
        events: &mut Vec<ResponseEvent>,
        call_index: usize,
        id: Option<String>,
        name: Option<String>,
        arguments: String,
    ) {
        let output_index = match self.calls.iter().find(|call| call.call_index == call_index) {
            Some(call) => call.output_index,
            None => {
                self.close_open(events, ItemStatus::Completed);
                let item = OutputItem::FunctionCall {
                    id: self.item_id("fc"),
                    call_id: id.unwrap_or_default(),
                    name: name.unwrap_or_default(),
                    arguments: String::new(),
                    status: ItemStatus::InProgress,
                };
                let output_index = self.add_item(events, item);
                self.calls.push(OpenCall {
                    call_index,
                    output_index,
                });
                output_index
            }
        };
        if arguments.is_empty() {
            return;
        }
        let OutputItem::FunctionCall {
            id, arguments: all, ..
        } = &mut self.response.output[output_index]
        else {
            return;
        };
        all.push_str(&arguments);
        let item_id = id.clone();
        self.emit(
            events,
            EventKind::FunctionCallArgumentsDelta {
                item_id,
                output_index,
                delta: arguments,
            },
        );
    }

    fn call_done(&mut self, events: &mut Vec<ResponseEvent>, call: ToolCall) {
        // The streamed call this completes: the one with its id, else the oldest open one
        // (a provider may name a call only when it completes).
        let shown = self.call_id(&call);
        let position = self
            .calls
            .iter()
            .position(|open| {
                matches!(&self.response.output[open.output_index],
                    OutputItem::FunctionCall { call_id, .. }
                        if *call_id == call.id || *call_id == shown)
            })
            .or_else(|| (!self.calls.is_empty()).then_some(0));
        let output_index = match position {
            Some(position) => self.calls.remove(position).output_index,
            None => {
                self.close_open(events, ItemStatus::Completed);
                let item = OutputItem::FunctionCall {
                    id: self.item_id("fc"),
                    call_id: shown.clone(),
                    name: call.name.clone(),
                    arguments: String::new(),
                    status: ItemStatus::InProgress,
                };
                self.add_item(events, item)
            }
        };
        let OutputItem::FunctionCall {
            id,
            call_id,
            name,
            arguments,
            status,
        } = &mut self.response.output[output_index]
        else {
            return;
        };
        *call_id = shown;
        *name = call.name;
        *arguments = call.arguments;
        *status = ItemStatus::Completed;
        let event = EventKind::FunctionCallArgumentsDone {
            item_id: id.clone(),
            output_index,
            name: name.clone(),
            arguments: arguments.clone(),
        };
        self.emit(events, event);
        self.item_done(events, output_index);
    }

    /// The `call_id` a client gets for `call`: a kept response gives the provider's signature
    /// back from the tree, one that is not kept hands it to the client in the id (see
    /// [`signed_ids`]).
    fn call_id(&self, call: &ToolCall) -> String {
        if self.response.store {
            call.id.clone()
        } else {
            signed_ids::carrying(call)
        }
    }

    fn close_all(&mut self, events: &mut Vec<ResponseEvent>, end: ItemStatus) {
        self.close_open(events, end);
        for call in std::mem::take(&mut self.calls) {
            if let OutputItem::FunctionCall { status, .. } =
                &mut self.response.output[call.output_index]
            {
                *status = end;
            }
            self.item_done(events, call.output_index);
        }
    }

    fn done(&mut self, events: &mut Vec<ResponseEvent>, finish: &FinishReason) {
        let incomplete = match finish {
            FinishReason::Length => Some("max_output_tokens"),
            FinishReason::ContentFilter => Some("content_filter"),
            _ => None,
        };
        let end = match incomplete {
            Some(_) => ItemStatus::Incomplete,
            None => ItemStatus::Completed,
        };
        self.close_all(events, end);
        self.response.usage = self.usage.as_ref().map(ResponseUsage::from);
        let kind = match incomplete {
            Some(reason) => {
                self.response.status = ResponseState::Incomplete;
                self.response.incomplete_details = Some(IncompleteDetails { reason });
                EventKind::Incomplete {
                    response: Box::new(self.response.clone()),
                }
            }
            None => {
                self.response.status = ResponseState::Completed;
                EventKind::Completed {
                    response: Box::new(self.response.clone()),
                }
            }
        };
        self.emit(events, kind);
    }
}

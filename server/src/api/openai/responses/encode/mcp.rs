//! MCP items in a response: the tools a server offers (`mcp_list_tools`), the calls this
//! server runs (`mcp_call`, announced, then ended with the tool's output or error), and the
//! calls that wait for the client's approval (`mcp_approval_request`), each with the events
//! OpenAI's Responses API streams for them.

use super::object::{ItemStatus, McpCallError, McpListedTool, OutputItem};
use super::stream::{EventKind, ResponseEncoder, ResponseEvent};

impl ResponseEncoder {
    /// An `mcp_list_tools` item for `server_label`: added, listed, done.
    pub fn mcp_list_tools(
        &mut self,
        server_label: &str,
        tools: Vec<McpListedTool>,
    ) -> Vec<ResponseEvent> {
        let mut events = Vec::new();
        self.close_open(&mut events, ItemStatus::Completed);
        let item_id = self.item_id("mcpl");
        let item = OutputItem::McpListTools {
            id: item_id.clone(),
            server_label: server_label.to_owned(),
            tools,
        };
        let output_index = self.add_item(&mut events, item);
        self.emit(
            &mut events,
            EventKind::McpListToolsInProgress {
                item_id: item_id.clone(),
                output_index,
            },
        );
        self.emit(
            &mut events,
            EventKind::McpListToolsCompleted {
                item_id,
                output_index,
            },
        );
        self.item_done(&mut events, output_index);
        events
    }

    /// An `mcp_call` item begins (`in_progress`, its arguments whole): its position in
    /// `output`, for [`mcp_call_done`](Self::mcp_call_done).
    pub fn mcp_call_start(
        &mut self,
        server_label: &str,
        name: &str,
        arguments: &str,
        approval_request_id: Option<String>,
    ) -> (usize, Vec<ResponseEvent>) {
        let mut events = Vec::new();
        self.close_open(&mut events, ItemStatus::Completed);
        let item_id = self.item_id("mcp");
        let item = OutputItem::McpCall {
            id: item_id.clone(),
            server_label: server_label.to_owned(),
            name: name.to_owned(),
            arguments: String::new(),
            output: None,
            error: None,
            approval_request_id,
            status: ItemStatus::InProgress,
        };
        let output_index = self.add_item(&mut events, item);
        self.emit(
            &mut events,
            EventKind::McpCallInProgress {
                item_id: item_id.clone(),
                output_index,
            },
        );
        if let OutputItem::McpCall {
            arguments: args, ..
        } = &mut self.response.output[output_index]
        {
            arguments.clone_into(args);
        }
        self.emit(
            &mut events,
            EventKind::McpCallArgumentsDelta {
                item_id: item_id.clone(),
                output_index,
                delta: arguments.to_owned(),
            },
        );
        self.emit(
            &mut events,
            EventKind::McpCallArgumentsDone {
                item_id,
                output_index,
                arguments: arguments.to_owned(),
            },
        );
        (output_index, events)
    }

    /// The `mcp_call` item at `output_index` ends: `completed` with the tool's `output`, or
    /// `failed` with `error` (the tool failed, or the call was declined).
    pub fn mcp_call_done(
        &mut self,
        output_index: usize,
        result: Result<String, String>,
    ) -> Vec<ResponseEvent> {
        let mut events = Vec::new();
        let Some(OutputItem::McpCall {
            id,
            output,
            error,
            status,
            ..
        }) = self.response.output.get_mut(output_index)
        else {
            return events;
        };
        let item_id = id.clone();
        let kind = match result {
            Ok(text) => {
                *output = Some(text);
                *status = ItemStatus::Completed;
                EventKind::McpCallCompleted {
                    item_id,
                    output_index,
                }
            }
            Err(text) => {
                *error = Some(McpCallError::saying(&text));
                *status = ItemStatus::Failed;
                EventKind::McpCallFailed {
                    item_id,
                    output_index,
                }
            }
        };
        self.emit(&mut events, kind);
        self.item_done(&mut events, output_index);
        events
    }

    /// An `mcp_approval_request` item (added and done at once) with the id `id`.
    pub fn mcp_approval_request(
        &mut self,
        id: String,
        server_label: &str,
        name: &str,
        arguments: &str,
    ) -> Vec<ResponseEvent> {
        let mut events = Vec::new();
        self.close_open(&mut events, ItemStatus::Completed);
        let item = OutputItem::McpApprovalRequest {
            id,
            server_label: server_label.to_owned(),
            name: name.to_owned(),
            arguments: arguments.to_owned(),
        };
        let output_index = self.add_item(&mut events, item);
        self.item_done(&mut events, output_index);
        events
    }
}

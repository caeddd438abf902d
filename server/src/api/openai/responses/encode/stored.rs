//! Output items read back from a response's stored events (the JSON its first worker sent),
//! so that a worker taking the response over goes on after them.

use serde_json::Value;

use super::object::{ItemStatus, OutputItem, OutputText, SummaryText};

impl OutputItem {
    /// The item `item` describes, as a stored `response.output_item.*` event (or a
    /// `response` object's `output`) carried it, with the text its deltas added since; `None`
    /// for what is no output item of a kind this server sends. Log probabilities are not read
    /// back.
    pub fn from_stored(item: &Value) -> Option<OutputItem> {
        let id = item["id"].as_str()?.to_owned();
        let status = match item["status"].as_str() {
            Some("completed") => ItemStatus::Completed,
            Some("incomplete") => ItemStatus::Incomplete,
            _ => ItemStatus::InProgress,
        };
        let texts = |field: &str| -> Vec<String> {
            item[field]
                .as_array()
                .into_iter()
                .flatten()
                .map(|part| part["text"].as_str().unwrap_or_default().to_owned())
                .collect()
        };
        match item["type"].as_str()? {
            "reasoning" => Some(OutputItem::Reasoning {
                id,
                summary: texts("summary").into_iter().map(SummaryText::new).collect(),
                encrypted_content: item["encrypted_content"].as_str().map(str::to_owned),
                status,
            }),
            "message" => Some(OutputItem::Message {
                id,
                status,
                role: "assistant",
                content: texts("content").into_iter().map(OutputText::new).collect(),
            }),
            "function_call" => Some(OutputItem::FunctionCall {
                id,
                call_id: item["call_id"].as_str().unwrap_or_default().to_owned(),
                name: item["name"].as_str().unwrap_or_default().to_owned(),
                arguments: item["arguments"].as_str().unwrap_or_default().to_owned(),
                status,
            }),
            _ => None,
        }
    }

    /// Whether the item was still streaming.
    pub(super) fn is_open(&self) -> bool {
        self.status() == ItemStatus::InProgress
    }

    fn status(&self) -> ItemStatus {
        match self {
            OutputItem::Reasoning { status, .. }
            | OutputItem::Message { status, .. }
            | OutputItem::FunctionCall { status, .. }
            | OutputItem::McpCall { status, .. } => *status,
            OutputItem::McpListTools { .. } | OutputItem::McpApprovalRequest { .. } => {
                ItemStatus::Completed
            }
        }
    }

    /// Ends the item `incomplete`: its worker stopped before it was whole.
    pub(super) fn cut_short(&mut self) {
        match self {
            OutputItem::Reasoning { status, .. }
            | OutputItem::Message { status, .. }
            | OutputItem::FunctionCall { status, .. }
            | OutputItem::McpCall { status, .. } => *status = ItemStatus::Incomplete,
            OutputItem::McpListTools { .. } | OutputItem::McpApprovalRequest { .. } => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_stored_message_reads_back_with_its_text() {
        let stored = json!({
            "type": "message", "id": "msg_a_0", "status": "in_progress", "role": "assistant",
            "content": [{"type": "output_text", "text": "Hel", "annotations": [], "logprobs": []}]
        });
        let item = OutputItem::from_stored(&stored).expect("a message");
        assert!(item.is_open());
        let mut written = serde_json::to_value(&item).unwrap();
        assert_eq!(written, stored);
        let mut item = item;
        item.cut_short();
        written["status"] = json!("incomplete");
        assert_eq!(serde_json::to_value(&item).unwrap(), written);
    }

    #[test]
    fn what_is_no_output_item_reads_back_as_none() {
        assert_eq!(OutputItem::from_stored(&json!(null)), None);
        assert_eq!(
            OutputItem::from_stored(&json!({"type": "web_search_call", "id": "ws_1"})),
            None
        );
    }
}

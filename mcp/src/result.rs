//! What a tool call returned, in this crate's terms, and how it becomes a [`ToolResult`].

use messages::ContentPart;
use serde_json::Value;
use toolchain::{ToolError, ToolResult};

/// One piece of a tool call's result.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Part {
    /// Text for the model.
    Text(String),
    /// An image or audio clip.
    Media { mime_type: String, data: Vec<u8> },
    /// An embedded text resource.
    ResourceText { uri: String, text: String },
    /// An embedded binary resource.
    ResourceBlob {
        uri: String,
        mime_type: String,
        data: Vec<u8>,
    },
    /// A link to a resource the server holds.
    Link {
        uri: String,
        name: String,
        description: Option<String>,
        mime_type: Option<String>,
    },
}

/// A tool call's result.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct CallOutput {
    /// The content blocks, in order.
    pub(crate) parts: Vec<Part>,
    /// `structuredContent`.
    pub(crate) structured: Option<Value>,
    /// `isError`.
    pub(crate) is_error: bool,
}

impl CallOutput {
    /// The result the model sees: text blocks, embedded text resources (after a line naming
    /// their URI), a line per binary resource and per resource link, joined by blank lines;
    /// images, audio and binary resources as media parts; `structuredContent` as the output
    /// when there is no text at all. `isError` makes it a [`ToolError::Failed`] whose message is
    /// that same text.
    pub(crate) fn into_tool_result(self, tool: &str) -> Result<ToolResult<Value>, ToolError> {
        let mut texts = Vec::new();
        let mut media = Vec::new();
        for part in self.parts {
            match part {
                Part::Text(text) => texts.push(text),
                Part::Media { mime_type, data } => media.push(ContentPart::binary(mime_type, data)),
                Part::ResourceText { uri, text } => texts.push(format!("Resource {uri}:\n{text}")),
                Part::ResourceBlob {
                    uri,
                    mime_type,
                    data,
                } => {
                    texts.push(format!(
                        "Resource {uri} ({mime_type}, {} bytes) is attached.",
                        data.len()
                    ));
                    media.push(ContentPart::binary(mime_type, data));
                }
                Part::Link {
                    uri,
                    name,
                    description,
                    mime_type,
                } => {
                    let mut line = format!("Resource link: {name} <{uri}>");
                    if let Some(mime_type) = mime_type {
                        line.push_str(&format!(" ({mime_type})"));
                    }
                    if let Some(description) = description.filter(|d| !d.is_empty()) {
                        line.push_str(&format!(": {description}"));
                    }
                    texts.push(line);
                }
            }
        }
        let text = if texts.is_empty() {
            self.structured
                .unwrap_or_else(|| Value::String(String::new()))
        } else {
            Value::String(texts.join("\n\n"))
        };
        if self.is_error {
            let message = match text {
                Value::String(text) if text.trim().is_empty() => {
                    format!("tool \"{tool}\" failed without saying why")
                }
                Value::String(text) => text,
                other => other.to_string(),
            };
            return Err(ToolError::failed(message));
        }
        Ok(ToolResult::with_media(text, media))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn output(parts: Vec<Part>) -> CallOutput {
        CallOutput {
            parts,
            structured: None,
            is_error: false,
        }
    }

    #[test]
    fn text_and_media_are_separated_in_order() {
        let result = output(vec![
            Part::Text("one".into()),
            Part::Media {
                mime_type: "image/png".into(),
                data: vec![1, 2],
            },
            Part::Text("two".into()),
            Part::Media {
                mime_type: "audio/wav".into(),
                data: vec![3],
            },
        ])
        .into_tool_result("s__t")
        .unwrap();
        assert_eq!(result.text, json!("one\n\ntwo"));
        assert_eq!(
            result.media,
            [
                ContentPart::binary("image/png", vec![1, 2]),
                ContentPart::binary("audio/wav", vec![3])
            ]
        );
    }

    #[test]
    fn resources_are_named_by_uri() {
        let result = output(vec![
            Part::ResourceText {
                uri: "file:///a.txt".into(),
                text: "hello".into(),
            },
            Part::ResourceBlob {
                uri: "file:///b.bin".into(),
                mime_type: "application/pdf".into(),
                data: vec![0; 3],
            },
            Part::Link {
                uri: "demo://x".into(),
                name: "X".into(),
                description: Some("the x".into()),
                mime_type: Some("text/plain".into()),
            },
        ])
        .into_tool_result("s__t")
        .unwrap();
        assert_eq!(
            result.text,
            json!(
                "Resource file:///a.txt:\nhello\n\n\
                 Resource file:///b.bin (application/pdf, 3 bytes) is attached.\n\n\
                 Resource link: X <demo://x> (text/plain): the x"
            )
        );
        assert_eq!(
            result.media,
            [ContentPart::binary("application/pdf", vec![0; 3])]
        );
    }

    #[test]
    fn structured_content_stands_in_for_missing_text() {
        let mut out = output(vec![]);
        out.structured = Some(json!({"temperature": 20}));
        assert_eq!(
            out.clone().into_tool_result("s__t").unwrap().text,
            json!({"temperature": 20})
        );
        out.parts.push(Part::Text("20 degrees".into()));
        assert_eq!(
            out.into_tool_result("s__t").unwrap().text,
            json!("20 degrees")
        );
    }

    #[test]
    fn is_error_becomes_a_failure_with_the_server_text() {
        let mut out = output(vec![Part::Text("no such file".into())]);
        out.is_error = true;
        let error = out.into_tool_result("fs__read").unwrap_err();
        assert!(matches!(error, ToolError::Failed { .. }));
        assert_eq!(error.to_string(), "no such file");

        let empty = CallOutput {
            parts: vec![],
            structured: None,
            is_error: true,
        };
        assert_eq!(
            empty.into_tool_result("fs__read").unwrap_err().to_string(),
            "tool \"fs__read\" failed without saying why"
        );
    }
}

use serde::{Deserialize, Serialize};

use crate::{ToolCall, ToolResponse};

/// One piece of a [`Message`](crate::Message), in order.
///
/// In the transcript JSON each part is an object tagged by `type`: `text`, `image_url`,
/// `binary`, `reasoning`, `tool_call` or `tool_response`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentPart {
    /// Plain text. `reasoning` carries a signature that rode on this text part (Gemini's
    /// `thoughtSignature` on a text part); it is sent back unchanged.
    Text {
        /// The text.
        text: String,
        /// Reasoning attached to this part, if the provider attached any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reasoning: Option<Reasoning>,
    },
    /// An image by URL (including `data:` URLs).
    ImageUrl {
        /// The URL.
        url: String,
        /// Provider detail hint such as `low`, `high` or `auto`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
    },
    /// Inline bytes with their MIME type (images, audio, PDFs). Base64 in JSON.
    Binary {
        /// MIME type, e.g. `image/png`.
        mime_type: String,
        /// The bytes.
        #[serde(with = "crate::base64_bytes")]
        data: Vec<u8>,
    },
    /// A standalone reasoning block: an Anthropic `thinking` / `redacted_thinking` block or an
    /// OpenAI Responses reasoning item, kept in the order received.
    Reasoning(Reasoning),
    /// A call the model asks the caller to make.
    ToolCall(ToolCall),
    /// The result of a tool call.
    ToolResponse(ToolResponse),
}

impl ContentPart {
    /// A text part without reasoning.
    pub fn text(text: impl Into<String>) -> Self {
        ContentPart::Text {
            text: text.into(),
            reasoning: None,
        }
    }

    /// An image part by URL, without a detail hint.
    pub fn image_url(url: impl Into<String>) -> Self {
        ContentPart::ImageUrl {
            url: url.into(),
            detail: None,
        }
    }

    /// An inline binary part.
    pub fn binary(mime_type: impl Into<String>, data: impl Into<Vec<u8>>) -> Self {
        ContentPart::Binary {
            mime_type: mime_type.into(),
            data: data.into(),
        }
    }

    /// Whether this part is media (an image URL or inline bytes) rather than text or structure.
    pub fn is_media(&self) -> bool {
        matches!(
            self,
            ContentPart::ImageUrl { .. } | ContentPart::Binary { .. }
        )
    }

    /// The part's text if it is a [`ContentPart::Text`].
    pub fn as_text(&self) -> Option<&str> {
        match self {
            ContentPart::Text { text, .. } => Some(text),
            _ => None,
        }
    }
}

/// Model reasoning that must survive a round trip.
///
/// Providers check these values when they come back: Anthropic rejects a modified thinking
/// block, Gemini rejects a function call without its `thoughtSignature`, OpenAI's Responses API
/// needs the encrypted reasoning item in stateless mode. Skein treats every field as opaque and
/// sends it back exactly as received.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Reasoning {
    /// OpenAI Responses reasoning item id (`rs_…`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Thinking text or reasoning summary; empty for redacted or signature-only reasoning.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub text: String,
    /// Anthropic thinking signature or Gemini `thoughtSignature`, opaque.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    /// OpenAI `encrypted_content` or Anthropic `redacted_thinking` data, opaque.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encrypted: Option<String>,
}

impl Reasoning {
    /// Reasoning that is only a signature (Gemini's `thoughtSignature` on a part).
    pub fn signature(signature: impl Into<String>) -> Self {
        Reasoning {
            signature: Some(signature.into()),
            ..Default::default()
        }
    }

    /// Whether there is nothing in it: no id, text, signature or encrypted data.
    pub fn is_empty(&self) -> bool {
        self.id.is_none()
            && self.text.is_empty()
            && self.signature.is_none()
            && self.encrypted.is_none()
    }
}

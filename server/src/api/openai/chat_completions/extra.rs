//! `extra_content` on a tool call: the field Gemini's own OpenAI compatibility layer carries
//! a call's thought signature in (`{"google": {"thought_signature": "…"}}`). Gemini checks
//! that signature when the call comes back; a client that keeps what it received sends the
//! field back unchanged, so the signature survives even a conversation the server does not
//! store (`store: false`).

use messages::{Reasoning, ToolCall};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// `extra_content` of a tool call. Other vendors' keys are accepted and not used.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ExtraContent {
    /// What Gemini needs back with the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub google: Option<GoogleExtra>,
}

/// `extra_content.google`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct GoogleExtra {
    /// The call's thought signature, opaque.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thought_signature: Option<String>,
}

impl ExtraContent {
    /// The `extra_content` of `call`, when it carries a signature.
    pub fn of(call: &ToolCall) -> Option<Self> {
        let signature = call.reasoning.as_ref()?.signature.clone()?;
        Some(ExtraContent {
            google: Some(GoogleExtra {
                thought_signature: Some(signature),
            }),
        })
    }

    /// The reasoning a client's call carries back: its signature, if any.
    pub fn reasoning(self) -> Option<Reasoning> {
        self.google?
            .thought_signature
            .filter(|signature| !signature.is_empty())
            .map(Reasoning::signature)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_signature_travels_in_geminis_documented_shape() {
        let mut call = ToolCall::new("call_1", "get_country", "{}");
        assert_eq!(ExtraContent::of(&call), None);
        call.reasoning = Some(Reasoning::signature("EpwICpkI"));
        let extra = ExtraContent::of(&call).unwrap();
        assert_eq!(
            serde_json::to_value(&extra).unwrap(),
            json!({"google": {"thought_signature": "EpwICpkI"}})
        );
        let back: ExtraContent = serde_json::from_value(
            json!({"google": {"thought_signature": "EpwICpkI"}, "other_vendor": {"x": 1}}),
        )
        .unwrap();
        assert_eq!(back.reasoning(), Some(Reasoning::signature("EpwICpkI")));
    }
}

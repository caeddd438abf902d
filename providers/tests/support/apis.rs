//! Every API an adapter speaks, as a test reaches it: a [`Replay`] of one recorded answer at
//! the API's path, and the model configured to send to it. For the tests that check one
//! request option on every API at once.

use providers::{ApiFormat, ChatModel, ModelConfig, ToolSpec, model_from_config};
use serde_json::json;

use super::{Replay, config};

/// One API: its name in assertions, the model asked for (and its `model` alias), the API
/// format, the POST path, the base URL suffix and the recorded non-streamed answer.
pub struct Api {
    pub name: &'static str,
    pub model_id: &'static str,
    pub alias: Option<&'static str>,
    pub format: Option<ApiFormat>,
    pub path: &'static str,
    pub suffix: &'static str,
    pub answer: &'static str,
}

pub const CHAT: &str = "openai chat";
pub const RESPONSES: &str = "openai responses";
pub const ANTHROPIC: &str = "anthropic";
pub const GEMINI: &str = "gemini";
pub const OPENROUTER: &str = "openrouter";

pub const APIS: &[Api] = &[
    Api {
        name: CHAT,
        model_id: "gpt-4o",
        alias: None,
        format: None,
        path: "/v1/chat/completions",
        suffix: "/v1",
        answer: "openai/chat_text.json",
    },
    Api {
        name: RESPONSES,
        model_id: "gpt-4o",
        alias: None,
        format: Some(ApiFormat::Responses),
        path: "/v1/responses",
        suffix: "/v1",
        answer: "openai/responses_reasoning_encrypted.json",
    },
    Api {
        name: ANTHROPIC,
        model_id: "claude-sonnet-4-5",
        alias: None,
        format: None,
        path: "/v1/messages",
        suffix: "",
        answer: "anthropic/message_text_after_tool.json",
    },
    Api {
        name: GEMINI,
        model_id: "gemini-2.5-flash",
        alias: None,
        format: None,
        path: "/v1beta/models/gemini-2.5-flash:generateContent",
        suffix: "/v1beta",
        answer: "gemini/generate_text_after_function_responses.json",
    },
    Api {
        name: OPENROUTER,
        model_id: "anthropic/claude-sonnet-4.5",
        alias: Some("openrouter"),
        format: None,
        path: "/api/v1/chat/completions",
        suffix: "/api/v1",
        answer: "openai/chat_text.json",
    },
];

/// The API named `name`.
pub fn api(name: &str) -> &'static Api {
    APIS.iter()
        .find(|api| api.name == name)
        .expect("a known API")
}

impl Api {
    /// A replay of this API's recorded answer, and the model that sends to it.
    pub async fn model(&self) -> (Replay, Box<dyn ChatModel>) {
        let replay = Replay::fixture(self.path, self.answer).await;
        let config = ModelConfig {
            model: self.alias.map(str::to_owned),
            api_format: self.format,
            ..config(self.model_id, &format!("{}{}", replay.url(), self.suffix))
        };
        let model = model_from_config(&config).expect("builds");
        (replay, model)
    }
}

/// A function tool with one string argument.
pub fn weather() -> ToolSpec {
    ToolSpec {
        name: "get_weather".into(),
        description: "Weather of a city.".into(),
        parameters: json!({"type": "object", "properties": {"city": {"type": "string"}}}),
    }
}

//! Responses API requests are stateless (`store: false`): a reasoning item can only come back
//! with its `encrypted_content`. An item sent by id alone makes OpenAI answer 404 ("Item with
//! id 'rs_…' not found. Items are not persisted when `store` is set to false … or remove this
//! item from your input"), which is what a model the registry does not know as reasoning (no
//! `include` asked for) or a history recorded with `store: true` would hold.

use crate::support;

use providers::{
    ApiFormat, ChatRequest, ContentPart, Message, ModelConfig, Reasoning, Role, ToolCall,
    model_from_config,
};
use serde_json::Value;
use support::Replay;

const PATH: &str = "/v1/responses";

fn reasoning_items(body: &Value) -> Vec<Value> {
    body["input"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|item| item["type"] == "reasoning")
        .cloned()
        .collect()
}

#[tokio::test]
async fn reasoning_without_encrypted_content_is_left_out() {
    for model_id in ["o3", "my-new-reasoner"] {
        let replay = Replay::fixture(PATH, "openai/responses_reasoning_encrypted.json").await;
        let config = ModelConfig {
            api_format: Some(ApiFormat::Responses),
            ..support::config(model_id, &format!("{}/v1", replay.url()))
        };
        let model = model_from_config(&config).expect("builds");
        let ai = Message::new(
            Role::Ai,
            vec![
                ContentPart::Reasoning(Reasoning {
                    id: Some("rs_stored_only".into()),
                    text: "**Plan**\n\nCall f.".into(),
                    ..Default::default()
                }),
                ContentPart::Reasoning(Reasoning {
                    id: Some("rs_portable".into()),
                    encrypted: Some("gAAAA-opaque".into()),
                    ..Default::default()
                }),
                ContentPart::ToolCall(ToolCall::new("call_1", "f", "{}")),
            ],
        );
        let request = ChatRequest::new(vec![
            Message::human("Go."),
            ai,
            Message::tool_response("call_1", "f", "done"),
        ]);
        model.complete(request).await.expect("answers");
        let sent = &replay.requests().await[0];
        let items = reasoning_items(sent);
        let ids: Vec<&str> = items.iter().filter_map(|i| i["id"].as_str()).collect();
        assert_eq!(ids, ["rs_portable"], "{model_id}: {sent}");
        assert_eq!(items[0]["encrypted_content"], "gAAAA-opaque");
        assert_eq!(sent["store"], false);
        // The call itself still goes back.
        assert!(
            sent["input"]
                .as_array()
                .unwrap()
                .iter()
                .any(|item| item["type"] == "function_call" && item["call_id"] == "call_1"),
            "{sent}"
        );
    }
}

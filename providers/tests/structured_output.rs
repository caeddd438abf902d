//! `ChatOptions::response_format` on every API: the field each provider documents, streamed
//! and not, beside tools; and the JSON answer read back from recorded bytes.

use crate::support;

use providers::{
    ApiFormat, ChatModel, ChatOptions, ChatRequest, FinishReason, Message, ModelConfig,
    ResponseFormat, model_from_config,
};
use serde_json::{Value, json};
use support::apis::weather;
use support::{Canned, Replay, config, fixture_text, streamed};

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {"city": {"type": "string"}, "temperature": {"type": "number"}},
        "required": ["city", "temperature"],
        "additionalProperties": false
    })
}

fn request(format: ResponseFormat, tools: bool) -> ChatRequest {
    let request =
        ChatRequest::new(vec![Message::human("Weather in SF?")]).with_options(ChatOptions {
            response_format: Some(format),
            ..ChatOptions::default()
        });
    if tools {
        request.with_tools(vec![weather()])
    } else {
        request
    }
}

async fn replayed_model(
    model_id: &str,
    format: Option<ApiFormat>,
    path: &str,
    suffix: &str,
    answer: Canned,
) -> (Replay, Box<dyn ChatModel>) {
    let replay = Replay::sequence(path, vec![answer]).await;
    let config = ModelConfig {
        api_format: format,
        ..config(model_id, &format!("{}{}", replay.url(), suffix))
    };
    (replay, model_from_config(&config).expect("builds"))
}

/// OpenAI Chat Completions: `response_format` with the schema under `json_schema`, the API
/// reference's shape; the answer streamed by the recorded openai-python `.parse()` test.
#[tokio::test]
async fn openai_chat_sends_response_format_and_reads_the_json_answer() {
    let format = ResponseFormat::json_schema("weather", schema()).strict(true);
    let (replay, model) = replayed_model(
        "gpt-4o",
        None,
        "/v1/chat/completions",
        "/v1",
        Canned::fixture("wire_corpus/openai-python/test_parse_pydantic_model.7e5ea4d12e7c.sse"),
    )
    .await;
    let (_, response) = streamed(model.as_ref(), request(format, true))
        .await
        .expect("answers");
    assert_eq!(
        response.message.text(),
        r#"{"city":"San Francisco","temperature":61,"units":"f"}"#
    );
    let sent = &replay.requests().await[0];
    assert_eq!(
        sent["response_format"],
        json!({"type": "json_schema", "json_schema": {"name": "weather", "schema": schema(), "strict": true}})
    );
    assert_eq!(sent["tools"][0]["function"]["name"], "get_weather");
    assert_eq!(sent["stream"], true);

    for (format, wire) in [
        (ResponseFormat::JsonObject, json!({"type": "json_object"})),
        (ResponseFormat::Text, json!({"type": "text"})),
    ] {
        let (replay, model) = replayed_model(
            "gpt-4o",
            None,
            "/v1/chat/completions",
            "/v1",
            Canned::fixture("openai/chat_text.json"),
        )
        .await;
        model
            .complete(request(format, false))
            .await
            .expect("answers");
        assert_eq!(replay.requests().await[0]["response_format"], wire);
    }
}

/// OpenRouter speaks OpenAI Chat: the same `response_format`.
#[tokio::test]
async fn openrouter_sends_the_chat_response_format() {
    let replay = Replay::fixture("/api/v1/chat/completions", "openai/chat_text.json").await;
    let config = ModelConfig {
        model: Some("openrouter".into()),
        ..config(
            "anthropic/claude-sonnet-4.5",
            &format!("{}/api/v1", replay.url()),
        )
    };
    let model = model_from_config(&config).expect("builds");
    let format = ResponseFormat::json_schema("weather", schema());
    model
        .complete(request(format, false))
        .await
        .expect("answers");
    assert_eq!(
        replay.requests().await[0]["response_format"],
        json!({"type": "json_schema", "json_schema": {"name": "weather", "schema": schema()}})
    );
}

/// OpenAI Responses: `text.format` with the schema beside `name` and `strict`.
#[tokio::test]
async fn openai_responses_sends_text_format() {
    for stream in [false, true] {
        let answer = if stream {
            Canned::fixture("openai/responses_stream_text.sse")
        } else {
            Canned::fixture("openai/responses_reasoning_encrypted.json")
        };
        let (replay, model) = replayed_model(
            "gpt-4o",
            Some(ApiFormat::Responses),
            "/v1/responses",
            "/v1",
            answer,
        )
        .await;
        let format = ResponseFormat::json_schema("weather", schema())
            .strict(true)
            .with_description("The weather");
        let request = request(format, true);
        if stream {
            streamed(model.as_ref(), request).await.expect("answers");
        } else {
            model.complete(request).await.expect("answers");
        }
        let sent = &replay.requests().await[0];
        assert_eq!(
            sent["text"],
            json!({"format": {"type": "json_schema", "name": "weather", "description": "The weather", "schema": schema(), "strict": true}})
        );
        assert_eq!(sent["tools"][0]["name"], "get_weather");
    }
}

/// Anthropic (Claude 4.5 on): `output_config.format`, `{"type": "json_schema", "schema"}`,
/// the caller's tools untouched.
#[tokio::test]
async fn anthropic_sends_output_config_format() {
    for stream in [false, true] {
        let answer = if stream {
            Canned::fixture("anthropic/stream_text.sse")
        } else {
            Canned::fixture("anthropic/message_text_after_tool.json")
        };
        let (replay, model) =
            replayed_model("claude-sonnet-4-5", None, "/v1/messages", "", answer).await;
        let request = request(ResponseFormat::json_schema("weather", schema()), true);
        if stream {
            streamed(model.as_ref(), request).await.expect("answers");
        } else {
            model.complete(request).await.expect("answers");
        }
        let sent = &replay.requests().await[0];
        assert_eq!(
            sent["output_config"],
            json!({"format": {"type": "json_schema", "schema": schema()}})
        );
        assert_eq!(sent["tools"].as_array().map(Vec::len), Some(1));
        assert!(sent.get("tool_choice").is_none(), "{sent}");
    }
}

/// A recorded Claude Sonnet 4 `tool_use` answer whose tool is the answer tool.
fn answer_tool_message() -> String {
    fixture_text("anthropic/messages_parallel_tool_use.json")
        .replace("secret_retrieval_tool", "json_answer")
}

/// Claude models before 4.5 have no `output_config.format`: the schema becomes the input
/// schema of a forced tool, whose input is read back as the answer's text.
#[tokio::test]
async fn older_claude_models_answer_through_a_forced_tool() {
    let (replay, model) = replayed_model(
        "claude-sonnet-4-20250514",
        None,
        "/v1/messages",
        "",
        Canned::fixture("anthropic/messages_parallel_tool_use.json").body(answer_tool_message()),
    )
    .await;
    let response = model
        .complete(request(
            ResponseFormat::json_schema("weather", schema()),
            false,
        ))
        .await
        .expect("answers");
    assert_eq!(
        response.message.text(),
        "I'll retrieve the secrets for both passwords you provided.\n\
         {\"password\":\"mellon\"}\n{\"password\":\"radiance\"}"
    );
    assert_eq!(response.message.tool_calls().count(), 0);
    assert_eq!(response.finish_reason, FinishReason::Stop);
    let sent = &replay.requests().await[0];
    assert!(sent.get("output_config").is_none(), "{sent}");
    assert_eq!(sent["tools"][0]["name"], "json_answer");
    assert_eq!(sent["tools"][0]["input_schema"], schema());
    assert_eq!(
        sent["tool_choice"],
        json!({"type": "tool", "name": "json_answer"})
    );

    // Beside the caller's tools the model must call one of them.
    let (replay, model) = replayed_model(
        "claude-sonnet-4-20250514",
        None,
        "/v1/messages",
        "",
        Canned::fixture("anthropic/message_text_after_tool.json"),
    )
    .await;
    model
        .complete(request(ResponseFormat::JsonObject, true))
        .await
        .expect("answers");
    let sent = &replay.requests().await[0];
    let names: Vec<&str> = sent["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    assert_eq!(names, ["get_weather", "json_answer"]);
    assert_eq!(sent["tool_choice"], json!({"type": "any"}));
}

/// Gemini: `generationConfig.responseMimeType` + `responseJsonSchema` (JSON Schema as given).
#[tokio::test]
async fn gemini_sends_response_json_schema() {
    for stream in [false, true] {
        let (path, answer) = if stream {
            (
                "/v1beta/models/gemini-2.5-flash:streamGenerateContent",
                "gemini/stream_text.sse",
            )
        } else {
            (
                "/v1beta/models/gemini-2.5-flash:generateContent",
                "gemini/generate_text_after_function_responses.json",
            )
        };
        let (replay, model) = replayed_model(
            "gemini-2.5-flash",
            None,
            path,
            "/v1beta",
            Canned::fixture(answer),
        )
        .await;
        let request = request(ResponseFormat::json_schema("weather", schema()), true);
        if stream {
            streamed(model.as_ref(), request).await.expect("answers");
        } else {
            model.complete(request).await.expect("answers");
        }
        let sent = &replay.requests().await[0];
        assert_eq!(
            sent["generationConfig"]["responseMimeType"],
            "application/json"
        );
        assert_eq!(sent["generationConfig"]["responseJsonSchema"], schema());
        assert_eq!(
            sent["tools"][0]["functionDeclarations"][0]["name"],
            "get_weather"
        );
    }
    let (replay, model) = replayed_model(
        "gemini-2.5-flash",
        None,
        "/v1beta/models/gemini-2.5-flash:generateContent",
        "/v1beta",
        Canned::fixture("gemini/generate_text_after_function_responses.json"),
    )
    .await;
    model
        .complete(request(ResponseFormat::JsonObject, false))
        .await
        .expect("answers");
    let config = &replay.requests().await[0]["generationConfig"];
    assert_eq!(config["responseMimeType"], "application/json");
    assert!(config.get("responseJsonSchema").is_none());
}

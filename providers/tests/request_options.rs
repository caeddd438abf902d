//! `ChatOptions` on every API, for the requests a caller can build through the public API:
//! a tool choice without tools, temperatures JSON cannot carry, odd conversations.

use crate::support;

use providers::{ChatOptions, ChatRequest, Message, ProviderError, ToolChoice, ToolSpec};
use serde_json::Value;
use support::apis::{APIS, weather};

/// Every key of `body`, at any depth.
fn keys(body: &Value, out: &mut Vec<String>) {
    match body {
        Value::Object(map) => {
            for (key, value) in map {
                out.push(key.clone());
                keys(value, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|item| keys(item, out)),
        _ => {}
    }
}

/// `ChatOptions::tool_choice` is documented as "sent only with requests that offer tools":
/// OpenAI answers 400 to a `tool_choice` without `tools`, Anthropic to a `tool_choice`
/// without `tools`, Gemini to a `toolConfig` that forces calls of no declared function.
#[tokio::test]
async fn a_tool_choice_without_tools_is_not_sent() {
    for api in APIS {
        for choice in [
            ToolChoice::Auto,
            ToolChoice::None,
            ToolChoice::Required,
            ToolChoice::Tool("get_weather".into()),
        ] {
            let (replay, model) = api.model().await;
            let request = ChatRequest::new(vec![Message::human("Hi")]).with_options(ChatOptions {
                tool_choice: Some(choice.clone()),
                ..ChatOptions::default()
            });
            model.complete(request).await.expect("answers");
            let sent = &replay.requests().await[0];
            let mut all = Vec::new();
            keys(sent, &mut all);
            assert!(
                !all.iter()
                    .any(|key| key == "tool_choice" || key == "toolConfig"),
                "{} {choice:?}: {sent}",
                api.name
            );
        }
    }
}

/// With tools, the choice still goes out (the fix above must not lose it).
#[tokio::test]
async fn a_tool_choice_with_tools_is_sent() {
    let tool = weather();
    for api in APIS {
        let (replay, model) = api.model().await;
        let request = ChatRequest::new(vec![Message::human("Hi")])
            .with_tools(vec![tool.clone()])
            .with_options(ChatOptions {
                tool_choice: Some(ToolChoice::Required),
                ..ChatOptions::default()
            });
        model.complete(request).await.expect("answers");
        let sent = &replay.requests().await[0];
        let mut all = Vec::new();
        keys(sent, &mut all);
        assert!(
            all.iter()
                .any(|key| key == "tool_choice" || key == "toolConfig"),
            "{}: {sent}",
            api.name
        );
    }
}

/// JSON has no NaN or infinity: serde_json writes them as `null`, which a provider reads as
/// "no temperature" (OpenAI, Gemini) or refuses with a 400 that does not say why (Anthropic).
/// A temperature that cannot be sent is the caller's error, said before anything is sent.
#[tokio::test]
async fn a_temperature_json_cannot_carry_is_refused_before_sending() {
    for api in APIS {
        for temperature in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            let (replay, model) = api.model().await;
            let request = ChatRequest::new(vec![Message::human("Hi")]).with_options(ChatOptions {
                temperature: Some(temperature),
                ..ChatOptions::default()
            });
            let err = model.complete(request.clone()).await.expect_err("refused");
            assert!(
                matches!(err, ProviderError::Config { .. }),
                "{} {temperature}: {err:?}",
                api.name
            );
            assert!(err.to_string().contains("temperature"), "{err}");
            let err = model.stream(request).await.err().expect("refused");
            assert!(matches!(err, ProviderError::Config { .. }), "{err:?}");
            assert!(
                replay.requests().await.is_empty(),
                "{} {temperature}: nothing is sent",
                api.name
            );
        }
    }
}

/// Odd conversations never panic an adapter: they are sent (the provider judges them) or
/// refused with an error.
#[tokio::test]
async fn odd_requests_do_not_panic() {
    let odd_tool = ToolSpec {
        name: "wéird name/with spaces.and:colons".into(),
        description: String::new(),
        parameters: Value::Null,
    };
    let requests = [
        ChatRequest::new(Vec::new()),
        ChatRequest::new(vec![Message::system("Only a system prompt.")]),
        ChatRequest::new(vec![Message::system(""), Message::human("")]),
        ChatRequest::new(vec![Message::human("Hi")]).with_options(ChatOptions {
            max_tokens: Some(u32::MAX),
            thinking_budget: Some(u32::MAX),
            stop: vec![String::new(), "\u{0}".into()],
            ..ChatOptions::default()
        }),
        ChatRequest::new(vec![Message::human("Hi")]).with_tools(vec![odd_tool]),
        ChatRequest::new(vec![
            Message::tool_response("call_x", "f", "orphan"),
            Message::ai(""),
        ]),
    ];
    for api in APIS {
        for request in &requests {
            let (_replay, model) = api.model().await;
            // Either outcome is fine; a panic is not.
            let _ = model.complete(request.clone()).await;
        }
    }
}

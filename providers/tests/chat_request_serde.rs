//! `ChatRequest` and `ChatOptions` through serde: every option survives a round trip (the
//! options flat beside `messages` and `tools`), and a request written without the fields it
//! leaves at their default (`tools`, any option) reads back as `ChatRequest::new` would build it.

use std::time::Duration;

use providers::{
    CacheBreakpoint, ChatOptions, ChatRequest, Message, PromptCache, ReasoningEffort,
    ResponseFormat, ToolChoice,
};

fn every_option() -> ChatOptions {
    ChatOptions {
        temperature: Some(0.7),
        max_tokens: Some(u32::MAX),
        stop: vec!["\n\nHuman:".into(), String::new()],
        tool_choice: Some(ToolChoice::Tool("get_weather".into())),
        response_format: Some(
            ResponseFormat::json_schema("weather", serde_json::json!({"type": "object"}))
                .strict(true),
        ),
        reasoning_effort: Some(ReasoningEffort::Minimal),
        thinking_budget: Some(2048),
        cache: PromptCache {
            breakpoints: vec![
                CacheBreakpoint::Tools,
                CacheBreakpoint::System,
                CacheBreakpoint::Message(3),
                CacheBreakpoint::LastMessage,
            ],
            ttl: Some(Duration::from_secs(3600)),
            key: Some("user-42".into()),
        },
        extra_headers: [("x-team".to_owned(), "a".to_owned())].into(),
    }
}

#[test]
fn every_option_survives_a_round_trip() {
    let request = ChatRequest::new(vec![Message::system("s"), Message::human("hi")])
        .with_options(every_option());
    let json = serde_json::to_value(&request).expect("encodes");
    // Flat: the options sit beside `messages` and `tools`.
    assert_eq!(json["temperature"], 0.7);
    assert_eq!(
        json["tool_choice"],
        serde_json::json!({"tool": "get_weather"})
    );
    let back: ChatRequest = serde_json::from_value(json).expect("decodes");
    assert_eq!(back, request);

    let options: ChatOptions =
        serde_json::from_str(&serde_json::to_string(&every_option()).unwrap()).unwrap();
    assert_eq!(options, every_option());
}

#[test]
fn fields_left_out_take_their_defaults() {
    let request: ChatRequest = serde_json::from_str(
        r#"{"messages": [{"role": "human", "parts": [{"type": "text", "text": "hi"}]}]}"#,
    )
    .expect("a request without tools or options");
    assert_eq!(request, ChatRequest::new(vec![Message::human("hi")]));

    let request: ChatRequest = serde_json::from_str(r#"{"messages": [], "temperature": 1}"#)
        .expect("an integer temperature");
    assert_eq!(request.options.temperature, Some(1.0));
    assert!(request.tools.is_empty());

    let options: ChatOptions = serde_json::from_str("{}").expect("no option at all");
    assert_eq!(options, ChatOptions::default());
}

//! Builds a small tool-using conversation and prints it as a canonical transcript.
//!
//! `cargo run -p messages --example transcript`

use messages::{Message, ToolCall, transcript};

fn main() {
    let chain = vec![
        Message::system("You are a helpful assistant."),
        Message::human("What's the weather in Paris?"),
        Message::ai_tool_calls(
            None,
            vec![ToolCall::new(
                "call_1",
                "get_weather",
                r#"{"city":"Paris"}"#,
            )],
        ),
        Message::tool_response("call_1", "get_weather", "18°C, clear"),
        Message::ai("It is 18°C and clear in Paris."),
    ];
    println!("{}", transcript::to_json(&chain));
}

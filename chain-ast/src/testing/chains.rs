//! The predefined chains, with fixed texts.

use messages::{ContentPart, Message, Reasoning, Role, ToolCall};

use crate::{SUMMARIZATION_TOOL_ARGS, SUMMARIZATION_TOOL_NAME};

const SYSTEM: &str = "You are a helpful assistant.";
const WEATHER_ARGS: &str = r#"{"location": "New York"}"#;
const WEATHER: &str = "The weather in New York is sunny with a high of 75°F.";

fn ai_calls(calls: Vec<ToolCall>) -> Message {
    Message::ai_tool_calls(None, calls)
}

fn weather_call() -> ToolCall {
    ToolCall::new("tool-1", "get_weather", WEATHER_ARGS)
}

fn time_call() -> ToolCall {
    ToolCall::new("tool-2", "get_time", WEATHER_ARGS)
}

fn weather_response() -> Message {
    Message::tool_response("tool-1", "get_weather", WEATHER)
}

fn summary_call() -> ToolCall {
    ToolCall::new(
        "summary-1",
        SUMMARIZATION_TOOL_NAME,
        SUMMARIZATION_TOOL_ARGS,
    )
}

/// No messages.
pub fn empty_chain() -> Vec<Message> {
    Vec::new()
}

/// A system message only.
pub fn system_only_chain() -> Vec<Message> {
    vec![Message::system(SYSTEM)]
}

/// A human message only.
pub fn human_only_chain() -> Vec<Message> {
    vec![Message::human("Hello, can you help me?")]
}

/// System and human messages.
pub fn system_human_chain() -> Vec<Message> {
    vec![
        Message::system(SYSTEM),
        Message::human("Hello, how are you?"),
    ]
}

/// System, human and an AI answer.
pub fn basic_conversation_chain() -> Vec<Message> {
    let mut chain = system_human_chain();
    chain.push(Message::ai("I'm doing well! How can I help you today?"));
    chain
}

/// A tool call without a response (invalid: rule 3).
pub fn chain_with_tool() -> Vec<Message> {
    vec![
        Message::system(SYSTEM),
        Message::human("What's the weather like?"),
        ai_calls(vec![weather_call()]),
    ]
}

/// A tool call and its response.
pub fn chain_with_single_tool_response() -> Vec<Message> {
    let mut chain = chain_with_tool();
    chain.push(weather_response());
    chain
}

/// Two tool calls without responses (invalid: rule 3).
pub fn chain_with_multiple_tools() -> Vec<Message> {
    vec![
        Message::system(SYSTEM),
        Message::human("What's the weather and time in New York?"),
        ai_calls(vec![weather_call(), time_call()]),
    ]
}

/// Two tool calls, answered by two tool messages.
pub fn chain_with_multiple_tool_responses() -> Vec<Message> {
    let mut chain = chain_with_multiple_tools();
    chain.push(weather_response());
    chain.push(Message::tool_response(
        "tool-2",
        "get_time",
        "The current time in New York is 3:45 PM.",
    ));
    chain
}

/// Two sections: a completion, then a question answered with a tool call.
pub fn chain_with_multiple_sections() -> Vec<Message> {
    let mut chain = basic_conversation_chain();
    chain.push(Message::human("What's the weather like?"));
    chain.push(ai_calls(vec![weather_call()]));
    chain.push(weather_response());
    chain
}

/// Two human messages in a row (invalid: rule 2).
pub fn chain_with_consecutive_humans() -> Vec<Message> {
    let mut chain = system_human_chain();
    chain.push(Message::human("Can you help me with something?"));
    chain
}

/// Two tool calls, only the first answered (invalid: rule 3).
pub fn chain_with_missing_tool_response() -> Vec<Message> {
    let mut chain = chain_with_multiple_tools();
    chain.push(weather_response());
    chain
}

/// A tool message after a completion (invalid: rule 4).
pub fn chain_with_unexpected_tool() -> Vec<Message> {
    let mut chain = basic_conversation_chain();
    chain.push(weather_response());
    chain
}

/// A summarization pair as the only body pair.
pub fn chain_with_summarization() -> Vec<Message> {
    vec![
        Message::system(SYSTEM),
        Message::human("Can you summarize the previous conversation?"),
        ai_calls(vec![summary_call()]),
        Message::tool_response(
            "summary-1",
            SUMMARIZATION_TOOL_NAME,
            "This is a summary of the previous conversation about the weather in New York.",
        ),
    ]
}

/// A summarization pair, then a completion and a tool call: one section, three pairs.
pub fn chain_with_summarization_and_other_pairs() -> Vec<Message> {
    vec![
        Message::system(SYSTEM),
        Message::human("Can you summarize and then tell me about the weather?"),
        ai_calls(vec![summary_call()]),
        Message::tool_response(
            "summary-1",
            SUMMARIZATION_TOOL_NAME,
            "This is a summary of the previous conversation.",
        ),
        Message::ai("Now I'll check the weather for you."),
        ai_calls(vec![weather_call()]),
        weather_response(),
    ]
}

/// A scan in three sections, for moving a chain between providers: text beside two calls (one
/// already in Anthropic's id format), a completion before a call whose tool message carries a
/// note, and a summarization. `with_reasoning` adds reasoning with signatures (`sig-…`) to text
/// parts, calls and the note.
pub fn provider_switch_chain(with_reasoning: bool) -> Vec<Message> {
    let thought = |text: &str| {
        with_reasoning.then(|| Reasoning {
            text: text.to_owned(),
            signature: Some(format!("sig-{text}")),
            ..Reasoning::default()
        })
    };
    let text = |text: &str, reasoning: &str| ContentPart::Text {
        text: text.to_owned(),
        reasoning: thought(reasoning),
    };
    let call = |id: &str, name: &str, arguments: &str, reasoning: Option<&str>| {
        ContentPart::ToolCall(ToolCall {
            reasoning: reasoning.and_then(thought),
            ..ToolCall::new(id, name, arguments)
        })
    };
    let anthropic_id = "toolu_0123456789abcdefghijklmn";
    vec![
        Message::system("You are a penetration tester."),
        Message::human("Scan 10.0.0.5."),
        Message::new(
            Role::Ai,
            vec![
                text("Scanning the ports and saving the report.", "plan"),
                call(
                    "call_nmap01",
                    "terminal",
                    r#"{"input": "nmap 10.0.0.5"}"#,
                    Some("scan"),
                ),
                call(
                    anthropic_id,
                    "file",
                    r#"{"path": "/work/report.txt"}"#,
                    None,
                ),
            ],
        ),
        Message::tool_response("call_nmap01", "terminal", "22/tcp open ssh"),
        Message::tool_response(anthropic_id, "file", "saved"),
        Message::new(Role::Ai, vec![text("Only SSH is open.", "result")]),
        Message::human("Check the SSH version."),
        Message::ai("Grabbing the banner."),
        Message::new(
            Role::Ai,
            vec![call(
                "call_ssh02",
                "terminal",
                r#"{"input": "nc 10.0.0.5 22"}"#,
                Some("banner"),
            )],
        ),
        Message::new(
            Role::Tool,
            vec![
                text("banner follows", "note"),
                ContentPart::ToolResponse(messages::ToolResponse::new(
                    "call_ssh02",
                    "terminal",
                    "SSH-2.0-OpenSSH_8.9",
                )),
            ],
        ),
        Message::human("Summarize the findings."),
        Message::new(
            Role::Ai,
            vec![call(
                "call_sum03",
                SUMMARIZATION_TOOL_NAME,
                SUMMARIZATION_TOOL_ARGS,
                Some("summary"),
            )],
        ),
        Message::tool_response(
            "call_sum03",
            SUMMARIZATION_TOOL_NAME,
            "OpenSSH 8.9 is the only service.",
        ),
    ]
}

//! The text protocol (ReAct): thinking / action / answer sections in XML with YAML calls and
//! in Markdown with JSON calls; observations in the same format.

use crate::common;

use agent_loop::{Agent, AgentEvent, StopReason, TextSyntax, ToolMode};
use common::*;
use messages::{Message, Role};
use providers::testing::ScriptedResponse;
use text_format::{MarkdownFormat, XmlFormat};

#[tokio::test]
async fn xml_format_with_yaml_calls() {
    let model = scripted([
        ScriptedResponse::text(
            "<thinking>I need the outline of course X.</thinking>\n<action>\ntool: get_course_outline\nargs:\n  course: Course X\n</action>",
        ),
        ScriptedResponse::text(
            "<thinking>Now search.</thinking>\n<action>\n- tool: search_course_content\n  args:\n    query: Retrieval-augmented generation\n- tool: nope\n  args: {}\n</action>",
        ),
        ScriptedResponse::text(
            "<thinking>I have it.</thinking>\n<answer>Course Y, lesson 2.</answer>",
        ),
    ]);
    let agent = Agent::builder()
        .model(model.clone())
        .tools(course_tools())
        .tool_mode(ToolMode::Text(Box::new(XmlFormat::new())))
        .text_syntax(TextSyntax::Yaml)
        .system("You help with courses.")
        .build()
        .unwrap();
    let events = events(&agent, "Which course matches lesson 4 of course X?").await;
    assert_well_formed(&events);
    assert_events_snapshot!(events);

    let requests = model.requests();
    let system = requests[0].messages[0].text();
    assert!(system.starts_with("<behavior>\nYou help with courses.\n</behavior>"));
    assert!(system.contains("<available_tools>\nAvailable tools:"));
    assert!(system.contains("Call tools using YAML format"));
    assert!(system.contains("<thinking>") && system.contains("<answer>"));
    assert!(
        requests[0].tools.is_empty(),
        "text protocols offer no native tools"
    );
    // The observation comes back in the same format, as a human message.
    let observation = requests[1].messages.last().unwrap();
    assert_eq!(observation.role, Role::Human);
    assert_eq!(
        observation.text(),
        "<observation>\n<get_course_outline>\nCourse X: lesson 1 Intro; lesson 4 Retrieval-augmented generation\n</get_course_outline>\n</observation>"
    );
    let second = requests[2].messages.last().unwrap().text();
    assert!(second.contains("<search_course_content>\nCourse Y, lesson 2 covers Retrieval-augmented generation\n</search_course_content>"));
    assert!(second.contains("<nope>\nError: unknown tool \"nope\""));
    match events.last() {
        Some(AgentEvent::ResponseDone {
            outcome,
            stop_reason,
            ..
        }) => {
            assert_eq!(outcome.text, "Course Y, lesson 2.");
            assert_eq!(*stop_reason, StopReason::EndTurn);
            assert_eq!(outcome.records[1].tool_calls.len(), 2);
            assert_eq!(outcome.records[1].tool_errors, 1);
            // The input is the system prompt the protocol wrote and the question.
            assert_eq!(outcome.input_len, 2);
            assert_eq!(outcome.new_messages().len(), 5);
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn markdown_format_with_json_calls_and_a_parse_error() {
    let model = scripted([
        ScriptedResponse::text("I will just chat without sections."),
        ScriptedResponse::text(
            "# thinking\nLook it up.\n# action\n{\"tool\": \"search_course_content\", \"args\": {\"query\": \"RAG\"}}",
        ),
        ScriptedResponse::text("# answer\nLesson 2 of course Y."),
    ]);
    let agent = Agent::builder()
        .model(model.clone())
        .tools(course_tools())
        .tool_mode(ToolMode::Text(Box::new(MarkdownFormat::new())))
        .text_syntax(TextSyntax::Json)
        .max_rounds(3)
        .build()
        .unwrap();
    let events = events(&agent, "Where is RAG taught?").await;
    assert_well_formed(&events);
    assert_events_snapshot!(events);

    let requests = model.requests();
    assert!(
        requests[0].messages[0]
            .text()
            .contains("Call tools using JSON format")
    );
    let feedback = requests[1].messages.last().unwrap().text();
    assert!(
        feedback.starts_with("# error\nFormat parse error: "),
        "{feedback}"
    );
    assert!(feedback.contains("Your raw response was:\nI will just chat without sections."));
    assert_eq!(
        requests[2].messages.last().unwrap().text(),
        "# search_course_content\nCourse Y, lesson 2 covers RAG"
    );
    for request in &requests {
        chain_ast::ChainAst::new(&request.messages, false).expect("valid chain");
    }
}

#[tokio::test]
async fn text_protocol_tool_limit() {
    let action = || {
        ScriptedResponse::text(
            "<action>\ntool: search_course_content\nargs:\n  query: more\n</action>",
        )
    };
    let model = scripted([
        action(),
        action(),
        ScriptedResponse::text("Plain words, no sections."),
    ]);
    let agent = Agent::builder()
        .model(model.clone())
        .tools(course_tools())
        .tool_mode(ToolMode::Text(Box::new(XmlFormat::new())))
        .max_rounds(1)
        .build()
        .unwrap();
    let outcome = agent.run("Search").await.unwrap();
    assert_eq!(outcome.stop_reason, Some(StopReason::ToolLimit));
    assert_eq!(outcome.text, "Plain words, no sections.");
    let last = model.requests().pop().unwrap();
    let notice = last.messages.last().unwrap();
    assert_eq!(notice.text(), agent_loop::TOOL_LIMIT_REACHED_MESSAGE);
    // The final request's system prompt lists no tools.
    assert!(!last.messages[0].text().contains("Available tools"));
    assert!(
        last.messages
            .iter()
            .any(|m: &Message| m.text().contains("covers more"))
    );
}

//! Typed runs: the schema goes out as the response format on every call, tools still run,
//! an answer off the schema is corrected once, and a second failure is a typed error.

use std::sync::Arc;

use crate::common::{course_tools, scripted};
use agent_loop::{Agent, AgentError, ResponseFormat};
use providers::testing::{EchoModel, ScriptedResponse};
use serde::Deserialize;

#[derive(Debug, PartialEq, Deserialize, schemars::JsonSchema)]
struct Lesson {
    title: String,
    number: u32,
}

fn agent(model: Arc<dyn providers::ChatModel>) -> Agent {
    Agent::builder()
        .model(model)
        .tools(course_tools())
        .build()
        .expect("a model is set")
}

#[tokio::test]
async fn tools_then_a_typed_answer() {
    let model = scripted([
        ScriptedResponse::new().tool_call("call_1", "get_course_outline", r#"{"course": "RAG"}"#),
        ScriptedResponse::text(r#"{"title": "Retrieval-augmented generation", "number": 4}"#),
    ]);
    let typed = agent(model.clone())
        .run_typed::<Lesson>("Which lesson covers RAG?")
        .await
        .expect("answers");
    assert_eq!(
        typed.value,
        Lesson {
            title: "Retrieval-augmented generation".into(),
            number: 4
        }
    );
    assert_eq!(typed.outcome.rounds, 2);
    let requests = model.requests();
    for request in &requests {
        let Some(ResponseFormat::JsonSchema(format)) = &request.options.response_format else {
            panic!("no schema sent: {:?}", request.options.response_format);
        };
        assert_eq!(format.name, "Lesson");
        assert_eq!(
            format.schema["required"],
            serde_json::json!(["title", "number"])
        );
    }
    // The tool round went out with its tools beside the schema.
    assert_eq!(requests[0].tools.len(), 2);
}

#[tokio::test]
async fn an_answer_off_the_schema_is_corrected_once() {
    let model = scripted([
        ScriptedResponse::text(r#"{"title": "Intro"}"#),
        ScriptedResponse::text("```json\n{\"title\": \"Intro\", \"number\": 1}\n```"),
    ]);
    let typed = agent(model.clone())
        .run_typed::<Lesson>("First lesson?")
        .await
        .expect("answers after the correction");
    assert_eq!(typed.value.number, 1);
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    let correction = requests[1].messages.last().expect("a message").text();
    assert!(
        correction.contains("missing field `number`"),
        "{correction}"
    );
}

#[tokio::test]
async fn a_second_failure_is_a_typed_error_with_the_text() {
    let model = scripted([
        ScriptedResponse::text("I cannot say."),
        ScriptedResponse::text(r#"{"title": 3, "number": 1}"#),
    ]);
    let failure = agent(model)
        .run_typed::<Lesson>("First lesson?")
        .await
        .expect_err("fails");
    let message = failure.to_string();
    assert!(
        message.contains("Lesson") && message.contains("native structured output"),
        "{message}"
    );
    let AgentError::InvalidOutput {
        type_name,
        text,
        error,
    } = failure
    else {
        panic!("{failure:?}");
    };
    assert!(type_name.ends_with("Lesson"));
    assert_eq!(text, r#"{"title": 3, "number": 1}"#);
    assert!(error.contains("invalid type"), "{error}");
}

/// Offline, the echo model answers the schema, after calling every tool once.
#[tokio::test]
async fn the_echo_model_answers_a_typed_run_with_tools() {
    let typed = agent(Arc::new(EchoModel::new()))
        .run_typed::<Lesson>("Intro")
        .await
        .expect("answers");
    assert_eq!(
        typed.value,
        Lesson {
            title: "Intro".into(),
            number: 0
        }
    );
    assert_eq!(typed.outcome.rounds, 2);
}

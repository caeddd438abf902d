//! Typed runs: the schema goes out as the response format on every call, tools still run,
//! an answer off the schema is corrected once, and a second failure is a typed error.

use std::sync::Arc;

use crate::common::{course_tools, scripted};
use agent_loop::{Agent, AgentError, ResponseFormat};
use providers::testing::{EchoModel, ScriptedModel, ScriptedResponse};
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
    // The schema names what is missing; without it, the type does.
    let expected = if cfg!(feature = "validate") {
        r#"at `/`: "number" is a required property"#
    } else {
        "missing field `number`"
    };
    assert!(correction.contains(expected), "{correction}");
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
        attempts,
    } = failure
    else {
        panic!("{failure:?}");
    };
    assert!(type_name.ends_with("Lesson"));
    assert_eq!(text, r#"{"title": 3, "number": 1}"#);
    assert_eq!(attempts, 2);
    let expected = if cfg!(feature = "validate") {
        r#"at `/title`: 3 is not of type "string""#
    } else {
        "invalid type"
    };
    assert!(error.contains(expected), "{error}");
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

/// A lesson with bounds the schema states and serde does not check: only the schema
/// catches an answer outside them.
#[cfg(feature = "validate")]
#[derive(Debug, PartialEq, Deserialize, schemars::JsonSchema)]
struct Rated {
    #[schemars(range(min = 1, max = 5))]
    stars: i64,
    #[schemars(length(min = 3))]
    title: String,
}

#[cfg(feature = "validate")]
#[tokio::test]
async fn a_value_out_of_the_schemas_bounds_is_corrected_with_its_path() {
    let model = scripted([
        ScriptedResponse::text(r#"{"stars": 0, "title": "Intro"}"#),
        ScriptedResponse::text(r#"{"stars": 4, "title": "Intro"}"#),
    ]);
    let typed = agent(model.clone())
        .run_typed::<Rated>("Rate the intro")
        .await
        .expect("answers after the correction");
    assert_eq!(typed.value.stars, 4);
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    let correction = requests[1].messages.last().expect("a message").text();
    assert!(
        correction.contains("1 schema violation: at `/stars`: 0 is less than the minimum of 1"),
        "{correction}"
    );
}

#[cfg(feature = "validate")]
#[tokio::test]
async fn two_violations_after_the_correction_are_both_named() {
    let model = scripted([
        ScriptedResponse::text(r#"{"stars": 9, "title": "Intro"}"#),
        ScriptedResponse::text(r#"{"stars": 6, "title": "In"}"#),
    ]);
    let failure = agent(model)
        .run_typed::<Rated>("Rate the intro")
        .await
        .expect_err("fails");
    let AgentError::InvalidOutput {
        error, attempts, ..
    } = &failure
    else {
        panic!("{failure:?}");
    };
    assert_eq!(*attempts, 2);
    assert!(error.starts_with("2 schema violations: "), "{error}");
    assert!(
        error.contains("at `/stars`: 6 is greater than the maximum of 5"),
        "{error}"
    );
    assert!(
        error.contains(r#"at `/title`: "In" is shorter than 3 characters"#),
        "{error}"
    );
    let message = failure.to_string();
    assert!(message.contains("after 2 attempt(s)"), "{message}");
}

/// A model that says its provider enforces strict schemas while sampling.
struct Enforcing(Arc<ScriptedModel>);

#[async_trait::async_trait]
impl providers::ChatModel for Enforcing {
    fn info(&self) -> &providers::ModelInfo {
        self.0.info()
    }

    fn guarantees_schema(&self, _: &ResponseFormat) -> bool {
        true
    }

    async fn complete(
        &self,
        request: providers::ChatRequest,
    ) -> Result<providers::ChatResponse, providers::ProviderError> {
        self.0.complete(request).await
    }

    async fn stream(
        &self,
        request: providers::ChatRequest,
    ) -> Result<providers::EventStream, providers::ProviderError> {
        self.0.stream(request).await
    }
}

/// An invalid answer under an enforced schema (cut short, say) would come back the same way:
/// the run fails at once instead of asking again.
#[tokio::test]
async fn a_model_that_enforces_the_schema_is_not_asked_twice() {
    let inner = scripted([
        ScriptedResponse::text(r#"{"title": "Intro", "num"#),
        ScriptedResponse::text(r#"{"title": "Intro", "number": 1}"#),
    ]);
    let failure = agent(Arc::new(Enforcing(Arc::clone(&inner))))
        .run_typed::<Lesson>("First lesson?")
        .await
        .expect_err("fails without a correction");
    let AgentError::InvalidOutput {
        error, attempts, ..
    } = &failure
    else {
        panic!("{failure:?}");
    };
    assert_eq!(*attempts, 1);
    assert!(error.starts_with("the answer is not JSON"), "{error}");
    assert_eq!(inner.requests().len(), 1);
}

//! The summarizer's model calls and the agent's `ChatOptions`: as `AgentBuilder::options`
//! documents, they take only the extra headers (a gateway that routes or authorises by header
//! must see the summary calls too), and none of the sampling, tool or reasoning options.

use crate::common;

use std::collections::BTreeMap;
use std::sync::Arc;

use agent_loop::{Agent, StopReason};
use common::*;
use providers::testing::{ScriptedModel, ScriptedResponse};
use providers::{ChatOptions, ModelInfo, Provider, ReasoningEffort, ToolChoice};
use serde::Deserialize;
use toolchain::{ExecutionContext, JsonSchema, Tool, ToolError, ToolResult, ToolSet, async_trait};

/// A 2 000-token window: the third round's pages push the chain past the trigger.
fn small_model(responses: Vec<ScriptedResponse>) -> Arc<ScriptedModel> {
    Arc::new(ScriptedModel::new(responses).with_info(ModelInfo {
        id: "claude-small".into(),
        provider: Provider::Anthropic,
        context_window: 2_000,
        max_output_tokens: 200,
        supports_reasoning: true,
        supports_vision: true,
        known: true,
    }))
}

#[derive(Deserialize, JsonSchema)]
struct Page {
    /// Page number.
    n: u32,
}

/// About 2 500 bytes per page.
struct ReadPage;

#[async_trait]
impl Tool<Page, String> for ReadPage {
    fn name(&self) -> &str {
        "read_page"
    }
    fn description(&self) -> &str {
        "Reads a page."
    }
    async fn call(
        &self,
        _: &ExecutionContext,
        page: Page,
    ) -> Result<ToolResult<String>, ToolError> {
        Ok(ToolResult::text(format!("page {} ", page.n).repeat(320)))
    }
}

fn round(n: u32) -> ScriptedResponse {
    ScriptedResponse::new()
        .tool_call(
            &format!("toolu_{n}"),
            "read_page",
            &format!(r#"{{"n":{n}}}"#),
        )
        .usage(usage(100, 10))
}

#[tokio::test]
async fn summary_calls_carry_the_extra_headers_and_nothing_else() {
    let model = small_model(vec![
        round(1),
        round(2),
        round(3),
        ScriptedResponse::text("Pages 1 and 2 repeat their numbers.").usage(usage(700, 12)),
        ScriptedResponse::text("All three pages read."),
    ]);
    let headers = BTreeMap::from([("x-gateway-route".to_owned(), "team-a".to_owned())]);
    let agent = Agent::builder()
        .model(model.clone())
        .tools(ToolSet::new().with(ReadPage).unwrap())
        .system("You read pages.")
        .max_rounds(5)
        .options(ChatOptions {
            temperature: Some(0.3),
            stop: vec!["STOP".into()],
            tool_choice: Some(ToolChoice::Required),
            reasoning_effort: Some(ReasoningEffort::High),
            extra_headers: headers.clone(),
            ..ChatOptions::default()
        })
        .build()
        .unwrap();
    let outcome = agent.run("Read pages 1 to 3.").await.unwrap();
    assert_eq!(outcome.stop_reason, Some(StopReason::EndTurn));

    let requests = model.requests();
    assert_eq!(requests.len(), 5, "three rounds, one summary, the answer");
    // The agent's own calls take every option.
    assert_eq!(requests[0].options.extra_headers, headers);
    assert_eq!(requests[0].options.temperature, Some(0.3));
    // The summarizer's call (the fourth) takes the headers only.
    let summary = &requests[3].options;
    assert_eq!(summary.extra_headers, headers, "{summary:?}");
    assert_eq!(summary.temperature, None);
    assert!(summary.stop.is_empty());
    assert_eq!(summary.tool_choice, None);
    assert_eq!(summary.reasoning_effort, None);
    assert!(summary.max_tokens.is_some(), "its own output budget");
}

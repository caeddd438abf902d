//! The summarizer's model calls and the agent's `ChatOptions`: as `AgentBuilder::options`
//! documents, they take only the extra headers (a gateway that routes or authorises by header
//! must see the summary calls too), and none of the sampling, tool or reasoning options.

use crate::common;

use std::collections::BTreeMap;

use agent_loop::{Agent, StopReason};
use common::*;
use providers::testing::ScriptedResponse;
use providers::{ChatOptions, ReasoningEffort, ToolChoice};
use toolchain::ToolSet;

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
        .tools(ToolSet::new().with(ReadPage(320)).unwrap())
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

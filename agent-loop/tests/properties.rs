//! Invariants over random scripts: whatever the model does (any number of rounds, parallel,
//! failing and unknown calls, any tool limit), the stream is well formed, every request is a
//! valid chain, every started tool finishes, and the outcome is a valid chain.

use crate::common;

use agent_loop::{Agent, AgentEvent};
use common::*;
use messages::Message;
use proptest::prelude::*;
use providers::testing::ScriptedResponse;
use toolchain::ToolSet;

/// One scripted answer: the tools it calls (by index into `TOOLS`), or none for text.
fn answers() -> impl Strategy<Value = Vec<Vec<usize>>> {
    proptest::collection::vec(proptest::collection::vec(0usize..3, 0..4), 1..7)
}

const TOOLS: [(&str, &str); 3] = [
    ("get_course_outline", r#"{"course":"X"}"#),
    ("broken", r#"{"query":"q"}"#),
    ("missing_tool", "{}"),
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn any_script_gives_a_well_formed_run(answers in answers(), max_rounds in 0usize..4) {
        let mut script: Vec<ScriptedResponse> = answers
            .iter()
            .enumerate()
            .map(|(round, calls)| {
                if calls.is_empty() {
                    return ScriptedResponse::text("An answer.");
                }
                calls.iter().enumerate().fold(ScriptedResponse::new(), |response, (n, tool)| {
                    let (name, args) = TOOLS[*tool];
                    response.tool_call(&format!("call_{round}_{n}"), name, args)
                })
            })
            .collect();
        // However the script ends, the model can still answer.
        script.push(ScriptedResponse::text("Final."));
        script.push(ScriptedResponse::text("Final."));
        let model = scripted(script);
        let tools = ToolSet::new().with(GetCourseOutline).unwrap().with(Broken).unwrap();
        let agent = Agent::builder().model(model.clone()).tools(tools).max_rounds(max_rounds).build().unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
        let events = runtime.block_on(events(&agent, "Go"));

        assert_well_formed(&events);
        let outcome = match events.last() {
            Some(AgentEvent::ResponseDone { outcome, .. }) => outcome.clone(),
            other => panic!("{other:?}"),
        };
        for request in model.requests() {
            prop_assert!(chain_ast::ChainAst::new(&request.messages, false).is_ok());
        }
        prop_assert!(chain_ast::ChainAst::new(&outcome.messages, false).is_ok());
        prop_assert!(outcome.records.iter().filter(|r| r.tools_executed).count() <= max_rounds);
        let started: Vec<&str> = events.iter().filter_map(|e| match e {
            AgentEvent::ToolStart { id, .. } => Some(id.as_str()),
            _ => None,
        }).collect();
        let done: Vec<&str> = events.iter().filter_map(|e| match e {
            AgentEvent::ToolDone { id, .. } => Some(id.as_str()),
            _ => None,
        }).collect();
        prop_assert_eq!(&started, &done);
        // Ids on the events are the provider's.
        let called: Vec<String> = outcome.messages.iter().flat_map(Message::tool_calls).map(|c| c.id.clone()).collect();
        prop_assert!(started.iter().all(|id| called.iter().any(|c| c == id)));
        prop_assert_eq!(outcome.rounds, model.requests().len());
    }
}

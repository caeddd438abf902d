//! A stored answer stands in for a deterministic call only when the call would have asked
//! the same thing: the tool choice, the reasoning effort and the thinking budget change the
//! answer as much as the tools on offer do.
#![cfg(feature = "store")]

use crate::common;

use std::sync::Arc;

use agent_loop::{Agent, AgentInput, ConversationId};
use common::*;
use providers::testing::ScriptedResponse;
use providers::{ChatOptions, ReasoningEffort, ToolChoice};

/// Asks the same question twice in one conversation at temperature 0, first with `first`,
/// then with `second`; whether the second answer came from the store.
async fn second_is_cached(first: ChatOptions, second: ChatOptions) -> bool {
    let store = memory_store().await;
    let model = scripted([
        ScriptedResponse::text("First answer."),
        ScriptedResponse::text("Second answer."),
    ]);
    let conversation = ConversationId::random();
    let ask = || AgentInput::text("Which course?").in_conversation(conversation.clone());
    let mut outcomes = Vec::new();
    for options in [first, second] {
        let agent = Agent::builder()
            .model(model.clone())
            .tools(course_tools())
            .options(ChatOptions {
                temperature: Some(0.0),
                ..options
            })
            .store(Arc::clone(&store))
            .build()
            .unwrap();
        outcomes.push(agent.run(ask()).await.unwrap());
    }
    assert!(!outcomes[0].records[0].cached);
    outcomes[1].records[0].cached
}

#[tokio::test]
async fn the_same_options_reuse_the_stored_answer() {
    assert!(second_is_cached(ChatOptions::default(), ChatOptions::default()).await);
    let forced = ChatOptions {
        tool_choice: Some(ToolChoice::Required),
        reasoning_effort: Some(ReasoningEffort::High),
        thinking_budget: Some(2048),
        ..ChatOptions::default()
    };
    assert!(second_is_cached(forced.clone(), forced).await);
}

#[tokio::test]
async fn another_tool_choice_calls_the_model() {
    let none = ChatOptions {
        tool_choice: Some(ToolChoice::None),
        ..ChatOptions::default()
    };
    let required = ChatOptions {
        tool_choice: Some(ToolChoice::Required),
        ..ChatOptions::default()
    };
    assert!(!second_is_cached(none, required).await);
}

#[tokio::test]
async fn another_reasoning_effort_or_budget_calls_the_model() {
    let low = ChatOptions {
        reasoning_effort: Some(ReasoningEffort::Low),
        ..ChatOptions::default()
    };
    let high = ChatOptions {
        reasoning_effort: Some(ReasoningEffort::High),
        ..ChatOptions::default()
    };
    assert!(!second_is_cached(low, high).await);
    let budget = |tokens| ChatOptions {
        thinking_budget: Some(tokens),
        ..ChatOptions::default()
    };
    assert!(!second_is_cached(budget(1024), budget(16_000)).await);
}

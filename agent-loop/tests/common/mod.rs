//! Tools, models and event helpers shared by the agent-loop tests.
#![allow(dead_code, unreachable_pub)]

use std::sync::Arc;
use std::time::Duration;

use agent_loop::{Agent, AgentEvent, AgentInput};
use futures::StreamExt;
use providers::Usage;
use providers::testing::{ScriptedModel, ScriptedResponse};
use serde::Deserialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use toolchain::{ExecutionContext, JsonSchema, Tool, ToolError, ToolResult, ToolSet, async_trait};

/// The input of the course tools.
#[derive(Deserialize, JsonSchema)]
pub struct CourseQuery {
    /// The course.
    pub course: String,
}

/// The input of the search tool.
#[derive(Deserialize, JsonSchema)]
pub struct SearchQuery {
    /// What to search for.
    pub query: String,
}

/// A course's outline: titles and lessons.
pub struct GetCourseOutline;

#[async_trait]
impl Tool<CourseQuery, String> for GetCourseOutline {
    fn name(&self) -> &str {
        "get_course_outline"
    }
    fn description(&self) -> &str {
        "Get course structure, titles, and lesson lists."
    }
    async fn call(
        &self,
        _: &ExecutionContext,
        input: CourseQuery,
    ) -> Result<ToolResult<String>, ToolError> {
        Ok(ToolResult::text(format!(
            "{}: lesson 1 Intro; lesson 4 Retrieval-augmented generation",
            input.course
        )))
    }
}

/// A search over course content.
pub struct SearchCourseContent;

#[async_trait]
impl Tool<SearchQuery, String> for SearchCourseContent {
    fn name(&self) -> &str {
        "search_course_content"
    }
    fn description(&self) -> &str {
        "Search for specific course content and materials."
    }
    async fn call(
        &self,
        _: &ExecutionContext,
        input: SearchQuery,
    ) -> Result<ToolResult<String>, ToolError> {
        Ok(ToolResult::text(format!(
            "Course Y, lesson 2 covers {}",
            input.query
        )))
    }
}

/// A tool that always fails.
pub struct Broken;

#[async_trait]
impl Tool<SearchQuery, String> for Broken {
    fn name(&self) -> &str {
        "broken"
    }
    fn description(&self) -> &str {
        "Always fails."
    }
    async fn call(
        &self,
        _: &ExecutionContext,
        _: SearchQuery,
    ) -> Result<ToolResult<String>, ToolError> {
        Err(ToolError::failed("database offline"))
    }
}

/// A tool that asks for a silent exit.
pub struct Quiet;

#[async_trait]
impl Tool<SearchQuery, String> for Quiet {
    fn name(&self) -> &str {
        "silent_exit"
    }
    fn description(&self) -> &str {
        "Ends the conversation without a reply."
    }
    async fn call(
        &self,
        _: &ExecutionContext,
        input: SearchQuery,
    ) -> Result<ToolResult<String>, ToolError> {
        Err(ToolError::silent_exit(input.query))
    }
}

/// A tool that takes `0` to answer.
pub struct Slow(pub Duration);

#[async_trait]
impl Tool<SearchQuery, String> for Slow {
    fn name(&self) -> &str {
        "slow"
    }
    fn description(&self) -> &str {
        "Takes its time."
    }
    async fn call(
        &self,
        _: &ExecutionContext,
        _: SearchQuery,
    ) -> Result<ToolResult<String>, ToolError> {
        tokio::time::sleep(self.0).await;
        Ok(ToolResult::text("finally".to_owned()))
    }
}

/// The two course tools.
pub fn course_tools() -> ToolSet {
    ToolSet::new()
        .with(GetCourseOutline)
        .and_then(|set| set.with(SearchCourseContent))
        .expect("distinct tools")
}

/// A usage figure with every field set.
pub fn usage(input: u64, output: u64) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: output,
        cached_input_tokens: input / 2,
        cache_creation_tokens: 1,
        reasoning_tokens: output / 2,
    }
}

/// A scripted model, shared.
pub fn scripted(responses: impl IntoIterator<Item = ScriptedResponse>) -> Arc<ScriptedModel> {
    Arc::new(ScriptedModel::new(responses))
}

/// An empty SQLite store in memory, shared by the agents of a test.
#[cfg(feature = "store")]
pub async fn memory_store() -> Arc<dyn agent_loop::Store> {
    Arc::new(
        conversation_tree::SqliteStore::open_in_memory()
            .await
            .unwrap(),
    )
}

/// Every event of a streamed run.
pub async fn events(agent: &Agent, input: impl Into<AgentInput>) -> Vec<AgentEvent> {
    let input = input.into().with_response_id("resp-test");
    agent
        .stream(input, CancellationToken::new())
        .collect()
        .await
}

/// Events as JSON objects named by their variant, with timings zeroed, for snapshots.
pub fn wire(events: &[AgentEvent]) -> Value {
    use serde_json::json;
    let frames: Vec<Value> = events
        .iter()
        .map(|event| match event {
            AgentEvent::ResponseStart { id, model, .. } => {
                json!({"event": "ResponseStart", "id": id, "model": model, "created": 0})
            }
            AgentEvent::ContentDelta {
                text,
                block_id,
                block_offset,
            } => json!({
                "event": "ContentDelta", "text": text, "block_id": block_id,
                "block_offset": block_offset,
            }),
            AgentEvent::ReasoningDelta { text } => json!({"event": "ReasoningDelta", "text": text}),
            AgentEvent::ToolStart {
                id,
                name,
                display_name,
                input,
                ..
            } => json!({
                "event": "ToolStart", "id": id, "name": name, "display_name": display_name,
                "input": input,
            }),
            AgentEvent::ToolDone {
                id,
                name,
                output,
                error,
                ..
            } => json!({
                "event": "ToolDone", "id": id, "name": name, "output": output,
                "duration_ms": 0, "error": error,
            }),
            AgentEvent::ResponseDone {
                id,
                usage,
                stop_reason,
                silent_exit,
                silent_exit_reason,
                rounds,
                conversation_id,
                node_ids,
                outcome,
            } => json!({
                "event": "ResponseDone", "id": id, "usage": usage,
                "stop_reason": format!("{stop_reason:?}"), "silent_exit": silent_exit,
                "silent_exit_reason": silent_exit_reason, "rounds": rounds,
                "conversation_id": conversation_id, "node_ids": node_ids,
                "compression": outcome.compression_notice(),
            }),
            AgentEvent::ResponseCancelled {
                id,
                partial_content,
                ..
            } => json!({
                "event": "ResponseCancelled", "id": id, "partial_content": partial_content,
            }),
            AgentEvent::ResponseError { id, error } => json!({
                "event": "ResponseError", "id": id, "error": error.to_string(),
                "retryable": error.is_retryable(),
            }),
            other => json!({"event": format!("{other:?}")}),
        })
        .collect();
    Value::Array(frames)
}

/// Checks the stream's shape: `response.start` first, exactly one terminal event, last.
pub fn assert_well_formed(events: &[AgentEvent]) {
    assert!(
        matches!(events.first(), Some(AgentEvent::ResponseStart { .. })),
        "{events:?}"
    );
    let terminals = events.iter().filter(|event| event.is_terminal()).count();
    assert_eq!(terminals, 1, "exactly one terminal event: {events:?}");
    assert!(events.last().is_some_and(AgentEvent::is_terminal));
}

/// Snapshots the events of a run as their SSE frames (map keys sorted, timings zeroed).
#[macro_export]
macro_rules! assert_events_snapshot {
    ($events:expr) => {
        insta::with_settings!({sort_maps => true}, {
            insta::assert_json_snapshot!($crate::common::wire(&$events));
        })
    };
}

/// A model with a 2 000-token window: 1 800 tokens for input, compression above 1 620, down
/// to 1 260.
pub fn small_model(responses: Vec<ScriptedResponse>) -> Arc<ScriptedModel> {
    Arc::new(
        ScriptedModel::new(responses).with_info(providers::ModelInfo {
            id: "claude-small".into(),
            provider: providers::Provider::Anthropic,
            context_window: 2_000,
            max_output_tokens: 200,
            supports_reasoning: true,
            supports_vision: true,
            known: true,
        }),
    )
}

/// The input of [`ReadPage`].
#[derive(Deserialize, JsonSchema)]
pub struct Page {
    /// Page number.
    pub n: u32,
}

/// `read_page`: returns `"page N "` repeated `.0` times (8 bytes each for one-digit pages), so a
/// test sizes its pages against the small window.
pub struct ReadPage(pub usize);

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
        Ok(ToolResult::text(format!("page {} ", page.n).repeat(self.0)))
    }
}

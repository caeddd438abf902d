//! Cancellation: prompt (within 100 ms with a slow model or tool), and the chain stays valid.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use agent_loop::{Agent, AgentError, AgentEvent, AgentStream};
use async_trait::async_trait;
use chain_ast::{ChainAst, FALLBACK_RESPONSE_CONTENT};
use common::*;
use futures::{Stream, StreamExt};
use messages::Message;
use providers::testing::{ScriptedModel, ScriptedResponse};
use providers::{ChatModel, ChatRequest, ChatResponse, EventStream, ModelInfo, ProviderError};
use tokio_util::sync::CancellationToken;
use toolchain::{ExecutionContext, Tool, ToolError, ToolResult, ToolSet};

const PROMPT: Duration = Duration::from_millis(100);

async fn until(stream: &mut AgentStream, wanted: impl Fn(&AgentEvent) -> bool) -> Vec<AgentEvent> {
    let mut seen = Vec::new();
    while let Some(event) = stream.next().await {
        let stop = wanted(&event);
        seen.push(event);
        if stop {
            return seen;
        }
    }
    panic!("the stream ended first: {seen:?}");
}

fn cancelled_outcome(events: &[AgentEvent]) -> (String, Arc<agent_loop::AgentOutcome>) {
    match events.last() {
        Some(AgentEvent::ResponseCancelled {
            partial_content,
            outcome,
            ..
        }) => (partial_content.clone(), Arc::clone(outcome)),
        other => panic!("expected response.cancelled, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_mid_stream_stops_the_model_at_once() {
    let slow = ScriptedResponse::text("one two three four five").delay(Duration::from_secs(10));
    let agent = Agent::builder().model(scripted([slow])).build().unwrap();
    let cancel = CancellationToken::new();
    let mut stream = agent.stream("Count", cancel.clone());
    let mut events = until(&mut stream, |e| {
        matches!(e, AgentEvent::ContentDelta { .. })
    })
    .await;

    let started = Instant::now();
    cancel.cancel();
    events.extend(stream.collect::<Vec<_>>().await);
    assert!(started.elapsed() < PROMPT, "took {:?}", started.elapsed());

    assert_well_formed(&events);
    let (partial, outcome) = cancelled_outcome(&events);
    assert_eq!(partial, "one ");
    assert_eq!(outcome.messages.last(), Some(&Message::ai("one ")));
    ChainAst::new(&outcome.messages, false).expect("valid chain");
    assert_eq!(outcome.stop_reason, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_arrived_before_the_cancellation_is_answered() {
    let words = "word ".repeat(200);
    let response = ScriptedResponse::new()
        .tool_call("call_x", "search_course_content", r#"{"query":"q"}"#)
        .with_text(&words)
        .delay(Duration::from_millis(20));
    let agent = Agent::builder()
        .model(scripted([response]))
        .tools(course_tools())
        .build()
        .unwrap();
    let cancel = CancellationToken::new();
    let mut stream = agent.stream("Go", cancel.clone());
    let mut events = until(&mut stream, |e| {
        matches!(e, AgentEvent::ContentDelta { .. })
    })
    .await;
    cancel.cancel();
    events.extend(stream.collect::<Vec<_>>().await);
    let (_, outcome) = cancelled_outcome(&events);
    let chain = ChainAst::new(&outcome.messages, false).expect("valid chain");
    assert_eq!(
        chain.find_tool_call_responses("call_x")[0].content,
        FALLBACK_RESPONSE_CONTENT
    );
    // The tool never ran.
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, AgentEvent::ToolStart { .. }))
    );
}

/// A tool that sleeps and records whether its future was dropped before it finished.
struct Sleepy {
    dropped: Arc<AtomicBool>,
}

struct SetOnDrop(Arc<AtomicBool>);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[async_trait]
impl Tool<SearchQuery, String> for Sleepy {
    fn name(&self) -> &str {
        "slow"
    }
    fn description(&self) -> &str {
        "Takes ten seconds."
    }
    async fn call(
        &self,
        _: &ExecutionContext,
        _: SearchQuery,
    ) -> Result<ToolResult<String>, ToolError> {
        let _guard = SetOnDrop(Arc::clone(&self.dropped));
        tokio::time::sleep(Duration::from_secs(10)).await;
        Ok(ToolResult::text("finally".to_owned()))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_mid_tool_stops_the_tool_at_once() {
    let dropped = Arc::new(AtomicBool::new(false));
    let tools = ToolSet::new()
        .with(Sleepy {
            dropped: Arc::clone(&dropped),
        })
        .unwrap();
    let model = scripted([
        ScriptedResponse::new().tool_call("call_s", "slow", r#"{"query":"x"}"#),
        ScriptedResponse::text("never asked"),
    ]);
    let agent = Agent::builder()
        .model(model.clone())
        .tools(tools)
        .build()
        .unwrap();
    let cancel = CancellationToken::new();
    let mut stream = agent.stream("Wait", cancel.clone());
    let mut events = until(&mut stream, |e| matches!(e, AgentEvent::ToolStart { .. })).await;

    let started = Instant::now();
    cancel.cancel();
    events.extend(stream.collect::<Vec<_>>().await);
    assert!(started.elapsed() < PROMPT, "took {:?}", started.elapsed());
    assert!(
        dropped.load(Ordering::SeqCst),
        "the tool's future was dropped"
    );

    assert_well_formed(&events);
    let (_, outcome) = cancelled_outcome(&events);
    let chain = ChainAst::new(&outcome.messages, false).expect("valid chain");
    assert_eq!(
        chain.find_tool_call_responses("call_s")[0].content,
        "Tool execution failed: tool \"slow\" was cancelled"
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e, AgentEvent::ToolDone { error: Some(_), .. }))
    );
    assert_eq!(
        model.requests().len(),
        1,
        "no request after the cancellation"
    );
}

/// A model whose streams record being dropped.
struct Watched {
    inner: ScriptedModel,
    dropped: Arc<AtomicBool>,
}

struct Guarded<S> {
    stream: S,
    _guard: SetOnDrop,
}

impl<S: Stream + Unpin> Stream for Guarded<S> {
    type Item = S::Item;
    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<S::Item>> {
        self.stream.poll_next_unpin(cx)
    }
}

#[async_trait]
impl ChatModel for Watched {
    fn info(&self) -> &ModelInfo {
        self.inner.info()
    }
    async fn complete(&self, request: ChatRequest) -> Result<ChatResponse, ProviderError> {
        self.inner.complete(request).await
    }
    async fn stream(&self, request: ChatRequest) -> Result<EventStream, ProviderError> {
        let stream = self.inner.stream(request).await?;
        Ok(Box::pin(Guarded {
            stream,
            _guard: SetOnDrop(Arc::clone(&self.dropped)),
        }))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_stream_closes_the_model_stream() {
    let dropped = Arc::new(AtomicBool::new(false));
    let model = Watched {
        inner: ScriptedModel::new([
            ScriptedResponse::text("slow words here").delay(Duration::from_secs(10))
        ]),
        dropped: Arc::clone(&dropped),
    };
    let agent = Agent::builder().model(Arc::new(model)).build().unwrap();
    let mut stream = agent.stream("Hi", CancellationToken::new());
    until(&mut stream, |e| {
        matches!(e, AgentEvent::ContentDelta { .. })
    })
    .await;
    assert!(!dropped.load(Ordering::SeqCst));
    drop(stream);
    assert!(
        dropped.load(Ordering::SeqCst),
        "the provider stream was dropped with ours"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_until_cancelled_returns_the_valid_conversation() {
    let slow = ScriptedResponse::text("a b c").delay(Duration::from_secs(10));
    let agent = Agent::builder().model(scripted([slow])).build().unwrap();
    let cancel = CancellationToken::new();
    let canceller = {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            cancel.cancel();
        })
    };
    let started = Instant::now();
    let error = agent.run_until_cancelled("Hi", cancel).await.unwrap_err();
    assert!(started.elapsed() < Duration::from_millis(50) + PROMPT);
    canceller.await.unwrap();
    match error {
        AgentError::Cancelled { outcome } => {
            assert_eq!(outcome.text, "a ");
            assert_eq!(outcome.messages[1], Message::ai("a "));
            assert_eq!(outcome.messages.len(), 2);
            ChainAst::new(&outcome.messages, false).expect("valid chain");
        }
        other => panic!("{other:?}"),
    }
}

//! The loop's own cost per round.
//!
//! `agent/run` and `agent/stream` make 1,000 rounds: 100 runs of 10 model calls each (nine
//! tool rounds calling a no-op tool, then the answer) against a `ScriptedModel`.
//! `baseline/model_and_tools` makes exactly the same 1,000 model calls (same growing
//! conversations, in one request kept across rounds and lent to the model) and the same 900
//! tool calls through a `NativeToolChain`, with no agent around them. The loop's overhead per round is `(agent − baseline) / 1000`. `agent/build` is the
//! per-request construction a server does.
//!
//! `1000_rounds_after_200_messages` makes the same rounds after an earlier conversation of
//! 200 messages (a long conversation resumed): what a round costs that grows with the chain
//! shows there.
//!
//! `100_answers_of_1000_deltas` streams 100 plain answers of 1,000 words each (one text delta
//! per word): `baseline/collect` reads the same streams into responses with no agent around
//! them, so `(agent − baseline) / 100,000` is what the loop adds per text delta.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use agent_loop::{Agent, AgentEvent, AgentInput};
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use futures::StreamExt;
use messages::{Message, ToolCall};
use providers::testing::{ScriptedModel, ScriptedResponse};
use providers::{ChatModel, ChatRequest, collect};
use serde::Deserialize;
use tokio_util::sync::CancellationToken;
use toolchain::{
    ExecutionContext, JsonSchema, NativeToolChain, Tool, ToolError, ToolResult, ToolSet,
    async_trait,
};

const RUNS: usize = 100;
const TOOL_ROUNDS: usize = 9;

#[derive(Deserialize, JsonSchema)]
struct NoInput {}

struct Noop;

#[async_trait]
impl Tool<NoInput, String> for Noop {
    fn name(&self) -> &str {
        "noop"
    }
    fn description(&self) -> &str {
        "Does nothing."
    }
    async fn call(
        &self,
        _: &ExecutionContext,
        _: NoInput,
    ) -> Result<ToolResult<String>, ToolError> {
        Ok(ToolResult::text("ok".to_owned()))
    }
}

fn tools() -> ToolSet {
    ToolSet::new().with(Noop).expect("one tool")
}

fn call(round: usize) -> ToolCall {
    ToolCall::new(format!("call_{round}"), "noop", "{}")
}

/// The script of every run: nine tool rounds, then the answer. The model keeps no copy of
/// the requests (nor do real ones).
fn model() -> Arc<ScriptedModel> {
    let responses = (0..RUNS).flat_map(|_| {
        (0..TOOL_ROUNDS)
            .map(|round| ScriptedResponse::new().tool_call_with(call(round)))
            .chain(std::iter::once(ScriptedResponse::text("done")))
    });
    Arc::new(ScriptedModel::new(responses).unrecorded())
}

/// Messages of the earlier conversation in the long-chain cases.
const EARLIER_MESSAGES: usize = 200;

/// An earlier conversation of `EARLIER_MESSAGES` messages (questions and answers of about 60
/// words each).
fn earlier_conversation() -> Vec<Message> {
    let text = "the quick brown fox jumps over the lazy dog and runs on ".repeat(5);
    (0..EARLIER_MESSAGES / 2)
        .flat_map(|turn| {
            [
                Message::human(format!("Question {turn}: {text}")),
                Message::ai(format!("Answer {turn}: {text}")),
            ]
        })
        .collect()
}

fn agent(model: Arc<ScriptedModel>) -> Agent {
    Agent::builder()
        .model(model)
        .tools(tools())
        .system("You are a benchmark.")
        .max_rounds(TOOL_ROUNDS)
        .build()
        .expect("a model is set")
}

/// Words in each answer of the delta cases: one text delta per word.
const ANSWER_WORDS: usize = 1_000;

/// The script of the delta cases: `RUNS` plain answers of `ANSWER_WORDS` words.
fn talker() -> Arc<ScriptedModel> {
    let answer = "word ".repeat(ANSWER_WORDS);
    Arc::new(ScriptedModel::new((0..RUNS).map(|_| ScriptedResponse::text(&answer))).unrecorded())
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a runtime")
}

/// The same calls without the agent: model calls on the same conversations (after
/// `earlier`), tools run.
async fn baseline(model: &ScriptedModel, tools: &NativeToolChain, earlier: &[Message]) {
    let ctx = ExecutionContext::new();
    for _ in 0..RUNS {
        let mut messages = vec![Message::system("You are a benchmark.")];
        messages.extend_from_slice(earlier);
        messages.push(Message::human("Go"));
        let mut request = ChatRequest::new(messages);
        for _ in 0..=TOOL_ROUNDS {
            request.tools = tools.tool_specs();
            let stream = model.stream_borrowed(&request).await.expect("scripted");
            let response = collect(stream).await.expect("complete");
            let calls: Vec<ToolCall> = response.message.tool_calls().cloned().collect();
            request.messages.push(response.message);
            if calls.is_empty() {
                break;
            }
            let results = tools.execute(&ctx, &calls).await.messages;
            request.messages.extend(results);
        }
        black_box(&request);
    }
}

fn rounds(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("1000_rounds");
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(8));
    group.bench_function("baseline/model_and_tools", |b| {
        let chain = NativeToolChain::new(tools());
        b.iter_batched(
            model,
            |model| rt.block_on(baseline(&model, &chain, &[])),
            BatchSize::PerIteration,
        );
    });
    group.bench_function("agent/run", |b| {
        b.iter_batched(
            || agent(model()),
            |agent| {
                rt.block_on(async {
                    for _ in 0..RUNS {
                        let outcome = agent.run("Go").await.expect("the run ends");
                        assert_eq!(outcome.rounds, TOOL_ROUNDS + 1);
                        black_box(outcome);
                    }
                });
            },
            BatchSize::PerIteration,
        );
    });
    group.bench_function("agent/stream", |b| {
        b.iter_batched(
            || agent(model()),
            |agent| {
                rt.block_on(async {
                    for _ in 0..RUNS {
                        let events: Vec<AgentEvent> =
                            agent.stream("Go", CancellationToken::new()).collect().await;
                        assert!(matches!(
                            events.last(),
                            Some(AgentEvent::ResponseDone { .. })
                        ));
                        black_box(events);
                    }
                });
            },
            BatchSize::PerIteration,
        );
    });
    group.finish();

    let earlier = earlier_conversation();
    let mut group = c.benchmark_group("1000_rounds_after_200_messages");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(8));
    group.bench_function("baseline/model_and_tools", |b| {
        let chain = NativeToolChain::new(tools());
        b.iter_batched(
            model,
            |model| rt.block_on(baseline(&model, &chain, &earlier)),
            BatchSize::PerIteration,
        );
    });
    group.bench_function("agent/run", |b| {
        b.iter_batched(
            || agent(model()),
            |agent| {
                rt.block_on(async {
                    for _ in 0..RUNS {
                        let input = AgentInput::text("Go").with_history(earlier.clone());
                        let outcome = agent.run(input).await.expect("the run ends");
                        assert_eq!(outcome.rounds, TOOL_ROUNDS + 1);
                        black_box(outcome);
                    }
                });
            },
            BatchSize::PerIteration,
        );
    });
    group.finish();

    let mut group = c.benchmark_group("100_answers_of_1000_deltas");
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(8));
    group.bench_function("baseline/collect", |b| {
        b.iter_batched(
            talker,
            |model| {
                rt.block_on(async {
                    for _ in 0..RUNS {
                        let request = ChatRequest::new(vec![
                            Message::system("You are a benchmark."),
                            Message::human("Go"),
                        ]);
                        let response = collect(model.stream(request).await.expect("scripted"))
                            .await
                            .expect("complete");
                        black_box(response);
                    }
                });
            },
            BatchSize::PerIteration,
        );
    });
    group.bench_function("agent/run", |b| {
        b.iter_batched(
            || agent(talker()),
            |agent| {
                rt.block_on(async {
                    for _ in 0..RUNS {
                        black_box(agent.run("Go").await.expect("the run ends"));
                    }
                });
            },
            BatchSize::PerIteration,
        );
    });
    group.bench_function("agent/stream", |b| {
        b.iter_batched(
            || agent(talker()),
            |agent| {
                rt.block_on(async {
                    for _ in 0..RUNS {
                        let events: Vec<AgentEvent> =
                            agent.stream("Go", CancellationToken::new()).collect().await;
                        assert_eq!(events.len(), ANSWER_WORDS + 2);
                        black_box(events);
                    }
                });
            },
            BatchSize::PerIteration,
        );
    });
    group.finish();

    let model: Arc<dyn ChatModel> = model();
    let tools = tools();
    c.bench_function("agent/build", |b| {
        b.iter(|| {
            Agent::builder()
                .model(Arc::clone(&model))
                .tools(tools.clone())
                .system("Per-request system prompt.")
                .max_rounds(5)
                .build()
                .expect("a model is set")
        });
    });
}

criterion_group!(benches, rounds);
criterion_main!(benches);

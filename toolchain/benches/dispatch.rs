//! Executing 100 no-op tool calls through each chain: the per-call dispatch overhead (parsing
//! the calls, lookup, input deserialisation, output rendering, formatting) without tool work.

use std::hint::black_box;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use serde::Deserialize;
use toolchain::{
    ExecutionContext, JsonSchema, JsonToolChain, NativeToolChain, Tool, ToolCall, ToolChain,
    ToolError, ToolResult, ToolSet, XmlFormat, async_trait,
};

const CALLS: usize = 100;

#[derive(Deserialize, JsonSchema)]
struct Input {
    /// Echoed nowhere; makes deserialisation do some work.
    n: u32,
}

struct Noop;

#[async_trait]
impl Tool<Input, u32> for Noop {
    fn name(&self) -> &str {
        "noop"
    }
    fn description(&self) -> &str {
        "Does nothing."
    }
    async fn call(&self, _: &ExecutionContext, input: Input) -> Result<ToolResult<u32>, ToolError> {
        Ok(ToolResult::text(input.n))
    }
}

fn dispatch(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let tools = ToolSet::new().with(Noop).unwrap();
    let ctx = ExecutionContext::new();
    let format = XmlFormat::new();

    let mut group = c.benchmark_group("dispatch_100_noop_calls");
    group.throughput(Throughput::Elements(CALLS as u64));

    let json_calls = format!(
        "[{}]",
        (0..CALLS)
            .map(|n| format!(r#"{{"tool": "noop", "args": {{"n": {n}}}}}"#))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let json = JsonToolChain::new(tools.clone());
    group.bench_function("json", |b| {
        b.iter(|| {
            let result = runtime
                .block_on(json.execute(&ctx, black_box(&json_calls), &format))
                .unwrap();
            assert_eq!(result.raw.error_count(), 0);
            result
        })
    });

    #[cfg(feature = "yaml")]
    {
        let yaml_calls: String = (0..CALLS)
            .map(|n| format!("- tool: noop\n  args:\n    n: {n}\n"))
            .collect();
        let yaml = toolchain::YamlToolChain::new(tools.clone());
        group.bench_function("yaml", |b| {
            b.iter(|| {
                let result = runtime
                    .block_on(yaml.execute(&ctx, black_box(&yaml_calls), &format))
                    .unwrap();
                assert_eq!(result.raw.error_count(), 0);
                result
            })
        });
    }

    let native_calls: Vec<ToolCall> = (0..CALLS)
        .map(|n| ToolCall::new(format!("call_{n}"), "noop", format!(r#"{{"n":{n}}}"#)))
        .collect();
    let native = NativeToolChain::new(tools);
    group.bench_function("native", |b| {
        b.iter_batched(
            || native_calls.clone(),
            |calls| {
                let round = runtime.block_on(native.execute(&ctx, black_box(&calls)));
                assert_eq!(round.raw.error_count(), 0);
                round
            },
            BatchSize::SmallInput,
        )
    });
    group.finish();
}

criterion_group!(benches, dispatch);
criterion_main!(benches);

//! Building (strict and repairing), validating and flattening generated chains of 1k, 10k and
//! 100k messages, beside a plain copy of the messages (`Vec::to_vec`), the floor for building.
//!
//! ```sh
//! MALLOC_TRIM_THRESHOLD_=4000000000 cargo bench -p chain-ast --features testing --bench chain
//! ```
//!
//! Two things would otherwise measure the machine rather than how the work scales:
//!
//! - Every size works on about 200 000 messages' worth of copies of its input (200 copies of
//!   the 1k chain, 20 of the 10k, 2 of the 100k; about 60 MB), one copy per iteration in turn,
//!   so each iteration reads its input from memory: a 10k chain alone (3 MB) would stay in the
//!   32 MB L3 cache between iterations, a 100k chain (30 MB) would not.
//! - glibc gives the heap's top back to the kernel when more than `M_TRIM_THRESHOLD` is free;
//!   after a 100k chain's 35 MB is dropped that is every batch, and the next batch faults the
//!   pages in again. `MALLOC_TRIM_THRESHOLD_` keeps them, as a process that keeps its chain
//!   would. Without it 100k took 14x to 26x the 10k time in our runs, instead of 9x to 12x
//!   (BENCHMARKS.md).
//!
//! Outputs are dropped outside the timing.

use std::hint::black_box;

use chain_ast::ChainAst;
use chain_ast::testing::{ChainConfig, generate_chain};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use messages::Message;

/// Messages' worth of copies each size works on.
const WORKING_SET: usize = 200_000;

/// About `messages` messages in sections of six: a question, a pair with two tool calls and
/// their two responses, and two completions.
fn chain(messages: usize, responses: bool) -> Vec<Message> {
    let sections = messages / 6;
    let pairs = sections * 3;
    generate_chain(&ChainConfig {
        include_system: true,
        sections,
        body_pairs_per_section: vec![3; sections],
        tools_for_body_pairs: (0..pairs).map(|pair| pair % 3 == 0).collect(),
        tool_calls_per_body_pair: vec![2; pairs],
        include_all_tool_responses: responses,
    })
}

/// Runs `routine` on the copies in turn.
fn rotate<'a, T, R>(copies: &'a [T], mut routine: impl FnMut(&'a T) -> R) -> impl FnMut() -> R {
    let mut next = 0;
    move || {
        let input = &copies[next % copies.len()];
        next += 1;
        routine(black_box(input))
    }
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("chain");
    for size in [1_000, 10_000, 100_000] {
        let copies = WORKING_SET / size;
        let valid = vec![chain(size, true); copies];
        let broken = vec![chain(size, false); copies];
        let asts: Vec<ChainAst> = valid
            .iter()
            .map(|chain| ChainAst::new(chain, false).expect("a generated chain is valid"))
            .collect();
        group.throughput(Throughput::Elements(valid[0].len() as u64));
        // The floor for construction: one plain copy of the messages.
        group.bench_function(BenchmarkId::new("copy", size), |b| {
            b.iter_with_large_drop(rotate(&valid, |chain| chain.to_vec()))
        });
        group.bench_function(BenchmarkId::new("build", size), |b| {
            b.iter_with_large_drop(rotate(&valid, |chain| ChainAst::new(chain, false)))
        });
        group.bench_function(BenchmarkId::new("build_repairing", size), |b| {
            b.iter_with_large_drop(rotate(&broken, |chain| ChainAst::new(chain, true)))
        });
        group.bench_function(BenchmarkId::new("validate", size), |b| {
            b.iter(rotate(&asts, ChainAst::validate))
        });
        group.bench_function(BenchmarkId::new("flatten", size), |b| {
            b.iter_with_large_drop(rotate(&asts, ChainAst::messages))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

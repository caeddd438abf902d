//! Hashing throughput, in bytes of message text per second.
//!
//! `cargo bench -p conversation-tree --bench hashing`

use std::hint::black_box;

use conversation_tree::{
    ContentPart, HashOptions, Message, Role, ToolCall, path_hash, prompt_hash, response_hash,
};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

fn text(bytes: usize) -> String {
    "The quick brown fox jumps over the lazy dog; jeder wackere Bayer vertilgt bequem zwo Pfund Kalbshaxen. "
        .chars()
        .cycle()
        .take(bytes)
        .collect()
}

fn hashing(c: &mut Criterion) {
    let mut group = c.benchmark_group("hash");
    let options = HashOptions::deterministic();

    let megabyte = [Message::human(text(1 << 20))];
    group.throughput(Throughput::Bytes(1 << 20));
    group.bench_function("prompt_hash/1MB human message", |b| {
        b.iter(|| prompt_hash(black_box(&megabyte), &options))
    });

    // A typical turn: a system prompt, a question with a 64 KB image, a tool result.
    let image: Vec<u8> = (0..64 * 1024u32).map(|i| (i % 251) as u8).collect();
    let turn = [
        Message::system(text(2_000)),
        Message::new(
            Role::Human,
            vec![
                ContentPart::text(text(1_000)),
                ContentPart::binary("image/png", image.clone()),
            ],
        ),
        Message::tool_response("call_1", "search", text(4_000)),
    ];
    group.throughput(Throughput::Bytes((7_000 + image.len()) as u64));
    group.bench_function("prompt_hash/turn with image and tool result", |b| {
        b.iter(|| prompt_hash(black_box(&turn), &options))
    });

    let arguments = serde_json::json!({
        "query": text(300),
        "filters": {"lang": ["en", "de"], "after": "2025-01-01", "nested": {"depth": [1, 2, {"k": "v"}]}},
        "limit": 10
    })
    .to_string();
    let response = Message::ai_tool_calls(
        Some(text(1_500)),
        vec![ToolCall::new("call_1", "search", arguments.clone())],
    );
    group.throughput(Throughput::Bytes((1_500 + arguments.len()) as u64));
    group.bench_function("response_hash/text and a tool call", |b| {
        b.iter(|| response_hash(black_box(&response)))
    });

    let (parent, prompt) = (
        prompt_hash(&megabyte, &options),
        prompt_hash(&turn, &options),
    );
    group.throughput(Throughput::Elements(1));
    group.bench_function("path_hash", |b| {
        b.iter(|| path_hash(Some(black_box(&parent)), black_box(&prompt)))
    });
    group.finish();
}

criterion_group!(benches, hashing);
criterion_main!(benches);

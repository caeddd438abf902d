//! Parsing speed of recorded provider streams: 10,000 content deltas per stream, decoded from
//! SSE bytes (in 16 KiB reads, like a socket delivers them) to `StreamEvent`s.
//!
//! Each provider adds one function building its stream from a real recorded event and one
//! `bench_stream` call; run with `cargo bench -p providers --bench parse`.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use futures::StreamExt;
use providers::EventStream;

const DELTAS: usize = 10_000;
const READ_SIZE: usize = 16 * 1024;

fn fixture(name: &str) -> String {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{path}: {err}"))
}

/// A body of `DELTAS` events made by `event` from a cycle of words, then the recorded
/// closing events.
fn build_stream(event: impl Fn(&str) -> String, closing: &str) -> Vec<u8> {
    let words = [
        "The ",
        "result ",
        "of ",
        "1231 ",
        "× ",
        "2331 ",
        "is ",
        "2,869,461",
        ". ",
    ];
    let mut body = String::new();
    for i in 0..DELTAS {
        body.push_str(&event(words[i % words.len()]));
    }
    body.push_str(closing);
    body.into_bytes()
}

fn bench_stream(
    c: &mut Criterion,
    name: &str,
    body: Vec<u8>,
    decode: fn(Vec<Vec<u8>>) -> EventStream,
) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let mut group = c.benchmark_group("parse_stream");
    group.throughput(Throughput::Elements(DELTAS as u64));
    group.bench_function(name, |b| {
        b.iter(|| {
            let reads: Vec<Vec<u8>> = body.chunks(READ_SIZE).map(<[u8]>::to_vec).collect();
            runtime.block_on(async {
                let mut stream = decode(reads);
                let mut events = 0_usize;
                while let Some(event) = stream.next().await {
                    event.expect("the benchmark stream parses");
                    events += 1;
                }
                assert!(events > DELTAS);
            });
        });
    });
    group.finish();
}

/// OpenAI Chat Completions: the recorded text delta of `chat_stream_text_after_tool.sse`.
fn openai_chat(c: &mut Criterion) {
    let recorded = fixture("openai/chat_stream_text_after_tool.sse");
    let events: Vec<&str> = recorded.split_inclusive("\n\n").collect();
    let template = events
        .iter()
        .find(|e| e.contains(r#""content":"The""#))
        .expect("a text delta event");
    let closing: String = events
        .iter()
        .filter(|e| {
            e.contains("finish_reason\":\"stop")
                || e.contains("\"choices\":[]")
                || e.contains("[DONE]")
        })
        .copied()
        .collect();
    let needle = r#""content":"The""#;
    let body = build_stream(
        |word| template.replacen(needle, &format!(r#""content":"{word}""#), 1),
        &closing,
    );
    bench_stream(c, "openai_chat_10k_deltas", body, |reads| {
        providers::openai::decode_chat_stream(futures::stream::iter(reads))
    });
}

/// Anthropic Messages: the recorded `text_delta` event of `stream_text_after_tool.sse` (JSON
/// padded with spaces, as the API sends it) between the recorded `message_start` /
/// `content_block_start` and `content_block_stop` / `message_delta` / `message_stop`.
#[cfg(feature = "anthropic")]
fn anthropic(c: &mut Criterion) {
    let recorded = fixture("anthropic/stream_text_after_tool.sse");
    let events: Vec<&str> = recorded.split_inclusive("\n\n").collect();
    let needle = r#""text":"The version is **""#;
    let delta = events
        .iter()
        .position(|e| e.contains(needle))
        .expect("a text delta");
    let last_delta = events
        .iter()
        .rposition(|e| e.contains("text_delta"))
        .expect("text deltas");
    let opening: String = events[..delta]
        .iter()
        .filter(|e| !e.contains("event: ping"))
        .copied()
        .collect();
    let closing: String = events[last_delta + 1..].concat();
    let mut body = opening.into_bytes();
    body.extend(build_stream(
        |word| events[delta].replacen(needle, &format!(r#""text":"{word}""#), 1),
        &closing,
    ));
    bench_stream(c, "anthropic_10k_deltas", body, |reads| {
        providers::anthropic::decode_stream(futures::stream::iter(reads))
    });
}

#[cfg(not(feature = "anthropic"))]
fn anthropic(_: &mut Criterion) {}

/// Gemini `streamGenerateContent?alt=sse`: the recorded text event of
/// `stream_text_after_function_call.sse` (CRLF framing, cumulative `usageMetadata` on every
/// event), closed by the recorded `finishReason` event.
#[cfg(feature = "gemini")]
fn gemini(c: &mut Criterion) {
    let recorded = fixture("gemini/stream_text_after_function_call.sse");
    let events: Vec<&str> = recorded.split_inclusive("\r\n\r\n").collect();
    let needle = r#""text": "The capital of Mexico""#;
    let template = events
        .iter()
        .find(|e| e.contains(needle))
        .expect("a text event");
    let closing = events
        .iter()
        .find(|e| e.contains("finishReason"))
        .expect("the closing event");
    let body = build_stream(
        |word| template.replacen(needle, &format!(r#""text": "{word}""#), 1),
        closing,
    );
    bench_stream(c, "gemini_10k_deltas", body, |reads| {
        providers::gemini::decode_stream(futures::stream::iter(reads))
    });
}

#[cfg(not(feature = "gemini"))]
fn gemini(_: &mut Criterion) {}

/// The SSE framing alone, same body and reads, for the crate the adapters use (sseer) and the
/// one the project brief names (eventsource-stream): the floor under the full parse, and the
/// reason for the choice (`src/http/sse.rs`).
fn sse_framing(c: &mut Criterion) {
    use eventsource_stream::Eventsource;
    let recorded = fixture("openai/chat_stream_text_after_tool.sse");
    let template = recorded
        .split_inclusive("\n\n")
        .find(|e| e.contains(r#""content":"The""#))
        .expect("delta")
        .to_owned();
    let body = build_stream(|_| template.clone(), "");
    let reads = || -> Vec<Result<bytes::Bytes, std::convert::Infallible>> {
        body.chunks(READ_SIZE)
            .map(|c| Ok(bytes::Bytes::copy_from_slice(c)))
            .collect()
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let mut group = c.benchmark_group("sse_framing_only");
    group.throughput(Throughput::Elements(DELTAS as u64));
    group.bench_function("sseer", |b| {
        b.iter(|| {
            let reads = reads();
            runtime.block_on(async {
                let mut events = Box::pin(sseer::EventStream::new(futures::stream::iter(reads)));
                let mut n = 0;
                while let Some(e) = events.next().await {
                    assert!(e.is_ok(), "the benchmark body frames");
                    n += 1;
                }
                assert_eq!(n, DELTAS);
            });
        });
    });
    group.bench_function("eventsource_stream", |b| {
        b.iter(|| {
            let reads = reads();
            runtime.block_on(async {
                let mut events = futures::stream::iter(reads).eventsource();
                let mut n = 0;
                while let Some(e) = events.next().await {
                    assert!(e.is_ok(), "the benchmark body frames");
                    n += 1;
                }
                assert_eq!(n, DELTAS);
            });
        });
    });
    group.finish();
}

criterion_group!(benches, openai_chat, gemini, anthropic, sse_framing);
criterion_main!(benches);

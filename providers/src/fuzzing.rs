//! The stream decoders' fuzz targets (`fuzz/`), shared with their proptest twins
//! (`tests/fuzz_targets.rs`); not a stable API.
//!
//! Each target reads the fuzzer's bytes with [`messages::fuzzing::Input`]. The first byte
//! picks the mode: raw (the rest is the SSE body as is) or structured: a recorded stream of
//! `tests/fixtures/` replayed event by event, where each event is kept, mutated (any number
//! may become `u64::MAX`, `4294967295`, `-1`, `1e400`…; see [`messages::fuzzing::mutate`]),
//! dropped, repeated, replaced by another recorded event or by a garbage line. The body is
//! then cut into reads at arbitrary places and decoded without HTTP, and the stream must
//! keep its contract: it ends with exactly one `Done` or with an error, nothing after either,
//! at most one `Usage`.

use std::sync::OnceLock;

use futures::StreamExt as _;
use messages::fuzzing::{Input, block_on_ready, mutate};
use serde_json::Value;

use crate::{EventStream, StreamEvent};

/// One recorded SSE event: its `event:` name, and its `data:` as JSON (or as text when it is
/// not JSON, such as `[DONE]`).
struct Event {
    name: Option<String>,
    data: Result<Value, String>,
}

/// The recorded streams of one decoder, and all their events in one pool.
struct Recordings {
    streams: Vec<Vec<Event>>,
    /// (stream, event) of every event.
    pool: Vec<(usize, usize)>,
}

/// Events kept from the start and the end of a long recording (so one run stays fast).
const KEEP_FIRST: usize = 30;
const KEEP_LAST: usize = 10;
/// Events a structured body may add after its recording.
const MAX_EXTRA_EVENTS: usize = 64;

impl Recordings {
    fn new(files: &[&str]) -> Self {
        let streams: Vec<Vec<Event>> = files.iter().map(|file| events(file)).collect();
        let pool = streams
            .iter()
            .enumerate()
            .flat_map(|(s, events)| (0..events.len()).map(move |e| (s, e)))
            .collect();
        Recordings { streams, pool }
    }

    fn any(&self, input: &mut Input<'_>) -> &Event {
        let (stream, event) = self.pool[input.below(self.pool.len())];
        &self.streams[stream][event]
    }
}

fn events(file: &str) -> Vec<Event> {
    let mut events: Vec<Event> = file
        .split("\n\n")
        .filter_map(|block| {
            let mut name = None;
            let mut data = None;
            for line in block.lines() {
                if let Some(value) = line.strip_prefix("event:") {
                    name = Some(value.trim().to_owned());
                } else if let Some(value) = line.strip_prefix("data:") {
                    data = Some(value.trim().to_owned());
                }
            }
            let data = data?;
            Some(Event {
                name,
                data: serde_json::from_str(&data).map_err(|_| data),
            })
        })
        .collect();
    if events.len() > KEEP_FIRST + KEEP_LAST {
        events.drain(KEEP_FIRST..events.len() - KEEP_LAST);
    }
    events
}

fn write_event(body: &mut String, event: &Event, input: Option<&mut Input<'_>>, words: &[&str]) {
    if let Some(name) = &event.name {
        body.push_str("event: ");
        body.push_str(name);
        body.push('\n');
    }
    body.push_str("data: ");
    match (&event.data, input) {
        (Ok(value), Some(input)) => body.push_str(&mutate(value, input, words)),
        (Ok(value), None) => body.push_str(&value.to_string()),
        (Err(text), _) => body.push_str(text),
    }
    body.push_str("\n\n");
}

/// A structured body: one recording replayed with each event kept (the choice of an
/// exhausted input), mutated, dropped, doubled or replaced, then extra events while choices
/// remain.
fn structured(input: &mut Input<'_>, recordings: &Recordings, words: &[&str]) -> Vec<u8> {
    let stream = &recordings.streams[input.below(recordings.streams.len())];
    let mut body = String::new();
    for event in stream {
        match input.byte() % 16 {
            0..=9 => write_event(&mut body, event, None, words),
            10 | 11 => write_event(&mut body, event, Some(input), words),
            12 => {}
            13 => {
                write_event(&mut body, event, None, words);
                write_event(&mut body, event, Some(input), words);
            }
            14 => {
                let other = recordings.any(input);
                write_event(&mut body, other, Some(input), words);
            }
            _ => {
                body.push_str(&input.text(80));
                body.push('\n');
            }
        }
    }
    for _ in 0..MAX_EXTRA_EVENTS {
        if input.is_empty() {
            break;
        }
        let other = recordings.any(input);
        write_event(&mut body, other, Some(input), words);
    }
    body.into_bytes()
}

/// Runs one decoder over the body `data` describes and checks the stream contract; true
/// when the stream ended with `Done`.
fn run(
    data: &[u8],
    recordings: &Recordings,
    words: &[&str],
    decode: fn(Vec<Vec<u8>>) -> EventStream,
) -> bool {
    let mut input = Input::new(data);
    let mode = input.byte();
    let cuts: Vec<usize> = (0..input.below(4)).map(|_| input.below(1 << 16)).collect();
    let body = if mode.is_multiple_of(4) {
        input.rest().to_vec()
    } else {
        structured(&mut input, recordings, words)
    };
    let mut cuts: Vec<usize> = cuts.into_iter().map(|cut| cut % (body.len() + 1)).collect();
    cuts.sort_unstable();
    let mut pieces = Vec::with_capacity(cuts.len() + 1);
    let mut start = 0;
    for cut in cuts {
        pieces.push(body[start..cut].to_vec());
        start = cut;
    }
    pieces.push(body[start..].to_vec());

    // The body is in memory: the decoder never waits.
    let events = block_on_ready(decode(pieces).collect::<Vec<_>>(), 1);
    let last = events
        .len()
        .checked_sub(1)
        .expect("a stream ends with Done or an error");
    for (i, event) in events.iter().enumerate() {
        if matches!(event, Ok(StreamEvent::Done { .. }) | Err(_)) {
            assert_eq!(i, last, "nothing follows Done or an error: {events:?}");
        }
    }
    assert!(
        matches!(events[last], Ok(StreamEvent::Done { .. }) | Err(_)),
        "a stream ends with Done or an error: {:?}",
        events[last]
    );
    let usages = events
        .iter()
        .filter(|event| matches!(event, Ok(StreamEvent::Usage(_))))
        .count();
    assert!(usages <= 1, "at most one Usage: {events:?}");
    events[last].is_ok()
}

macro_rules! fixtures {
    ($($path:literal),* $(,)?) => {
        &[$(include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/", $path))),*]
    };
}

/// OpenAI Chat Completions (and DeepSeek's `reasoning_content`) stream decoding.
#[cfg(feature = "openai")]
pub fn openai_chat(data: &[u8]) -> bool {
    static RECORDINGS: OnceLock<Recordings> = OnceLock::new();
    let recordings = RECORDINGS.get_or_init(|| {
        Recordings::new(fixtures![
            "openai/chat_stream_tool_call.sse",
            "openai/chat_stream_tool_call_obfuscation.sse",
            "openai/chat_stream_parallel_tools.sse",
            "openai/chat_stream_parallel_same_tool.sse",
            "openai/chat_stream_text_after_tool.sse",
            "deepseek/chat_stream_reasoning_content.sse",
        ])
    });
    const WORDS: &[&str] = &[
        "[DONE]",
        "stop",
        "length",
        "tool_calls",
        "content_filter",
        "function_call",
        "function",
        "assistant",
        "index",
        "tool_calls",
        "arguments",
        "reasoning_content",
        "usage",
        "prompt_tokens",
        "completion_tokens",
        "{\"a\":",
        "}",
    ];
    run(data, recordings, WORDS, |pieces| {
        crate::openai::decode_chat_stream(futures::stream::iter(pieces))
    })
}

/// OpenAI Responses API stream decoding.
#[cfg(feature = "openai")]
pub fn openai_responses(data: &[u8]) -> bool {
    static RECORDINGS: OnceLock<Recordings> = OnceLock::new();
    let recordings = RECORDINGS.get_or_init(|| {
        Recordings::new(fixtures![
            "openai/responses_stream_text.sse",
            "openai/responses_stream_function_call.sse",
            "openai/responses_stream_parallel_function_calls.sse",
            "openai/responses_stream_reasoning_function_call.sse",
            "openai/responses_stream_reasoning_followup_text.sse",
            "openai/responses_stream_reasoning_summary.sse",
        ])
    });
    const WORDS: &[&str] = &[
        "response.created",
        "response.output_item.added",
        "response.output_item.done",
        "response.output_text.delta",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.reasoning_summary_text.delta",
        "response.completed",
        "response.incomplete",
        "response.failed",
        "error",
        "function_call",
        "reasoning",
        "message",
        "output_text",
        "completed",
        "incomplete",
        "max_output_tokens",
    ];
    run(data, recordings, WORDS, |pieces| {
        crate::openai::decode_responses_stream(futures::stream::iter(pieces))
    })
}

/// Anthropic Messages stream decoding.
#[cfg(feature = "anthropic")]
pub fn anthropic(data: &[u8]) -> bool {
    static RECORDINGS: OnceLock<Recordings> = OnceLock::new();
    let recordings = RECORDINGS.get_or_init(|| {
        Recordings::new(fixtures![
            "anthropic/stream_text.sse",
            "anthropic/stream_text_after_tool.sse",
            "anthropic/stream_parallel_tool_use.sse",
            "anthropic/stream_thinking_text.sse",
            "anthropic/stream_thinking_tool_use.sse",
            "anthropic/stream_redacted_thinking.sse",
            "anthropic/stream_server_tool_then_tool_use.sse",
        ])
    });
    const WORDS: &[&str] = &[
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
        "error",
        "text",
        "text_delta",
        "thinking",
        "thinking_delta",
        "signature_delta",
        "redacted_thinking",
        "tool_use",
        "input_json_delta",
        "server_tool_use",
        "end_turn",
        "tool_use",
        "max_tokens",
        "overloaded_error",
    ];
    run(data, recordings, WORDS, |pieces| {
        crate::anthropic::decode_stream(futures::stream::iter(pieces))
    })
}

/// Gemini `streamGenerateContent?alt=sse` decoding.
#[cfg(feature = "gemini")]
pub fn gemini(data: &[u8]) -> bool {
    static RECORDINGS: OnceLock<Recordings> = OnceLock::new();
    let recordings = RECORDINGS.get_or_init(|| {
        Recordings::new(fixtures![
            "gemini/stream_text.sse",
            "gemini/stream_text_after_function_call.sse",
            "gemini/stream_parallel_function_calls.sse",
            "gemini/stream_function_call_signature.sse",
            "gemini/stream_thinking.sse",
        ])
    });
    const WORDS: &[&str] = &[
        "candidates",
        "content",
        "parts",
        "text",
        "thought",
        "thoughtSignature",
        "functionCall",
        "name",
        "args",
        "finishReason",
        "STOP",
        "MAX_TOKENS",
        "SAFETY",
        "MALFORMED_FUNCTION_CALL",
        "usageMetadata",
        "promptTokenCount",
        "candidatesTokenCount",
        "thoughtsTokenCount",
        "error",
    ];
    run(data, recordings, WORDS, |pieces| {
        crate::gemini::decode_stream(futures::stream::iter(pieces))
    })
}

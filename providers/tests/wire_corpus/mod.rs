//! Helpers of `wire_corpus.rs`: the corpus on disk, framing a recording into the SSE body the
//! decoders read (exactly as `fold.py` frames it), decoding it with the public decoders, and
//! turning Skein's answer into the shape of the expected JSON so that the two compare field by
//! field.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use bytes::Bytes;
use futures::StreamExt;
use providers::gemini::MINTED_ID_PREFIX;
use providers::{ChatResponse, ContentPart, EventStream, ProviderError, Reasoning, collect};
use serde_json::{Value, json};

/// How many recordings the corpus holds.
pub(crate) const CORPUS_FILES: usize = 158;

/// `tests/fixtures/wire_corpus`: the recordings (byte-exact copies, with their READMEs).
pub(crate) fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/wire_corpus")
}

/// `tests/wire_corpus/expected`: what `fold.py` says each recording holds.
pub(crate) fn expected_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/wire_corpus/expected")
}

/// Which public decoder reads a recording.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Decoder {
    /// `openai::decode_chat_stream`.
    Chat,
    /// `openai::decode_responses_stream`.
    Responses,
    /// `anthropic::decode_stream`.
    Anthropic,
    /// `gemini::decode_stream`.
    Gemini,
}

impl Decoder {
    /// The decoder of a corpus folder (the same table as `FOLDERS` in `fold.py`).
    pub(crate) fn of_folder(folder: &str) -> Option<Decoder> {
        Some(match folder {
            "anthropic-sdk-python" | "vercel-ai-anthropic" => Decoder::Anthropic,
            "openai-python" | "vercel-ai-openai-chat" | "vercel-ai-openai-compatible" => {
                Decoder::Chat
            }
            "vercel-ai-google" => Decoder::Gemini,
            "vercel-ai-openai-responses" => Decoder::Responses,
            _ => return None,
        })
    }

    /// The name `fold.py` writes in `decoder`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Decoder::Chat => "chat",
            Decoder::Responses => "responses",
            Decoder::Anthropic => "anthropic",
            Decoder::Gemini => "gemini",
        }
    }

    fn decode(self, pieces: Vec<Bytes>) -> EventStream {
        let body = futures::stream::iter(pieces);
        match self {
            Decoder::Chat => providers::openai::decode_chat_stream(body),
            Decoder::Responses => providers::openai::decode_responses_stream(body),
            Decoder::Anthropic => providers::anthropic::decode_stream(body),
            Decoder::Gemini => providers::gemini::decode_stream(body),
        }
    }
}

/// Every recording of the corpus as (folder, file name), sorted; READMEs left out.
pub(crate) fn corpus_files() -> Vec<(String, String)> {
    let mut files = Vec::new();
    let root = corpus_dir();
    let mut folders: Vec<_> = std::fs::read_dir(&root)
        .unwrap_or_else(|err| panic!("cannot list {}: {err}", root.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.is_dir())
        .collect();
    folders.sort();
    for folder in folders {
        let folder_name = file_name(&folder);
        let mut names: Vec<String> = std::fs::read_dir(&folder)
            .unwrap_or_else(|err| panic!("cannot list {}: {err}", folder.display()))
            .map(|entry| file_name(&entry.expect("a directory entry").path()))
            .filter(|name| name != "README.md")
            .collect();
        names.sort();
        files.extend(names.into_iter().map(|name| (folder_name.clone(), name)));
    }
    files
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .and_then(|name| name.to_str())
        .expect("a UTF-8 file name")
        .to_owned()
}

/// Python's `bytes.strip()` whitespace.
fn is_blank(line: &[u8]) -> bool {
    line.iter().all(|b| b" \t\n\r\x0b\x0c".contains(b))
}

/// Whether a recording is a raw SSE body (used byte for byte) rather than one JSON payload per
/// line: every `.txt` / `.sse` file, and a `.chunks.txt` whose first non-blank line starts with
/// `data:` or `event:`.
pub(crate) fn is_raw_sse(name: &str, data: &[u8]) -> bool {
    if !name.ends_with(".chunks.txt") {
        return true;
    }
    data.split(|&b| b == b'\n')
        .find(|line| !is_blank(line))
        .is_some_and(|line| line.starts_with(b"data:") || line.starts_with(b"event:"))
}

/// The SSE body the decoders read, framed as `fold.py` frames it: payload lines become
/// `event: <type>` (Anthropic and Responses, when the line is a JSON object with a string
/// `type`) and `data: <line>` events, and Chat bodies end with `data: [DONE]`.
pub(crate) fn frame(name: &str, data: &[u8], decoder: Decoder) -> Vec<u8> {
    if is_raw_sse(name, data) {
        return data.to_vec();
    }
    let mut out = Vec::with_capacity(data.len() * 2);
    for line in data.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if is_blank(line) {
            continue;
        }
        if matches!(decoder, Decoder::Anthropic | Decoder::Responses) {
            let kind = serde_json::from_slice::<Value>(line)
                .ok()
                .and_then(|payload| payload.get("type")?.as_str().map(str::to_owned));
            if let Some(kind) = kind {
                out.extend_from_slice(b"event: ");
                out.extend_from_slice(kind.as_bytes());
                out.push(b'\n');
            }
        }
        out.extend_from_slice(b"data: ");
        out.extend_from_slice(line);
        out.extend_from_slice(b"\n\n");
    }
    if decoder == Decoder::Chat {
        out.extend_from_slice(b"data: [DONE]\n\n");
    }
    out
}

/// FNV-1a (64 bit), as `fold.py` writes it in `body_fnv1a64`.
pub(crate) fn fnv1a64(data: &[u8]) -> String {
    let mut value: u64 = 0xcbf2_9ce4_8422_2325;
    for &byte in data {
        value ^= u64::from(byte);
        value = value.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{value:016x}")
}

/// One way of cutting a body into reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Split {
    /// The whole body in one read.
    Whole,
    /// One byte per read.
    Bytes,
    /// Reads of 1..=`max` bytes, lengths from a small LCG seeded with `seed`.
    Random {
        /// The seed (mixed with the file name).
        seed: u64,
        /// The longest read.
        max: usize,
    },
}

impl std::fmt::Display for Split {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Split::Whole => f.write_str("whole body"),
            Split::Bytes => f.write_str("one byte per read"),
            Split::Random { seed, max } => {
                write!(f, "random reads of 1..={max} bytes (seed {seed})")
            }
        }
    }
}

/// The ways every recording is decoded.
pub(crate) fn splits() -> Vec<Split> {
    vec![
        Split::Whole,
        Split::Bytes,
        Split::Random { seed: 1, max: 7 },
        Split::Random { seed: 2, max: 97 },
        Split::Random { seed: 3, max: 4099 },
    ]
}

/// `body` cut into reads as `split` says (`stream` seeds the random cuts).
pub(crate) fn pieces(body: &Bytes, split: &Split, stream: &str) -> Vec<Bytes> {
    match split {
        Split::Whole => vec![body.clone()],
        Split::Bytes => (0..body.len()).map(|i| body.slice(i..i + 1)).collect(),
        Split::Random { seed, max } => {
            // Knuth's MMIX LCG; the high bits pick each read's length.
            let mut state = u64::from_str_radix(&fnv1a64(stream.as_bytes()), 16).expect("hex")
                ^ seed.wrapping_mul(0x9e37_79b9_7f4a_7c15);
            let mut out = Vec::new();
            let mut start = 0;
            while start < body.len() {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                let len = 1 + (state >> 33) as usize % max;
                let end = (start + len).min(body.len());
                out.push(body.slice(start..end));
                start = end;
            }
            out
        }
    }
}

/// What a decoder made of a recording: Skein's answer in the expected JSON's shape, or the
/// error's kind.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Outcome {
    /// The collected answer, as JSON, and the message itself (for the round-trip check).
    Answer(Value, Box<ChatResponse>),
    /// The kind (`"truncated"`, `"protocol"`, `{"kind": "stream", "retryable": …}`, …) and the
    /// error's message.
    Error(Value, String),
}

/// Decodes `pieces` with `decoder`: the first error, or the events folded by `collect`.
pub(crate) async fn decode(decoder: Decoder, pieces: Vec<Bytes>) -> Outcome {
    let mut stream = decoder.decode(pieces);
    let mut events = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(event) => events.push(event),
            Err(err) => return error_outcome(&err),
        }
    }
    let replay: EventStream = Box::pin(futures::stream::iter(events.into_iter().map(Ok)));
    match collect(replay).await {
        Ok(response) => Outcome::Answer(answer_json(&response), Box::new(response)),
        Err(err) => error_outcome(&err),
    }
}

fn error_outcome(err: &ProviderError) -> Outcome {
    let kind = match err {
        ProviderError::Stream { retryable, .. } => {
            json!({"kind": "stream", "retryable": retryable})
        }
        ProviderError::StreamTruncated { .. } => json!("truncated"),
        ProviderError::Decode { .. } => json!("protocol"),
        ProviderError::LimitExceeded { .. } => json!("limit_exceeded"),
        other => json!(format!("other: {other:?}")),
    };
    Outcome::Error(kind, err.to_string())
}

/// The opaque values of one reasoning, in the order `fold.py` lists them.
fn opaque_values(reasoning: &Reasoning, out: &mut Vec<Value>) {
    for (field, value) in [
        ("id", &reasoning.id),
        ("signature", &reasoning.signature),
        ("encrypted", &reasoning.encrypted),
    ] {
        if let Some(value) = value {
            out.push(json!({ field: value }));
        }
    }
}

/// Skein's answer in the shape of the expected JSON.
pub(crate) fn answer_json(response: &ChatResponse) -> Value {
    let mut text = String::new();
    let mut reasoning_text = String::new();
    let mut blocks = Vec::new();
    let mut opaque = Vec::new();
    let mut calls = Vec::new();
    for part in &response.message.parts {
        match part {
            ContentPart::Text {
                text: piece,
                reasoning,
            } => {
                text.push_str(piece);
                if let Some(reasoning) = reasoning {
                    opaque_values(reasoning, &mut opaque);
                }
            }
            ContentPart::Reasoning(reasoning) => {
                reasoning_text.push_str(&reasoning.text);
                blocks.push(Value::String(reasoning.text.clone()));
                opaque_values(reasoning, &mut opaque);
            }
            ContentPart::ToolCall(call) => calls.push(json!({
                "id": call.id,
                "name": call.name,
                "arguments": call.arguments,
                "signature": call.reasoning.as_ref().and_then(|r| r.signature.clone()),
            })),
            _ => {}
        }
    }
    let usage = &response.usage;
    json!({
        "id": response.id,
        "model": response.model,
        "text": text,
        "reasoning": {"text": reasoning_text, "blocks": blocks, "opaque": opaque},
        "tool_calls": calls,
        "finish": serde_json::to_value(&response.finish_reason).expect("a finish reason serialises"),
        "usage": {
            "input": usage.input_tokens,
            "output": usage.output_tokens,
            "cached_input": usage.cached_input_tokens,
            "cache_creation": usage.cache_creation_tokens,
            "reasoning": usage.reasoning_tokens,
        },
    })
}

/// The fields of an answer that are compared, as JSON pointers.
pub(crate) const FIELDS: [&str; 9] = [
    "/id",
    "/model",
    "/text",
    "/reasoning/text",
    "/reasoning/blocks",
    "/reasoning/opaque",
    "/tool_calls",
    "/finish",
    "/usage",
];

/// `actual`'s tool calls made comparable with `expected`'s: an id the wire did not give
/// (`null` in the expected answer) must be one Skein minted and compares as `null`; Gemini
/// arguments (`arguments_compare: json`) compare as parsed JSON.
pub(crate) fn comparable_calls(expected: &Value, actual: &Value, json_arguments: bool) -> Value {
    let (Some(expected), Some(actual)) = (expected.as_array(), actual.as_array()) else {
        return actual.clone();
    };
    let calls = actual.iter().enumerate().map(|(i, call)| {
        let mut call = call.clone();
        let wire_id = expected.get(i).map(|e| &e["id"]);
        if wire_id == Some(&Value::Null)
            && call["id"]
                .as_str()
                .is_some_and(|id| id.starts_with(MINTED_ID_PREFIX))
        {
            call["id"] = Value::Null;
        }
        if json_arguments
            && let Some(parsed) = call["arguments"]
                .as_str()
                .and_then(|text| serde_json::from_str::<Value>(text).ok())
        {
            call["arguments"] = parsed;
        }
        call
    });
    Value::Array(calls.collect())
}

/// `expected`'s tool calls with Gemini arguments parsed (see [`comparable_calls`]).
pub(crate) fn expected_calls(expected: &Value, json_arguments: bool) -> Value {
    let mut calls = expected.clone();
    if json_arguments {
        for call in calls.as_array_mut().into_iter().flatten() {
            if let Some(parsed) = call["arguments"]
                .as_str()
                .and_then(|text| serde_json::from_str::<Value>(text).ok())
            {
                call["arguments"] = parsed;
            }
        }
    }
    calls
}

/// The opaque values (and call signatures) of an expected answer that are not in `response`'s
/// message after a serde round trip of the message (the transcript form Skein stores and sends
/// back from).
pub(crate) fn lost_opaque_values(expected: &Value, response: &ChatResponse) -> Vec<String> {
    let text = serde_json::to_string(&response.message).expect("a message serialises");
    let message: providers::Message =
        serde_json::from_str(&text).expect("a serialised message reads back");
    let mut lost = Vec::new();
    if message != response.message {
        lost.push("the message changes in a serde round trip".to_owned());
    }
    let mut carried: Vec<(String, String)> = Vec::new();
    let mut keep = |reasoning: &Reasoning| {
        for (field, value) in [
            ("id", &reasoning.id),
            ("signature", &reasoning.signature),
            ("encrypted", &reasoning.encrypted),
        ] {
            if let Some(value) = value {
                carried.push((field.to_owned(), value.clone()));
            }
        }
    };
    let mut call_signatures = Vec::new();
    for part in &message.parts {
        match part {
            ContentPart::Reasoning(reasoning) => keep(reasoning),
            ContentPart::Text {
                reasoning: Some(reasoning),
                ..
            } => keep(reasoning),
            ContentPart::ToolCall(call) => {
                call_signatures.push(call.reasoning.as_ref().and_then(|r| r.signature.clone()))
            }
            _ => {}
        }
    }
    for value in expected["reasoning"]["opaque"]
        .as_array()
        .into_iter()
        .flatten()
    {
        for (field, value) in value.as_object().into_iter().flatten() {
            let value = value.as_str().unwrap_or_default();
            if !carried.iter().any(|(f, v)| f == field && v == value) {
                lost.push(format!("{field} {}", excerpt(value, 60)));
            }
        }
    }
    for (i, call) in expected["tool_calls"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        if let Some(signature) = call["signature"].as_str()
            && call_signatures.get(i).cloned().flatten().as_deref() != Some(signature)
        {
            lost.push(format!(
                "signature of tool call {i} {}",
                excerpt(signature, 60)
            ));
        }
    }
    lost
}

/// `text` cut to about `max` characters (on a char boundary), with its length when cut.
pub(crate) fn excerpt(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return format!("{text:?}");
    }
    let cut: String = text.chars().take(max).collect();
    format!("{cut:?}… ({} chars)", text.chars().count())
}

/// A readable account of how `actual` (Skein's) differs from `expected` (the wire's): down to
/// the first differing element of a list and the differing keys of an object.
pub(crate) fn describe(expected: &Value, actual: &Value) -> String {
    match (expected, actual) {
        (Value::String(wire), Value::String(skein)) => {
            let common = wire
                .chars()
                .zip(skein.chars())
                .take_while(|(a, b)| a == b)
                .count();
            if common == 0 {
                return format!(
                    "wire {} vs Skein {}",
                    excerpt(wire, 120),
                    excerpt(skein, 120)
                );
            }
            let wire_rest: String = wire.chars().skip(common).collect();
            let skein_rest: String = skein.chars().skip(common).collect();
            format!(
                "the first {common} chars agree, then wire {} vs Skein {}",
                excerpt(&wire_rest, 80),
                excerpt(&skein_rest, 80)
            )
        }
        (Value::Array(wire), Value::Array(skein)) if wire.len() == skein.len() => {
            match (0..wire.len()).find(|&i| wire[i] != skein[i]) {
                Some(i) => format!("[{i}] {}", describe(&wire[i], &skein[i])),
                None => "equal".to_owned(),
            }
        }
        (Value::Array(wire), Value::Array(skein)) => format!(
            "wire {} items {} vs Skein {} items {}",
            wire.len(),
            compact(&shorten(expected), 700),
            skein.len(),
            compact(&shorten(actual), 700)
        ),
        (Value::Object(wire), Value::Object(skein)) => {
            let keys: BTreeSet<&String> = wire.keys().chain(skein.keys()).collect();
            let null = Value::Null;
            let differences: Vec<String> = keys
                .into_iter()
                .filter(|key| wire.get(*key) != skein.get(*key))
                .map(|key| {
                    let (w, s) = (
                        wire.get(key).unwrap_or(&null),
                        skein.get(key).unwrap_or(&null),
                    );
                    format!("{key}: {}", describe(w, s))
                })
                .collect();
            differences.join("; ")
        }
        _ => format!(
            "wire {} vs Skein {}",
            compact(expected, 300),
            compact(actual, 300)
        ),
    }
}

/// `value` with every long string cut (signatures and the like), for a readable report.
fn shorten(value: &Value) -> Value {
    match value {
        Value::String(text) if text.chars().count() > 40 => {
            let cut: String = text.chars().take(24).collect();
            Value::String(format!("{cut}… ({} chars)", text.chars().count()))
        }
        Value::Array(items) => Value::Array(items.iter().map(shorten).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, value)| (key.clone(), shorten(value)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn compact(value: &Value, max: usize) -> String {
    let text = value.to_string();
    if text.chars().count() <= max {
        return text;
    }
    let cut: String = text.chars().take(max).collect();
    format!("{cut}… ({} chars)", text.chars().count())
}

//! Building blocks of the fuzz targets (`fuzz/`) and their proptest twins; not a stable API.
//!
//! A target is one function of `&[u8]` that the `cargo fuzz` target and a bounded proptest
//! both call, so CI runs exactly what the fuzzer runs. Targets that read JSON are
//! structure-aware: [`Input`] reads the fuzzer's bytes as choices, and [`mutate`] writes a
//! template event or document back as JSON text in which any number may become an arbitrary
//! numeral (`u64::MAX`, `-1`, `1e400`, 30 digits…), any string an arbitrary one, any member
//! may be dropped or replaced by a value of another type. An exhausted input chooses zeros,
//! and zeros keep the template as it is, so short inputs reach deep into the parsers.

use serde_json::Value;

/// The fuzzer's bytes, read as a sequence of choices. Reading past the end yields zeros.
#[derive(Clone, Debug)]
pub struct Input<'a> {
    data: &'a [u8],
}

impl<'a> Input<'a> {
    /// Choices read from `data`.
    pub fn new(data: &'a [u8]) -> Self {
        Input { data }
    }

    /// Whether every byte has been read.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// The next byte (0 once exhausted).
    pub fn byte(&mut self) -> u8 {
        match self.data.split_first() {
            Some((&first, rest)) => {
                self.data = rest;
                first
            }
            None => 0,
        }
    }

    /// A number below `n` (0 when `n` is 0), from one byte when `n` ≤ 256, else two.
    pub fn below(&mut self, n: usize) -> usize {
        match n {
            0 => 0,
            1..=256 => usize::from(self.byte()) % n,
            _ => (usize::from(self.byte()) | usize::from(self.byte()) << 8) % n,
        }
    }

    /// Eight bytes, little-endian.
    pub fn u64(&mut self) -> u64 {
        let mut bytes = [0_u8; 8];
        for byte in &mut bytes {
            *byte = self.byte();
        }
        u64::from_le_bytes(bytes)
    }

    /// Up to `max` bytes (a length byte, then the bytes).
    pub fn bytes(&mut self, max: usize) -> &'a [u8] {
        let len = self.below(max.saturating_add(1)).min(self.data.len());
        let (taken, rest) = self.data.split_at(len);
        self.data = rest;
        taken
    }

    /// Up to `max` bytes as text (invalid UTF-8 replaced).
    pub fn text(&mut self, max: usize) -> String {
        String::from_utf8_lossy(self.bytes(max)).into_owned()
    }

    /// Everything not read yet.
    pub fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.data)
    }
}

/// Numerals that sit on a boundary of some integer or float type, or past every one.
const EDGE_NUMBERS: &[&str] = &[
    "0",
    "-0",
    "1",
    "-1",
    "255",
    "256",
    "65535",
    "65536",
    "2147483647",
    "2147483648",
    "-2147483649",
    "4294967295",
    "4294967296",
    "9007199254740993",
    "9223372036854775807",
    "-9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "-18446744073709551617",
    "340282366920938463463374607431768211456",
    "0.5",
    "-0.0",
    "1.5",
    "1e2",
    "1E+308",
    "1e400",
    "-1e400",
    "1e-400",
    "4.9e-324",
    "123456789012345678901234567890.5",
];

/// An arbitrary JSON numeral: small, edge, any `u64` / `i64` / `u32`, any finite `f64`.
pub fn number(input: &mut Input<'_>) -> String {
    match input.byte() % 6 {
        0 => input.byte().to_string(),
        1 => EDGE_NUMBERS[input.below(EDGE_NUMBERS.len())].to_owned(),
        2 => input.u64().to_string(),
        3 => (input.u64() as i64).to_string(),
        4 => (input.u64() as u32).to_string(),
        _ => {
            let float = f64::from_bits(input.u64());
            if float.is_finite() {
                format!("{float:?}")
            } else {
                "1e999".to_owned()
            }
        }
    }
}

/// An arbitrary JSON string literal (quotes included): a word of `dictionary`, arbitrary
/// text, or a long run.
pub fn string(input: &mut Input<'_>, dictionary: &[&str]) -> String {
    let text = match input.byte() % 4 {
        0 if !dictionary.is_empty() => dictionary[input.below(dictionary.len())].to_owned(),
        1 => "x".repeat(input.below(1 << 16)),
        _ => input.text(64),
    };
    Value::String(text).to_string()
}

/// An arbitrary JSON value at most `depth` containers deep; object keys come from
/// `dictionary` or are arbitrary.
pub fn value(input: &mut Input<'_>, depth: usize, dictionary: &[&str]) -> String {
    let kinds = if depth == 0 { 4 } else { 6 };
    match input.byte() % kinds {
        0 => "null".to_owned(),
        1 => if input.byte().is_multiple_of(2) {
            "false"
        } else {
            "true"
        }
        .to_owned(),
        2 => number(input),
        3 => string(input, dictionary),
        4 => {
            let items: Vec<String> = (0..input.below(4))
                .map(|_| value(input, depth - 1, dictionary))
                .collect();
            format!("[{}]", items.join(","))
        }
        _ => {
            let members: Vec<String> = (0..input.below(4))
                .map(|_| {
                    let key = string(input, dictionary);
                    format!("{key}:{}", value(input, depth - 1, dictionary))
                })
                .collect();
            format!("{{{}}}", members.join(","))
        }
    }
}

/// `template` written as JSON text, changed by the choices in `input`: each value is kept
/// (choice below 128, so an exhausted input keeps the template), changed within its type
/// (numbers become [`number`]s, strings [`string`]s, arrays repeat or lose items, object
/// members are dropped or added) or replaced by an arbitrary [`value`] of any type.
pub fn mutate(template: &Value, input: &mut Input<'_>, dictionary: &[&str]) -> String {
    let choice = input.byte();
    if choice >= 0xF0 {
        return value(input, 2, dictionary);
    }
    let change = choice >= 0x80;
    match template {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => (*b != change).to_string(),
        Value::Number(_) if change => number(input),
        Value::Number(n) => n.to_string(),
        Value::String(_) if change => string(input, dictionary),
        Value::String(_) => template.to_string(),
        Value::Array(items) => {
            let count = if change || items.is_empty() {
                input.below(5)
            } else {
                items.len()
            };
            let written: Vec<String> = (0..count)
                .map(|i| match items.get(i % items.len().max(1)) {
                    Some(item) => mutate(item, input, dictionary),
                    None => value(input, 2, dictionary),
                })
                .collect();
            format!("[{}]", written.join(","))
        }
        Value::Object(members) => {
            let mut written = Vec::with_capacity(members.len() + 1);
            for (key, member) in members {
                // A member is dropped only when this object changes and its choice says so.
                if change && input.byte().is_multiple_of(4) {
                    continue;
                }
                written.push(format!(
                    "{}:{}",
                    Value::String(key.clone()),
                    mutate(member, input, dictionary)
                ));
            }
            if change && input.byte().is_multiple_of(2) {
                let key = string(input, dictionary);
                written.push(format!("{key}:{}", value(input, 2, dictionary)));
            }
            format!("{{{}}}", written.join(","))
        }
    }
}

/// Polls `future` to completion on this thread with a no-op waker: for futures that never
/// wait (decoders over an in-memory body). Panics if it returns `Pending` `limit` times in a
/// row, which for such a future means it would hang.
pub fn block_on_ready<F: std::future::Future>(future: F, limit: usize) -> F::Output {
    let mut future = std::pin::pin!(future);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    for _ in 0..limit {
        if let std::task::Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
    }
    panic!("a future over an in-memory input was still pending after {limit} polls");
}

/// Transcript words: roles, part types and field names of the canonical transcript JSON.
const TRANSCRIPT_WORDS: &[&str] = &[
    "role",
    "parts",
    "type",
    "system",
    "human",
    "ai",
    "tool",
    "text",
    "image_url",
    "binary",
    "reasoning",
    "tool_call",
    "tool_response",
    "tool_call_id",
    "url",
    "detail",
    "mime_type",
    "data",
    "id",
    "name",
    "arguments",
    "content",
    "signature",
    "encrypted",
    "AAAA",
    "=",
    "data:image/png;base64,iVBORw0KGgo=",
];

/// A transcript with every part type, the template of [`transcript`].
const TRANSCRIPT_TEMPLATE: &str = r#"[
  {"role": "system", "parts": [{"type": "text", "text": "Be brief."}]},
  {"role": "human", "parts": [
    {"type": "text", "text": "Hi"},
    {"type": "image_url", "url": "https://example.com/a.png", "detail": "low"},
    {"type": "binary", "mime_type": "application/pdf", "data": "JVBERi0xLjQ="}
  ]},
  {"role": "ai", "parts": [
    {"type": "reasoning", "id": "rs_1", "text": "Think.", "signature": "sig", "encrypted": "enc"},
    {"type": "text", "text": "Calling.", "reasoning": {"signature": "s"}},
    {"type": "tool_call", "id": "call_1", "name": "calculator", "arguments": "{\"expression\":\"1+1\"}",
      "reasoning": {"id": "r", "signature": "s"}}
  ]},
  {"role": "tool", "parts": [{"type": "tool_response", "tool_call_id": "call_1", "name": "calculator", "content": "2"}]}
]"#;

/// The transcript target: arbitrary bytes (first byte even) or a mutated transcript are read
/// as a transcript; whatever is accepted writes back to JSON that reads as the same messages.
/// True when the input was accepted.
pub fn transcript(data: &[u8]) -> bool {
    let mut input = Input::new(data);
    let text: Vec<u8> = if input.byte().is_multiple_of(2) {
        input.rest().to_vec()
    } else {
        let template: Value =
            serde_json::from_str(TRANSCRIPT_TEMPLATE).expect("the template is JSON");
        mutate(&template, &mut input, TRANSCRIPT_WORDS).into_bytes()
    };
    let from_bytes = crate::transcript::from_slice(&text);
    if let Ok(text) = std::str::from_utf8(&text) {
        let from_text = crate::transcript::from_json(text);
        assert_eq!(
            from_text.as_ref().ok(),
            from_bytes.as_ref().ok(),
            "from_json and from_slice disagree"
        );
    }
    let Ok(messages) = from_bytes else {
        return false;
    };
    let written = crate::transcript::to_json(&messages);
    let read = crate::transcript::from_json(&written).expect("a written transcript reads");
    assert_eq!(read, messages, "a transcript does not round-trip");
    true
}

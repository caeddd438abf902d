//! Server-sent event frames of a Responses stream as the bytes a client received, with the
//! sequence number and type of each, so that two clients' streams compare byte for byte.

use serde_json::Value;

/// One event of a Responses stream: its exact bytes, `sequence_number` and `type`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Frame {
    pub(crate) bytes: Vec<u8>,
    pub(crate) seq: u64,
    pub(crate) kind: String,
}

impl Frame {
    /// Whether this event ends a Responses stream (the run reached a terminal status).
    pub(crate) fn is_terminal(&self) -> bool {
        matches!(
            self.kind.as_str(),
            "response.completed" | "response.failed" | "response.incomplete" | "response.cancelled"
        ) || self.kind == "error"
    }
}

/// Splits a byte stream into frames as bytes arrive.
#[derive(Debug, Default)]
pub(crate) struct Splitter {
    pending: Vec<u8>,
}

impl Splitter {
    /// The frames completed by `bytes`; comments (keep-alives) and frames without a
    /// `sequence_number` are errors only when they carry data that is not JSON.
    pub(crate) fn push(&mut self, bytes: &[u8]) -> Result<Vec<Frame>, String> {
        self.pending.extend_from_slice(bytes);
        let mut frames = Vec::new();
        while let Some(end) = self.pending.windows(2).position(|pair| pair == b"\n\n") {
            let raw: Vec<u8> = self.pending.drain(..end + 2).collect();
            if let Some(frame) = parse(raw)? {
                frames.push(frame);
            }
        }
        Ok(frames)
    }
}

fn parse(raw: Vec<u8>) -> Result<Option<Frame>, String> {
    let text = String::from_utf8_lossy(&raw);
    let data = data_text(&text);
    if data.is_empty() {
        // A comment or keep-alive: not an event of the run.
        return Ok(None);
    }
    let json: Value = serde_json::from_str(&data)
        .map_err(|err| format!("an event's data is not JSON ({err}): {text:?}"))?;
    let seq = json
        .get("sequence_number")
        .and_then(Value::as_u64)
        .ok_or_else(|| format!("an event has no sequence_number: {text:?}"))?;
    let kind = json
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    Ok(Some(Frame {
        bytes: raw,
        seq,
        kind,
    }))
}

/// The JSON of a frame's `data:` lines, when they hold JSON.
pub(crate) fn data_json(frame: &[u8]) -> Option<Value> {
    serde_json::from_str(&data_text(&String::from_utf8_lossy(frame))).ok()
}

/// A frame's `data:` lines joined, as a client reads them.
fn data_text(frame: &str) -> String {
    frame
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(|data| data.strip_prefix(' ').unwrap_or(data))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_split_across_chunks_keep_their_bytes() {
        let stream = b"event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0}\n\n: keep-alive\n\nevent: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":1}\n\n";
        let mut splitter = Splitter::default();
        let mut frames = Vec::new();
        for piece in stream.chunks(7) {
            frames.extend(splitter.push(piece).unwrap());
        }
        assert_eq!(frames.len(), 2);
        assert_eq!(frames[0].seq, 0);
        assert!(frames[1].is_terminal());
        assert!(stream.starts_with(&frames[0].bytes));
    }
}

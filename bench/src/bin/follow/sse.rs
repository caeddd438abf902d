//! A Responses stream as a client received it: each event's bytes, sequence number and the
//! instant it arrived.

use std::time::Instant;

use serde_json::Value;

/// One event: its exact bytes, `sequence_number`, `type` and arrival.
#[derive(Clone, Debug)]
pub(crate) struct Event {
    pub(crate) bytes: Vec<u8>,
    pub(crate) seq: u64,
    pub(crate) json: Value,
    pub(crate) arrived: Instant,
}

impl Event {
    /// Whether this event ends a Responses stream.
    pub(crate) fn is_terminal(&self) -> bool {
        matches!(
            self.json.get("type").and_then(Value::as_str),
            Some(
                "response.completed"
                    | "response.failed"
                    | "response.incomplete"
                    | "response.cancelled"
                    | "error"
            )
        )
    }
}

/// Splits a byte stream into events as bytes arrive; every event completed by one read gets
/// that read's instant.
#[derive(Debug, Default)]
pub(crate) struct Splitter {
    pending: Vec<u8>,
}

impl Splitter {
    /// The events completed by `bytes`, which arrived at `arrived`; comments (keep-alives) are
    /// skipped, an event whose data is not JSON with a `sequence_number` is an error.
    pub(crate) fn push(&mut self, bytes: &[u8], arrived: Instant) -> Result<Vec<Event>, String> {
        self.pending.extend_from_slice(bytes);
        let mut events = Vec::new();
        while let Some(end) = self.pending.windows(2).position(|pair| pair == b"\n\n") {
            let raw: Vec<u8> = self.pending.drain(..end + 2).collect();
            let text = String::from_utf8_lossy(&raw);
            let data: String = text
                .lines()
                .filter_map(|line| line.strip_prefix("data:"))
                .map(|data| data.strip_prefix(' ').unwrap_or(data))
                .collect::<Vec<_>>()
                .join("\n");
            if data.is_empty() {
                continue;
            }
            let json: Value = serde_json::from_str(&data)
                .map_err(|err| format!("an event's data is not JSON ({err}): {text:?}"))?;
            let seq = json
                .get("sequence_number")
                .and_then(Value::as_u64)
                .ok_or_else(|| format!("an event has no sequence_number: {text:?}"))?;
            events.push(Event {
                bytes: raw,
                seq,
                json,
                arrived,
            });
        }
        Ok(events)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_split_across_reads_keep_their_bytes_and_last_read_instant() {
        let stream = b"event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0}\n\n: keep-alive\n\nevent: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":1}\n\n";
        let mut splitter = Splitter::default();
        let mut events = Vec::new();
        let mut last = Instant::now();
        for piece in stream.chunks(7) {
            last = Instant::now();
            events.extend(splitter.push(piece, last).unwrap());
        }
        assert_eq!(events.len(), 2);
        assert_eq!(events[0].seq, 0);
        assert!(events[1].is_terminal());
        assert_eq!(events[1].arrived, last);
        assert!(stream.starts_with(&events[0].bytes));
    }
}

//! The figures: each follower's delay behind the POST client per event, the model-to-client
//! delay of the deltas, and the streams whose bytes differ.

use std::time::Instant;

use bench::stats::percentile;
use serde_json::Value;

use crate::client::{Event, RunLog};
use crate::provider::Sent;
use crate::sse::{Frame, data_json};

/// Delays in milliseconds, signed (a follower may be served before the POST client).
#[derive(Debug, Default)]
pub(crate) struct Delays(Vec<f64>);

impl Delays {
    fn push(&mut self, later: Instant, earlier: Instant) {
        let ms = if later >= earlier {
            (later - earlier).as_secs_f64() * 1e3
        } else {
            -(earlier - later).as_secs_f64() * 1e3
        };
        self.0.push(ms);
    }

    /// `| events | p50 | p90 | p99 | max |` cells.
    fn cells(&self) -> String {
        let mut sorted = self.0.clone();
        sorted.sort_by(f64::total_cmp);
        let at = |p: f64| percentile(&sorted, p).map_or("-".to_owned(), |ms| format!("{ms:.1}"));
        format!(
            "{} | {} | {} | {} | {}",
            sorted.len(),
            at(0.5),
            at(0.9),
            at(0.99),
            at(1.0)
        )
    }
}

/// Everything measured over all runs.
#[derive(Debug, Default)]
pub(crate) struct Figures {
    /// Each text delta from the model's write to the client that started the run (on A).
    pub(crate) origin: Delays,
    /// The same to the follower on A.
    pub(crate) same: Delays,
    /// The same to the follower on B.
    pub(crate) other: Delays,
    /// The follower on B behind the follower on A, per live event: what following from
    /// another replica adds.
    pub(crate) other_behind_same: Delays,
    /// Followed streams whose events differ from the starting client's (a line each).
    pub(crate) mismatches: Vec<String>,
}

impl Figures {
    /// Adds one run's streams.
    pub(crate) fn add(&mut self, run: &RunLog, sent: &Sent) {
        let mut whole = true;
        for (name, followed) in [("B", &run.other), ("A", &run.same)] {
            if let Some(mismatch) = difference(&run.origin, followed) {
                self.mismatches.push(format!(
                    "run {} ({}) on {name}: {mismatch}",
                    run.tag, run.id
                ));
                whole = false;
            }
        }
        if !whole {
            return;
        }
        for (events, delays) in [
            (&run.origin, &mut self.origin),
            (&run.same, &mut self.same),
            (&run.other, &mut self.other),
        ] {
            for event in events {
                if event.frame.kind == "response.output_text.delta"
                    && let Some(index) =
                        data_json(&event.frame.bytes).as_ref().and_then(delta_index)
                    && let Some(at) = sent.at(run.tag, index)
                {
                    delays.push(event.arrived, at);
                }
            }
        }
        // Live on both from the later of their first events on: before it, one of them read
        // events stored earlier.
        let live_from = run
            .same
            .first()
            .zip(run.other.first())
            .map(|(a, b)| a.arrived.max(b.arrived));
        for (same, other) in run.same.iter().zip(&run.other) {
            if live_from.is_some_and(|live| same.arrived >= live && other.arrived >= live) {
                self.other_behind_same.push(other.arrived, same.arrived);
            }
        }
    }

    /// The Markdown table.
    pub(crate) fn table(&self) -> String {
        format!(
            "| delay (ms) | events | p50 | p90 | p99 | max |\n\
             |---|---:|---:|---:|---:|---:|\n\
             | model's delta → the client that started the run, on A | {} |\n\
             | model's delta → a follower on A | {} |\n\
             | model's delta → a follower on B | {} |\n\
             | follower on B behind the follower on A (live events) | {} |\n",
            self.origin.cells(),
            self.same.cells(),
            self.other.cells(),
            self.other_behind_same.cells()
        )
    }
}

/// The index `N` of a text delta `"wN "`.
fn delta_index(event: &Value) -> Option<usize> {
    event["delta"]
        .as_str()?
        .strip_prefix('w')?
        .trim_end()
        .parse()
        .ok()
}

/// How `followed` differs from `origin` (same events, same order, same bytes), if it does.
fn difference(origin: &[Event], followed: &[Event]) -> Option<String> {
    if origin.len() != followed.len() {
        return Some(format!(
            "{} events, the POST client got {}",
            followed.len(),
            origin.len()
        ));
    }
    origin
        .iter()
        .zip(followed)
        .map(|(a, b)| (&a.frame, &b.frame))
        .find(|(a, b)| a != b)
        .map(|(a, b): (&Frame, &Frame)| {
            format!(
                "event {} differs from the POST client's event {}: {:?} vs {:?}",
                b.seq,
                a.seq,
                String::from_utf8_lossy(&b.bytes),
                String::from_utf8_lossy(&a.bytes)
            )
        })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::*;

    fn event(seq: u64, text: &str, arrived: Instant) -> Event {
        let json =
            json!({"type": "response.output_text.delta", "delta": text, "sequence_number": seq});
        Event {
            frame: Frame {
                bytes: format!("data: {json}\n\n").into_bytes(),
                seq,
                kind: "response.output_text.delta".to_owned(),
            },
            arrived,
        }
    }

    #[test]
    fn delays_count_live_events_and_bytes_must_match() {
        let t0 = Instant::now();
        let ms = |n: u64| t0 + Duration::from_millis(n);
        let origin = vec![event(0, "w0 ", ms(0)), event(1, "w1 ", ms(10))];
        // Joined after the first event: it was replayed, only the second is live.
        let other = vec![event(0, "w0 ", ms(5)), event(1, "w1 ", ms(13))];
        let same = vec![event(0, "w0 ", ms(0)), event(1, "x ", ms(10))];
        let run = RunLog {
            tag: 3,
            id: "resp_1".to_owned(),
            origin,
            other,
            same,
        };
        let mut figures = Figures::default();
        figures.add(&run, &Sent::default());
        assert!(
            figures.other_behind_same.0.is_empty(),
            "a run with a mismatch is not timed"
        );
        assert_eq!(figures.mismatches.len(), 1);
        assert!(figures.mismatches[0].contains("on A: event 1 differs"));

        // Both followers whole: B is timed behind A from the later first event on.
        let origin = vec![event(0, "w0 ", ms(0)), event(1, "w1 ", ms(10))];
        let same = vec![event(0, "w0 ", ms(2)), event(1, "w1 ", ms(12))];
        let other = vec![event(0, "w0 ", ms(5)), event(1, "w1 ", ms(16))];
        let run = RunLog {
            tag: 3,
            id: "resp_2".to_owned(),
            origin,
            other,
            same,
        };
        let mut figures = Figures::default();
        figures.add(&run, &Sent::default());
        assert_eq!(figures.other_behind_same.0, vec![4.0]);
        assert!(figures.mismatches.is_empty());
        assert_eq!(delta_index(&json!({"delta": "w17 "})), Some(17));
    }
}

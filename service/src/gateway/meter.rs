//! [`Meter`]: what an answer showed as it streamed, for the caller's own request log.

use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Instant;

use providers::{StreamEvent, Usage};

/// When a streamed answer's first output (text, reasoning, a tool call) passed, and the usage
/// it reported: noted by the stream that carries the answer (the one that logs it into the
/// tree), read by the caller once the stream has ended, so that the HTTP layer's request log
/// needs no stream of its own. Cloning shares it.
///
/// ```
/// let meter = service::Meter::default();
/// assert_eq!(meter.first_output(), None);
/// assert_eq!(meter.usage(), None);
/// ```
#[derive(Clone, Debug, Default)]
pub struct Meter {
    measured: Arc<Measured>,
}

/// What was seen so far.
#[derive(Debug, Default)]
struct Measured {
    first_output: OnceLock<Instant>,
    usage: Mutex<Option<Usage>>,
}

impl Meter {
    /// When the answer's first output passed (`None` while none has).
    pub fn first_output(&self) -> Option<Instant> {
        self.measured.first_output.get().copied()
    }

    /// The usage the answer reported last (`None` while it reported none).
    pub fn usage(&self) -> Option<Usage> {
        *self
            .measured
            .usage
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Notes `event` as it passes: a flag test per event, the usage stored once it comes.
    pub(crate) fn see(&self, event: &StreamEvent) {
        if let StreamEvent::Usage(usage) = event {
            *self
                .measured
                .usage
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = Some(*usage);
        } else if self.measured.first_output.get().is_none() && event.is_output() {
            self.saw_output();
        }
    }

    /// Notes that output passes now, unless some passed before.
    pub(crate) fn saw_output(&self) {
        let _ = self.measured.first_output.set(Instant::now());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_output_and_the_last_usage_are_kept() {
        let meter = Meter::default();
        meter.see(&StreamEvent::TextDelta(String::new()));
        assert_eq!(meter.first_output(), None, "an empty delta is no output");
        meter.see(&StreamEvent::TextDelta("Hi".into()));
        let first = meter.first_output().unwrap();
        meter.see(&StreamEvent::TextDelta(" there".into()));
        assert_eq!(meter.first_output(), Some(first));
        let usage = Usage {
            input_tokens: 3,
            output_tokens: 2,
            ..Usage::default()
        };
        meter.clone().see(&StreamEvent::Usage(usage));
        assert_eq!(meter.usage(), Some(usage));
    }
}

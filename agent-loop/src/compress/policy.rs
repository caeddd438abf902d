//! [`ContextPolicy`]: when the chain is compressed, and down to what.

use providers::ModelInfo;

use crate::AgentError;

/// Attachments (long human or tool texts) are cut to this many characters first.
pub const ATTACHMENT_TRUNCATE_CHARS: usize = 50_000;

/// Body pairs of the opening turn that pruning keeps by default: the first answer to the
/// original task, which shows the model how the task was understood.
const KEEP_FIRST_PAIRS: usize = 1;

/// Body pairs of the last turn that pruning keeps by default: the last exchange, with its
/// signed reasoning, which providers require back unchanged.
const KEEP_LAST_PAIRS: usize = 1;

/// When and how far the chain is compressed before a request.
///
/// Compression starts when the chain's tokens exceed the **trigger** share of the space left
/// for input, and shrinks it to the **target** share: 90 % / 70 % for models in the registry,
/// 85 % / 65 % for unknown ones (their window is a guess). The space left for input is the
/// context window minus an output reserve.
///
/// The reserve is not the model's whole output limit, which makes compression start far too
/// early on models with huge output limits (a 128K-output model would compress a 200K window
/// at a third full): it is 10 % of the window
/// clamped to 16 000 … 48 000 tokens, at most the model's output limit (or the request's
/// `max_tokens` when set) and at most half the window.
///
/// When pruning is needed, it keeps the start (the task) and the end (the current exchange) of
/// the chain and removes the middle: see [`ContextPolicy::with_kept_pairs`].
///
/// ```
/// use agent_loop::ContextPolicy;
/// use providers::{ModelInfo, Provider};
///
/// let policy = ContextPolicy::default();
/// let limits = policy.limits(&ModelInfo::lookup(Provider::OpenAi, "gpt-4o"), None);
/// // 128 000 window − 16 000 reserve = 112 000 for input.
/// assert_eq!((limits.trigger, limits.target), (100_800, 78_400));
/// let unknown = policy.limits(&ModelInfo::unknown(Provider::OpenAi, "my-llama"), None);
/// // 128 000 − 4 096 (its output limit) = 123 904 for input, at 85 % / 65 %.
/// assert_eq!((unknown.trigger, unknown.target), (105_318, 80_537));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct ContextPolicy {
    enabled: bool,
    known: (f64, f64),
    unknown: (f64, f64),
    attachment_chars: usize,
    summarize: bool,
    context_window: Option<u32>,
    keep_first: usize,
    keep_last: usize,
}

/// Token limits for one model: compress above `trigger`, down to `target`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContextLimits {
    /// Compression starts above this many tokens.
    pub trigger: usize,
    /// Compression aims at this many tokens.
    pub target: usize,
}

impl Default for ContextPolicy {
    fn default() -> Self {
        ContextPolicy {
            enabled: true,
            known: (0.90, 0.70),
            unknown: (0.85, 0.65),
            attachment_chars: ATTACHMENT_TRUNCATE_CHARS,
            summarize: true,
            context_window: None,
            keep_first: KEEP_FIRST_PAIRS,
            keep_last: KEEP_LAST_PAIRS,
        }
    }
}

impl ContextPolicy {
    /// No compression at all: the chain is sent as it is, however long.
    pub fn disabled() -> Self {
        ContextPolicy {
            enabled: false,
            ..Self::default()
        }
    }

    /// Whether compression runs.
    pub fn is_enabled(&self) -> bool {
        self.enabled
    }

    /// Sets the trigger and target shares (0 < target < trigger ≤ 1) for every model, known or
    /// not.
    ///
    /// # Errors
    ///
    /// [`AgentError::InvalidPolicy`] when the shares are out of order or range.
    pub fn with_thresholds(mut self, trigger: f64, target: f64) -> Result<Self, AgentError> {
        if !(target > 0.0 && target < trigger && trigger <= 1.0) {
            return Err(AgentError::InvalidPolicy {
                reason: format!(
                    "thresholds must satisfy 0 < target < trigger <= 1, got trigger {trigger} and \
                     target {target}"
                ),
            });
        }
        self.known = (trigger, target);
        self.unknown = (trigger, target);
        Ok(self)
    }

    /// Cuts human and tool texts longer than `chars` characters (default
    /// [`ATTACHMENT_TRUNCATE_CHARS`]).
    #[must_use]
    pub fn with_attachment_limit(mut self, chars: usize) -> Self {
        self.attachment_chars = chars.max(1);
        self
    }

    /// Whether old content is summarised by the model before pairs are pruned (default `true`);
    /// without it, old content is only pruned.
    #[must_use]
    pub fn with_summary(mut self, summarize: bool) -> Self {
        self.summarize = summarize;
        self
    }

    /// Uses this context window instead of the model's (e.g. a deployment's smaller limit); the
    /// window is then known, so the 90 % / 70 % shares apply.
    #[must_use]
    pub fn with_context_window(mut self, tokens: u32) -> Self {
        self.context_window = Some(tokens);
        self
    }

    /// How much of each end of the chain pruning keeps, in body pairs (an
    /// AI message with the tool messages answering it, never split): the first `first` pairs
    /// of the opening turn (default 1: the first answer to the original task) and the last
    /// `last` pairs of the last turn (default 1, and never fewer: the current exchange, whose
    /// signed reasoning providers check). When the last turn is a new question with no answer
    /// yet, the turn before it keeps its last `last` pairs too: the question follows them.
    ///
    /// Whatever these are, the system message, the opening turn's human message (the original
    /// task) and the last turn's human message are always kept; pruning removes whole body
    /// pairs and whole turns between the two ends, oldest first.
    #[must_use]
    pub fn with_kept_pairs(mut self, first: usize, last: usize) -> Self {
        self.keep_first = first;
        self.keep_last = last.max(1);
        self
    }

    /// The body pairs pruning keeps at the start and at the end: `(first, last)`.
    pub fn kept_pairs(&self) -> (usize, usize) {
        (self.keep_first, self.keep_last)
    }

    /// The attachment limit in characters.
    pub fn attachment_limit(&self) -> usize {
        self.attachment_chars
    }

    /// Whether the model summarises old content.
    pub fn summarizes(&self) -> bool {
        self.summarize
    }

    /// The limits for `model`, with the request's `max_tokens` if one is set.
    pub fn limits(&self, model: &ModelInfo, max_tokens: Option<u32>) -> ContextLimits {
        let window = u64::from(self.context_window.unwrap_or(model.context_window));
        let output = u64::from(max_tokens.unwrap_or(model.max_output_tokens));
        let reserve = (window / 10)
            .clamp(16_000, 48_000)
            .min(output)
            .min(window / 2);
        let available = window.saturating_sub(reserve);
        let (trigger, target) = if model.known || self.context_window.is_some() {
            self.known
        } else {
            self.unknown
        };
        let share = |fraction: f64| -> usize {
            // Percent arithmetic in integers, so figures are exact and documented ones match.
            let percent = (fraction * 100.0).round() as u64;
            usize::try_from(available * percent / 100).unwrap_or(usize::MAX)
        };
        ContextLimits {
            trigger: share(trigger),
            target: share(target),
        }
    }
}

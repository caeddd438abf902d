use std::num::NonZeroUsize;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::ToolError;

/// How many calls of one round run at once unless the context says otherwise.
pub const DEFAULT_MAX_CONCURRENCY: usize = 8;

/// What a tool call runs under: cancellation, deadline, per-call timeout, call budget,
/// concurrency limit and the tracing span calls are recorded in.
///
/// Chains pass it to every [`Tool::call`](crate::Tool::call), so a tool can watch
/// [`cancellation`](ExecutionContext::cancellation) in long work or read the
/// [`deadline`](ExecutionContext::deadline). Cloning is cheap and clones share the
/// cancellation token and the call budget: an agent makes one context per run and passes it to
/// every round.
///
/// ```
/// use std::time::Duration;
/// use toolchain::{CancellationToken, ExecutionContext};
///
/// let cancel = CancellationToken::new();
/// let ctx = ExecutionContext::new()
///     .with_cancellation(cancel.clone())
///     .with_call_timeout(Duration::from_secs(30))
///     .with_call_budget(20)
///     .with_max_concurrency(4);
/// assert_eq!(ctx.remaining_calls(), Some(20));
/// cancel.cancel(); // pending and running calls end with ToolError::Cancelled
/// assert!(ctx.is_cancelled());
/// ```
///
/// A deadline or call timeout needs a Tokio runtime with the time driver when calls run;
/// without them the chains run on any executor.
#[derive(Clone, Debug)]
pub struct ExecutionContext {
    cancel: CancellationToken,
    deadline: Option<Instant>,
    call_timeout: Option<Duration>,
    budget: Option<Arc<Budget>>,
    max_concurrency: NonZeroUsize,
    span: tracing::Span,
    redactor: Option<Arc<messages::Redactor>>,
}

#[derive(Debug)]
struct Budget {
    limit: usize,
    used: AtomicUsize,
}

impl Default for ExecutionContext {
    fn default() -> Self {
        Self::new()
    }
}

impl ExecutionContext {
    /// A context with a fresh cancellation token, no deadline, no timeout, no budget,
    /// [`DEFAULT_MAX_CONCURRENCY`] and the current span.
    pub fn new() -> Self {
        ExecutionContext {
            cancel: CancellationToken::new(),
            deadline: None,
            call_timeout: None,
            budget: None,
            max_concurrency: NonZeroUsize::new(DEFAULT_MAX_CONCURRENCY)
                .unwrap_or(NonZeroUsize::MIN),
            span: tracing::Span::current(),
            redactor: None,
        }
    }

    /// Uses `token` for cancellation (e.g. the request's token).
    #[must_use]
    pub fn with_cancellation(mut self, token: CancellationToken) -> Self {
        self.cancel = token;
        self
    }

    /// Calls still running at `deadline` end with [`ToolError::DeadlineExceeded`]; calls not
    /// started by then are not made.
    #[must_use]
    pub fn with_deadline(mut self, deadline: std::time::Instant) -> Self {
        self.deadline = Some(Instant::from_std(deadline));
        self
    }

    /// A deadline `timeout` from now (by Tokio's clock, so paused-clock tests see it).
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.deadline = Some(Instant::now() + timeout);
        self
    }

    /// Each call ends with [`ToolError::Timeout`] after `timeout`.
    #[must_use]
    pub fn with_call_timeout(mut self, timeout: Duration) -> Self {
        self.call_timeout = Some(timeout);
        self
    }

    /// At most `calls` tool calls, counted across every clone of this context; later calls
    /// fail with [`ToolError::BudgetExhausted`] without running.
    #[must_use]
    pub fn with_call_budget(mut self, calls: usize) -> Self {
        self.budget = Some(Arc::new(Budget {
            limit: calls,
            used: AtomicUsize::new(0),
        }));
        self
    }

    /// Runs at most `limit` calls of a round at once (at least 1).
    #[must_use]
    pub fn with_max_concurrency(mut self, limit: usize) -> Self {
        self.max_concurrency = NonZeroUsize::new(limit).unwrap_or(NonZeroUsize::MIN);
        self
    }

    /// Removes the secrets `redactor` knows from every call's result and error before anyone
    /// reads them (the model, the events, the store): a tool that echoes a credential it was
    /// configured with (an MCP server's token, a search backend's key) hands it to no one.
    #[must_use]
    pub fn with_redactor(mut self, redactor: Arc<messages::Redactor>) -> Self {
        self.redactor = Some(redactor);
        self
    }

    /// The redactor results and errors go through, if any.
    pub fn redactor(&self) -> Option<&messages::Redactor> {
        self.redactor.as_deref()
    }

    /// Records tool calls as children of `span`.
    #[must_use]
    pub fn with_span(mut self, span: tracing::Span) -> Self {
        self.span = span;
        self
    }

    /// A context for a sub-task: cancelled with this one (but cancelling it leaves this one
    /// running), sharing the deadline, timeout, budget, concurrency and span.
    pub fn child(&self) -> Self {
        ExecutionContext {
            cancel: self.cancel.child_token(),
            ..self.clone()
        }
    }

    /// The cancellation token.
    pub fn cancellation(&self) -> &CancellationToken {
        &self.cancel
    }

    /// Whether the run was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// The run's deadline.
    pub fn deadline(&self) -> Option<std::time::Instant> {
        self.deadline.map(Instant::into_std)
    }

    /// The per-call timeout.
    pub fn call_timeout(&self) -> Option<Duration> {
        self.call_timeout
    }

    /// Calls left in the budget (`None`: unlimited).
    pub fn remaining_calls(&self) -> Option<usize> {
        self.budget.as_ref().map(|budget| {
            budget
                .limit
                .saturating_sub(budget.used.load(Ordering::Relaxed))
        })
    }

    /// How many calls of a round run at once.
    pub fn max_concurrency(&self) -> usize {
        self.max_concurrency.get()
    }

    /// The span tool calls are recorded under.
    pub fn span(&self) -> &tracing::Span {
        &self.span
    }

    /// Takes one call from the budget.
    pub(crate) fn take_call(&self, tool: &str) -> Result<(), ToolError> {
        let Some(budget) = &self.budget else {
            return Ok(());
        };
        budget
            .used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                (used < budget.limit).then_some(used + 1)
            })
            .map(drop)
            .map_err(|_| ToolError::BudgetExhausted {
                tool: tool.to_owned(),
                budget: budget.limit,
            })
    }

    /// When a call starting now must end, and the error to report if it does not: the earlier
    /// of the run's deadline and the per-call timeout.
    pub(crate) fn call_deadline(&self, tool: &str) -> Option<(Instant, ToolError)> {
        let timeout = self.call_timeout.map(|timeout| {
            let error = ToolError::Timeout {
                tool: tool.to_owned(),
                timeout,
            };
            (Instant::now() + timeout, error)
        });
        let deadline = self.deadline.map(|deadline| {
            let error = ToolError::DeadlineExceeded {
                tool: tool.to_owned(),
            };
            (deadline, error)
        });
        match (timeout, deadline) {
            (Some(timeout), Some(deadline)) => Some(if deadline.0 < timeout.0 {
                deadline
            } else {
                timeout
            }),
            (timeout, deadline) => timeout.or(deadline),
        }
    }
}

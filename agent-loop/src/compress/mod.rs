//! Context compression before each request: [`ContextPolicy`], [`TokenCounter`] and the
//! compression step.
//!
//! When the chain is over the trigger, strategies run in this order until it is at most
//! the target:
//!
//! 0. with a store, on a run's first request: the summary an earlier run stored on the
//!    conversation's path stands in for the opening it summarised (`stored`), so what follows
//!    summarises only that summary and what came after it, instead of the whole history on
//!    every turn;
//! 1. texts longer than the attachment limit in human and tool messages are cut in the middle;
//! 2. old content is summarised by the model itself through [`chain_ast::summarize`] (the
//!    system message, the last section's header and its last body pair are always kept; a
//!    summary that replaces signed tool calls carries [`chain_ast::FAKE_THOUGHT_SIGNATURE`]; a
//!    summary longer than its share is cut to it, so it never pushes the latest exchange out).
//!    With a store, the summary is stored with the answer to the request it was sent with;
//! 3. the middle is pruned, because the original task and the latest exchange are what the next
//!    answer depends on most: the chain's opening — system message, the first human message (the
//!    original task) and its first answer, [`ContextPolicy::with_kept_pairs`]'s N body pairs — and
//!    its end, the latest exchange — the last section's human message and its last M body pairs,
//!    and when that section is a new question not answered yet, the turn before it with its
//!    human message and last M pairs — stay; between them whole body pairs and whole sections
//!    go, oldest first, until the chain is at most the target. So the task survives a failed
//!    summary, and a new question never loses the exchange it follows. Where content went, a
//!    notice body pair tells the model (`shrink::PRUNED_NOTICE`; one for the opening turn's tail
//!    and the middle turns, one for the latest exchange's older pairs).
//!
//! Every step works on whole body pairs, so a tool call never loses its responses, and
//! compression never inserts a system message: the system messages are the caller's, kept where
//! the caller put them (Anthropic and Gemini take one system prompt, and their adapters send a
//! later system message as marked user text). Pruning's notice is a
//! body pair shaped like chain-ast's summaries, so the chain stays valid under the seven rules
//! and providers take it as any other exchange.

mod policy;
mod shrink;
#[cfg(feature = "store")]
pub(crate) mod stored;
mod tokens;

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

use async_trait::async_trait;
use chain_ast::{ChainAst, IdTemplate, SummarizeOptions, Summarizer, SummaryRequest, summarize};
use messages::Message;
use providers::{ChatModel, ChatOptions, ChatRequest, Provider, ProviderError, Usage};
use tokio_util::sync::CancellationToken;

pub use policy::{ATTACHMENT_TRUNCATE_CHARS, ContextLimits, ContextPolicy};
pub use tokens::{ESTIMATED_BYTES_PER_TOKEN, IMAGE_TOKENS, MESSAGE_OVERHEAD_TOKENS, TokenCounter};

/// What compression did before one request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CompressionReport {
    /// Tokens of the chain before.
    pub tokens_before: usize,
    /// Tokens of the chain after.
    pub tokens_after: usize,
    /// The limits it ran against.
    pub limits: Option<ContextLimits>,
    /// Texts cut to the attachment limit.
    pub attachments_truncated: usize,
    /// Whether one of them is in the prompt being answered (the last human message): the
    /// model did not read all of what it answers. Clients are told
    /// ([`AgentOutcome::compression_notice`](crate::AgentOutcome::compression_notice)).
    pub prompt_truncated: bool,
    /// Whether the chain started from a summary an earlier run stored in the conversation
    /// tree, in place of the opening it stands for: only what came after it was left to
    /// summarise.
    pub summary_reused: bool,
    /// Body pairs folded into a model-written summary.
    pub pairs_summarized: usize,
    /// Whether the model wrote a longer summary than asked and it was cut to its share.
    pub summary_truncated: bool,
    /// Whether the summary call carries the fake thought signature.
    pub fake_signature: bool,
    /// Why summarising failed, if it did (pruning then went on without it).
    pub summary_error: Option<String>,
    /// Whole sections between the opening and the last turn pruned.
    pub sections_pruned: usize,
    /// Body pairs pruned from the opening turn (after its first answers) and from the last turn
    /// (before its last exchanges); those of whole sections are not counted.
    pub pairs_pruned: usize,
    /// Notices telling the model where pruned content was (one per pruned span, at most two).
    pub prune_notices: usize,
    /// Tokens the summarizer calls used.
    pub summary_usage: Usage,
}

/// What the compression step needs from the agent.
pub(crate) struct Compressor<'a> {
    pub(crate) policy: &'a ContextPolicy,
    pub(crate) model: &'a dyn ChatModel,
    pub(crate) counter: TokenCounter,
    pub(crate) max_tokens: Option<u32>,
    /// The agent's extra headers, sent with the summarizer's calls too.
    pub(crate) headers: &'a BTreeMap<String, String>,
    pub(crate) cancel: &'a CancellationToken,
}

impl Compressor<'_> {
    /// The limits for this agent's model.
    pub(crate) fn limits(&self) -> ContextLimits {
        self.policy.limits(self.model.info(), self.max_tokens)
    }

    /// Compresses `chain` (of `tokens` tokens) if it is over the trigger. `None` when nothing
    /// had to be done.
    pub(crate) async fn run(
        &self,
        chain: ChainAst,
        tokens: usize,
    ) -> (ChainAst, usize, Option<CompressionReport>) {
        let limits = self.limits();
        if !self.policy.is_enabled() || tokens <= limits.trigger {
            return (chain, tokens, None);
        }
        let mut report = CompressionReport {
            tokens_before: tokens,
            limits: Some(limits),
            ..CompressionReport::default()
        };
        let (mut chain, cut, prompt_cut) =
            shrink::truncate_attachments(chain, self.policy.attachment_limit());
        report.attachments_truncated = cut;
        report.prompt_truncated = prompt_cut;
        let mut tokens = if cut > 0 { self.count(&chain) } else { tokens };

        if tokens > limits.target && self.policy.summarizes() {
            let summarizer = ModelSummarizer {
                model: self.model,
                headers: self.headers,
                cancel: self.cancel,
                usage: Mutex::new(Usage::default()),
            };
            let counter = self.counter;
            let options = SummarizeOptions::new(limits.target)
                .measure(move |message: &Message| counter.count(message))
                .id_template(id_template(self.model.info().provider));
            match summarize(&mut chain, &summarizer, &options).await {
                Ok(summary) => {
                    report.pairs_summarized = summary.pairs_summarized;
                    report.summary_truncated = summary.summary_truncated;
                    report.fake_signature = summary.fake_signature;
                    tokens = summary.size_after;
                }
                Err(error) => {
                    let message = match std::error::Error::source(&error) {
                        Some(source) => format!("{error}: {source}"),
                        None => error.to_string(),
                    };
                    tracing::warn!(error = %message, "summarising the chain failed; pruning instead");
                    report.summary_error = Some(message);
                }
            }
            report.summary_usage = summarizer.usage();
        }

        if tokens > limits.target {
            let (first, last) = self.policy.kept_pairs();
            let (pruned, left, done) = shrink::prune_middle(
                chain,
                tokens,
                limits.target,
                &self.counter,
                shrink::KeptEnds { first, last },
                &id_template(self.model.info().provider),
            );
            chain = pruned;
            tokens = left;
            report.sections_pruned = done.sections;
            report.pairs_pruned = done.pairs;
            report.prune_notices = done.notices;
        }
        report.tokens_after = tokens;
        (chain, tokens, Some(report))
    }

    /// Tokens of a whole chain.
    pub(crate) fn count(&self, chain: &ChainAst) -> usize {
        chain_tokens(chain, &self.counter)
    }
}

/// Tokens of a whole chain.
pub(crate) fn chain_tokens(chain: &ChainAst, counter: &TokenCounter) -> usize {
    chain
        .iter_messages()
        .map(|message| counter.count(message))
        .sum()
}

/// Tool-call ids of the summary pair in the shape of the provider's own ids (its descriptor's
/// `call_id_template`).
fn id_template(provider: Provider) -> IdTemplate {
    IdTemplate::new(provider.info().call_id_template)
}

/// The agent's own model, asked for summaries.
struct ModelSummarizer<'a> {
    model: &'a dyn ChatModel,
    /// The agent's extra headers: the only request options a summary call takes (a gateway
    /// that routes or authorises by header must see it; sampling, stop, tool and reasoning
    /// options are for the agent's answers).
    headers: &'a BTreeMap<String, String>,
    cancel: &'a CancellationToken,
    usage: Mutex<Usage>,
}

impl ModelSummarizer<'_> {
    fn usage(&self) -> Usage {
        *self.usage.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[async_trait]
impl Summarizer for ModelSummarizer<'_> {
    type Error = ProviderError;

    async fn summarize(&self, request: SummaryRequest) -> Result<String, ProviderError> {
        let info = self.model.info();
        let budget = u32::try_from(request.target_size).unwrap_or(u32::MAX);
        let call = ChatRequest {
            options: ChatOptions {
                max_tokens: Some(budget.clamp(256, info.max_output_tokens.max(256))),
                extra_headers: self.headers.clone(),
                ..ChatOptions::default()
            },
            ..ChatRequest::new(vec![Message::human(request.prompt)])
        };
        let response = self
            .cancel
            .run_until_cancelled(self.model.complete(call))
            .await
            .unwrap_or(Err(ProviderError::Cancelled))?;
        *self.usage.lock().unwrap_or_else(PoisonError::into_inner) += response.usage;
        Ok(response.message.text())
    }
}

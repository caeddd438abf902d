//! Shrinking a chain to a budget by summarising its oldest content: [`summarize`].

mod plan;
mod prompt;

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use messages::Message;

use crate::{
    BodyPair, BodyPairKind, ChainAst, ChainSection, IdTemplate, SUMMARIZED_CONTENT_PREFIX,
    contains_tool_call_reasoning, extract_reasoning_message, truncate_middle,
};
use plan::Sizer;

/// What a [`Summarizer`] is asked to summarise.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct SummaryRequest {
    /// Instructions and the content, ready to send to a model as one human message. Human
    /// messages appear as `<tasks>`, the rest as `<messages>`; reasoning is left out.
    pub prompt: String,
    /// The messages being summarised, in chain order (the system message is never among them).
    pub messages: Vec<Message>,
    /// How big the summary may be, in the budget's unit, for the chain to fit the budget.
    pub target_size: usize,
}

/// Writes summaries: usually a call to the model the chain belongs to.
///
/// Implemented for every `Fn(SummaryRequest) -> impl Future<Output = Result<String, E>>` that is
/// `Send + Sync` with a `Send` future, so an async closure works; the trait is object safe
/// (`&dyn Summarizer<Error = E>`).
#[async_trait]
pub trait Summarizer: Send + Sync {
    /// What can go wrong.
    type Error: std::error::Error + Send + Sync + 'static;

    /// The summary of `request.messages`.
    async fn summarize(&self, request: SummaryRequest) -> Result<String, Self::Error>;
}

#[async_trait]
impl<F, Fut, E> Summarizer for F
where
    F: Fn(SummaryRequest) -> Fut + Send + Sync,
    Fut: Future<Output = Result<String, E>> + Send,
    E: std::error::Error + Send + Sync + 'static,
{
    type Error = E;

    async fn summarize(&self, request: SummaryRequest) -> Result<String, E> {
        self(request).await
    }
}

/// A caller's measure of a message, e.g. its tokens.
type Measure = Arc<dyn Fn(&Message) -> usize + Send + Sync>;

/// How [`summarize`] measures and where it stops.
#[derive(Clone)]
pub struct SummarizeOptions {
    budget: usize,
    reserve_percent: u8,
    id_template: IdTemplate,
    rotate_last_section: bool,
    measure: Option<Measure>,
}

impl SummarizeOptions {
    /// Shrink chains larger than `budget` bytes. Defaults: 25% of the budget reserved for the
    /// summary, ids from `call_{r:24:x}`, the last section's older pairs summarised too.
    pub fn new(budget: usize) -> SummarizeOptions {
        SummarizeOptions {
            budget,
            reserve_percent: 25,
            id_template: IdTemplate::default(),
            rotate_last_section: true,
            measure: None,
        }
    }

    /// The share of the budget (0 to 100) left for the summary: the content kept must fit in
    /// the rest. Values above 100 count as 100.
    pub fn reserve_percent(mut self, percent: u8) -> SummarizeOptions {
        self.reserve_percent = percent.min(100);
        self
    }

    /// The template for the summary call's id: use the provider's (see [`IdTemplate`]).
    pub fn id_template(mut self, template: IdTemplate) -> SummarizeOptions {
        self.id_template = template;
        self
    }

    /// Whether the last section's pairs (all but its last) may be summarised: `true` (the
    /// default) suits an agent whose whole task is one long section; `false` keeps the last
    /// section whole (and, when the last section is a new question with no answer yet, the
    /// section before it).
    pub fn rotate_last_section(mut self, rotate: bool) -> SummarizeOptions {
        self.rotate_last_section = rotate;
        self
    }

    /// Measures messages with `measure` (e.g. a tokenizer) instead of bytes; the budget is then
    /// in its unit.
    pub fn measure(
        mut self,
        measure: impl Fn(&Message) -> usize + Send + Sync + 'static,
    ) -> SummarizeOptions {
        self.measure = Some(Arc::new(measure));
        self
    }

    /// The budget.
    pub fn budget(&self) -> usize {
        self.budget
    }

    fn sizer(&self) -> Sizer<'_> {
        match &self.measure {
            Some(measure) => Sizer::Measure(measure.as_ref()),
            None => Sizer::Bytes,
        }
    }

    /// The part of the budget the kept content may use.
    fn threshold(&self) -> usize {
        let keep = usize::from(100 - self.reserve_percent);
        self.budget / 100 * keep + self.budget % 100 * keep / 100
    }
}

impl fmt::Debug for SummarizeOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SummarizeOptions")
            .field("budget", &self.budget)
            .field("reserve_percent", &self.reserve_percent)
            .field("id_template", &self.id_template.as_str())
            .field("rotate_last_section", &self.rotate_last_section)
            .field(
                "measure",
                &if self.measure.is_some() {
                    "custom"
                } else {
                    "bytes"
                },
            )
            .finish()
    }
}

/// What [`summarize`] did. Sizes are in the budget's unit.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SummarizeReport {
    /// The chain's size before.
    pub size_before: usize,
    /// The chain's size after.
    pub size_after: usize,
    /// The budget.
    pub budget: usize,
    /// Whole sections folded into the summary.
    pub sections_summarized: usize,
    /// Body pairs folded into the summary (those of whole sections included).
    pub pairs_summarized: usize,
    /// Messages folded into the summary.
    pub messages_summarized: usize,
    /// The summary pair's kind; `None` when nothing was summarised.
    pub summary_kind: Option<BodyPairKind>,
    /// Whether the summary call carries the fake thought signature.
    pub fake_signature: bool,
    /// Whether the summarizer wrote more than the size it was asked for
    /// ([`SummaryRequest::target_size`]) and the summary was cut in the middle to that size.
    pub summary_truncated: bool,
}

impl SummarizeReport {
    /// Whether a summary replaced anything.
    pub fn summarized(&self) -> bool {
        self.summary_kind.is_some()
    }

    /// Whether the chain now fits the budget. It may not when what is always kept (system
    /// message, the latest exchange) is over it, or the summary came out long.
    pub fn within_budget(&self) -> bool {
        self.size_after <= self.budget
    }
}

/// Why [`summarize`] failed; the chain is unchanged.
#[derive(Debug, thiserror::Error)]
pub enum SummarizeError<E> {
    /// The summarizer returned an error.
    #[error("the summarizer failed, so the chain was left unchanged")]
    Summarizer(#[source] E),
    /// The summarizer returned only whitespace.
    #[error(
        "the summarizer returned an empty summary of {messages} messages, so the chain was left \
         unchanged; check the summarizer's model and prompt"
    )]
    EmptySummary {
        /// How many messages it was asked to summarise.
        messages: usize,
    },
}

/// Shrinks `ast` to `options`' budget by folding its oldest content into one summary body pair.
///
/// [`summarize`] keeps the newest content that fits in the budget (less a reserve for the
/// summary) and folds everything older into **one** summary body pair made by an async
/// [`Summarizer`] (usually the model itself):
///
/// - the first section's system message is always kept;
/// - the latest exchange is always kept: the last section's header and its last body pair
///   (the last pair of the section being summarised from within is never summarised, which
///   keeps the signed reasoning Gemini and Anthropic check on the current turn) and, when the
///   last section is a new question with no answer yet, the section before it with its header
///   and last body pair, the exchange the question follows. Older sections go whole, last pair
///   included: providers no longer check their signatures;
/// - units are whole body pairs (a tool call never leaves its responses) of the latest
///   exchange's section, newest first, then whole older sections;
/// - the summary becomes the first body pair after the human message of the newest section it
///   summarises from (a section too big to keep keeps its human message to host it), and that
///   section's header takes the system message. So the chain still starts with the system and
///   a human message, and the result is a valid chain when the input was;
/// - the summary is a summarization pair ([`BodyPair::from_summarization`]) when the replaced
///   pairs called tools, with the fake thought signature when
///   [`contains_tool_call_reasoning`] says they carried tool-call reasoning (and, when pairs of
///   the current turn are replaced, the first reasoning found put before the call, see
///   [`extract_reasoning_message`]). When they were all plain completions it is a completion
///   starting with [`SUMMARIZED_CONTENT_PREFIX`]: a tool call in a chain without tools is
///   rejected by some providers (Anthropic);
/// - a summary longer than it was asked to be ([`SummaryRequest::target_size`]) is cut in the
///   middle to that size ([`SummarizeReport::summary_truncated`]), so a summarizer that
///   ignores its limit cannot push the chain over the budget and the recent content out;
/// - a summarizer error is returned and the chain is left unchanged, so the caller sees the
///   failure instead of silently sending the unsummarised chain.
///
/// The budget is in bytes ([`message_size`](crate::message_size)) or in any unit of a caller's
/// function, e.g. tokens ([`SummarizeOptions::measure`]).
///
/// Does nothing, and does not call the summarizer, when the chain fits or nothing can be
/// summarised. The future is `Send`; on error `ast` is unchanged.
///
/// ```
/// use std::convert::Infallible;
///
/// use chain_ast::{BodyPairKind, ChainAst, SummarizeOptions, SummaryRequest, summarize};
/// use messages::{Message, ToolCall};
///
/// let mut chain = vec![Message::system("You are an agent."), Message::human("Scan the host.")];
/// for n in 0..5 {
///     let id = format!("call_{n}");
///     chain.push(Message::ai_tool_calls(None, vec![ToolCall::new(&id, "terminal", "{}")]));
///     chain.push(Message::tool_response(&id, "terminal", "x".repeat(500)));
/// }
/// let mut ast = ChainAst::new(&chain, false)?;
///
/// // Any async closure is a summarizer; an agent would ask its model.
/// let summarizer = |request: SummaryRequest| async move {
///     Ok::<_, Infallible>(format!("Ran {} commands; all printed x.", request.messages.len() / 2))
/// };
/// let options = SummarizeOptions::new(1_500);
/// let report = futures::executor::block_on(summarize(&mut ast, &summarizer, &options))?;
///
/// assert!(report.within_budget());
/// assert_eq!(report.summary_kind, Some(BodyPairKind::Summarization));
/// let body = ast.sections()[0].body();
/// assert_eq!(body[0].kind(), BodyPairKind::Summarization);
/// // The last round is kept as it was.
/// let last_call = body.last().and_then(|pair| pair.ai().tool_calls().next());
/// assert_eq!(last_call.map(|call| call.id.as_str()), Some("call_4"));
/// ast.validate()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
///
/// [`SummarizeError::Summarizer`] with the summarizer's error; [`SummarizeError::EmptySummary`]
/// if it returned only whitespace.
pub async fn summarize<S>(
    ast: &mut ChainAst,
    summarizer: &S,
    options: &SummarizeOptions,
) -> Result<SummarizeReport, SummarizeError<S::Error>>
where
    S: Summarizer + ?Sized,
{
    let sizer = options.sizer();
    let size_before = sizer.ast(ast);
    let mut report = SummarizeReport {
        size_before,
        size_after: size_before,
        budget: options.budget,
        sections_summarized: 0,
        pairs_summarized: 0,
        messages_summarized: 0,
        summary_kind: None,
        fake_signature: false,
        summary_truncated: false,
    };
    if size_before <= options.budget {
        return Ok(report);
    }
    // The summary pair's own overhead (call, id, response) comes out of the kept share.
    let calls_anywhere = ast
        .sections()
        .iter()
        .flat_map(ChainSection::body)
        .any(|pair| pair.kind().has_calls());
    let skeleton = if calls_anywhere {
        BodyPair::from_summarization("", &options.id_template, false)
    } else {
        BodyPair::from_completion(SUMMARIZED_CONTENT_PREFIX)
    };
    let threshold = options.threshold().saturating_sub(sizer.pair(&skeleton));
    let Some(plan) = plan::plan(ast, &sizer, threshold, options.rotate_last_section) else {
        return Ok(report);
    };

    let messages = plan::messages(ast, plan, false);
    let owned: Vec<Message> = messages.iter().map(|message| (*message).clone()).collect();
    let calls_tools = plan::pairs(ast, plan).any(|pair| pair.kind().has_calls());
    let fake_signature = calls_tools && contains_tool_call_reasoning(&owned);
    // Reasoning is carried over only from the current turn, whose pairs providers check.
    let current_turn = plan.host + 1 == ast.sections().len() && plan.pairs > 0;
    let reasoning = (calls_tools && current_turn)
        .then(|| {
            let section = ast.sections().get(plan.host)?;
            let pairs: Vec<Message> = section
                .body()
                .iter()
                .take(plan.pairs)
                .flat_map(BodyPair::messages)
                .collect();
            extract_reasoning_message(&pairs)
        })
        .flatten();
    let make = |text: &str| match (calls_tools, reasoning.clone()) {
        (true, Some(reasoning)) => BodyPair::from_summarization_with_reasoning(
            text,
            &options.id_template,
            fake_signature,
            reasoning,
        ),
        (true, None) => BodyPair::from_summarization(text, &options.id_template, fake_signature),
        (false, _) => BodyPair::from_completion(format!("{SUMMARIZED_CONTENT_PREFIX}{text}")),
    };
    let summarised_size = sizer.messages(messages.iter().copied());
    let kept_size = size_before.saturating_sub(summarised_size);
    let empty_pair = sizer.pair(&make(""));
    let target_size = options
        .budget
        .saturating_sub(kept_size.saturating_add(empty_pair));
    let request = SummaryRequest {
        prompt: prompt::build(&plan::messages(ast, plan, true)),
        target_size,
        messages: owned,
    };

    report.sections_summarized = plan.host;
    report.pairs_summarized = plan::pairs(ast, plan).count();
    report.messages_summarized = messages.len();
    let summary = summarizer
        .summarize(request)
        .await
        .map_err(SummarizeError::Summarizer)?;
    if summary.trim().is_empty() {
        return Err(SummarizeError::EmptySummary {
            messages: report.messages_summarized,
        });
    }

    let (summary, truncated) = bounded(summary, empty_pair.saturating_add(target_size), |text| {
        sizer.pair(&make(text))
    });
    let pair = make(&summary);
    report.summary_truncated = truncated;
    report.summary_kind = Some(pair.kind());
    report.fake_signature = fake_signature;
    plan::apply(ast, plan, pair);
    report.size_after = sizer.ast(ast);
    Ok(report)
}

/// `summary` cut in the middle ([`truncate_middle`]) until its pair's size, as `pair_size`
/// measures it, is at most `limit`, and whether it had to be. A summarizer may write more than
/// it was asked for (a model that ignores its output limit, one that echoes its input): a
/// summary over its share would leave the chain over the budget, and what is pruned then is
/// the recent content kept beside the summary. When not even the notice fits, the notice alone
/// stands for the summary.
fn bounded(summary: String, limit: usize, pair_size: impl Fn(&str) -> usize) -> (String, bool) {
    if pair_size(&summary) <= limit {
        return (summary, false);
    }
    let cut = |chars: usize| truncate_middle(&summary, chars).unwrap_or_else(|| summary.clone());
    // The largest number of characters kept whose cut fits: sizes grow with it.
    let (mut fits, mut over) = (0, summary.chars().count());
    while over - fits > 1 {
        let middle = fits + (over - fits) / 2;
        if pair_size(&cut(middle)) <= limit {
            fits = middle;
        } else {
            over = middle;
        }
    }
    (cut(fits), true)
}

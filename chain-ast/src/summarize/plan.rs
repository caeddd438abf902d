//! Choosing what to summarise, and putting the summary in its place.

use messages::Message;

use crate::{BodyPair, ChainAst, ChainSection, Header, message_size};

/// How the budget is measured: the cached byte sizes, or a caller's function (e.g. tokens).
pub(super) enum Sizer<'o> {
    Bytes,
    Measure(&'o (dyn Fn(&Message) -> usize + Send + Sync)),
}

impl Sizer<'_> {
    pub(super) fn message(&self, message: &Message) -> usize {
        match self {
            Sizer::Bytes => message_size(message),
            Sizer::Measure(measure) => measure(message),
        }
    }

    pub(super) fn pair(&self, pair: &BodyPair) -> usize {
        match self {
            Sizer::Bytes => pair.size(),
            Sizer::Measure(_) => self.messages(pair.iter()),
        }
    }

    pub(super) fn ast(&self, ast: &ChainAst) -> usize {
        match self {
            Sizer::Bytes => ast.size(),
            Sizer::Measure(_) => self.messages(ast.iter_messages()),
        }
    }

    /// The summed size of some messages; saturating, as a caller's measure may return anything.
    pub(super) fn messages<'a>(&self, messages: impl Iterator<Item = &'a Message>) -> usize {
        messages.fold(0, |total, message| {
            total.saturating_add(self.message(message))
        })
    }
}

/// What to fold into the summary: sections `0..host` whole (except the first section's system
/// message, which is kept) and the first `pairs` body pairs of section `host`. The summary goes
/// right after `host`'s human message, so the chain still starts with the system message and a
/// human message, and a chain that ended with a human message still does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Plan {
    pub(super) host: usize,
    pub(super) pairs: usize,
}

/// Keeps the newest content that fits in `threshold` and plans to summarise everything older.
///
/// Always kept: the first section's system message and the latest exchange: the last
/// section's header and its last body pair (or, without `rotate_last`, all its pairs) and, when
/// the last section is a new question with no answer yet, the section before it with its
/// header and last body pair (or all its pairs) too: the question follows that exchange. Then,
/// newest first, the latest exchange's other pairs one by one and the older sections whole are
/// kept while they fit. At the first that does not fit, it and everything older is summarised;
/// a section that does not fit keeps its human message to host the summary. `None` when
/// nothing can be summarised.
pub(super) fn plan(
    ast: &ChainAst,
    sizer: &Sizer<'_>,
    threshold: usize,
    rotate_last: bool,
) -> Option<Plan> {
    let sections = ast.sections();
    let last = sections.len().checked_sub(1)?;
    let latest = latest_exchange(sections);
    let system = sections.first().and_then(|first| first.header().system());

    // The headers from the latest exchange's section on (the first section's system message
    // is counted once, above), and the bodies after it (a new question has none).
    let kept_headers = sections[latest..=last]
        .iter()
        .enumerate()
        .map(|(offset, section)| match latest + offset {
            0 => sizer.messages(section.header().human().into_iter()),
            _ => sizer.messages(section.header().iter()),
        })
        .fold(0, usize::saturating_add);
    let body = sections[latest].body();
    let rotatable = if rotate_last {
        body.len().saturating_sub(1)
    } else {
        0
    };
    let kept_pairs = sizer.messages(body.iter().skip(rotatable).flat_map(BodyPair::iter));
    let mut kept = sizer
        .messages(system.into_iter())
        .saturating_add(kept_headers)
        .saturating_add(kept_pairs);

    // Newest first: the latest exchange's rotatable pairs one by one, then older sections whole.
    let pair_units = (0..rotatable).rev().map(|index| {
        let size = body.get(index).map_or(0, |pair| sizer.pair(pair));
        let plan = Plan {
            host: latest,
            pairs: index + 1,
        };
        (plan, size)
    });
    let section_units = (0..latest).rev().filter_map(|index| {
        let section = sections.get(index)?;
        let size = sizer.messages(summarised(section, index == 0));
        let plan = Plan {
            host: index,
            pairs: section.body().len(),
        };
        Some((plan, size))
    });
    for (plan, size) in pair_units.chain(section_units) {
        kept = kept.saturating_add(size);
        if kept > threshold {
            return Some(plan).filter(|plan| worth_it(ast, *plan));
        }
    }
    None
}

/// The section holding the latest exchange: the last one, unless it is a new question with no
/// answer yet (no body pair); then the one before it, whose last answer the question follows.
fn latest_exchange(sections: &[ChainSection]) -> usize {
    let last = sections.len().saturating_sub(1);
    match sections.get(last) {
        Some(section) if section.body().is_empty() && last > 0 => last - 1,
        _ => last,
    }
}

/// A section's messages that a summary replaces: all but the first section's system message.
fn summarised(section: &ChainSection, first: bool) -> impl Iterator<Item = &Message> {
    let system = section.header().system().filter(|_| !first);
    system
        .into_iter()
        .chain(section.header().human())
        .chain(section.body().iter().flat_map(BodyPair::iter))
}

/// The messages `plan` folds into the summary, in chain order; with `host_human`, the host
/// section's human message too (kept in the chain, but the summarizer needs it as context).
pub(super) fn messages(ast: &ChainAst, plan: Plan, host_human: bool) -> Vec<&Message> {
    let sections = ast.sections();
    let whole = sections
        .iter()
        .take(plan.host)
        .enumerate()
        .flat_map(|(index, section)| summarised(section, index == 0));
    let host = sections.get(plan.host);
    let human = host
        .and_then(|section| section.header().human())
        .filter(|_| host_human);
    let partial = host
        .into_iter()
        .flat_map(move |section| section.body().iter().take(plan.pairs))
        .flat_map(BodyPair::iter);
    whole.chain(human).chain(partial).collect()
}

/// The body pairs `plan` folds into the summary.
pub(super) fn pairs(ast: &ChainAst, plan: Plan) -> impl Iterator<Item = &BodyPair> {
    let sections = ast.sections();
    sections
        .iter()
        .take(plan.host)
        .flat_map(ChainSection::body)
        .chain(
            sections
                .get(plan.host)
                .into_iter()
                .flat_map(move |section| section.body().iter().take(plan.pairs)),
        )
}

/// Whether summarising pays: not for nothing, and not for a lone earlier summary (summarising
/// it again would only blur it, and would run on every call).
fn worth_it(ast: &ChainAst, plan: Plan) -> bool {
    let messages = messages(ast, plan, false);
    let mut pairs = pairs(ast, plan);
    let lone_summary = match (pairs.next(), pairs.next()) {
        (Some(pair), None) => pair.is_summary() && messages.len() == pair.len(),
        _ => false,
    };
    !messages.is_empty() && !lone_summary
}

/// Replaces what `plan` summarises with `summary`: it becomes the first body pair of section
/// `host`, whose header takes the first section's system message; earlier sections go.
pub(super) fn apply(ast: &mut ChainAst, plan: Plan, summary: BodyPair) {
    let mut sections = std::mem::take(ast).into_sections();
    if plan.host >= sections.len() {
        *ast = ChainAst::from_sections(sections);
        return;
    }
    let later = sections.split_off(plan.host + 1);
    let Some(kept) = sections.pop() else {
        *ast = ChainAst::from_sections(later);
        return;
    };
    let first_system = sections
        .into_iter()
        .next()
        .and_then(|first| first.into_parts().0.into_parts().0);

    let (header, body) = kept.into_parts();
    let (own_system, human) = header.into_parts();
    let mut header = Header::from_parts(first_system, human);
    if let Some(own_system) = own_system {
        // Only the first section of a valid chain has a system message; a hand-built chain may
        // have one here too, so keep its text rather than lose it.
        header.extend_system(own_system.parts);
    }
    let mut new_body = Vec::with_capacity(body.len() + 1 - plan.pairs.min(body.len()));
    new_body.push(summary);
    new_body.extend(body.into_iter().skip(plan.pairs));

    let mut new_ast = ChainAst::from_sections(vec![ChainSection::new(header, new_body)]);
    later
        .into_iter()
        .for_each(|section| new_ast.add_section(section));
    *ast = new_ast;
}

//! The two mechanical strategies: cutting long attachments, and pruning whole body pairs and
//! sections from the middle of the chain (the start, with the task, and the end are kept).

use std::collections::HashSet;

use chain_ast::{
    BodyPair, BodyPairKind, ChainAst, ChainSection, Header, IdTemplate, SUMMARIZED_CONTENT_PREFIX,
    truncate_middle,
};
use messages::{ContentPart, Message, Role};

use super::TokenCounter;

/// Cuts every text longer than `limit` characters in human and tool messages (texts and tool
/// results) to `limit` characters: 60 % from the start, 40 % from the end, and a notice of what
/// was removed in between, so the model knows the text is incomplete. AI and system messages are left alone: the AI's
/// are signed by some providers and the system prompt is the caller's. Returns the chain, how
/// many texts were cut, and whether the prompt being answered (the last section's human
/// message) was one of them.
pub(super) fn truncate_attachments(chain: ChainAst, limit: usize) -> (ChainAst, usize, bool) {
    let needs_cut = |message: &Message| {
        matches!(message.role, Role::Human | Role::Tool)
            && message.parts.iter().any(|part| text_of(part).len() > limit)
    };
    if !chain.iter_messages().any(needs_cut) {
        return (chain, 0, false);
    }
    let mut cut = 0;
    let mut shorten = |message: Message| -> Message {
        if !needs_cut(&message) {
            return message;
        }
        let parts = message
            .parts
            .into_iter()
            .map(|mut part| {
                let text = match &mut part {
                    ContentPart::Text { text, .. } => text,
                    ContentPart::ToolResponse(response) => &mut response.content,
                    _ => return part,
                };
                if let Some(short) = truncate_middle(text, limit) {
                    *text = short;
                    cut += 1;
                }
                part
            })
            .collect();
        Message::new(message.role, parts)
    };
    let sections = chain.into_sections();
    let last = sections.len().saturating_sub(1);
    let mut prompt_cut = false;
    let sections = sections
        .into_iter()
        .enumerate()
        .map(|(index, section)| {
            let (header, body) = section.into_parts();
            let (system, human) = header.into_parts();
            let human = human.map(|human| {
                if index == last && needs_cut(&human) {
                    prompt_cut = true;
                }
                shorten(human)
            });
            let header = rebuild_header(system, human);
            let body = body
                .into_iter()
                .map(|pair| {
                    let (ai, tools) = pair.into_parts();
                    let tools: Vec<Message> = tools.into_iter().map(&mut shorten).collect();
                    rebuild_pair(ai, tools)
                })
                .collect();
            ChainSection::new(header, body)
        })
        .collect();
    (ChainAst::from_sections(sections), cut, prompt_cut)
}

fn text_of(part: &ContentPart) -> &str {
    match part {
        ContentPart::Text { text, .. } => text,
        ContentPart::ToolResponse(response) => &response.content,
        _ => "",
    }
}

/// What the model reads where pruning left content out (one notice per pruned span).
pub(super) const PRUNED_NOTICE: &str = "[SYSTEM NOTICE] Earlier messages were left out here to \
     fit the context window; the original task and the latest messages are kept. If you still \
     need a result from the left-out part, get it again.";

/// How many body pairs pruning keeps at each end of the chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct KeptEnds {
    /// Body pairs kept at the start of the opening turn.
    pub(super) first: usize,
    /// Body pairs kept at the end of the last turn (at least one is, whatever this says).
    pub(super) last: usize,
}

/// What pruning removed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Pruned {
    /// Whole sections (turns) removed.
    pub(super) sections: usize,
    /// Body pairs removed from the opening and the last turn (earlier notices not counted).
    pub(super) pairs: usize,
    /// Notices put where content went: one per pruned span, so at most two.
    pub(super) notices: usize,
}

/// A piece of the chain pruning may remove, by its position before pruning.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Unit {
    /// Body pair `index` of section `section`.
    Pair { section: usize, index: usize },
    /// A whole section.
    Section(usize),
}

/// The span of the opening turn's later pairs and the turns after it (one notice).
const OPENING_SPAN: usize = 0;
/// The span of the latest exchange's older pairs (one notice).
const LAST_SPAN: usize = 1;

/// Removes whole body pairs and whole sections from the middle of the chain, oldest first,
/// until it is at most `target` tokens (or nothing more may go); returns the chain, its tokens
/// and what went: the first N and the last M pairs stay, what lies between goes, so the task
/// survives however long the run.
///
/// Always kept: the opening turn (the first section with a human message: the original task;
/// a section before it, a system message with AI messages only, stays whole) with its header
/// and its first `ends.first` body pairs; the latest exchange: the last section's header and
/// its last `ends.last` pairs (at least one) and, when the last section is a new question
/// with no answer yet, the turn before it with its header and its last `ends.last` pairs;
/// summaries written earlier by the model. What may go, oldest first: the opening turn's later
/// pairs, the sections between the opening turn and the latest exchange (whole), the latest
/// exchange's older pairs. So a tool call never leaves its responses, the system message
/// stays first, the task and its first answer stay even when summarising failed, and the
/// current exchange keeps its signed reasoning untouched (kept pairs are moved, never rebuilt).
///
/// Where something went, the model is told: a notice pair ([`PRUNED_NOTICE`]) takes the place
/// of the first unit removed in each span — the opening turn's tail and the middle turns, then
/// the latest exchange's older pairs. It is a body pair rather than a message of its own: a system
/// message mid-chain breaks the seven rules (and Anthropic has no system role in `messages`),
/// and a human message would follow or precede another human message, or read as the user
/// speaking. When the chain calls tools it is a summarization pair, the form chain-ast's
/// summaries take, with the fake thought signature when removed calls were signed (Gemini then
/// accepts it in the current turn); otherwise a completion starting with
/// [`SUMMARIZED_CONTENT_PREFIX`], as chain-ast writes summaries of chains without tools (some
/// providers reject a tool call in a chain without tools). Both count as summaries
/// ([`BodyPair::is_summary`]), so a later summary folds them in like any other, and the
/// notice carries no reasoning copied from removed pairs. A notice from an earlier pruning is
/// removed like any other unit and replaced, so notices do not pile up round after round.
pub(super) fn prune_middle(
    chain: ChainAst,
    mut tokens: usize,
    target: usize,
    counter: &TokenCounter,
    ends: KeptEnds,
    ids: &IdTemplate,
) -> (ChainAst, usize, Pruned) {
    let mut done = Pruned::default();
    let units = units(chain.sections(), ends);
    if tokens <= target || units.is_empty() {
        return (chain, tokens, done);
    }
    let count = |messages: &mut dyn Iterator<Item = &Message>| -> usize {
        messages.map(|message| counter.count(message)).sum()
    };
    let sections = chain.sections();
    let with_calls = sections
        .iter()
        .flat_map(ChainSection::body)
        .any(|pair| pair.kind() != BodyPairKind::Completion);
    let notice = |signed: bool| {
        if with_calls {
            BodyPair::from_summarization(PRUNED_NOTICE, ids, signed)
        } else {
            BodyPair::from_completion(format!("{SUMMARIZED_CONTENT_PREFIX}{PRUNED_NOTICE}"))
        }
    };
    // Ids and signatures are not counted, so every notice costs the same.
    let notice_tokens = count(&mut pair_messages(&notice(false)));

    // Oldest first; the first unit removed in a span brings the span's notice.
    let mut gone = 0;
    let mut firsts: [Option<Unit>; 2] = [None, None];
    let mut signed = [false; 2];
    for &(span, unit) in &units {
        if tokens <= target {
            break;
        }
        let cost = match unit {
            Unit::Pair { section, index } => {
                let pair = &sections[section].body()[index];
                signed[span] |= has_signed_calls(pair);
                done.pairs += usize::from(!is_notice(pair));
                count(&mut pair_messages(pair))
            }
            Unit::Section(section) => {
                let section = &sections[section];
                let header = section.header();
                signed[span] |= section.body().iter().any(has_signed_calls);
                done.sections += 1;
                count(
                    &mut header
                        .system()
                        .into_iter()
                        .chain(header.human())
                        .chain(section.body().iter().flat_map(pair_messages)),
                )
            }
        };
        tokens = tokens.saturating_sub(cost);
        if firsts[span].is_none() {
            firsts[span] = Some(unit);
            tokens += notice_tokens;
            done.notices += 1;
        }
        gone += 1;
    }

    let head = opening(sections);
    let place = |unit: Unit| match unit {
        Unit::Pair { section, index } => (section, index),
        // Middle turns follow the opening turn (its later pairs, if any, went first): the
        // notice closes the opening turn.
        Unit::Section(_) => (head, sections[head].body().len()),
    };
    // In chain order: the opening span comes before the last turn's.
    let mut notices = firsts
        .into_iter()
        .zip(signed)
        .filter_map(|(first, signed)| Some((place(first?), notice(signed))))
        .collect::<Vec<_>>()
        .into_iter()
        .peekable();
    let removed: HashSet<Unit> = units[..gone].iter().map(|&(_, unit)| unit).collect();

    let mut kept_sections = Vec::with_capacity(sections.len());
    for (section, content) in chain.into_sections().into_iter().enumerate() {
        if removed.contains(&Unit::Section(section)) {
            continue;
        }
        let (header, body) = content.into_parts();
        let len = body.len();
        let mut kept = Vec::with_capacity(len + 1);
        for (index, pair) in body.into_iter().enumerate() {
            if let Some((_, notice)) = notices.next_if(|(at, _)| *at == (section, index)) {
                kept.push(notice);
            }
            if !removed.contains(&Unit::Pair { section, index }) {
                kept.push(pair);
            }
        }
        if let Some((_, notice)) = notices.next_if(|(at, _)| *at == (section, len)) {
            kept.push(notice);
        }
        kept_sections.push(ChainSection::new(header, kept));
    }
    (ChainAst::from_sections(kept_sections), tokens, done)
}

/// The units pruning may remove, in chain order, each with its span.
fn units(sections: &[ChainSection], ends: KeptEnds) -> Vec<(usize, Unit)> {
    if sections.is_empty() {
        return Vec::new();
    }
    let head = opening(sections);
    let latest = latest_exchange(sections, head);
    let latest_kept_from = sections[latest]
        .body()
        .len()
        .saturating_sub(ends.last.max(1));
    if head == latest {
        return pair_units(sections, head, ends.first, latest_kept_from, OPENING_SPAN).collect();
    }
    let head_len = sections[head].body().len();
    pair_units(sections, head, ends.first, head_len, OPENING_SPAN)
        .chain((head + 1..latest).map(|section| (OPENING_SPAN, Unit::Section(section))))
        .chain(pair_units(sections, latest, 0, latest_kept_from, LAST_SPAN))
        .collect()
}

/// The turn holding the latest exchange, which pruning keeps with its question: the last
/// section, or, when that is a question not answered yet (no body pair: the first request of
/// a new turn), the turn before it, whose answer the question follows. Without it a new
/// question would reach the model without the exchange it refers to ("and the second one?").
/// Never a section before the opening turn, which is kept anyway.
fn latest_exchange(sections: &[ChainSection], head: usize) -> usize {
    let last = sections.len().saturating_sub(1);
    match sections.get(last) {
        Some(section) if section.body().is_empty() && last > head => last - 1,
        _ => last,
    }
}

/// Body pairs `from..to` of `section` (none if `from >= to`), but summaries the model wrote.
fn pair_units(
    sections: &[ChainSection],
    section: usize,
    from: usize,
    to: usize,
    span: usize,
) -> impl Iterator<Item = (usize, Unit)> + '_ {
    let from = from.min(to);
    sections[section].body()[from..to]
        .iter()
        .enumerate()
        .filter(|(_, pair)| !pair.is_summary() || is_notice(pair))
        .map(move |(offset, _)| {
            let index = from + offset;
            (span, Unit::Pair { section, index })
        })
}

/// The opening turn: the first section with a human message (the original task), else the
/// first section.
fn opening(sections: &[ChainSection]) -> usize {
    sections
        .iter()
        .position(|section| section.header().human().is_some())
        .unwrap_or(0)
}

/// Whether `pair` is a notice an earlier pruning put in.
fn is_notice(pair: &BodyPair) -> bool {
    match pair.kind() {
        BodyPairKind::Summarization => pair
            .tools()
            .iter()
            .flat_map(Message::tool_responses)
            .any(|response| response.content == PRUNED_NOTICE),
        BodyPairKind::Completion => matches!(
            pair.ai().parts.first(),
            Some(ContentPart::Text { text, .. })
                if text.strip_prefix(SUMMARIZED_CONTENT_PREFIX) == Some(PRUNED_NOTICE)
        ),
        BodyPairKind::RequestResponse => false,
    }
}

/// Whether a pair's tool calls carry reasoning (chain-ast's `contains_tool_call_reasoning`,
/// without copying the messages).
fn has_signed_calls(pair: &BodyPair) -> bool {
    pair.ai().tool_calls().any(|call| call.reasoning.is_some())
}

fn pair_messages(pair: &BodyPair) -> impl Iterator<Item = &Message> {
    std::iter::once(pair.ai()).chain(pair.tools())
}

/// A header from messages whose roles are already right.
fn rebuild_header(system: Option<Message>, human: Option<Message>) -> Header {
    // The roles come from a header, so the check cannot fail.
    Header::new(system, human).unwrap_or_default()
}

/// A body pair from messages whose roles are already right.
fn rebuild_pair(ai: Message, tools: Vec<Message>) -> BodyPair {
    // The roles come from a body pair, so the check cannot fail.
    BodyPair::new(ai, tools).unwrap_or_else(|_| BodyPair::from_completion(String::new()))
}

#[cfg(test)]
mod tests {
    use chain_ast::testing::{ChainConfig, generate_chain};
    use proptest::prelude::*;

    use super::*;
    use crate::compress::chain_tokens;

    fn prune(
        chain: ChainAst,
        target: usize,
        first: usize,
        last: usize,
    ) -> (ChainAst, usize, Pruned) {
        let counter = TokenCounter::estimate();
        let tokens = chain_tokens(&chain, &counter);
        let ends = KeptEnds { first, last };
        prune_middle(
            chain,
            tokens,
            target,
            &counter,
            ends,
            &IdTemplate::default(),
        )
    }

    /// The calls' ids of every tool-calling pair, and `text` for completions, in chain order;
    /// notices are `notice`, human messages their text.
    fn outline(chain: &ChainAst) -> Vec<String> {
        chain
            .sections()
            .iter()
            .flat_map(|section| {
                let human = section.header().human().map(Message::text);
                let pairs = section.body().iter().map(|pair| {
                    if is_notice(pair) {
                        return "notice".to_owned();
                    }
                    let ids: Vec<&str> = pair.ai().tool_calls().map(|c| c.id.as_str()).collect();
                    if ids.is_empty() {
                        pair.ai().text()
                    } else {
                        ids.join("+")
                    }
                });
                human.into_iter().chain(pairs).collect::<Vec<_>>()
            })
            .collect()
    }

    proptest! {
        /// Whatever is pruned, the chain stays valid, the system message stays first and
        /// alone, the opening turn's header and first pairs and the last section's header and
        /// last pairs stay, each pruned span has one notice, the token count returned is the
        /// chain's, and pruning stops at the target unless nothing more may go.
        #[test]
        fn pruning_keeps_both_ends_and_a_valid_chain(
            pairs in proptest::collection::vec(1usize..4, 1..6),
            tools in proptest::collection::vec(any::<bool>(), 0..16),
            calls in proptest::collection::vec(1usize..4, 0..16),
            target in 0usize..600,
            first in 0usize..3,
            last in 1usize..3,
        ) {
            let config = ChainConfig {
                include_system: true,
                sections: pairs.len(),
                body_pairs_per_section: pairs,
                tools_for_body_pairs: tools,
                tool_calls_per_body_pair: calls,
                include_all_tool_responses: true,
            };
            let chain = ChainAst::new(&generate_chain(&config), false).expect("generated chains are valid");
            let sections = chain.sections();
            let first_header = sections[0].header().clone();
            let first_pairs: Vec<BodyPair> = sections[0].body().iter().take(first).cloned().collect();
            let last_section = sections.last().expect("a section").clone();
            let last_body = last_section.body();
            let last_pairs = last_body[last_body.len().saturating_sub(last)..].to_vec();
            let ends = KeptEnds { first, last };

            let (pruned, left, done) = prune(chain, target, first, last);
            prop_assert!(pruned.validate().is_ok(), "{}", pruned);
            prop_assert_eq!(left, chain_tokens(&pruned, &TokenCounter::estimate()));
            let messages = pruned.messages();
            prop_assert_eq!(messages[0].role, Role::System);
            prop_assert!(messages.iter().skip(1).all(|m| m.role != Role::System));
            let kept = pruned.sections();
            prop_assert_eq!(kept[0].header(), &first_header);
            prop_assert!(kept[0].body().starts_with(&first_pairs));
            let kept_last = kept.last().expect("a section");
            prop_assert_eq!(kept_last.header(), last_section.header());
            prop_assert!(kept_last.body().ends_with(&last_pairs));
            let notices = kept.iter().flat_map(ChainSection::body).filter(|p| is_notice(p)).count();
            prop_assert_eq!(notices, done.notices);
            prop_assert!(notices <= 2);
            // Under the target, or only notices are left to prune.
            prop_assert!(
                left <= target
                    || units(kept, ends).iter().all(|&(_, unit)| match unit {
                        Unit::Pair { section, index } => is_notice(&kept[section].body()[index]),
                        Unit::Section(_) => false,
                    }),
                "{} tokens over {}: {}", left, target, pruned
            );
            // Pruning again replaces notices rather than adding to them.
            let (again, _, _) = prune(pruned.clone(), target, first, last);
            prop_assert!(again.validate().is_ok());
            prop_assert!(again.sections().iter().flat_map(ChainSection::body).filter(|p| is_notice(p)).count() <= 2);
            if left <= target {
                prop_assert_eq!(again, pruned);
            }
        }
    }

    proptest! {
        /// Whatever the target and the kept ends, the latest exchange survives pruning: the
        /// last answer with the question of its turn, also when the chain ends with a new
        /// question that has no answer yet (the first request of a turn).
        #[test]
        fn the_latest_exchange_always_survives(
            pairs in proptest::collection::vec(1usize..4, 1..6),
            tools in proptest::collection::vec(any::<bool>(), 0..16),
            target in 0usize..600,
            first in 0usize..3,
            last in 1usize..3,
            question in any::<bool>(),
        ) {
            let config = ChainConfig {
                include_system: true,
                sections: pairs.len(),
                body_pairs_per_section: pairs,
                tools_for_body_pairs: tools,
                tool_calls_per_body_pair: vec![1],
                include_all_tool_responses: true,
            };
            let mut chain = ChainAst::new(&generate_chain(&config), false).expect("generated chains are valid");
            let answered = chain.sections().last().expect("a section").clone();
            let latest = answered.body().last().expect("an answer").clone();
            if question {
                chain.append_human_message("And the next step?");
            }

            let (pruned, _, _) = prune(chain, target, first, last);
            prop_assert!(pruned.validate().is_ok(), "{}", pruned);
            let kept = pruned.sections();
            let turn = &kept[kept.len() - 1 - usize::from(question)];
            prop_assert_eq!(turn.header().human(), answered.header().human(), "{}", pruned);
            prop_assert_eq!(turn.body().last(), Some(&latest), "{}", pruned);
            if question {
                prop_assert_eq!(kept.last().and_then(|s| s.header().human()).map(Message::text), Some("And the next step?".to_owned()));
            }
        }
    }

    #[test]
    fn a_new_question_keeps_the_exchange_it_follows() {
        let mut chain = four_turns();
        chain.append_human_message("Question 5");
        let (pruned, _, done) = prune(chain, 0, 1, 1);
        assert_eq!(
            outline(&pruned),
            [
                "Question 1",
                "tool-1",
                "notice",
                "Question 4",
                "notice",
                "tool-8",
                "Question 5"
            ]
        );
        assert_eq!(
            done,
            Pruned {
                sections: 2,
                pairs: 4,
                notices: 2
            }
        );
        assert!(pruned.validate().is_ok());
    }

    /// A task, then turns 2 and 3, then the current turn: human messages `Question n`, pairs
    /// calling `tool-k` with a 1 000-byte result each (bigger than a notice).
    fn four_turns() -> ChainAst {
        let mut messages = vec![Message::system("You read pages.")];
        let mut call = 0;
        for (turn, pairs) in [3, 1, 1, 3].into_iter().enumerate() {
            messages.push(Message::human(format!("Question {}", turn + 1)));
            for _ in 0..pairs {
                call += 1;
                let id = format!("tool-{call}");
                let call = messages::ToolCall::new(&id, "read", "{}");
                messages.push(Message::ai_tool_calls(None, vec![call]));
                messages.push(Message::tool_response(&id, "read", "x".repeat(1_000)));
            }
        }
        ChainAst::new(&messages, false).expect("valid")
    }

    #[test]
    fn the_middle_goes_oldest_first_and_the_ends_stay() {
        let all = outline(&four_turns());
        assert_eq!(
            all,
            [
                "Question 1",
                "tool-1",
                "tool-2",
                "tool-3",
                "Question 2",
                "tool-4",
                "Question 3",
                "tool-5",
                "Question 4",
                "tool-6",
                "tool-7",
                "tool-8"
            ]
        );
        let full = chain_tokens(&four_turns(), &TokenCounter::estimate());
        // Lowering the target removes, in order: the opening turn's later pairs, turn 2, turn 3,
        // the current turn's older pairs; then nothing more.
        let expected: [&[&str]; 7] = [
            &[
                "Question 1",
                "tool-1",
                "tool-2",
                "tool-3",
                "Question 2",
                "tool-4",
                "Question 3",
                "tool-5",
                "Question 4",
                "tool-6",
                "tool-7",
                "tool-8",
            ],
            &[
                "Question 1",
                "tool-1",
                "notice",
                "tool-3",
                "Question 2",
                "tool-4",
                "Question 3",
                "tool-5",
                "Question 4",
                "tool-6",
                "tool-7",
                "tool-8",
            ],
            &[
                "Question 1",
                "tool-1",
                "notice",
                "Question 2",
                "tool-4",
                "Question 3",
                "tool-5",
                "Question 4",
                "tool-6",
                "tool-7",
                "tool-8",
            ],
            &[
                "Question 1",
                "tool-1",
                "notice",
                "Question 3",
                "tool-5",
                "Question 4",
                "tool-6",
                "tool-7",
                "tool-8",
            ],
            &[
                "Question 1",
                "tool-1",
                "notice",
                "Question 4",
                "tool-6",
                "tool-7",
                "tool-8",
            ],
            &[
                "Question 1",
                "tool-1",
                "notice",
                "Question 4",
                "notice",
                "tool-7",
                "tool-8",
            ],
            &[
                "Question 1",
                "tool-1",
                "notice",
                "Question 4",
                "notice",
                "tool-8",
            ],
        ];
        let mut seen = Vec::new();
        for target in (0..=full).rev() {
            let (pruned, left, _) = prune(four_turns(), target, 1, 1);
            assert!(pruned.validate().is_ok());
            let outline = outline(&pruned);
            if seen.last() != Some(&outline) {
                assert!(
                    left <= target || outline == expected[6],
                    "{target}: {pruned}"
                );
                seen.push(outline);
            }
        }
        assert_eq!(
            seen,
            expected.map(|o| o.iter().map(|s| s.to_string()).collect::<Vec<_>>())
        );
    }

    #[test]
    fn kept_ends_follow_the_policy() {
        let (pruned, _, done) = prune(four_turns(), 0, 2, 2);
        assert_eq!(
            outline(&pruned),
            [
                "Question 1",
                "tool-1",
                "tool-2",
                "notice",
                "Question 4",
                "notice",
                "tool-7",
                "tool-8"
            ]
        );
        assert_eq!(
            done,
            Pruned {
                sections: 2,
                pairs: 2,
                notices: 2
            }
        );
        // Nothing kept after the task but the last exchange.
        let (pruned, _, _) = prune(four_turns(), 0, 0, 1);
        assert_eq!(
            outline(&pruned),
            ["Question 1", "notice", "Question 4", "notice", "tool-8"]
        );
        assert!(pruned.validate().is_ok());
    }

    #[test]
    fn notices_take_the_form_of_summaries() {
        // A chain without tools gets a completion notice, recognised as a summary.
        let config = ChainConfig {
            sections: 4,
            ..ChainConfig::default()
        };
        let chain = ChainAst::new(&generate_chain(&config), false).expect("valid");
        let (pruned, _, done) = prune(chain, 0, 1, 1);
        assert_eq!(
            done,
            Pruned {
                sections: 2,
                pairs: 0,
                notices: 1
            }
        );
        let notice = &pruned.sections()[0].body()[1];
        assert_eq!(notice.kind(), BodyPairKind::Completion);
        assert!(notice.is_summary());
        assert_eq!(
            notice.ai().text(),
            format!("{SUMMARIZED_CONTENT_PREFIX}{PRUNED_NOTICE}")
        );
        assert!(pruned.validate().is_ok());

        // Signed calls pruned from the current turn: a summarization pair with the fake
        // signature; the kept pairs are untouched.
        let signed = |n: u32| {
            let call = messages::ToolCall {
                reasoning: Some(messages::Reasoning::signature(format!("sig-{n}"))),
                ..messages::ToolCall::new(format!("call_{n}"), "read", "{}")
            };
            [
                Message::ai_tool_calls(None, vec![call]),
                Message::tool_response(format!("call_{n}"), "read", "x".repeat(400)),
            ]
        };
        let mut messages = vec![Message::human("Read everything.")];
        (1..=4).for_each(|n| messages.extend(signed(n)));
        let chain = ChainAst::new(&messages, false).expect("valid");
        let (pruned, _, done) = prune(chain.clone(), 0, 1, 1);
        assert_eq!(
            done,
            Pruned {
                sections: 0,
                pairs: 2,
                notices: 1
            }
        );
        let body = pruned.sections()[0].body();
        assert_eq!(body.len(), 3);
        assert_eq!(body[0], chain.sections()[0].body()[0]);
        assert_eq!(body[1].kind(), BodyPairKind::Summarization);
        let call = body[1].ai().tool_calls().next().expect("a call");
        assert_eq!(
            call.reasoning.as_ref().and_then(|r| r.signature.as_deref()),
            Some(chain_ast::FAKE_THOUGHT_SIGNATURE)
        );
        assert_eq!(body[2], chain.sections()[0].body()[3]);
        assert!(pruned.validate().is_ok());
    }

    #[test]
    fn summaries_the_model_wrote_stay() {
        let summary =
            BodyPair::from_summarization("Pages 1 to 9 read.", &IdTemplate::default(), false);
        let mut chain = four_turns();
        let mut sections = chain.into_sections();
        let (header, mut body) = sections.remove(0).into_parts();
        body.insert(0, summary.clone());
        sections.insert(0, ChainSection::new(header, body));
        chain = ChainAst::from_sections(sections);
        // Nothing kept at the start but the task: the summary stays anyway.
        let (pruned, _, _) = prune(chain, 0, 0, 1);
        assert_eq!(pruned.sections()[0].body()[0], summary);
        assert!(is_notice(&pruned.sections()[0].body()[1]));
        assert!(pruned.validate().is_ok());
    }
}

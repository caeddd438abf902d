//! The two mechanical strategies: cutting long attachments, and pruning whole body pairs and
//! sections from the middle of the chain.

use chain_ast::{BodyPair, ChainAst, ChainSection, Header};
use messages::{ContentPart, Message, Role};

use super::TokenCounter;

/// Cuts every text longer than `limit` characters in human and tool messages (texts and tool
/// results) to `limit` characters: 60 % from the start, 40 % from the end, and a notice of what
/// was removed in between (Wegent's wording). AI and system messages are left alone: the AI's
/// are signed by some providers and the system prompt is the caller's. Returns the chain and
/// how many texts were cut.
pub(super) fn truncate_attachments(chain: ChainAst, limit: usize) -> (ChainAst, usize) {
    let needs_cut = |message: &Message| {
        matches!(message.role, Role::Human | Role::Tool)
            && message.parts.iter().any(|part| text_of(part).len() > limit)
    };
    if !chain.iter_messages().any(needs_cut) {
        return (chain, 0);
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
    let sections = chain
        .into_sections()
        .into_iter()
        .map(|section| {
            let (header, body) = section.into_parts();
            let (system, human) = header.into_parts();
            let header = rebuild_header(system, human.map(&mut shorten));
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
    (ChainAst::from_sections(sections), cut)
}

fn text_of(part: &ContentPart) -> &str {
    match part {
        ContentPart::Text { text, .. } => text,
        ContentPart::ToolResponse(response) => &response.content,
        _ => "",
    }
}

/// `text` cut to `limit` characters with a notice in the middle, or `None` if it fits.
fn truncate_middle(text: &str, limit: usize) -> Option<String> {
    // Bytes bound characters: a text of at most `limit` bytes fits without counting.
    if text.len() <= limit {
        return None;
    }
    let total = text.chars().count();
    if total <= limit {
        return None;
    }
    let head = limit * 6 / 10;
    let tail = limit - head;
    let head_end = text.char_indices().nth(head).map_or(text.len(), |(i, _)| i);
    let tail_start = text
        .char_indices()
        .nth(total - tail)
        .map_or(text.len(), |(i, _)| i);
    let removed = total - limit;
    Some(format!(
        "{}\n\n[... Middle content truncated. Original: {total} chars, kept {limit} chars ({}%), \
         removed {removed} chars from middle ...]\n\n{}",
        &text[..head_end],
        limit * 100 / total,
        &text[tail_start..],
    ))
}

/// Removes whole units from the middle of the chain, oldest first, until it is at most
/// `target` tokens (or nothing more may go); returns the chain, its tokens and the number of
/// (sections, body pairs) removed.
///
/// Units are whole sections before the last one (the first section's system message moves to
/// the next section's header), then the last section's body pairs except earlier summaries and
/// its last pair. So a tool call never leaves its responses, the system message stays first,
/// the current request (last header) and the last exchange (with its signed reasoning) stay.
pub(super) fn prune_middle(
    chain: ChainAst,
    mut tokens: usize,
    target: usize,
    counter: &TokenCounter,
) -> (ChainAst, usize, (usize, usize)) {
    let count = |messages: &mut dyn Iterator<Item = &Message>| -> usize {
        messages.map(|message| counter.count(message)).sum()
    };
    let mut sections = chain.into_sections();
    let mut pruned = (0, 0);
    while tokens > target && sections.len() > 1 {
        let first = sections.remove(0);
        let (header, body) = first.into_parts();
        let (system, human) = header.into_parts();
        tokens = tokens.saturating_sub(count(
            &mut human.iter().chain(body.iter().flat_map(pair_messages)),
        ));
        if let (Some(system), Some(next)) = (system, sections.first_mut()) {
            next.set_header(rebuild_header(Some(system), next.header().human().cloned()));
        }
        pruned.0 += 1;
    }
    if tokens > target
        && let Some(last) = sections.pop()
    {
        let (header, body) = last.into_parts();
        let keep_from = body.len().saturating_sub(1);
        let mut kept = Vec::with_capacity(body.len());
        for (index, pair) in body.into_iter().enumerate() {
            if tokens > target && index < keep_from && !pair.is_summary() {
                tokens = tokens.saturating_sub(count(&mut pair_messages(&pair)));
                pruned.1 += 1;
            } else {
                kept.push(pair);
            }
        }
        sections.push(ChainSection::new(header, kept));
    }
    (ChainAst::from_sections(sections), tokens, pruned)
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

    proptest! {
        /// Whatever is pruned, the chain stays valid, the system message stays first and
        /// alone, the last section's header and last exchange stay, and the token count
        /// returned is the chain's.
        #[test]
        fn pruning_keeps_a_valid_chain(
            pairs in proptest::collection::vec(1usize..4, 1..5),
            tools in proptest::collection::vec(any::<bool>(), 0..12),
            calls in proptest::collection::vec(1usize..4, 0..12),
            target in 0usize..600,
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
            let counter = TokenCounter::estimate();
            let tokens = chain_tokens(&chain, &counter);
            let last_header = chain.sections().last().map(|s| s.header().human().cloned());
            let last_pair = chain.sections().last().and_then(|s| s.body().last().cloned());

            let (pruned, left, _) = prune_middle(chain, tokens, target, &counter);
            prop_assert!(pruned.validate().is_ok());
            prop_assert_eq!(left, chain_tokens(&pruned, &counter));
            let messages = pruned.messages();
            prop_assert_eq!(messages[0].role, Role::System);
            prop_assert!(messages.iter().skip(1).all(|m| m.role != Role::System));
            prop_assert_eq!(pruned.sections().last().map(|s| s.header().human().cloned()), last_header);
            prop_assert_eq!(pruned.sections().last().and_then(|s| s.body().last().cloned()), last_pair);
        }
    }

    #[test]
    fn truncation_keeps_head_and_tail_and_says_what_went() {
        let text = format!("{}{}", "a".repeat(600), "b".repeat(400));
        let cut = truncate_middle(&text, 100).expect("too long");
        assert!(cut.starts_with(&"a".repeat(60)));
        assert!(cut.ends_with(&"b".repeat(40)));
        assert!(cut.contains(
            "[... Middle content truncated. Original: 1000 chars, kept 100 chars (10%), removed \
             900 chars from middle ...]"
        ));
        assert_eq!(truncate_middle("short", 100), None);
        // Multi-byte characters are cut on character boundaries.
        assert!(truncate_middle(&"é".repeat(300), 100).is_some());
    }
}

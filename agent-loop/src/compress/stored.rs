//! Summaries kept in the conversation tree: what a compressed request put in place of the
//! conversation's opening, so that the next run starts from it instead of summarising the
//! whole history again.

use chain_ast::ChainAst;
use conversation_tree::PathSummary;
use messages::{Message, Role};

/// The summary `chain` (just compressed) holds in place of the opening of `transcript` (the
/// whole conversation it was compressed from), ready to store with the answer to it. `None`
/// when the chain does not open with a summary, or when what follows the summary is not the
/// transcript's end as it stands (content after it was cut or pruned too): a stored summary
/// must give back exactly the chain the model read.
pub(crate) fn to_store(chain: &ChainAst, transcript: &[Message]) -> Option<PathSummary> {
    let opening = chain.sections().first()?;
    let summary = opening.body().first().filter(|pair| pair.is_summary())?;
    let prefix: Vec<Message> = opening
        .header()
        .human()
        .into_iter()
        .cloned()
        .chain(summary.messages())
        .collect();
    let system = usize::from(opening.header().system().is_some());
    let tail: Vec<&Message> = chain.iter_messages().skip(system + prefix.len()).collect();
    let start = transcript.len().checked_sub(tail.len())?;
    let own_system = usize::from(
        transcript
            .first()
            .is_some_and(|message| message.role == Role::System),
    );
    if start <= own_system || !transcript[start..].iter().eq(tail) {
        return None;
    }
    Some(PathSummary::new(&transcript[own_system..start], prefix))
}

#[cfg(test)]
mod tests {
    use chain_ast::{BodyPair, ChainSection, Header, IdTemplate};

    use super::*;

    fn transcript() -> Vec<Message> {
        vec![
            Message::system("s"),
            Message::human("q1"),
            Message::ai("a1"),
            Message::human("q2"),
            Message::ai("a2"),
            Message::human("q3"),
        ]
    }

    /// `transcript()` with q1/a1 and a2 folded into a summary after q2.
    fn summarised() -> ChainAst {
        let summary =
            BodyPair::from_summarization("q1 got a1; q2 got a2", &IdTemplate::default(), false);
        let header = Header::new(Some(Message::system("s")), Some(Message::human("q2"))).unwrap();
        let mut chain = ChainAst::from_sections(vec![ChainSection::new(header, vec![summary])]);
        chain.append_human_message("q3");
        chain
    }

    #[test]
    fn the_summary_stands_for_what_it_replaced_and_gives_the_chain_back() {
        let chain = summarised();
        let stored = to_store(&chain, &transcript()).expect("a summary to store");
        assert_eq!(stored.replaces(), 4);
        assert_eq!(stored.apply(&transcript()), Some(chain.messages()));
        // The next turn: the same opening, more after it.
        let mut later = transcript();
        later.extend([Message::ai("a3"), Message::human("q4")]);
        let applied = stored.apply(&later).expect("the same opening");
        assert_eq!(applied[..applied.len() - 2], chain.messages()[..]);
        // Another opening is not summarised by it.
        let mut edited = transcript();
        edited[2] = Message::ai("another a1");
        assert_eq!(stored.apply(&edited), None);
    }

    #[test]
    fn nothing_is_stored_when_the_chain_does_not_end_as_the_transcript() {
        let mut other = transcript();
        *other.last_mut().expect("a message") = Message::human("q3, cut");
        assert_eq!(to_store(&summarised(), &other), None);
        // No summary at the start.
        let plain = ChainAst::new(&transcript(), false).expect("valid");
        assert_eq!(to_store(&plain, &transcript()), None);
    }
}

//! The checks once every run has ended: what the clients received against the full replay and
//! the stored events, and the conversation tree against each run's script.

use std::collections::HashMap;

use conversation_tree::runs::MAX_EVENT_PAGE;
use conversation_tree::{NodeId, Role, Store};

use crate::client::RunLog;
use crate::provider::{TOOL_ROUNDS, answer_text, call_id};
use crate::replicas::{LOOPBACK_AGENT, PLAIN_MODEL};
use crate::sse::Frame;

/// What is wrong with one run, by kind; empty when nothing is.
#[derive(Clone, Debug, Default)]
pub(crate) struct Findings {
    /// Segments (the POST's stream or a resume) that are not the replay's events after their
    /// `starting_after`, byte for byte.
    pub(crate) differing_segments: usize,
    /// Nodes the run should have recorded and did not (rounds, tool results, its last node).
    pub(crate) lost_nodes: usize,
    /// Nodes stored twice (the same turn at the same place), and tool calls answered twice.
    pub(crate) duplicated_nodes: usize,
    /// Whether the run ended completed with a record that names no last node (its tree was
    /// found by its prompt instead).
    pub(crate) no_last_node: bool,
    /// What the differences are.
    pub(crate) notes: Vec<String>,
}

/// Compares every segment `log` received with `replay` (the run's events from the start).
pub(crate) fn compare_segments(log: &RunLog, replay: &[Frame], findings: &mut Findings) {
    let by_seq: HashMap<u64, &Frame> = replay.iter().map(|frame| (frame.seq, frame)).collect();
    for (index, segment) in log.segments.iter().enumerate() {
        let first = segment.after.map_or(0, |after| after + 1);
        let mismatch = segment
            .frames
            .iter()
            .enumerate()
            .find_map(|(offset, frame)| {
                let expected_seq = first + offset as u64;
                match by_seq.get(&expected_seq) {
                    None => Some(format!("event {expected_seq} is not in the replay")),
                    Some(_) if frame.seq != expected_seq => Some(format!(
                        "sequence number {} where {expected_seq} was due",
                        frame.seq
                    )),
                    Some(expected) if expected.bytes != frame.bytes => Some(format!(
                        "event {expected_seq} differs: {:?} vs the replay's {:?}",
                        String::from_utf8_lossy(&frame.bytes),
                        String::from_utf8_lossy(&expected.bytes)
                    )),
                    Some(_) => None,
                }
            });
        if let Some(mismatch) = mismatch {
            findings.differing_segments += 1;
            findings.notes.push(format!(
                "segment {index} (replica {}, starting_after {:?}): {mismatch}",
                segment.replica, segment.after
            ));
        }
    }
}

/// Checks the replay itself: numbered from 0 without gaps, ending with a terminal event, and
/// equal to the events the store holds.
pub(crate) async fn check_replay(
    store: &dyn Store,
    id: &str,
    replay: &[Frame],
    findings: &mut Findings,
) {
    if let Some((index, frame)) = replay
        .iter()
        .enumerate()
        .find(|(index, frame)| frame.seq != *index as u64)
    {
        findings.differing_segments += 1;
        findings.notes.push(format!(
            "the full replay's event {index} has sequence number {}",
            frame.seq
        ));
        return;
    }
    let mut stored = Vec::new();
    let mut after = None;
    loop {
        match store.events_after(id, after, MAX_EVENT_PAGE).await {
            Ok(page) if page.is_empty() => break,
            Ok(page) => {
                after = page.last().map(|event| event.seq);
                stored.extend(page);
            }
            Err(err) => {
                findings.notes.push(format!("the store's events: {err}"));
                return;
            }
        }
    }
    let same = stored.len() == replay.len()
        && stored
            .iter()
            .zip(replay)
            .all(|(event, frame)| event.seq == frame.seq && event.data == frame.bytes);
    if !same {
        findings.differing_segments += 1;
        findings.notes.push(format!(
            "the full replay ({} events) is not the {} stored events",
            replay.len(),
            stored.len()
        ));
    }
}

/// The latest node of each run's conversation, by the run tag in its first prompt (every run
/// starts a conversation of its own).
pub(crate) async fn latest_nodes_by_tag(
    store: &dyn Store,
) -> Result<HashMap<usize, NodeId>, String> {
    let conversations = store
        .conversations(100_000)
        .await
        .map_err(|err| format!("listing the conversations: {err}"))?;
    let mut by_tag = HashMap::new();
    for conversation in conversations {
        let Ok(Some(latest)) = store.latest_node(&conversation.id).await else {
            continue;
        };
        let Ok(messages) = store.messages_for_path(latest.id()).await else {
            continue;
        };
        let tag = messages
            .iter()
            .find(|message| message.role == Role::Human)
            .and_then(|message| crate::provider::tag_in(&message.text()));
        if let Some(tag) = tag {
            by_tag.insert(tag, latest.id());
        }
    }
    Ok(by_tag)
}

/// Checks the conversation tree of a run that reached `status`: its last node, each round
/// once, each tool call answered once, the final answer the script's.
pub(crate) async fn check_tree(
    store: &dyn Store,
    by_tag: &HashMap<usize, NodeId>,
    log: &RunLog,
    status: &str,
    findings: &mut Findings,
) {
    let Some(id) = &log.id else { return };
    let run = match store.run(id).await {
        Ok(Some(run)) => run,
        Ok(None) => {
            findings.lost_nodes += 1;
            findings
                .notes
                .push("the store holds no run record".to_owned());
            return;
        }
        Err(err) => {
            findings
                .notes
                .push(format!("reading the run record: {err}"));
            return;
        }
    };
    let completed = status == "completed";
    if !completed {
        findings.notes.push(format!(
            "it ended {status}: {}",
            run.error.as_deref().unwrap_or("(no error recorded)")
        ));
    }
    if completed && run.last_node.is_none() {
        findings.no_last_node = true;
        findings
            .notes
            .push("its record names no last node".to_owned());
    }
    let Some(last) = run.last_node.or_else(|| by_tag.get(&log.plan.tag).copied()) else {
        if completed {
            findings.lost_nodes += 1;
            findings
                .notes
                .push("no node of the tree holds its prompt".to_owned());
        }
        return;
    };
    let (path, messages) = match (
        store.path_to_root(last).await,
        store.messages_for_path(last).await,
    ) {
        (Ok(path), Ok(messages)) => (path, messages),
        (Err(err), _) | (_, Err(err)) => {
            findings.lost_nodes += 1;
            findings.notes.push(format!("its last node {last}: {err}"));
            return;
        }
    };
    let loopback = log.plan.agent == LOOPBACK_AGENT;
    let scripted = loopback || log.plan.agent == PLAIN_MODEL;
    let rounds = path
        .iter()
        .take_while(|node| Some(node.id()) != run.continues_from)
        .count();
    let expected_rounds = match log.plan.agent {
        LOOPBACK_AGENT => TOOL_ROUNDS + 1,
        PLAIN_MODEL => 1,
        // `echo` calls each offered tool once, then answers.
        _ => 2,
    };
    if completed && rounds < expected_rounds {
        findings.lost_nodes += expected_rounds - rounds;
        findings.notes.push(format!(
            "{rounds} rounds on the run's path, {expected_rounds} expected"
        ));
    }
    if rounds > expected_rounds {
        findings.duplicated_nodes += rounds - expected_rounds;
        findings.notes.push(format!(
            "{rounds} rounds on the run's path, {expected_rounds} expected"
        ));
    }
    let mut calls: HashMap<String, usize> = HashMap::new();
    let mut answers: HashMap<String, usize> = HashMap::new();
    for message in &messages {
        for call in message.tool_calls() {
            *calls.entry(call.id.clone()).or_default() += 1;
        }
        for response in message.tool_responses() {
            *answers.entry(response.tool_call_id.clone()).or_default() += 1;
        }
    }
    for (call, count) in &calls {
        let answered = answers.get(call).copied().unwrap_or(0);
        if *count > 1 || answered > 1 {
            findings.duplicated_nodes += (*count - 1) + answered.saturating_sub(1);
            findings.notes.push(format!(
                "tool call {call}: made {count} times, answered {answered} times"
            ));
        } else if answered == 0 && completed {
            findings.lost_nodes += 1;
            findings
                .notes
                .push(format!("tool call {call} was never answered"));
        }
    }
    for call in answers.keys().filter(|call| !calls.contains_key(*call)) {
        findings.duplicated_nodes += 1;
        findings
            .notes
            .push(format!("a tool result for {call}, which no call made"));
    }
    if completed && scripted {
        let tag = log.plan.tag;
        for round in (0..TOOL_ROUNDS).filter(|_| loopback) {
            if !calls.contains_key(&call_id(tag, round)) {
                findings.lost_nodes += 1;
                findings
                    .notes
                    .push(format!("round {round}'s tool call is missing"));
            }
        }
        let final_text = messages
            .last()
            .filter(|message| message.role == Role::Ai)
            .map(conversation_tree::Message::text);
        if final_text.as_deref().map(str::trim) != Some(answer_text(tag).trim()) {
            findings.lost_nodes += 1;
            findings
                .notes
                .push(format!("the last node's answer is {final_text:?}"));
        }
    }
    // The same turn stored twice at one place of the run's conversation.
    if let Some(node) = path.first()
        && let Ok(nodes) = store.conversation_nodes(node.conversation_id()).await
    {
        let mut places: HashMap<(Option<i64>, &str), usize> = HashMap::new();
        for node in &nodes {
            let parent = node.parent().map(|parent| parent.get());
            *places.entry((parent, node.prompt_hash())).or_default() += 1;
        }
        let twice: usize = places.values().map(|count| count - 1).sum();
        if twice > 0 {
            findings.duplicated_nodes += twice;
            findings.notes.push(format!(
                "{twice} nodes of its conversation repeat a turn at the same place"
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::{Plan, Segment};

    fn frame(seq: u64, text: &str) -> Frame {
        Frame {
            bytes: format!("event: e\ndata: {{\"sequence_number\":{seq},\"t\":\"{text}\"}}\n\n")
                .into_bytes(),
            seq,
            kind: "e".to_owned(),
        }
    }

    fn log(segments: Vec<Segment>) -> RunLog {
        RunLog {
            plan: Plan {
                tag: 0,
                agent: LOOPBACK_AGENT,
                stream: true,
                token: 0,
            },
            id: Some("resp_1".to_owned()),
            first_status: None,
            posted_to: Some(0),
            segments,
            final_status: None,
            output_text: None,
            cut_short: Vec::new(),
            errors: Vec::new(),
            seen_by_other_token: false,
        }
    }

    #[test]
    fn a_resume_is_the_replay_after_its_starting_after() {
        let replay: Vec<Frame> = (0..5).map(|seq| frame(seq, "x")).collect();
        let same = Segment {
            replica: 1,
            after: Some(1),
            frames: vec![frame(2, "x"), frame(3, "x")],
        };
        let live = Segment {
            replica: 0,
            after: None,
            frames: vec![frame(0, "x")],
        };
        let mut findings = Findings::default();
        compare_segments(&log(vec![live, same]), &replay, &mut findings);
        assert_eq!(findings.differing_segments, 0, "{:?}", findings.notes);

        let skipped = Segment {
            replica: 2,
            after: Some(1),
            frames: vec![frame(3, "x")],
        };
        let altered = Segment {
            replica: 2,
            after: Some(3),
            frames: vec![frame(4, "y")],
        };
        let mut findings = Findings::default();
        compare_segments(&log(vec![skipped, altered]), &replay, &mut findings);
        assert_eq!(findings.differing_segments, 2, "{:?}", findings.notes);
        assert!(findings.notes[0].contains("sequence number 3 where 2 was due"));
        assert!(findings.notes[1].contains("event 4 differs"));
    }
}

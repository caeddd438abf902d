//! Compression before each request: triggered between tool rounds, signatures of the current
//! exchange preserved, fake signature on the summary, attachments cut, pruning without a
//! summary (the task, its first answer and the latest exchange kept, the middle pruned, a
//! notice where it was), never a system message mid-chain.

use crate::common;

use std::sync::Arc;

use agent_loop::{Agent, AgentEvent, AgentInput, ContextPolicy, StopReason, TokenCounter};
use chain_ast::{
    BodyPair, BodyPairKind, ChainAst, FAKE_THOUGHT_SIGNATURE, IdTemplate, SUMMARIZATION_TOOL_NAME,
};
use common::*;
use messages::{ContentPart, Message, Reasoning, Role, ToolCall};
use proptest::prelude::*;
use providers::testing::{ScriptedModel, ScriptedResponse};
use providers::{
    ChatModel, ChatRequest, ChatResponse, EventStream, ModelInfo, Provider, ProviderError,
};
use toolchain::{ExecutionContext, Tool, ToolError, ToolResult, ToolSet, async_trait};

/// A round that thinks (Anthropic-style signed block) and calls `read_page` with a Gemini-style
/// signature on the call.
fn signed_round(n: u32) -> (ScriptedResponse, Reasoning, ToolCall) {
    let thinking = Reasoning {
        text: format!("Reading page {n}."),
        signature: Some(format!("thinking-sig-{n}")),
        ..Default::default()
    };
    let call = ToolCall {
        reasoning: Some(Reasoning::signature(format!("call-sig-{n}"))),
        ..ToolCall::new(format!("toolu_{n}"), "read_page", format!(r#"{{"n":{n}}}"#))
    };
    let response = ScriptedResponse::new()
        .reasoning_block(thinking.clone())
        .tool_call_with(call.clone())
        .usage(usage(100, 10));
    (response, thinking, call)
}

#[tokio::test]
async fn compression_between_tool_rounds_keeps_the_current_signatures() {
    let (r1, _, _) = signed_round(1);
    let (r2, _, _) = signed_round(2);
    let (r3, thinking3, call3) = signed_round(3);
    let model = small_model(vec![
        r1,
        r2,
        r3,
        ScriptedResponse::text("Pages 1 and 2 repeat their numbers.").usage(usage(700, 12)),
        ScriptedResponse::text("All three pages read."),
    ]);
    let agent = Agent::builder()
        .model(model.clone())
        .tools(ToolSet::new().with(ReadPage(250)).unwrap())
        .system("You read pages.")
        .max_rounds(5)
        .build()
        .unwrap();
    let outcome = agent.run("Read pages 1 to 3.").await.unwrap();
    assert_eq!(outcome.stop_reason, Some(StopReason::EndTurn));

    let requests = model.requests();
    assert_eq!(requests.len(), 5, "three rounds, one summary, the answer");
    // Request 4 is the summarizer's: one human message with the old rounds, no reasoning.
    let summary_request = &requests[3];
    assert_eq!(summary_request.messages.len(), 1);
    let prompt = summary_request.messages[0].text();
    assert!(prompt.contains("page 1 page 1"));
    assert!(!prompt.contains("thinking-sig"));
    assert!(summary_request.tools.is_empty());

    // The request after compression.
    let sent = &requests[4].messages;
    let chain = ChainAst::new(sent, false).expect("a valid chain");
    assert_eq!(sent[0].role, Role::System);
    assert!(
        sent.iter().skip(1).all(|m| m.role != Role::System),
        "no system message mid-chain"
    );
    let body = chain.sections()[0].body();
    assert_eq!(body[0].kind(), BodyPairKind::Summarization);
    let summary_call = body[0].ai().tool_calls().next().unwrap();
    assert_eq!(summary_call.name, SUMMARIZATION_TOOL_NAME);
    assert_eq!(
        summary_call
            .reasoning
            .as_ref()
            .and_then(|r| r.signature.as_deref()),
        Some(FAKE_THOUGHT_SIGNATURE)
    );
    assert_eq!(
        body[0].tools()[0].tool_responses().next().unwrap().content,
        "Pages 1 and 2 repeat their numbers."
    );
    // The last exchange is sent exactly as the model produced it, signatures and all.
    let last = body.last().unwrap();
    assert!(last.ai().parts.contains(&ContentPart::Reasoning(thinking3)));
    assert_eq!(last.ai().tool_calls().next(), Some(&call3));

    // What compression did is on the round's record, and the summary's tokens are counted.
    let report = outcome.records[3]
        .compression
        .clone()
        .expect("compressed before round 4");
    assert_eq!(report.pairs_summarized, 2);
    assert!(report.fake_signature);
    assert!(report.tokens_before > report.limits.unwrap().trigger);
    assert!(
        report.tokens_after <= report.limits.unwrap().target,
        "{report:?}"
    );
    assert_eq!(report.summary_usage, usage(700, 12));
    let mut total = usage(100, 10);
    total += usage(100, 10);
    total += usage(100, 10);
    total += usage(700, 12);
    assert_eq!(outcome.usage, total);
    // The outcome keeps the whole, uncompressed conversation; the chain is the compressed one.
    assert_eq!(
        outcome
            .messages
            .iter()
            .flat_map(Message::tool_calls)
            .count(),
        3
    );
    assert_eq!(
        outcome.chain.sections()[0].body()[0].kind(),
        BodyPairKind::Summarization
    );
    ChainAst::new(&outcome.messages, false).expect("a valid chain");
}

#[tokio::test]
async fn compression_prunes_when_the_summarizer_fails() {
    let (r1, _, _) = signed_round(1);
    let (r2, _, _) = signed_round(2);
    let (r3, _, call3) = signed_round(3);
    let model = small_model(vec![
        r1,
        r2,
        r3,
        ScriptedResponse::error(ProviderError::config("summaries are down")),
        ScriptedResponse::text("Done."),
    ]);
    let agent = Agent::builder()
        .model(model.clone())
        .tools(ToolSet::new().with(ReadPage(250)).unwrap())
        .max_rounds(5)
        .build()
        .unwrap();
    let outcome = agent.run("Read pages 1 to 3.").await.unwrap();
    let report = outcome.records[3].compression.clone().unwrap();
    assert!(
        report
            .summary_error
            .as_deref()
            .unwrap()
            .contains("summaries are down")
    );
    // The middle exchange goes: the task and its first answer stay at the start, the current
    // exchange at the end, and a notice stands where the middle was.
    assert_eq!(report.pairs_pruned, 1);
    assert_eq!(report.prune_notices, 1);
    let sent = &model.requests()[4].messages;
    let chain = ChainAst::new(sent, false).expect("a valid chain");
    assert_eq!(sent[0].text(), "Read pages 1 to 3.", "the task stays");
    let body = chain.sections()[0].body();
    assert_eq!(body.len(), 3);
    assert_eq!(body[0].ai().tool_calls().next().unwrap().id, "toolu_1");
    assert!(is_notice(&body[1]));
    assert_eq!(body[2].ai().tool_calls().next(), Some(&call3));
    assert_eq!(report.tokens_after, tokens(sent));
    assert!(report.tokens_after <= report.limits.unwrap().target);
}

#[tokio::test]
async fn long_attachments_are_cut_first() {
    let model = small_model(vec![ScriptedResponse::text("Summarised.")]);
    let agent = Agent::builder()
        .model(model.clone())
        .compression(ContextPolicy::default().with_attachment_limit(1_000))
        .build()
        .unwrap();
    let document = format!("{}{}", "head ".repeat(1_000), "tail ".repeat(200));
    let outcome = agent.run(format!("Summarise:\n{document}")).await.unwrap();
    let report = outcome.records[0].compression.clone().unwrap();
    assert_eq!(report.attachments_truncated, 1);
    assert_eq!(report.pairs_summarized, 0);
    let sent = model.requests()[0].messages[0].text();
    assert!(sent.starts_with("Summarise:\nhead head"));
    assert!(sent.ends_with("tail tail "));
    assert!(sent.contains("[... Middle content truncated. Original: 6011 chars, kept 1000 chars"));
    // One request only: nothing was left to summarise.
    assert_eq!(model.requests().len(), 1);
}

#[tokio::test]
async fn a_cut_prompt_is_reported_in_response_done() {
    let model = small_model(vec![ScriptedResponse::text("Summarised.")]);
    let agent = Agent::builder()
        .model(model.clone())
        .compression(ContextPolicy::default().with_attachment_limit(1_000))
        .build()
        .unwrap();
    let document = format!("{}{}", "head ".repeat(1_000), "tail ".repeat(200));
    let streamed = events(&agent, format!("Summarise:\n{document}")).await;
    assert_well_formed(&streamed);
    let done = streamed.last().unwrap();
    let AgentEvent::ResponseDone { outcome, .. } = done else {
        panic!("the run did not end with an answer: {done:?}");
    };
    assert_eq!(
        serde_json::to_value(outcome.compression_notice()).unwrap(),
        serde_json::json!({
            "prompt_truncated": true,
            "texts_truncated": 1,
            "pairs_summarized": 0,
            "summary_reused": false,
            "pairs_pruned": 0,
            "sections_pruned": 0,
        })
    );

    // A long tool result cut in a later round is not the prompt.
    let tool_cut = Agent::builder()
        .model(small_model(vec![
            ScriptedResponse::new().tool_call("call-1", "read_page", r#"{"n": 1}"#),
            ScriptedResponse::text("Read."),
        ]))
        .tools(ToolSet::new().with(ReadPage(250)).unwrap())
        .compression(
            ContextPolicy::default()
                .with_attachment_limit(500)
                .with_summary(false)
                .with_thresholds(0.1, 0.05)
                .unwrap(),
        )
        .build()
        .unwrap();
    let outcome = tool_cut.run("Read page 1.").await.unwrap();
    let notice = outcome.compression_notice().unwrap();
    assert!(!notice.prompt_truncated, "{notice:?}");
    assert!(notice.texts_truncated >= 1, "{notice:?}");

    // Nothing compressed: no `compression` key at all.
    let quiet = Agent::builder()
        .model(small_model(vec![ScriptedResponse::text("Hi.")]))
        .build()
        .unwrap();
    let quiet_events = events(&quiet, "Hello").await;
    let Some(AgentEvent::ResponseDone { outcome, .. }) = quiet_events.last() else {
        panic!("the run did not end with an answer: {quiet_events:?}");
    };
    assert_eq!(outcome.compression_notice(), None);
}

#[tokio::test]
async fn no_compression_below_the_trigger() {
    let model = small_model(vec![ScriptedResponse::text("Hi.")]);
    let agent = Agent::builder().model(model).build().unwrap();
    let outcome = agent.run("Hello").await.unwrap();
    assert_eq!(outcome.records[0].compression, None);
    assert!(outcome.records[0].request_tokens < 20);
}

/// Tokens of messages as the agent counts them for these models (the estimate).
fn tokens(messages: &[Message]) -> usize {
    let counter = TokenCounter::estimate();
    messages.iter().map(|message| counter.count(message)).sum()
}

/// Whether `pair` is the notice pruning puts where content went.
fn is_notice(pair: &BodyPair) -> bool {
    let text = match pair.kind() {
        BodyPairKind::Summarization => pair.tools()[0]
            .tool_responses()
            .next()
            .unwrap()
            .content
            .clone(),
        _ => pair.ai().text(),
    };
    pair.is_summary() && text.contains("Earlier messages were left out here")
}

/// Notices in a chain.
fn notices(chain: &ChainAst) -> usize {
    chain
        .sections()
        .iter()
        .flat_map(|s| s.body())
        .filter(|p| is_notice(p))
        .count()
}

/// A model whose summaries always fail (its `complete`, which the summarizer uses) and whose
/// rounds (`stream`) come from a script; the script's model records only the rounds.
struct NoSummaries {
    rounds: Arc<ScriptedModel>,
}

#[async_trait]
impl ChatModel for NoSummaries {
    fn info(&self) -> &ModelInfo {
        self.rounds.info()
    }

    async fn complete(&self, _: ChatRequest) -> Result<ChatResponse, ProviderError> {
        Err(ProviderError::config("summaries are down"))
    }

    async fn stream(&self, request: ChatRequest) -> Result<EventStream, ProviderError> {
        self.rounds.stream(request).await
    }
}

/// An assistant message that thinks (signed) and calls `read` with a signed call.
fn signed_call(id: &str, what: &str) -> Message {
    let call = ToolCall {
        reasoning: Some(Reasoning::signature(format!("call-sig-{id}"))),
        ..ToolCall::new(id, "read", format!(r#"{{"what":"{what}"}}"#))
    };
    let mut message = Message::ai_tool_calls(None, vec![call]);
    message.parts.insert(
        0,
        ContentPart::Reasoning(Reasoning {
            text: format!("I should read {what}."),
            signature: Some(format!("thinking-sig-{id}")),
            ..Default::default()
        }),
    );
    message
}

/// A research conversation: the task and its first answer (a signed tool round, then a short
/// text), `turns` follow-up turns of about 640 tokens each, and the latest turn: a question
/// and the signed tool round answering it.
fn long_history(turns: usize) -> Vec<Message> {
    let mut history = vec![
        Message::system("You compare reports."),
        Message::human("TASK: compare reports A, B and C and list every disagreement."),
        signed_call("toolu_first", "report A"),
        Message::tool_response("toolu_first", "read", "report A says ".repeat(100)),
        Message::ai("Report A read; B and C next."),
    ];
    for n in 1..=turns {
        let id = format!("toolu_mid_{n}");
        history.push(Message::human(format!("Follow-up {n}: check section {n}.")));
        history.push(Message::ai_tool_calls(
            None,
            vec![ToolCall::new(
                &id,
                "read",
                format!(r#"{{"what":"section {n}"}}"#),
            )],
        ));
        history.push(Message::tool_response(
            &id,
            "read",
            format!("section {n} ").repeat(200),
        ));
        history.push(Message::ai(format!("Section {n} checked.")));
    }
    history.push(Message::human("LATEST: now list the disagreements."));
    history.push(signed_call("toolu_last", "reports B and C"));
    history.push(Message::tool_response(
        "toolu_last",
        "read",
        "B and C say ".repeat(50),
    ));
    history
}

/// An Anthropic model with an 8 000-token window and a 1 000-token output limit: 7 000 tokens
/// for input, compression above 6 300, down to 4 900.
fn medium_info() -> ModelInfo {
    ModelInfo {
        id: "claude-medium".into(),
        provider: Provider::Anthropic,
        context_window: 8_000,
        max_output_tokens: 1_000,
        supports_reasoning: true,
        supports_vision: true,
        known: true,
    }
}

#[tokio::test]
async fn a_failed_summary_prunes_the_middle_and_keeps_the_task() {
    let history = long_history(15);
    let model = Arc::new(
        ScriptedModel::new([
            ScriptedResponse::error(ProviderError::config("summaries are down")),
            ScriptedResponse::text("A and B disagree on section 3."),
        ])
        .with_info(medium_info()),
    );
    let agent = Agent::builder().model(model.clone()).build().unwrap();
    let outcome = agent
        .run(AgentInput::messages(history.clone()))
        .await
        .unwrap();
    assert_eq!(outcome.stop_reason, Some(StopReason::EndTurn));

    let requests = model.requests();
    assert_eq!(requests.len(), 2, "the failed summary, then the answer");
    assert_eq!(requests[0].messages.len(), 1, "the summarizer's request");
    let sent = &requests[1].messages;
    let chain = ChainAst::new(sent, false).expect("a strictly valid chain");

    // The opening, exactly as it was: system message, the task, its first answer.
    assert_eq!(sent[..4], history[..4]);
    assert_eq!(sent[0].role, Role::System);
    assert!(sent.iter().skip(1).all(|m| m.role != Role::System));
    // Then the notice, where the opening turn's last pair and the oldest turns were.
    let opening = &chain.sections()[0];
    assert_eq!(opening.body().len(), 2);
    assert!(is_notice(&opening.body()[1]));
    assert_eq!(notices(&chain), 1);
    // The latest turn, exactly: its question and its signed tool round.
    assert_eq!(sent[sent.len() - 3..], history[history.len() - 3..]);
    // Oldest first: the follow-ups kept are the newest ones, whole.
    let follow_ups: Vec<usize> = chain
        .sections()
        .iter()
        .filter_map(|section| {
            let text = section.header().human()?.text();
            text.strip_prefix("Follow-up ")?
                .split(':')
                .next()?
                .parse()
                .ok()
        })
        .collect();
    assert!(
        !follow_ups.is_empty() && !follow_ups.contains(&1),
        "{follow_ups:?}"
    );
    assert_eq!(follow_ups, (follow_ups[0]..=15).collect::<Vec<_>>());
    assert!(
        chain.sections()[1..chain.sections().len() - 1]
            .iter()
            .all(|s| s.body().len() == 2)
    );

    let report = outcome.records[0].compression.clone().expect("compressed");
    let limits = report.limits.unwrap();
    assert!(report.tokens_before > limits.trigger, "{report:?}");
    assert!(
        report
            .summary_error
            .as_deref()
            .unwrap()
            .contains("summaries are down")
    );
    assert_eq!(report.pairs_summarized, 0);
    assert_eq!(report.pairs_pruned, 1);
    assert_eq!(report.sections_pruned, 15 - follow_ups.len());
    assert_eq!(report.prune_notices, 1);
    assert_eq!(report.tokens_after, tokens(sent));
    assert!(report.tokens_after <= limits.target, "{report:?}");
    // The transcript keeps everything.
    assert_eq!(outcome.messages[..history.len()], history[..]);
}

/// Returns about 900 bytes per note (≈ 270 estimated tokens).
struct ReadNote;

#[async_trait]
impl Tool<Page, String> for ReadNote {
    fn name(&self) -> &str {
        "read_note"
    }
    fn description(&self) -> &str {
        "Reads a note."
    }
    async fn call(
        &self,
        _: &ExecutionContext,
        page: Page,
    ) -> Result<ToolResult<String>, ToolError> {
        Ok(ToolResult::text(format!("note {:02} ", page.n).repeat(100)))
    }
}

#[tokio::test]
async fn pruning_round_after_round_keeps_the_task_and_one_notice() {
    const ROUNDS: u32 = 14;
    let mut script: Vec<ScriptedResponse> = (1..=ROUNDS)
        .map(|n| {
            let call = ToolCall {
                reasoning: Some(Reasoning::signature(format!("call-sig-{n}"))),
                ..ToolCall::new(format!("toolu_{n}"), "read_note", format!(r#"{{"n":{n}}}"#))
            };
            ScriptedResponse::new()
                .reasoning_block(Reasoning {
                    text: format!("Note {n} next."),
                    signature: Some(format!("thinking-sig-{n}")),
                    ..Default::default()
                })
                .tool_call_with(call)
        })
        .collect();
    script.push(ScriptedResponse::text("All notes read."));
    let rounds = small_model(script);
    let agent = Agent::builder()
        .model(Arc::new(NoSummaries {
            rounds: rounds.clone(),
        }))
        .tools(ToolSet::new().with(ReadNote).unwrap())
        .max_rounds(20)
        .build()
        .unwrap();
    let outcome = agent.run("Read all the notes.").await.unwrap();
    assert_eq!(outcome.stop_reason, Some(StopReason::EndTurn));

    let requests = rounds.requests();
    assert_eq!(requests.len(), ROUNDS as usize + 1);
    let limits = outcome.records[0].compression.as_ref().map(|r| r.limits);
    assert_eq!(limits, None, "nothing to compress at first");
    let compressed: Vec<_> = outcome
        .records
        .iter()
        .filter_map(|record| record.compression.as_ref())
        .collect();
    assert!(
        compressed.len() >= 2,
        "pruned more than once: {compressed:?}"
    );
    let limits = compressed[0].limits.unwrap();
    for (round, request) in requests.iter().enumerate() {
        let sent = &request.messages;
        let chain = ChainAst::new(sent, false).expect("a strictly valid chain");
        assert_eq!(
            sent[0].text(),
            "Read all the notes.",
            "round {round}: the task"
        );
        let body = chain.sections()[0].body();
        if round >= 1 {
            // The first answer, as the model wrote it, with its result.
            assert_eq!(body[0].ai().tool_calls().next().unwrap().id, "toolu_1");
            assert!(
                body[0].tools()[0]
                    .tool_responses()
                    .next()
                    .unwrap()
                    .content
                    .starts_with("note 01")
            );
            // The latest exchange, as the model wrote it.
            let latest = format!("toolu_{round}");
            assert_eq!(
                body.last().unwrap().ai().tool_calls().next().unwrap().id,
                latest
            );
            assert!(body.last().unwrap().ai().parts.iter().any(|part| matches!(
                part,
                ContentPart::Reasoning(r) if r.signature.as_deref() == Some(&*format!("thinking-sig-{round}"))
            )));
        }
        assert!(
            notices(&chain) <= 1,
            "round {round}: notices do not pile up"
        );
        assert!(tokens(sent) <= limits.trigger, "round {round}");
    }
    for report in compressed {
        assert!(report.summary_error.is_some());
        assert_eq!(report.prune_notices, 1);
        assert!(report.tokens_after <= limits.target, "{report:?}");
    }
}

/// One body pair of a generated history.
#[derive(Clone, Debug)]
enum PairSpec {
    /// A completion of this many bytes.
    Text(usize),
    /// Calls answered with results of this many bytes, signed or not.
    Calls(usize, usize, bool),
    /// A summary the model wrote earlier.
    Summary(usize),
}

fn pair_spec() -> impl Strategy<Value = PairSpec> {
    prop_oneof![
        3 => (1usize..1_500).prop_map(PairSpec::Text),
        6 => (1usize..4, 1usize..2_500, any::<bool>()).prop_map(|(c, s, g)| PairSpec::Calls(c, s, g)),
        1 => (1usize..300).prop_map(PairSpec::Summary),
    ]
}

/// A generated history: a system message or not, a system-only opening (with an AI message)
/// or not, earlier turns of one to three pairs, and the latest turn: a question and either
/// nothing more or some pairs ending with a tool round.
#[derive(Clone, Debug)]
struct HistorySpec {
    system: bool,
    preamble: bool,
    turns: Vec<(usize, Vec<PairSpec>)>,
    latest: (usize, Option<(Vec<PairSpec>, usize, bool)>),
}

fn history_spec() -> impl Strategy<Value = HistorySpec> {
    (
        any::<bool>(),
        prop::bool::weighted(0.15),
        prop::collection::vec(
            (1usize..300, prop::collection::vec(pair_spec(), 1..4)),
            0..6,
        ),
        (
            1usize..300,
            prop::option::of((
                prop::collection::vec(pair_spec(), 0..3),
                1usize..1_500,
                any::<bool>(),
            )),
        ),
    )
        .prop_map(|(system, preamble, turns, latest)| HistorySpec {
            system: system || preamble,
            preamble,
            turns,
            latest,
        })
}

impl HistorySpec {
    fn messages(&self) -> Vec<Message> {
        let mut messages = Vec::new();
        if self.system {
            messages.push(Message::system("You help."));
        }
        if self.preamble {
            messages.push(Message::ai("Hello! What can I do?"));
        }
        let mut calls = 0;
        let mut push = |messages: &mut Vec<Message>, pair: &PairSpec| match *pair {
            PairSpec::Text(size) => messages.push(Message::ai("a".repeat(size))),
            PairSpec::Calls(count, size, signed) => {
                let ids: Vec<String> = (0..count)
                    .map(|_| {
                        calls += 1;
                        format!("call_{calls}")
                    })
                    .collect();
                let message = if signed {
                    let mut message = signed_call(&ids[0], "it");
                    message.parts.extend(
                        ids[1..]
                            .iter()
                            .map(|id| ContentPart::ToolCall(ToolCall::new(id, "read", "{}"))),
                    );
                    message
                } else {
                    let calls = ids
                        .iter()
                        .map(|id| ToolCall::new(id, "read", "{}"))
                        .collect();
                    Message::ai_tool_calls(None, calls)
                };
                messages.push(message);
                for id in &ids {
                    messages.push(Message::tool_response(id, "read", "r".repeat(size)));
                }
            }
            PairSpec::Summary(size) => messages.extend(
                BodyPair::from_summarization("s".repeat(size), &IdTemplate::default(), false)
                    .messages(),
            ),
        };
        for (n, (size, pairs)) in self.turns.iter().enumerate() {
            messages.push(Message::human(format!("Turn {n}: {}", "q".repeat(*size))));
            pairs.iter().for_each(|pair| push(&mut messages, pair));
        }
        let (size, latest) = &self.latest;
        messages.push(Message::human(format!("Latest: {}", "q".repeat(*size))));
        if let Some((pairs, result, signed)) = latest {
            pairs.iter().for_each(|pair| push(&mut messages, pair));
            push(&mut messages, &PairSpec::Calls(1, *result, *signed));
        }
        messages
    }
}

/// Where the opening ends in `history`: after the first human message's first pair.
fn opening_end(history: &[Message]) -> usize {
    let human = history.iter().position(|m| m.role == Role::Human).unwrap();
    match history.get(human + 1) {
        Some(ai) if ai.role == Role::Ai => {
            human
                + 2
                + history[human + 2..]
                    .iter()
                    .take_while(|m| m.role == Role::Tool)
                    .count()
        }
        _ => human + 1,
    }
}

/// When `history` ends with a new question, the exchange it follows: the index of that turn's
/// question and of its last answer (which runs to the new question).
fn previous_exchange(history: &[Message]) -> Option<(usize, usize)> {
    if history.last()?.role != Role::Human {
        return None;
    }
    let answer = history.iter().rposition(|m| m.role == Role::Ai)?;
    let question = history[..answer]
        .iter()
        .rposition(|m| m.role == Role::Human)?;
    Some((question, answer))
}

/// Where the latest exchange starts in `history`: at its last AI message after the last human
/// message, or at the last human message.
fn latest_start(history: &[Message]) -> usize {
    let human = history.iter().rposition(|m| m.role == Role::Human).unwrap();
    history
        .iter()
        .rposition(|m| m.role == Role::Ai)
        .filter(|&ai| ai > human)
        .unwrap_or(human)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// Whatever the history, when summarising fails the model gets a strictly valid chain that
    /// starts with the history's opening (system message, task, first answer) and ends with its
    /// latest exchange; at most two notices; at most the target, unless only those ends (and
    /// earlier summaries) are left.
    #[test]
    fn any_history_keeps_its_task_and_latest_exchange(spec in history_spec()) {
        let history = spec.messages();
        prop_assert!(ChainAst::new(&history, false).is_ok(), "generated histories are valid");
        let rounds = small_model(vec![ScriptedResponse::text("Done.")]);
        let agent = Agent::builder()
            .model(Arc::new(NoSummaries { rounds: rounds.clone() }))
            .build()
            .unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
        let outcome = runtime.block_on(agent.run(AgentInput::messages(history.clone()))).unwrap();

        let requests = rounds.requests();
        prop_assert_eq!(requests.len(), 1);
        let sent = &requests[0].messages;
        let chain = ChainAst::new(sent, false);
        prop_assert!(chain.is_ok(), "{:?}", chain.err());
        let chain = chain.unwrap();
        prop_assert!(sent.starts_with(&history[..opening_end(&history)]));
        prop_assert!(sent.ends_with(&history[latest_start(&history)..]));
        // A new question keeps the exchange it follows: that turn's question, and its last
        // answer right before the new question.
        if let Some((question, answer)) = previous_exchange(&history) {
            prop_assert!(sent.contains(&history[question]), "{}", chain);
            prop_assert!(sent.ends_with(&history[answer..]), "{}", chain);
        }
        prop_assert!(notices(&chain) <= 2);
        let Some(report) = outcome.records[0].compression.clone() else {
            prop_assert_eq!(sent, &history);
            return Ok(());
        };
        let limits = report.limits.unwrap();
        prop_assert_eq!(report.tokens_after, tokens(sent));
        if report.tokens_after > limits.target {
            // Nothing more may go: the opening turn and the latest one (with the turn before it
            // when the latest is a new question), each with one exchange that is not a summary.
            let turns: Vec<_> = chain.sections().iter().filter(|s| s.header().human().is_some()).collect();
            let latest_turns = 1 + usize::from(previous_exchange(&history).is_some());
            prop_assert!(turns.len() <= 1 + latest_turns, "{}", chain);
            let exchanges = turns.iter().flat_map(|s| s.body()).filter(|p| !p.is_summary()).count();
            prop_assert!(exchanges <= 2, "{}", chain);
        }
    }
}

/// The echo model (answers with what it was sent, ignores its output limit), counting the
/// bytes of text the summarizer's calls and the answers' calls read.
#[cfg(feature = "store")]
#[derive(Default)]
struct CountingEcho {
    echo: providers::testing::EchoModel,
    summary_bytes: std::sync::atomic::AtomicUsize,
    summaries: std::sync::atomic::AtomicUsize,
    answer_bytes: std::sync::atomic::AtomicUsize,
    answered: std::sync::Mutex<Vec<ChatRequest>>,
}

#[cfg(feature = "store")]
fn text_bytes(request: &ChatRequest) -> usize {
    request.messages.iter().map(|m| m.text().len()).sum()
}

#[cfg(feature = "store")]
#[async_trait]
impl ChatModel for CountingEcho {
    fn info(&self) -> &ModelInfo {
        self.echo.info()
    }

    /// The summarizer's calls.
    async fn complete(&self, request: ChatRequest) -> Result<ChatResponse, ProviderError> {
        use std::sync::atomic::Ordering::Relaxed;
        self.summary_bytes.fetch_add(text_bytes(&request), Relaxed);
        self.summaries.fetch_add(1, Relaxed);
        self.echo.complete(request).await
    }

    /// The answers' calls.
    async fn stream(&self, request: ChatRequest) -> Result<EventStream, ProviderError> {
        use std::sync::atomic::Ordering::Relaxed;
        self.answer_bytes.fetch_add(text_bytes(&request), Relaxed);
        self.answered.lock().unwrap().push(request.clone());
        self.echo.stream(request).await
    }
}

/// What a conversation of `turns` turns with the echo model did, each turn continued from
/// the store as `skein chat -c` and the server do.
#[cfg(feature = "store")]
struct EchoChat {
    model: Arc<CountingEcho>,
    reports: Vec<Option<agent_loop::CompressionReport>>,
    notices: Vec<Option<agent_loop::CompressionNotice>>,
    /// Whether the conversation held a stored summary when each turn started.
    stored: Vec<bool>,
}

/// `turns` questions of `question_bytes` bytes each to the echo model with a context window of
/// `window` tokens, each a new run continuing the conversation from the store. Checks on every
/// turn that the request kept the exchange the question follows.
#[cfg(feature = "store")]
async fn echo_chat(turns: usize, window: u32, question_bytes: usize) -> EchoChat {
    let store = memory_store().await;
    let model = Arc::new(CountingEcho::default());
    let agent = Agent::builder()
        .model(model.clone())
        .system("You echo.")
        .compression(ContextPolicy::default().with_context_window(window))
        .store(Arc::clone(&store))
        .build()
        .unwrap();
    let conversation = agent_loop::ConversationId::random();
    let mut reports = Vec::new();
    let mut notices = Vec::new();
    let mut stored = Vec::new();
    let mut previous: Option<(String, String)> = None;
    for turn in 1..=turns {
        let question = format!("Question {turn}: {}", "q".repeat(question_bytes));
        let mut input = AgentInput::text(&question).in_conversation(conversation.clone());
        let mut summarised = false;
        if let Some(node) = store.latest_node(&conversation).await.unwrap() {
            summarised = store.path_summary(node.id()).await.unwrap().is_some();
            let history = agent_loop::history::continuation(&*store, node.id())
                .await
                .unwrap();
            input = input.with_continuation(history);
        }
        stored.push(summarised);
        let outcome = agent.run(input).await.unwrap();
        let sent = model
            .answered
            .lock()
            .unwrap()
            .last()
            .unwrap()
            .messages
            .clone();
        ChainAst::new(&sent, false).expect("a valid chain");
        assert_eq!(sent.last().unwrap().text(), question);
        if let Some((question, answer)) = &previous {
            let end = sent.len() - 1;
            assert!(
                sent[end - 1].text() == *answer,
                "turn {turn}: the answer the question follows went"
            );
            assert!(
                sent[..end].iter().any(|m| m.text() == *question),
                "turn {turn}: the question of the latest exchange went"
            );
        }
        previous = Some((question, outcome.text.clone()));
        reports.push(outcome.records[0].compression.clone());
        notices.push(outcome.compression_notice());
    }
    EchoChat {
        model,
        reports,
        notices,
        stored,
    }
}

/// A long conversation with the echo model, whose summaries are longer than asked: every turn
/// keeps the exchange it follows, each summary is cut to its share, and a turn past the window
/// summarises only what came after the summary stored in the tree, so summarising costs less
/// than the answers themselves (it used to re-read the whole history every turn).
#[cfg(feature = "store")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_echo_chat_keeps_its_latest_exchange_and_summarises_each_turn_once() {
    use std::sync::atomic::Ordering::Relaxed;
    let chat = echo_chat(60, 6_000, 400).await;
    let summary_bytes = chat.model.summary_bytes.load(Relaxed);
    let answer_bytes = chat.model.answer_bytes.load(Relaxed);
    let summaries = chat.model.summaries.load(Relaxed);
    eprintln!(
        "60 turns: {summaries} summaries reading {summary_bytes} bytes, 60 answers reading \
         {answer_bytes} bytes"
    );
    let compressed: Vec<_> = chat.reports.iter().flatten().collect();
    assert!(!compressed.is_empty(), "the window was never reached");
    let first = chat
        .reports
        .iter()
        .position(|report| report.as_ref().is_some_and(|r| r.pairs_summarized > 0))
        .expect("a summary was written");
    // Every later turn starts from the stored summary.
    for (turn, report) in chat.reports.iter().enumerate().skip(first + 1) {
        let report = report
            .as_ref()
            .expect("past the window every turn compresses");
        assert!(report.summary_reused, "turn {}: {report:?}", turn + 1);
        assert!(chat.notices[turn].is_some_and(|notice| notice.summary_reused));
        assert_eq!(
            report.pairs_pruned + report.sections_pruned,
            0,
            "{report:?}"
        );
    }
    assert!(compressed.iter().any(|report| report.summary_truncated));
    assert!(
        summary_bytes < answer_bytes,
        "summaries read {summary_bytes} bytes, the answers {answer_bytes}"
    );
}

#[cfg(feature = "store")]
proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    /// Whatever the window and the length of the questions, every turn keeps the exchange it
    /// follows (checked in `echo_chat`), and a turn of a conversation that holds a stored
    /// summary starts from it.
    #[test]
    fn a_stored_summary_is_reused_and_the_latest_exchange_kept(
        turns in 6usize..30,
        window in 3_000u32..12_000,
        question_bytes in 20usize..800,
    ) {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
        let chat = runtime.block_on(echo_chat(turns, window, question_bytes));
        for (turn, (stored, report)) in chat.stored.iter().zip(&chat.reports).enumerate() {
            if *stored {
                prop_assert!(
                    report.as_ref().is_some_and(|report| report.summary_reused),
                    "turn {}: {:?}", turn + 1, report
                );
            }
        }
    }
}

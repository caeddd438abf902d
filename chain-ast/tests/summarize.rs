//! `chain_ast::summarize`: budgets, what is kept, the summary's form, errors, reports.

use crate::common;

use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use chain_ast::{
    BodyPairKind, ChainAst, FAKE_THOUGHT_SIGNATURE, IdTemplate, SUMMARIZATION_TOOL_NAME,
    SUMMARIZED_CONTENT_PREFIX, SummarizeError, SummarizeOptions, Summarizer, SummaryRequest,
    summarize,
};
use futures::executor::block_on;
use messages::{ContentPart, Message, Reasoning, Role, ToolCall};
use proptest::prelude::*;

/// A summarizer that records its requests and answers `summary`.
fn recording(
    summary: &'static str,
) -> (
    impl Summarizer<Error = Infallible>,
    Arc<Mutex<Vec<SummaryRequest>>>,
) {
    let requests = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&requests);
    let summarizer = move |request: SummaryRequest| {
        let seen = Arc::clone(&seen);
        async move {
            seen.lock().expect("lock").push(request);
            Ok::<_, Infallible>(summary.to_owned())
        }
    };
    (summarizer, requests)
}

fn chat(turns: usize, answer_len: usize) -> Vec<Message> {
    let mut chain = vec![Message::system("You are a helpful assistant.")];
    for turn in 1..=turns {
        chain.push(Message::human(format!("Question {turn}")));
        chain.push(Message::ai(format!(
            "Answer {turn} {}",
            "x".repeat(answer_len)
        )));
    }
    chain
}

fn agent_round(n: usize, output_len: usize, signed: bool) -> Vec<Message> {
    let id = format!("call-{n}");
    let call = ToolCall {
        reasoning: signed.then(|| Reasoning::signature(format!("sig-{n}"))),
        ..ToolCall::new(&id, "terminal", format!(r#"{{"cmd": "step {n}"}}"#))
    };
    vec![
        Message::ai_tool_calls(None, vec![call]),
        Message::tool_response(
            &id,
            "terminal",
            format!("output {n} {}", "o".repeat(output_len)),
        ),
    ]
}

fn agent(rounds: usize, output_len: usize, signed: bool) -> Vec<Message> {
    let mut chain = vec![
        Message::system("You are an agent."),
        Message::human("Scan the host."),
    ];
    for n in 1..=rounds {
        chain.extend(agent_round(n, output_len, signed));
    }
    chain.push(Message::ai("All done."));
    chain
}

#[test]
fn a_chain_within_budget_is_left_alone() {
    let chain = chat(3, 10);
    let mut ast = ChainAst::new(&chain, false).expect("valid");
    let (summarizer, requests) = recording("S");
    let report = block_on(summarize(
        &mut ast,
        &summarizer,
        &SummarizeOptions::new(10_000),
    ))
    .expect("ok");
    assert!(!report.summarized() && report.within_budget());
    assert_eq!(
        (report.size_before, report.size_after),
        (ast.size(), ast.size())
    );
    assert!(
        requests.lock().expect("lock").is_empty(),
        "the summarizer is not called"
    );
    assert_eq!(ast.messages(), chain);
}

#[test]
fn older_sections_fold_into_one_completion_summary() {
    let chain = chat(4, 100);
    let mut ast = ChainAst::new(&chain, false).expect("valid");
    let size = ast.size();
    let (summarizer, requests) = recording("They asked three questions.");
    let options = SummarizeOptions::new(size / 2);
    let report = block_on(summarize(&mut ast, &summarizer, &options)).expect("ok");

    // Sections 1 and 2 go whole; section 3 is too big to keep, so its answer goes and its
    // question stays to host the summary.
    assert_eq!(report.sections_summarized, 2);
    assert_eq!(
        (report.pairs_summarized, report.messages_summarized),
        (3, 5)
    );
    assert_eq!(report.summary_kind, Some(BodyPairKind::Completion));
    assert!(report.within_budget() && report.size_after < report.size_before);
    assert_eq!(report.size_after, ast.size());

    let expected = vec![
        Message::system("You are a helpful assistant."),
        Message::human("Question 3"),
        Message::ai(format!(
            "{SUMMARIZED_CONTENT_PREFIX}They asked three questions."
        )),
        chain[7].clone(),
        chain[8].clone(),
    ];
    assert_eq!(ast.messages(), expected);
    ast.validate().expect("valid");
    assert!(ast.sections()[0].body()[0].is_summary());

    let requests = requests.lock().expect("lock");
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request.messages, [&chain[1..5], &chain[6..7]].concat());
    assert!(request.prompt.contains("<tasks>") && request.prompt.contains("Question 3"));
    assert!(request.prompt.contains("Answer 2") && request.prompt.contains("Answer 3"));
    assert!(!request.prompt.contains("Question 4") && !request.prompt.contains("Answer 4"));
    assert!(
        !request.prompt.contains("You are a helpful assistant."),
        "the system message is kept"
    );
    assert!(request.target_size > 0 && request.target_size < size / 2);
}

#[test]
fn a_summary_longer_than_asked_is_cut_to_fit() {
    // A summarizer that ignores its limit and echoes its whole input, as the echo model does.
    let chain = chat(6, 100);
    let mut ast = ChainAst::new(&chain, false).expect("valid");
    let budget = ast.size() / 2;
    let targets = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&targets);
    let echo = move |request: SummaryRequest| {
        seen.lock().expect("lock").push(request.target_size);
        let answer = format!("{}{}", request.prompt, request.prompt);
        async move { Ok::<_, Infallible>(answer) }
    };
    let report = block_on(summarize(&mut ast, &echo, &SummarizeOptions::new(budget))).expect("ok");

    assert!(report.within_budget(), "{report:?}");
    assert!(report.summary_truncated);
    assert_eq!(report.size_after, ast.size());
    let summary = ast.sections()[0].body()[0].ai().text();
    let target = targets.lock().expect("lock")[0];
    assert!(
        summary.len() <= SUMMARIZED_CONTENT_PREFIX.len() + target,
        "{summary}"
    );
    assert!(summary.contains("[... Middle content truncated."));
    // The newest turn, kept beside the summary, is still there: nothing had to make room.
    let messages = ast.messages();
    assert_eq!(messages.len(), 5, "{ast}");
    assert!(messages.ends_with(&chain[chain.len() - 2..]), "{ast}");
    ast.validate().expect("valid");
}

#[test]
fn a_new_question_keeps_the_exchange_it_follows() {
    // The first request of a new turn: the last section is a question with no answer yet.
    let mut chain = chat(4, 100);
    chain.push(Message::human("And the fifth?"));
    let mut ast = ChainAst::new(&chain, false).expect("valid");
    let (summarizer, requests) = recording("Four questions answered.");
    let options = SummarizeOptions::new(ast.size() / 3);
    let report = block_on(summarize(&mut ast, &summarizer, &options)).expect("ok");

    assert!(report.summarized());
    // The fourth question and its answer, then the new question, stay as they were.
    assert!(ast.messages().ends_with(&chain[chain.len() - 3..]), "{ast}");
    let request = &requests.lock().expect("lock")[0];
    assert!(!request.prompt.contains("Answer 4"));
    ast.validate().expect("valid");
}

#[test]
fn an_agent_section_rotates_and_keeps_its_last_pair() {
    let chain = agent(6, 200, false);
    let mut ast = ChainAst::new(&chain, false).expect("valid");
    let last_pair = ast.sections()[0].body().last().cloned().expect("pairs");
    let (summarizer, requests) = recording("Steps 1 to 5 ran; outputs were long.");
    let template = IdTemplate::new("toolu_{r:24:b}");
    let options = SummarizeOptions::new(ast.size() / 3).id_template(template.clone());
    let report = block_on(summarize(&mut ast, &summarizer, &options)).expect("ok");

    assert_eq!(report.sections_summarized, 0);
    assert_eq!(report.summary_kind, Some(BodyPairKind::Summarization));
    assert!(!report.fake_signature);
    let body = ast.sections()[0].body();
    assert_eq!(
        body.first().map(|p| p.kind()),
        Some(BodyPairKind::Summarization)
    );
    assert_eq!(
        body.last(),
        Some(&last_pair),
        "a section's last pair is never summarised"
    );
    let call = body[0].ai().tool_calls().next().expect("summary call");
    assert_eq!(call.name, SUMMARIZATION_TOOL_NAME);
    template
        .check(&call.id, &call.name)
        .expect("id from the template");
    assert_eq!(call.reasoning, None);
    assert_eq!(
        ast.sections()[0].header().human(),
        Some(&Message::human("Scan the host."))
    );
    ast.validate().expect("valid");
    common::assert_sizes_exact(&ast);
    assert!(report.within_budget(), "{report:?}");

    // Whole pairs only: every summarised call went with its response.
    let request = &requests.lock().expect("lock")[0];
    let calls = request
        .messages
        .iter()
        .flat_map(Message::tool_calls)
        .count();
    let responses = request
        .messages
        .iter()
        .flat_map(Message::tool_responses)
        .count();
    assert_eq!(calls, responses);
    assert_eq!(report.pairs_summarized, calls);
}

#[test]
fn signed_calls_get_the_fake_signature() {
    let mut ast = ChainAst::new(&agent(4, 300, true), false).expect("valid");
    let (summarizer, _) = recording("summary");
    let options = SummarizeOptions::new(ast.size() / 3);
    let report = block_on(summarize(&mut ast, &summarizer, &options)).expect("ok");
    assert!(report.fake_signature);
    let call = ast.sections()[0].body()[0]
        .ai()
        .tool_calls()
        .next()
        .cloned()
        .expect("call");
    assert_eq!(
        call.reasoning,
        Some(Reasoning::signature(FAKE_THOUGHT_SIGNATURE))
    );
}

#[test]
fn current_turn_reasoning_goes_before_the_summary_call() {
    let mut chain = vec![Message::human("Task")];
    for n in 1..=3 {
        let id = format!("c{n}");
        chain.push(Message::new(
            Role::Ai,
            vec![
                ContentPart::Reasoning(Reasoning {
                    text: format!("thinking {n}"),
                    signature: Some("sig".into()),
                    ..Reasoning::default()
                }),
                ContentPart::ToolCall(ToolCall::new(&id, "f", "{}")),
            ],
        ));
        chain.push(Message::tool_response(&id, "f", "r".repeat(300)));
    }
    let mut ast = ChainAst::new(&chain, false).expect("valid");
    let (summarizer, requests) = recording("summary");
    block_on(summarize(
        &mut ast,
        &summarizer,
        &SummarizeOptions::new(500),
    ))
    .expect("ok");
    let ai = ast.sections()[0].body()[0].ai();
    assert!(matches!(&ai.parts[0], ContentPart::Reasoning(r) if r.text == "thinking 1"));
    assert!(
        matches!(&ai.parts[1], ContentPart::ToolCall(call) if call.name == SUMMARIZATION_TOOL_NAME)
    );
    assert!(
        !requests.lock().expect("lock")[0]
            .prompt
            .contains("thinking"),
        "reasoning is not sent"
    );
    ast.validate().expect("valid");
}

#[test]
fn summarizer_errors_surface_and_leave_the_chain_unchanged() {
    #[derive(Debug, thiserror::Error)]
    #[error("model unavailable")]
    struct Down;

    let chain = chat(4, 100);
    let mut ast = ChainAst::new(&chain, false).expect("valid");
    let before = ast.clone();
    let failing = |_request: SummaryRequest| async { Err::<String, _>(Down) };
    let error =
        block_on(summarize(&mut ast, &failing, &SummarizeOptions::new(100))).expect_err("fails");
    assert!(matches!(error, SummarizeError::Summarizer(Down)));
    assert_eq!(
        std::error::Error::source(&error).map(ToString::to_string),
        Some("model unavailable".into())
    );
    assert_eq!(ast, before);

    let (empty, _) = recording("  \n");
    let error =
        block_on(summarize(&mut ast, &empty, &SummarizeOptions::new(100))).expect_err("empty");
    assert!(matches!(
        error,
        SummarizeError::EmptySummary { messages: 5 }
    ));
    assert_eq!(ast, before);
}

#[test]
fn nothing_to_summarise_is_reported() {
    // One section with one pair: nothing may be summarised, however small the budget.
    let chain = vec![
        Message::system("S"),
        Message::human("H".repeat(50)),
        Message::ai("A".repeat(50)),
    ];
    let mut ast = ChainAst::new(&chain, false).expect("valid");
    let (summarizer, requests) = recording("S");
    let report =
        block_on(summarize(&mut ast, &summarizer, &SummarizeOptions::new(10))).expect("ok");
    assert!(!report.summarized() && !report.within_budget());
    assert!(requests.lock().expect("lock").is_empty());
    assert_eq!(ast.messages(), chain);
}

#[test]
fn a_lone_summary_is_not_summarised_again() {
    let mut ast = ChainAst::new(&agent(6, 200, false), false).expect("valid");
    let options = SummarizeOptions::new(ast.size() / 3);
    let (summarizer, requests) = recording("first summary");
    block_on(summarize(&mut ast, &summarizer, &options)).expect("ok");
    let after_first = ast.clone();
    // Over budget again only because of the kept pairs: the summary alone is not redone.
    let kept_pairs = after_first.sections()[0].body().len();
    let tight = SummarizeOptions::new(after_first.size() - 1).reserve_percent(100);
    let report = block_on(summarize(&mut ast, &summarizer, &tight)).expect("ok");
    if kept_pairs == 2 {
        // Only [summary, last pair]: the summary alone would be summarised; it is not.
        assert!(!report.summarized());
        assert_eq!(ast, after_first);
    } else {
        assert!(report.summarized());
    }
    // Growing the chain makes the old summary part of the next one.
    for n in 10..14 {
        let pair = chain_ast::BodyPair::from_messages(agent_round(n, 200, false)).expect("pair");
        ast.add_body_pair(pair).expect("section");
    }
    let report = block_on(summarize(&mut ast, &summarizer, &options)).expect("ok");
    assert!(report.summarized());
    let last = requests
        .lock()
        .expect("lock")
        .last()
        .cloned()
        .expect("request");
    assert!(last.prompt.contains("first summary"));
    ast.validate().expect("valid");
}

#[test]
fn a_token_budget_uses_the_callers_measure() {
    let chain = chat(5, 0);
    let mut ast = ChainAst::new(&chain, false).expect("valid");
    let words = |message: &Message| message.text().split_whitespace().count();
    // 5 (system) + 5 × (2 + 2) words = 25; ask for 14.
    let options = SummarizeOptions::new(14).measure(words);
    let (summarizer, _) = recording("short");
    let report = block_on(summarize(&mut ast, &summarizer, &options)).expect("ok");
    assert_eq!(report.size_before, 25);
    assert!(report.summarized());
    assert_eq!(
        report.size_after,
        ast.iter_messages().map(words).sum::<usize>()
    );
    assert!(report.within_budget(), "{report:?}");
}

#[test]
fn keeping_the_last_section_whole() {
    let mut chain = chat(2, 50);
    chain.extend(agent_round(1, 300, false));
    chain.extend(agent_round(2, 300, false));
    chain.push(Message::ai("done"));
    let mut ast = ChainAst::new(&chain, false).expect("valid");
    let last = ast.sections().last().cloned().expect("sections");
    let (summarizer, _) = recording("summary");
    let options = SummarizeOptions::new(200).rotate_last_section(false);
    let report = block_on(summarize(&mut ast, &summarizer, &options)).expect("ok");
    // Only the first section may go: its answer is summarised under its question.
    assert_eq!(
        (report.sections_summarized, report.pairs_summarized),
        (0, 1)
    );
    assert_eq!(ast.sections().len(), 2);
    assert_eq!(ast.sections()[0].header().human(), Some(&chain[1]));
    assert!(ast.sections()[0].body()[0].is_summary());
    assert_eq!(ast.sections().last(), Some(&last));
    assert!(
        !report.within_budget(),
        "the whole last section is over the budget"
    );
}

#[test]
fn the_future_is_send_with_a_trait_object() {
    fn assert_send<T: Send>(value: T) -> T {
        value
    }
    let (summarizer, _) = recording("S");
    let dynamic: &dyn Summarizer<Error = Infallible> = &summarizer;
    let mut ast = ChainAst::new(&chat(3, 100), false).expect("valid");
    let options = SummarizeOptions::new(100);
    let report = block_on(assert_send(summarize(&mut ast, dynamic, &options))).expect("ok");
    assert!(report.summarized());
    assert!(format!("{options:?}").contains("budget: 100"));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// On any valid chain and budget: the result is valid, keeps the system message, the last
    /// section's header and last pair, never has more messages, and reports true sizes.
    #[test]
    fn summarize_keeps_the_invariants(chain in common::valid_chain(), budget in 0usize..400, reserve in 0u8..=100) {
        let mut ast = ChainAst::new(&chain, false).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let before = ast.clone();
        let (summarizer, requests) = recording("summary of earlier work");
        let options = SummarizeOptions::new(budget).reserve_percent(reserve);
        let report = block_on(summarize(&mut ast, &summarizer, &options)).map_err(|e| TestCaseError::fail(e.to_string()))?;

        prop_assert!(ast.validate().is_ok(), "{:?}", ast.validate());
        common::assert_sizes_exact(&ast);
        prop_assert_eq!(report.size_after, ast.size());
        prop_assert_eq!(report.size_before, before.size());
        prop_assert!(ast.message_count() <= before.message_count());
        prop_assert_eq!(requests.lock().expect("lock").len(), usize::from(report.summarized()));
        let system = |ast: &ChainAst| ast.sections().first().and_then(|s| s.header().system()).cloned();
        prop_assert_eq!(system(&ast), system(&before));
        if let (Some(old), Some(new)) = (before.sections().last(), ast.sections().last()) {
            prop_assert_eq!(old.header().human(), new.header().human());
            prop_assert_eq!(old.body().last(), new.body().last());
        }
        // A new question keeps the exchange it follows: the turn before it keeps its last
        // pair, right before the question.
        let messages = ast.messages();
        let old = before.messages();
        if old.last().is_some_and(|m| m.role == Role::Human)
            && let Some(answer) = old.iter().rposition(|m| m.role == Role::Ai)
        {
            prop_assert!(messages.ends_with(&old[answer..]), "{}", ast);
        }
        if report.summarized() {
            prop_assert!(report.size_after <= report.size_before + 400);
            let summaries = ast.sections().iter().flat_map(|s| s.body()).filter(|p| p.is_summary()).count();
            prop_assert!(summaries >= 1);
        } else {
            prop_assert_eq!(&ast, &before);
        }
    }
}

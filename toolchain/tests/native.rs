//! NativeToolChain and the execution engine every chain shares: order, concurrency, errors,
//! panics, cancellation, deadline, timeout, budget, events, media transform, silent exit.

use crate::common;

use std::sync::Mutex;
use std::time::Duration;

use common::{PNG, tools};
use toolchain::{
    CancellationToken, ContentPart, ExecutionContext, NativeToolChain, ToolCall, ToolError,
    ToolEvent,
};

fn sleep_call(id: &str, millis: u64, label: &str) -> ToolCall {
    ToolCall::new(
        id,
        "sleep",
        format!(r#"{{"millis": {millis}, "label": "{label}"}}"#),
    )
}

fn contents(round: &toolchain::NativeToolChainResult) -> Vec<String> {
    round
        .messages
        .iter()
        .map(|message| message.tool_responses().next().unwrap().content.clone())
        .collect()
}

#[tokio::test(start_paused = true)]
async fn results_are_in_call_order_while_calls_run_concurrently() {
    let chain = NativeToolChain::new(tools());
    let calls = [
        sleep_call("a", 300, "slow"),
        sleep_call("b", 100, "mid"),
        sleep_call("c", 10, "fast"),
    ];
    let started = tokio::time::Instant::now();
    let round = chain.execute(&ExecutionContext::new(), &calls).await;
    assert_eq!(contents(&round), ["slow", "mid", "fast"]);
    // Concurrent: the round takes as long as the slowest call, not the sum.
    assert_eq!(started.elapsed(), Duration::from_millis(300));
    let ids: Vec<_> = round
        .messages
        .iter()
        .map(|m| m.tool_responses().next().unwrap().tool_call_id.clone())
        .collect();
    assert_eq!(ids, ["a", "b", "c"]);
}

#[tokio::test(start_paused = true)]
async fn concurrency_is_bounded_by_the_context() {
    let chain = NativeToolChain::new(tools());
    let calls: Vec<_> = (0..4)
        .map(|i| sleep_call(&format!("c{i}"), 100, "x"))
        .collect();
    let started = tokio::time::Instant::now();
    chain
        .execute(&ExecutionContext::new().with_max_concurrency(2), &calls)
        .await;
    assert_eq!(started.elapsed(), Duration::from_millis(200));
    let started = tokio::time::Instant::now();
    chain
        .execute(&ExecutionContext::new().with_max_concurrency(1), &calls)
        .await;
    assert_eq!(started.elapsed(), Duration::from_millis(400));
}

#[tokio::test]
async fn failures_are_answers_and_never_abort_the_other_calls() {
    let chain = NativeToolChain::new(tools());
    let calls = [
        ToolCall::new("1", "get_customer_info", r#"{"id": "C404"}"#),
        ToolCall::new("2", "no_such_tool", "{}"),
        ToolCall::new("3", "get_customer_info", r#"{"id": 7}"#),
        ToolCall::new("4", "get_customer_info", r#"{"id": "C001""#),
        ToolCall::new("5", "explode", ""),
        ToolCall::new("6", "get_customer_info", r#"{"id": "C001"}"#),
        ToolCall::new(
            "7",
            "get_flight_info",
            r#"{"flight": "AA1", "date": ["x"]}"#,
        ),
    ];
    let round = chain.execute(&ExecutionContext::new(), &calls).await;
    assert_eq!(
        contents(&round),
        [
            "Tool execution failed: no customer with id C404",
            "Tool execution failed: unknown tool \"no_such_tool\"; available tools: get_customer_info, \
             get_flight_info, screenshot, explode, sleep, silent_exit, noop. Review the available \
             tools and use one of these exact names",
            "Tool execution failed: invalid input for tool \"get_customer_info\" at `id`: invalid type: \
             integer `7`, expected a string",
            "Tool execution failed: invalid input for tool \"get_customer_info\": the arguments are \
             not valid JSON: EOF while parsing an object at line 1 column 13",
            "Tool execution failed: tool \"explode\" crashed: kaboom",
            r#"{"id":"C001","name":"John"}"#,
            "Tool execution failed: invalid input for tool \"get_flight_info\" at `date`: invalid type: \
             sequence, expected a string",
        ]
    );
    let errors = &round.raw.errors;
    assert!(
        matches!(&errors[0], Some(ToolError::Failed { message, .. }) if message == "no customer with id C404")
    );
    assert!(
        matches!(&errors[1], Some(ToolError::UnknownTool { name, .. }) if name == "no_such_tool")
    );
    assert!(
        matches!(&errors[2], Some(ToolError::InvalidInput { path: Some(path), .. }) if path == "id")
    );
    assert!(matches!(&errors[4], Some(ToolError::Panicked { message, .. }) if message == "kaboom"));
    assert!(errors[5].is_none());
    assert_eq!(round.raw.error_count(), 6);
    assert_eq!(
        round.raw.results[5].output.as_ref().unwrap()["name"],
        "John"
    );
    assert_eq!(round.raw.results[4].output, None);
}

#[tokio::test]
async fn missing_required_field_is_named() {
    let chain = NativeToolChain::new(tools());
    let round = chain
        .execute(
            &ExecutionContext::new(),
            &[ToolCall::new("1", "get_customer_info", "null")],
        )
        .await;
    assert_eq!(
        contents(&round),
        ["Tool execution failed: invalid input for tool \"get_customer_info\": missing field `id`"]
    );
    let round = chain
        .execute(
            &ExecutionContext::new(),
            &[ToolCall::new("1", "get_customer_info", "[1]")],
        )
        .await;
    assert_eq!(
        contents(&round),
        [
            "Tool execution failed: invalid input for tool \"get_customer_info\": expected an object of \
          arguments, found an array"
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn cancellation_stops_running_and_pending_calls_promptly() {
    let chain = NativeToolChain::new(tools());
    let cancel = CancellationToken::new();
    let ctx = ExecutionContext::new()
        .with_cancellation(cancel.clone())
        .with_max_concurrency(1);
    let calls = [
        sleep_call("a", 10, "done"),
        sleep_call("b", 60_000, "never"),
        sleep_call("c", 10, "never"),
    ];
    let events = Mutex::new(Vec::new());
    let observer = |event: &ToolEvent<'_>| {
        let entry = match event {
            ToolEvent::Started { call, .. } => format!("start {}", call.id),
            ToolEvent::Finished { call, .. } => format!("done {}", call.id),
        };
        events.lock().unwrap().push(entry);
    };
    let started = tokio::time::Instant::now();
    let (round, ()) = tokio::join!(chain.execute_observed(&ctx, &calls, &observer), async {
        tokio::time::sleep(Duration::from_millis(50)).await;
        cancel.cancel();
    });
    assert_eq!(started.elapsed(), Duration::from_millis(50));
    assert_eq!(
        contents(&round),
        [
            "done",
            "Tool execution failed: tool \"sleep\" was cancelled",
            "Tool execution failed: tool \"sleep\" was cancelled"
        ]
    );
    assert!(matches!(
        round.raw.errors[2],
        Some(ToolError::Cancelled { .. })
    ));
    // The pending call never started, so it has no events.
    assert_eq!(
        *events.lock().unwrap(),
        ["start a", "done a", "start b", "done b"]
    );
}

#[tokio::test(start_paused = true)]
async fn call_timeout_and_deadline() {
    let chain = NativeToolChain::new(tools());
    let ctx = ExecutionContext::new().with_call_timeout(Duration::from_millis(100));
    let round = chain
        .execute(
            &ctx,
            &[sleep_call("a", 50, "ok"), sleep_call("b", 500, "late")],
        )
        .await;
    assert_eq!(contents(&round)[0], "ok");
    assert_eq!(
        contents(&round)[1],
        "Tool execution failed: tool \"sleep\" did not finish within 100ms"
    );

    let ctx = ExecutionContext::new()
        .with_timeout(Duration::from_millis(100))
        .with_max_concurrency(1);
    let round = chain
        .execute(
            &ctx,
            &[
                sleep_call("a", 150, "late"),
                sleep_call("b", 1, "not started"),
            ],
        )
        .await;
    assert!(matches!(
        round.raw.errors[0],
        Some(ToolError::DeadlineExceeded { .. })
    ));
    assert!(matches!(
        round.raw.errors[1],
        Some(ToolError::DeadlineExceeded { .. })
    ));
    assert_eq!(round.raw.results[1].duration, Duration::ZERO);
}

#[tokio::test]
async fn the_call_budget_is_shared_by_clones() {
    let chain = NativeToolChain::new(tools());
    let ctx = ExecutionContext::new()
        .with_call_budget(3)
        .with_max_concurrency(1);
    let noop = |id: &str| ToolCall::new(id, "noop", "{}");
    let first = chain.execute(&ctx.clone(), &[noop("1"), noop("2")]).await;
    assert_eq!(first.raw.error_count(), 0);
    assert_eq!(ctx.remaining_calls(), Some(1));
    let second = chain.execute(&ctx, &[noop("3"), noop("4")]).await;
    assert!(second.raw.errors[0].is_none());
    assert_eq!(
        contents(&second)[1],
        "Tool execution failed: tool \"noop\" was not called: the budget of 3 tool calls is spent"
    );
    assert_eq!(ctx.remaining_calls(), Some(0));
}

#[tokio::test]
async fn events_carry_ids_inputs_outputs_and_errors() {
    let chain = NativeToolChain::new(tools());
    let log = Mutex::new(Vec::new());
    let observer = |event: &ToolEvent<'_>| {
        let line = match event {
            ToolEvent::Started { index, call } => {
                format!("start {index} {} {} {}", call.id, call.name, call.arguments)
            }
            ToolEvent::Finished {
                index,
                call,
                outcome,
                media,
                content,
                ..
            } => format!(
                "done {index} {} ok={} media={} {content}",
                call.id,
                outcome.is_ok(),
                media.len()
            ),
        };
        log.lock().unwrap().push(line);
    };
    let calls = [
        ToolCall::new("toolu_1", "screenshot", r#"{"url":"x"}"#),
        ToolCall::new("toolu_2", "nope", "{}"),
    ];
    chain
        .execute_observed(
            &ExecutionContext::new().with_max_concurrency(1),
            &calls,
            &observer,
        )
        .await;
    assert_eq!(
        *log.lock().unwrap(),
        [
            r#"start 0 toolu_1 screenshot {"url":"x"}"#,
            r#"done 0 toolu_1 ok=true media=1 {"format":"png","height":1080,"width":1920}"#,
            "start 1 toolu_2 nope {}",
            "done 1 toolu_2 ok=false media=0 Tool execution failed: unknown tool \"nope\"; available \
             tools: get_customer_info, get_flight_info, screenshot, explode, sleep, silent_exit, noop. \
             Review the available tools and use one of these exact names",
        ]
    );
}

#[tokio::test]
async fn the_media_transform_sees_every_part() {
    let chain =
        NativeToolChain::new(tools()).with_media_transform(|tool: &str, part: ContentPart| {
            match part {
                ContentPart::Binary { data, .. } => {
                    Some(ContentPart::text(format!("{tool}: {} bytes", data.len())))
                }
                other => Some(other),
            }
        });
    let round = chain
        .execute(
            &ExecutionContext::new(),
            &[ToolCall::new("1", "screenshot", r#"{"url":"x"}"#)],
        )
        .await;
    assert_eq!(
        round.messages[0].parts[1],
        ContentPart::text(format!("screenshot: {} bytes", PNG.len()))
    );
    let dropping =
        NativeToolChain::new(tools()).with_media_transform(|_: &str, _: ContentPart| None);
    let round = dropping
        .execute(
            &ExecutionContext::new(),
            &[ToolCall::new("1", "screenshot", r#"{"url":"x"}"#)],
        )
        .await;
    assert_eq!(round.messages[0].parts.len(), 1);
}

#[tokio::test]
async fn silent_exit_is_reported() {
    let chain = NativeToolChain::new(tools());
    let calls = [
        ToolCall::new("1", "noop", "{}"),
        ToolCall::new("2", "silent_exit", r#"{"reason": "subscription message"}"#),
    ];
    let round = chain.execute(&ExecutionContext::new(), &calls).await;
    assert_eq!(round.silent_exit(), Some("subscription message"));
    // A normal end of the run, not a failed call.
    assert_eq!(
        contents(&round)[1],
        "silent exit requested: subscription message"
    );
    let quiet = chain.execute(&ExecutionContext::new(), &calls[..1]).await;
    assert_eq!(quiet.silent_exit(), None);
}

#[tokio::test]
async fn no_calls_no_messages() {
    let round = NativeToolChain::new(tools())
        .execute(&ExecutionContext::new(), &[])
        .await;
    assert!(round.messages.is_empty());
    assert!(round.raw.is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_child_context_is_cancelled_with_its_parent_only() {
    let chain = NativeToolChain::new(tools());
    let parent = ExecutionContext::new().with_call_budget(10);
    let child = parent.child();
    child.cancellation().cancel();
    assert!(!parent.is_cancelled());
    let round = chain.execute(&child, &[sleep_call("a", 1, "x")]).await;
    assert!(matches!(
        round.raw.errors[0],
        Some(ToolError::Cancelled { .. })
    ));
    // The budget is shared; the cancelled call did not spend it.
    assert_eq!(parent.remaining_calls(), Some(10));
    let round = chain.execute(&parent, &[sleep_call("a", 1, "x")]).await;
    assert!(round.raw.errors[0].is_none());
    assert_eq!(child.remaining_calls(), Some(9));
    parent.cancellation().cancel();
    assert!(parent.child().is_cancelled());
}

#[tokio::test]
async fn a_passed_deadline_makes_no_call() {
    let chain = NativeToolChain::new(tools());
    let now = std::time::Instant::now();
    let ctx = ExecutionContext::new()
        .with_deadline(now)
        .with_call_budget(5);
    assert_eq!(ctx.deadline(), Some(now));
    let round = chain
        .execute(&ctx, &[ToolCall::new("1", "noop", "{}")])
        .await;
    assert_eq!(
        contents(&round),
        ["Tool execution failed: tool \"noop\" did not finish before the run's deadline"]
    );
    assert_eq!(ctx.remaining_calls(), Some(5));
}

/// A context's redactor cleans every result and error before anyone reads them: the model's
/// answer, the typed results and the events alike.
#[tokio::test]
async fn the_redactor_cleans_results_errors_and_events() {
    let chain = NativeToolChain::new(tools());
    let calls = [
        ToolCall::new("1", "get_customer_info", r#"{"id": "C404"}"#),
        ToolCall::new("2", "get_customer_info", r#"{"id": "C001"}"#),
    ];
    let seen = Mutex::new(Vec::new());
    let observer = |event: &ToolEvent<'_>| {
        if let ToolEvent::Finished { content, .. } = event {
            seen.lock().unwrap().push((*content).to_owned());
        }
    };
    let redactor = toolchain::Redactor::new().with("C404").with("John");
    let ctx = ExecutionContext::new().with_redactor(std::sync::Arc::new(redactor));
    let round = chain.execute_observed(&ctx, &calls, &observer).await;
    assert_eq!(
        contents(&round),
        [
            "Tool execution failed: no customer with id [REDACTED]",
            r#"{"id":"C001","name":"[REDACTED]"}"#,
        ]
    );
    assert!(
        matches!(&round.raw.errors[0], Some(ToolError::Failed { message, .. }) if message == "no customer with id [REDACTED]")
    );
    assert_eq!(
        round.raw.results[1].output.as_ref().unwrap()["name"],
        "[REDACTED]"
    );
    let mut seen = seen.into_inner().unwrap();
    seen.sort();
    assert!(
        seen.iter()
            .all(|content| !content.contains("John") && !content.contains("C404")),
        "{seen:?}"
    );
}

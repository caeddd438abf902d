//! The loop with native function calling: rounds, termination, tool failures, silent exit,
//! provider errors, dynamic tools and usage, each with a snapshot of its event stream.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use agent_loop::{
    Agent, AgentError, AgentEvent, ConversationContext, StopReason, TOOL_CALL_NOT_EXECUTED,
    TOOL_LIMIT_REACHED_MESSAGE,
};
use common::*;
use messages::{ContentPart, Message, Role};
use providers::testing::ScriptedResponse;
use providers::{Provider, ProviderError, Reasoning, ToolCall};
use toolchain::ToolSet;

fn agent(model: Arc<providers::testing::ScriptedModel>, tools: ToolSet) -> Agent {
    Agent::builder()
        .model(model)
        .tools(tools)
        .system("You are an AI assistant specialized in course materials.")
        .build()
        .expect("a model is set")
}

fn done_outcome(events: &[AgentEvent]) -> Arc<agent_loop::AgentOutcome> {
    match events.last() {
        Some(AgentEvent::ResponseDone { outcome, .. }) => Arc::clone(outcome),
        other => panic!("expected response.done, got {other:?}"),
    }
}

#[tokio::test]
async fn one_round_answers_directly() {
    let model =
        scripted([
            ScriptedResponse::text("RAG stands for retrieval-augmented generation.")
                .usage(usage(30, 8)),
        ]);
    let agent = agent(model.clone(), course_tools());
    let events = events(&agent, "What does RAG stand for?").await;
    assert_well_formed(&events);
    assert_events_snapshot!(events);

    let outcome = done_outcome(&events);
    assert_eq!(
        outcome.text,
        "RAG stands for retrieval-augmented generation."
    );
    assert_eq!(outcome.rounds, 1);
    assert_eq!(outcome.stop_reason, Some(StopReason::EndTurn));
    assert_eq!(outcome.usage, usage(30, 8));
    assert_eq!(outcome.messages.len(), 3);
    // The request offered both tools and started with the system prompt.
    let request = &model.requests()[0];
    assert_eq!(request.tools.len(), 2);
    assert_eq!(request.messages[0].role, Role::System);
}

#[tokio::test]
async fn two_sequential_rounds_course_outline_then_search() {
    let model = scripted([
        ScriptedResponse::new()
            .reasoning("I need the outline first.")
            .tool_call("toolu_01", "get_course_outline", r#"{"course":"Course X"}"#)
            .usage(usage(100, 20)),
        ScriptedResponse::new()
            .tool_call(
                "toolu_02",
                "search_course_content",
                r#"{"query":"Retrieval-augmented generation"}"#,
            )
            .usage(usage(150, 25)),
        ScriptedResponse::text("Course Y lesson 2 covers the same topic as lesson 4 of Course X.")
            .usage(usage(200, 30)),
    ]);
    let agent = agent(model.clone(), course_tools());
    let events = events(
        &agent,
        "Search for a course that discusses the same topic as lesson 4 of course X",
    )
    .await;
    assert_well_formed(&events);
    assert_events_snapshot!(events);

    let outcome = done_outcome(&events);
    assert_eq!(outcome.rounds, 3);
    assert_eq!(
        outcome.records.iter().filter(|r| r.tools_executed).count(),
        2
    );
    // Usage is summed over the rounds, cached and reasoning tokens included.
    let mut total = usage(100, 20);
    total += usage(150, 25);
    total += usage(200, 30);
    assert_eq!(outcome.usage, total);
    assert!(
        matches!(events.last(), Some(AgentEvent::ResponseDone { usage, .. }) if *usage == total)
    );
    // Round 2 saw the outline; round 3 saw both results, with the provider's call ids.
    let requests = model.requests();
    let second: Vec<&Message> = requests[1].messages.iter().collect();
    assert!(second.last().unwrap().tool_responses().any(|r| {
        r.tool_call_id == "toolu_01"
            && r.content
                .contains("lesson 4 Retrieval-augmented generation")
    }));
    let third = &requests[2].messages;
    assert_eq!(third.iter().flat_map(Message::tool_responses).count(), 2);
    // Every request is a valid chain.
    for request in &requests {
        chain_ast::ChainAst::new(&request.messages, false).expect("valid chain");
    }
    // The reasoning delta was emitted, not dropped.
    assert!(
        events
            .iter()
            .any(|e| matches!(e, AgentEvent::ReasoningDelta { text } if text.contains("outline")))
    );
}

#[tokio::test]
async fn tool_limit_keeps_what_was_gathered_and_asks_without_tools() {
    let call = |id: &str, n: u32| {
        ScriptedResponse::new().tool_call(
            id,
            "search_course_content",
            &format!(r#"{{"query":"q{n}"}}"#),
        )
    };
    let model = scripted([
        call("c1", 1),
        call("c2", 2),
        call("c3", 3),
        ScriptedResponse::text("Based on q1 and q2: lesson 2."),
    ]);
    let agent = agent(model.clone(), course_tools());
    let events = events(&agent, "Find everything").await;
    assert_well_formed(&events);
    assert_events_snapshot!(events);

    let outcome = done_outcome(&events);
    assert_eq!(outcome.stop_reason, Some(StopReason::ToolLimit));
    assert_eq!(outcome.text, "Based on q1 and q2: lesson 2.");
    let requests = model.requests();
    assert_eq!(requests.len(), 4);
    let last = &requests[3];
    assert!(
        last.tools.is_empty(),
        "the final answer is asked for without tools"
    );
    // Everything gathered is still there, for the final answer to use.
    let results: Vec<&str> = last
        .messages
        .iter()
        .flat_map(Message::tool_responses)
        .map(|r| r.content.as_str())
        .collect();
    assert_eq!(
        results,
        [
            "Course Y, lesson 2 covers q1",
            "Course Y, lesson 2 covers q2",
            TOOL_CALL_NOT_EXECUTED
        ]
    );
    assert_eq!(
        last.messages.last().unwrap().text(),
        TOOL_LIMIT_REACHED_MESSAGE
    );
    chain_ast::ChainAst::new(&last.messages, false).expect("valid chain");
    // Only two calls ran.
    let started = events
        .iter()
        .filter(|e| matches!(e, AgentEvent::ToolStart { .. }))
        .count();
    assert_eq!(started, 2);
}

#[tokio::test]
async fn failing_tool_is_reported_to_the_model_and_the_loop_goes_on() {
    let model = scripted([
        ScriptedResponse::new().tool_call("call_b", "broken", r#"{"query":"x"}"#),
        ScriptedResponse::text("The database is offline; try later."),
    ]);
    let tools = ToolSet::new().with(Broken).unwrap();
    let agent = agent(model.clone(), tools);
    let events = events(&agent, "Look it up").await;
    assert_well_formed(&events);
    assert_events_snapshot!(events);
    let second = &model.requests()[1];
    let response = second
        .messages
        .iter()
        .flat_map(Message::tool_responses)
        .next()
        .unwrap();
    assert_eq!(response.content, "Tool execution failed: database offline");
    assert_eq!(done_outcome(&events).records[0].tool_errors, 1);
}

#[tokio::test]
async fn parallel_tool_calls_in_one_round() {
    let model = scripted([
        ScriptedResponse::new()
            .tool_call("p1", "get_course_outline", r#"{"course":"A"}"#)
            .tool_call("p2", "get_course_outline", r#"{"course":"B"}"#)
            .tool_call("p3", "search_course_content", r#"{"query":"RAG"}"#),
        ScriptedResponse::text("Done."),
    ]);
    let agent = agent(model.clone(), course_tools());
    let events = events(&agent, "Compare A and B").await;
    assert_well_formed(&events);
    assert_events_snapshot!(events);
    let second = &model.requests()[1].messages;
    let ids: Vec<&str> = second
        .iter()
        .flat_map(Message::tool_responses)
        .map(|r| r.tool_call_id.as_str())
        .collect();
    assert_eq!(ids, ["p1", "p2", "p3"], "results in call order");
    assert_eq!(done_outcome(&events).records[0].tool_calls.len(), 3);
}

#[tokio::test]
async fn silent_exit_ends_the_run() {
    let model = scripted([ScriptedResponse::new().tool_call(
        "s1",
        "silent_exit",
        r#"{"query":"no news today"}"#,
    )]);
    let agent = agent(model.clone(), ToolSet::new().with(Quiet).unwrap());
    let events = events(&agent, "Anything new?").await;
    assert_well_formed(&events);
    assert_events_snapshot!(events);
    match events.last() {
        Some(AgentEvent::ResponseDone {
            silent_exit,
            stop_reason,
            outcome,
            ..
        }) => {
            assert!(silent_exit);
            assert_eq!(*stop_reason, StopReason::SilentExit);
            assert_eq!(outcome.silent_exit.as_deref(), Some("no news today"));
            chain_ast::ChainAst::new(&outcome.messages, false).expect("valid chain");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(model.requests().len(), 1);
}

#[tokio::test]
async fn provider_error_mid_stream_ends_with_response_error() {
    let error = ProviderError::Stream {
        provider: Provider::Anthropic,
        error_type: Some("overloaded_error".into()),
        message: "Overloaded".into(),
        retryable: true,
    };
    let model = scripted([ScriptedResponse::text("Partial answer").fail_mid_stream(error)]);
    let agent = agent(model, course_tools());
    let events = events(&agent, "Hi").await;
    assert_well_formed(&events);
    assert_events_snapshot!(events);
    match events.last() {
        Some(AgentEvent::ResponseError { error, .. }) => {
            assert!(matches!(**error, AgentError::Provider { round: 1, .. }));
            assert!(error.is_retryable());
        }
        other => panic!("{other:?}"),
    }
    // `run` reports the same error.
    let model = scripted([ScriptedResponse::error(ProviderError::config("bad key"))]);
    let error = self::agent(model, ToolSet::new())
        .run("Hi")
        .await
        .unwrap_err();
    assert!(matches!(
        error,
        AgentError::Provider { round: 1, ref source } if matches!(**source, ProviderError::Config { .. })
    ));
}

#[tokio::test]
async fn dynamic_tools_change_between_rounds() {
    // A skill loader: `search_course_content` is offered once the outline was fetched.
    let loaded = Arc::new(AtomicBool::new(false));
    let provider = {
        let loaded = Arc::clone(&loaded);
        move |context: &ConversationContext| {
            loaded.store(context.tool_rounds() > 0, Ordering::SeqCst);
            if context.tool_rounds() > 0 {
                ToolSet::new().with(SearchCourseContent).unwrap()
            } else {
                ToolSet::new()
            }
        }
    };
    let model = scripted([
        ScriptedResponse::new().tool_call("d1", "get_course_outline", r#"{"course":"X"}"#),
        ScriptedResponse::new().tool_call("d2", "search_course_content", r#"{"query":"RAG"}"#),
        ScriptedResponse::text("Found it."),
    ]);
    let agent = Agent::builder()
        .model(model.clone())
        .tools(ToolSet::new().with(GetCourseOutline).unwrap())
        .tool_provider(provider)
        .build()
        .unwrap();
    let events = events(&agent, "Find it").await;
    assert_well_formed(&events);
    assert_events_snapshot!(events);
    let offered: Vec<Vec<String>> = model
        .requests()
        .iter()
        .map(|r| r.tools.iter().map(|t| t.name.clone()).collect())
        .collect();
    assert_eq!(
        offered,
        [
            vec!["get_course_outline".to_owned()],
            vec![
                "get_course_outline".to_owned(),
                "search_course_content".to_owned()
            ],
            vec![
                "get_course_outline".to_owned(),
                "search_course_content".to_owned()
            ],
        ]
    );
    // The dynamically offered tool really ran.
    let outcome = done_outcome(&events);
    assert_eq!(outcome.records[1].tool_errors, 0);
    assert!(loaded.load(Ordering::SeqCst));
}

#[tokio::test]
async fn a_prompt_modifier_extends_the_system_prompt_from_the_next_round_on() {
    let model = scripted([
        ScriptedResponse::new().tool_call("d1", "get_course_outline", r#"{"course":"X"}"#),
        ScriptedResponse::text("Found it."),
    ]);
    let agent = Agent::builder()
        .model(model.clone())
        .tools(course_tools())
        .system("You help with courses.")
        .prompt_modifier(|context: &ConversationContext| {
            (context.tool_rounds() > 0).then(|| "Cite the outline.".to_owned())
        })
        .build()
        .unwrap();
    let outcome = agent.run("Find it").await.unwrap();
    let systems: Vec<String> = model
        .requests()
        .iter()
        .map(|request| {
            let first = &request.messages[0];
            assert_eq!(first.role, Role::System, "the system prompt stays first");
            first.text()
        })
        .collect();
    assert_eq!(
        systems,
        [
            "You help with courses.",
            "You help with courses.\n\nCite the outline."
        ]
    );
    // Exactly one system message per request: the addition never lands mid-conversation.
    for request in model.requests() {
        let count = request
            .messages
            .iter()
            .filter(|message| message.role == Role::System)
            .count();
        assert_eq!(count, 1);
    }
    assert_eq!(outcome.text, "Found it.");
}

#[tokio::test]
async fn signatures_ride_along_every_round() {
    let signed = ToolCall {
        reasoning: Some(Reasoning::signature("gemini-sig-1")),
        ..ToolCall::new("g1", "get_course_outline", r#"{"course":"X"}"#)
    };
    let model = scripted([
        ScriptedResponse::new()
            .reasoning_block(Reasoning {
                text: "Thinking about it.".into(),
                signature: Some("anthropic-sig-1".into()),
                ..Default::default()
            })
            .tool_call_with(signed.clone()),
        ScriptedResponse::text("Done."),
    ]);
    let agent = agent(model.clone(), course_tools());
    agent.run("Outline?").await.unwrap();
    let second = &model.requests()[1].messages;
    let ai = second.iter().find(|m| m.role == Role::Ai).unwrap();
    assert!(ai.parts.contains(&ContentPart::Reasoning(Reasoning {
        text: "Thinking about it.".into(),
        signature: Some("anthropic-sig-1".into()),
        ..Default::default()
    })));
    assert_eq!(ai.tool_calls().next(), Some(&signed));
}

#[tokio::test]
async fn history_and_content_parts_continue_a_conversation() {
    let model = scripted([ScriptedResponse::text("A cat.")]);
    let agent = agent(model.clone(), ToolSet::new());
    let history = vec![
        Message::system("old system prompt"),
        Message::human("Hi"),
        Message::ai("Hello!"),
    ];
    let input = agent_loop::AgentInput::parts(vec![
        ContentPart::text("What is this?"),
        ContentPart::image_url("https://example.com/cat.png"),
    ])
    .with_history(history);
    let outcome = agent.run(input).await.unwrap();
    assert_eq!(outcome.input_len, 4);
    assert_eq!(outcome.new_messages(), [Message::ai("A cat.")]);
    let sent = &model.requests()[0].messages;
    assert_eq!(
        sent[0].text(),
        "You are an AI assistant specialized in course materials."
    );
    assert_eq!(sent[3].parts.len(), 2);

    // `check` refuses bad input before anything streams, as `run` would.
    assert!(agent.check(&agent_loop::AgentInput::text("Fine")).is_ok());
    assert!(matches!(
        agent.check(&vec![Message::human("Hi"), Message::ai("Hello")].into()),
        Err(AgentError::NothingToAnswer)
    ));
    // Nothing to answer, and an invalid history, are refused before any call.
    let error = agent
        .run(vec![Message::human("Hi"), Message::ai("Hello")])
        .await
        .unwrap_err();
    assert!(matches!(error, AgentError::NothingToAnswer));
    let error = agent
        .run(vec![
            Message::human("Hi"),
            Message::tool_response("x", "f", "y"),
        ])
        .await
        .unwrap_err();
    assert!(matches!(error, AgentError::InvalidHistory(_)));
    assert_eq!(model.requests().len(), 1);
}

#[tokio::test]
async fn truncated_tool_calls_are_answered_and_retried() {
    let cut = || {
        ScriptedResponse::new()
            .tool_call("t1", "search_course_content", r#"{"query":"lo"#)
            .finish(providers::FinishReason::Length)
    };
    let model = scripted([cut(), ScriptedResponse::text("Short answer.")]);
    let agent = agent(model.clone(), course_tools());
    let outcome = agent.run("Go").await.unwrap();
    assert_eq!(outcome.text, "Short answer.");
    let second = &model.requests()[1].messages;
    let notice = second
        .iter()
        .flat_map(Message::tool_responses)
        .next()
        .unwrap();
    assert!(
        notice
            .content
            .starts_with("[SYSTEM ERROR] Your previous response was truncated")
    );
    assert!(notice.content.contains("Attempt: 1/3"));
    assert!(!outcome.records[0].tools_executed);

    let model = scripted([cut(), cut(), cut()]);
    let error = agent_with(model).run("Go").await.unwrap_err();
    assert!(matches!(error, AgentError::OutputTruncated { attempts: 3 }));
}

fn agent_with(model: Arc<providers::testing::ScriptedModel>) -> Agent {
    agent(model, course_tools())
}

#[tokio::test]
async fn options_go_with_every_request_and_tool_choice_only_with_tools() {
    // One round of tools, a second call past the limit, then the last request without tools.
    let model = scripted([
        ScriptedResponse::new().tool_call("toolu_01", "get_course_outline", r#"{"course":"X"}"#),
        ScriptedResponse::new().tool_call("toolu_02", "get_course_outline", r#"{"course":"Y"}"#),
        ScriptedResponse::text("Course X has four lessons."),
    ]);
    let agent = Agent::builder()
        .model(model.clone())
        .tools(course_tools())
        .max_rounds(1)
        .options(providers::ChatOptions {
            temperature: Some(0.7),
            max_tokens: Some(321),
            stop: vec!["END".into()],
            tool_choice: Some(providers::ToolChoice::Required),
            ..providers::ChatOptions::default()
        })
        .build()
        .expect("a model is set");
    let events = events(&agent, "Outline course X").await;
    assert_well_formed(&events);

    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    let (first, last) = (&requests[0], &requests[2]);
    for request in [first, last] {
        assert_eq!(request.options.temperature, Some(0.7));
        assert_eq!(request.options.max_tokens, Some(321));
        assert_eq!(request.options.stop, ["END"]);
    }
    assert_eq!(first.tools.len(), 2);
    assert_eq!(
        first.options.tool_choice,
        Some(providers::ToolChoice::Required)
    );
    // Forcing a tool call on a request without tools would be refused by the provider.
    assert!(last.tools.is_empty());
    assert_eq!(last.options.tool_choice, None);
}

/// A model that takes `stall` to start streaming, then answers as `inner` does.
struct SlowStart {
    inner: Arc<providers::testing::ScriptedModel>,
    stall: std::time::Duration,
}

#[async_trait::async_trait]
impl providers::ChatModel for SlowStart {
    fn info(&self) -> &providers::ModelInfo {
        self.inner.info()
    }

    async fn complete(
        &self,
        request: providers::ChatRequest,
    ) -> Result<providers::ChatResponse, ProviderError> {
        providers::collect(self.stream(request).await?).await
    }

    async fn stream(
        &self,
        request: providers::ChatRequest,
    ) -> Result<providers::EventStream, ProviderError> {
        tokio::time::sleep(self.stall).await;
        self.inner.stream(request).await
    }
}

/// Every model call's time to first token is measured from its request, for each round of a
/// run: at least the model's silence before it streamed, never more than the whole call.
#[tokio::test]
async fn each_model_call_records_its_time_to_first_token() {
    let stall = std::time::Duration::from_millis(60);
    let model = Arc::new(SlowStart {
        inner: scripted([
            ScriptedResponse::new().tool_call("call_1", "get_course_outline", "{}"),
            ScriptedResponse::text("The outline has three parts."),
        ]),
        stall,
    });
    let agent = Agent::builder()
        .model(model)
        .tools(course_tools())
        .build()
        .expect("a model is set");
    let events = events(&agent, "What is in the course?").await;
    assert_well_formed(&events);
    let outcome = done_outcome(&events);
    assert_eq!(outcome.records.len(), 2);
    for record in &outcome.records {
        let ttft = record.timing.ttft.expect("output arrived");
        assert!(ttft >= stall, "round {}: {ttft:?}", record.round);
        assert!(ttft <= record.timing.duration, "round {}", record.round);
    }
    assert_eq!(outcome.ttft(), outcome.records[0].timing.ttft);
}

/// A model that takes its requests only lent: an owned request is refused.
struct LendOnly {
    inner: Arc<providers::testing::ScriptedModel>,
}

#[async_trait::async_trait]
impl providers::ChatModel for LendOnly {
    fn info(&self) -> &providers::ModelInfo {
        self.inner.info()
    }

    async fn complete(
        &self,
        _: providers::ChatRequest,
    ) -> Result<providers::ChatResponse, ProviderError> {
        Err(ProviderError::config("this model takes its requests lent"))
    }

    async fn stream(
        &self,
        _: providers::ChatRequest,
    ) -> Result<providers::EventStream, ProviderError> {
        Err(ProviderError::config("this model takes its requests lent"))
    }

    async fn stream_borrowed(
        &self,
        request: &providers::ChatRequest,
    ) -> Result<providers::EventStream, ProviderError> {
        self.inner.stream_borrowed(request).await
    }
}

/// The loop lends each round's request (it does not copy the conversation into one), and
/// what it lends is the whole chain so far: the system prompt, the question, every earlier
/// answer and tool result.
#[tokio::test]
async fn each_round_lends_the_whole_chain_to_the_model() {
    let inner = scripted([
        ScriptedResponse::new().tool_call("call_1", "get_course_outline", "{}"),
        ScriptedResponse::new().tool_call("call_2", "get_course_outline", "{}"),
        ScriptedResponse::text("The outline has three parts."),
    ]);
    let agent = Agent::builder()
        .model(Arc::new(LendOnly {
            inner: Arc::clone(&inner),
        }))
        .tools(course_tools())
        .system("You are a course assistant.")
        .build()
        .expect("a model is set");
    let outcome = agent
        .run("What is in the course?")
        .await
        .expect("the run ends");
    assert_eq!(outcome.rounds, 3);
    let requests = inner.requests();
    assert_eq!(requests.len(), 3);
    // Request n holds the chain up to answer n: the system prompt and the question, then two
    // messages (an answer and its tool result) per earlier round.
    for (round, request) in requests.iter().enumerate() {
        assert_eq!(request.messages, outcome.messages[..2 + 2 * round]);
        assert_eq!(request.tools.len(), 2);
    }
}

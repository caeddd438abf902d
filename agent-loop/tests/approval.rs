//! Tool approval: a round whose calls need approval pauses before any runs, the paused run is
//! data, and decisions resume it — approved calls run once, rejected ones are answered with
//! the reason, and the chain stays valid throughout, reasoning and signatures untouched.

use crate::common;

use std::sync::{Arc, Mutex};

use agent_loop::approval::{
    ApprovalGrants, ApprovalPolicy, Decision, Decisions, PausedRun, Requirement, TOOL_CALL_DECLINED,
};
use agent_loop::{Agent, AgentError, AgentEvent, AgentInput, AgentOutcome, ToolMode};
use chain_ast::ChainAst;
use common::*;
use futures::StreamExt;
use messages::{ContentPart, Message, Reasoning, Role, ToolCall};
use proptest::prelude::*;
use providers::testing::{ScriptedModel, ScriptedResponse};
use serde::Deserialize;
use tokio_util::sync::CancellationToken;
use toolchain::{ExecutionContext, JsonSchema, Tool, ToolError, ToolResult, ToolSet, async_trait};

/// The input of the recording tools.
#[derive(Deserialize, JsonSchema)]
struct Note {
    /// Anything.
    text: String,
}

/// A tool that records the id of every call it runs.
struct Recording {
    name: &'static str,
    ran: Arc<Mutex<Vec<String>>>,
}

#[async_trait]
impl Tool<Note, String> for Recording {
    fn name(&self) -> &str {
        self.name
    }
    fn description(&self) -> &str {
        "Records the call."
    }
    async fn call(
        &self,
        _: &ExecutionContext,
        input: Note,
    ) -> Result<ToolResult<String>, ToolError> {
        // The tests pass the call's id as the text.
        self.ran.lock().unwrap().push(input.text.clone());
        Ok(ToolResult::text(format!(
            "{} did {}",
            self.name, input.text
        )))
    }
}

/// `guarded` (needs approval) and `free` (does not), recording into `ran`.
fn agent(model: Arc<ScriptedModel>, ran: &Arc<Mutex<Vec<String>>>, max_rounds: usize) -> Agent {
    let tools = ToolSet::new()
        .with(Recording {
            name: "guarded",
            ran: Arc::clone(ran),
        })
        .unwrap()
        .with(Recording {
            name: "free",
            ran: Arc::clone(ran),
        })
        .unwrap();
    Agent::builder()
        .model(model)
        .tools(tools)
        .max_rounds(max_rounds)
        .approval(ApprovalPolicy::new().require("guarded".parse().unwrap(), Requirement::Always))
        .build()
        .unwrap()
}

fn call(id: &str, name: &str) -> ScriptedResponse {
    ScriptedResponse::new().tool_call(id, name, &args(id))
}

/// The arguments of call `id`: its id as the text the tool records.
fn args(id: &str) -> String {
    format!(r#"{{"text":"{id}"}}"#)
}

fn paused(outcome: &AgentOutcome) -> PausedRun {
    outcome.approval.clone().expect("the run paused")
}

fn assert_valid(messages: &[Message]) {
    if let Err(error) = ChainAst::new(messages, false) {
        panic!("not a valid chain: {error}\n{messages:#?}");
    }
}

#[tokio::test]
async fn a_round_needing_approval_runs_none_of_its_calls_until_approved() {
    let ran = Arc::new(Mutex::new(Vec::new()));
    let model = scripted([
        ScriptedResponse::new()
            .tool_call("c1", "free", &args("c1"))
            .tool_call("c2", "guarded", &args("c2")),
        ScriptedResponse::text("Both done."),
    ]);
    let agent = agent(model.clone(), &ran, 4);

    let events: Vec<AgentEvent> = agent.stream("Go", CancellationToken::new()).collect().await;
    assert_well_formed(&events);
    let Some(AgentEvent::ApprovalRequired { calls, outcome, .. }) = events.last() else {
        panic!("{events:?}");
    };
    assert!(ran.lock().unwrap().is_empty(), "nothing runs while paused");
    assert_eq!(calls.len(), 1);
    assert_eq!(
        (
            calls[0].id.as_str(),
            calls[0].name.as_str(),
            calls[0].arguments.as_str()
        ),
        ("c2", "guarded", args("c2").as_str())
    );
    assert_eq!(outcome.stop_reason, None);
    assert_eq!(outcome.rounds, 1);
    let paused = paused(outcome);
    assert_valid(&paused.messages);
    assert_eq!(paused.messages.last().map(|m| m.role), Some(Role::Human));
    assert_eq!(paused.answer.tool_calls().count(), 2);

    let decisions = Decisions::new().decide("c2", Decision::Approve);
    let outcome = agent.resume(paused, decisions).await.unwrap();
    assert_eq!(outcome.text, "Both done.");
    assert_eq!(*ran.lock().unwrap(), ["c1", "c2"]);
    assert_valid(&outcome.messages);
    // The answer's calls are answered in their order.
    let answered: Vec<&str> = outcome
        .messages
        .iter()
        .flat_map(|m| &m.parts)
        .filter_map(|part| match part {
            ContentPart::ToolResponse(response) => Some(response.tool_call_id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(answered, ["c1", "c2"]);
    assert_valid(&model.requests().last().unwrap().messages);
}

#[tokio::test]
async fn a_rejected_call_is_answered_with_the_reason_and_never_runs() {
    let ran = Arc::new(Mutex::new(Vec::new()));
    let model = scripted([call("c1", "guarded"), ScriptedResponse::text("Understood.")]);
    let agent = agent(model.clone(), &ran, 4);
    let outcome = agent.run("Go").await.unwrap();

    let decisions = Decisions::new().decide("c1", Decision::reject("not on a Friday"));
    let events: Vec<AgentEvent> = agent
        .resume_stream(paused(&outcome), decisions, None, CancellationToken::new())
        .collect()
        .await;
    assert_well_formed(&events);
    assert!(ran.lock().unwrap().is_empty());
    let expected = format!("{TOOL_CALL_DECLINED} Reason: not on a Friday");
    let done = events.iter().find_map(|event| match event {
        AgentEvent::ToolDone { id, error, .. } => Some((id.clone(), error.clone())),
        _ => None,
    });
    assert_eq!(done, Some(("c1".to_owned(), Some(expected.clone()))));
    // The model reads the tool response saying the user declined, with the reason.
    let request = model.requests().pop().unwrap();
    let tool = request.messages.last().unwrap();
    assert_eq!(tool.role, Role::Tool);
    assert!(matches!(
        &tool.parts[0],
        ContentPart::ToolResponse(response) if response.content == expected && response.tool_call_id == "c1"
    ));
    assert_valid(&request.messages);
}

#[tokio::test]
async fn always_grants_the_tool_for_the_rest_of_the_conversation() {
    let ran = Arc::new(Mutex::new(Vec::new()));
    let model = scripted([
        call("c1", "guarded"),
        call("c2", "guarded"),
        ScriptedResponse::text("Done."),
        call("c3", "guarded"),
        ScriptedResponse::text("Again."),
    ]);
    let agent = agent(model, &ran, 4);
    let outcome = agent.run("Go").await.unwrap();
    let decisions = Decisions::new().decide("c1", Decision::ApproveAlways);
    let outcome = agent.resume(paused(&outcome), decisions).await.unwrap();
    // The second call of the granted tool ran without pausing.
    assert_eq!(outcome.text, "Done.");
    assert_eq!(*ran.lock().unwrap(), ["c1", "c2"]);
    assert!(outcome.grants.allows("guarded"));

    // The grant goes on with the conversation.
    let next = AgentInput::from("More")
        .with_history(outcome.messages.clone())
        .with_grants(outcome.grants.clone());
    let outcome = agent.run(next).await.unwrap();
    assert_eq!(outcome.text, "Again.");
    assert_eq!(*ran.lock().unwrap(), ["c1", "c2", "c3"]);
}

#[tokio::test]
async fn decisions_must_cover_every_pending_call_and_nothing_else() {
    let ran = Arc::new(Mutex::new(Vec::new()));
    let model = scripted([ScriptedResponse::new()
        .tool_call("c1", "guarded", &args("c1"))
        .tool_call("c2", "guarded", &args("c2"))]);
    let agent = agent(model, &ran, 4);
    let outcome = agent.run("Go").await.unwrap();
    let decisions = Decisions::new()
        .decide("c1", Decision::Approve)
        .decide("c9", Decision::Approve);
    let error = agent.resume(paused(&outcome), decisions).await.unwrap_err();
    let AgentError::Decisions(error) = &error else {
        panic!("{error:?}");
    };
    assert_eq!(error.problems.len(), 2, "{error}");
    assert!(error.to_string().contains("`c2`"), "{error}");
    assert!(error.to_string().contains("`c9`"), "{error}");
    assert!(ran.lock().unwrap().is_empty());
}

#[tokio::test]
async fn reasoning_and_signatures_survive_the_pause_unchanged() {
    // Anthropic: thinking blocks (signed, and redacted) before the calls. Gemini: the thought
    // signature rides on the call itself.
    let signed = Reasoning {
        text: "I should ask.".into(),
        signature: Some("sig-anthropic".into()),
        ..Default::default()
    };
    let redacted = Reasoning {
        encrypted: Some("opaque".into()),
        ..Default::default()
    };
    let gemini_call = ToolCall {
        reasoning: Some(Reasoning {
            signature: Some("sig-gemini".into()),
            ..Default::default()
        }),
        ..ToolCall::new("c2", "guarded", args("c2"))
    };
    let ran = Arc::new(Mutex::new(Vec::new()));
    let model = scripted([
        ScriptedResponse::new()
            .reasoning_block(signed)
            .reasoning_block(redacted)
            .tool_call("c1", "free", &args("c1"))
            .tool_call_with(gemini_call),
        ScriptedResponse::text("Done."),
    ]);
    let agent = agent(model.clone(), &ran, 4);
    let outcome = agent.run("Go").await.unwrap();
    let paused = paused(&outcome);
    let answer = paused.answer.clone();
    assert!(
        matches!(&answer.parts[0], ContentPart::Reasoning(r) if r.signature.as_deref() == Some("sig-anthropic"))
    );
    assert!(
        matches!(&answer.parts[1], ContentPart::Reasoning(r) if r.encrypted.as_deref() == Some("opaque"))
    );

    // Kept as JSON, as a service would keep it, and read back.
    let stored = serde_json::to_string(&paused).unwrap();
    let paused: PausedRun = serde_json::from_str(&stored).unwrap();
    assert_eq!(paused.answer, answer);
    let decisions = Decisions::new().decide("c2", Decision::Approve);
    agent.resume(paused, decisions).await.unwrap();

    // The next request carries the answer exactly as the model sent it.
    let request = model.requests().pop().unwrap();
    let sent = request
        .messages
        .iter()
        .find(|message| message.role == Role::Ai)
        .unwrap();
    assert_eq!(*sent, answer);
    assert_valid(&request.messages);
}

#[test]
fn a_text_protocol_agent_refuses_an_approval_policy() {
    let error = Agent::builder()
        .model(scripted([]))
        .tool_mode(ToolMode::Text(Box::new(agent_loop::XmlFormat::default())))
        .approval(ApprovalPolicy::always())
        .build()
        .unwrap_err();
    assert!(
        matches!(error, AgentError::ApprovalNeedsNativeTools),
        "{error}"
    );
}

/// What a person decides in the property test.
#[derive(Clone, Copy, Debug)]
enum Choice {
    Approve,
    Always,
    Reject,
}

fn choices() -> impl Strategy<Value = Vec<Choice>> {
    proptest::collection::vec(
        prop_oneof![
            Just(Choice::Approve),
            Just(Choice::Always),
            Just(Choice::Reject)
        ],
        0..24,
    )
}

/// Rounds of calls: each call `true` for `guarded`, `false` for `free`; an empty round answers.
fn rounds() -> impl Strategy<Value = Vec<Vec<bool>>> {
    proptest::collection::vec(proptest::collection::vec(any::<bool>(), 0..4), 1..6)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Whatever the model calls and whatever a person decides, no call runs without approval
    /// (or a grant, or needing none), none runs twice, and the chain is valid while paused,
    /// in every request and at the end.
    #[test]
    fn random_decisions_keep_every_promise(rounds in rounds(), choices in choices(), max_rounds in 1usize..5) {
        let mut script: Vec<ScriptedResponse> = rounds
            .iter()
            .enumerate()
            .map(|(round, calls)| {
                if calls.is_empty() {
                    return ScriptedResponse::text("An answer.");
                }
                calls.iter().enumerate().fold(
                    ScriptedResponse::new().reasoning_block(Reasoning {
                        text: format!("round {round}"),
                        signature: Some(format!("sig-{round}")),
                        ..Default::default()
                    }),
                    |response, (n, guarded)| {
                        let name = if *guarded { "guarded" } else { "free" };
                        let id = format!("call_{round}_{n}");
                        // A Gemini-style thought signature on the first call of the round.
                        let reasoning = (n == 0).then(|| Reasoning {
                            signature: Some(format!("thought-{round}")),
                            ..Default::default()
                        });
                        response.tool_call_with(ToolCall { reasoning, ..ToolCall::new(&id, name, args(&id)) })
                    },
                )
            })
            .collect();
        script.push(ScriptedResponse::text("Final."));
        script.push(ScriptedResponse::text("Final."));
        let ran = Arc::new(Mutex::new(Vec::new()));
        let model = scripted(script);
        let agent = agent(model.clone(), &ran, max_rounds);
        let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();

        let mut allowed: Vec<String> = Vec::new();
        let mut declined: Vec<String> = Vec::new();
        let mut grants = ApprovalGrants::new();
        let mut choices = choices.into_iter().cycle();
        let mut outcome = runtime.block_on(agent.run("Go")).unwrap();
        let mut pauses = 0;
        while let Some(paused) = outcome.approval.clone() {
            pauses += 1;
            prop_assert!(pauses < 20, "the run keeps pausing");
            prop_assert!(ChainAst::new(&paused.messages, false).is_ok(), "paused chain invalid");
            let round = serde_json::from_str::<PausedRun>(&serde_json::to_string(&paused).unwrap()).unwrap();
            prop_assert_eq!(&round, &paused);
            for call in paused.answer.tool_calls() {
                let pending = paused.pending.iter().any(|p| p.id == call.id);
                // A call pauses exactly when it needs approval and has no grant.
                prop_assert_eq!(pending, call.name == "guarded" && !grants.allows(&call.name));
                if !pending {
                    allowed.push(call.id.clone());
                }
            }
            let mut decisions = Decisions::new();
            for pending in &paused.pending {
                let decision = match choices.next().unwrap_or(Choice::Approve) {
                    Choice::Approve => Decision::Approve,
                    Choice::Always => {
                        grants.grant(pending.name.clone());
                        Decision::ApproveAlways
                    }
                    Choice::Reject => Decision::reject("no"),
                };
                if decision.approves() {
                    allowed.push(pending.id.clone());
                } else {
                    declined.push(pending.id.clone());
                }
                decisions = decisions.decide(pending.id.clone(), decision);
            }
            outcome = runtime.block_on(agent.resume(paused, decisions)).unwrap();
            prop_assert!(ChainAst::new(&outcome.messages, false).is_ok());
        }
        let ran = ran.lock().unwrap().clone();
        for id in &ran {
            // Calls that ran without a pause in between had no guarded call beside them, or
            // a grant.
            let counted = ran.iter().filter(|other| *other == id).count();
            prop_assert_eq!(counted, 1, "{} ran {} times", id, counted);
            prop_assert!(!declined.contains(id), "{} ran though declined", id);
        }
        for id in &ran {
            let guarded_call = outcome
                .messages
                .iter()
                .flat_map(Message::tool_calls)
                .any(|call| &call.id == id && call.name == "guarded");
            if guarded_call {
                prop_assert!(allowed.contains(id) || grants.allows("guarded"), "{} ran unapproved", id);
            }
        }
        prop_assert!(ChainAst::new(&outcome.messages, false).is_ok());
        // Every answer with calls reached the end as the model sent it: its signed thinking
        // block first, the thought signature still on its first call.
        for message in outcome.messages.iter().filter(|m| m.tool_calls().next().is_some()) {
            let ContentPart::Reasoning(block) = &message.parts[0] else {
                return Err(TestCaseError::fail(format!("reasoning moved: {message:?}")));
            };
            let round = block.signature.as_deref().and_then(|sig| sig.strip_prefix("sig-"));
            prop_assert!(round.is_some(), "signature lost: {:?}", message);
            let first = message.tool_calls().next().and_then(|call| call.reasoning.as_ref());
            let expected = format!("thought-{}", round.unwrap_or_default());
            prop_assert_eq!(first.and_then(|r| r.signature.as_deref()), Some(expected.as_str()));
        }
        for request in model.requests() {
            prop_assert!(ChainAst::new(&request.messages, false).is_ok());
        }
    }
}

#[cfg(feature = "store")]
#[tokio::test]
async fn a_resumed_run_logs_below_the_paused_answer() {
    let store = memory_store().await;
    let ran = Arc::new(Mutex::new(Vec::new()));
    let model = scripted([call("c1", "guarded"), ScriptedResponse::text("Done.")]);
    let tools = ToolSet::new()
        .with(Recording {
            name: "guarded",
            ran: Arc::clone(&ran),
        })
        .unwrap();
    let agent = Agent::builder()
        .model(model)
        .tools(tools)
        .store(Arc::clone(&store))
        .approval(ApprovalPolicy::always())
        .build()
        .unwrap();
    let outcome = agent.run("Go").await.unwrap();
    let paused = paused(&outcome);
    let node = paused.node.expect("the paused answer is stored");
    assert_eq!(outcome.node_ids, [node]);

    let decisions = Decisions::new().decide("c1", Decision::Approve);
    let outcome = agent.resume(paused, decisions).await.unwrap();
    assert_eq!(outcome.text, "Done.");
    let last = *outcome.node_ids.last().unwrap();
    let path = store.path_to_root(last).await.unwrap();
    assert!(
        path.iter().any(|stored| stored.id() == node),
        "the resumed answer is a descendant of the paused one"
    );
    let continued = agent_loop::history::continuation(store.as_ref(), last)
        .await
        .unwrap();
    assert!(continued.repaired.is_empty(), "{:?}", continued.repaired);
    assert_eq!(continued.messages, outcome.messages);
}

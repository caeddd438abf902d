//! Reasoning signatures survive every round: recorded Anthropic and Gemini answers (the
//! providers crate's fixtures, byte for byte) replayed by a local server for three tool rounds
//! and a final answer, with every signature echoed in every later request.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agent_loop::{Agent, StopReason};
use messages::{ContentPart, Role};
use providers::{ModelConfig, model_from_config};
use serde::Deserialize;
use serde_json::Value;
use toolchain::{ExecutionContext, JsonSchema, Tool, ToolError, ToolResult, ToolSet, async_trait};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// The bytes of a recorded fixture of the providers crate.
fn fixture(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../providers/tests/fixtures")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|err| panic!("cannot read {}: {err}", path.display()))
}

/// Answers successive requests with successive SSE fixtures.
struct Sequence {
    bodies: Vec<Vec<u8>>,
    next: AtomicUsize,
}

impl Respond for Sequence {
    fn respond(&self, _: &Request) -> ResponseTemplate {
        let i = self
            .next
            .fetch_add(1, Ordering::SeqCst)
            .min(self.bodies.len() - 1);
        ResponseTemplate::new(200)
            .set_body_raw(self.bodies[i].clone(), "text/event-stream; charset=utf-8")
    }
}

async fn serve(route: &str, fixtures: &[&str]) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(route))
        .respond_with(Sequence {
            bodies: fixtures.iter().map(|name| fixture(name)).collect(),
            next: AtomicUsize::new(0),
        })
        .mount(&server)
        .await;
    server
}

async fn bodies(server: &MockServer) -> Vec<Value> {
    server
        .received_requests()
        .await
        .unwrap_or_default()
        .iter()
        .map(|request| serde_json::from_slice(&request.body).expect("a JSON body"))
        .collect()
}

fn model(model_id: &str, base_url: String) -> Arc<dyn providers::ChatModel> {
    let config = ModelConfig {
        api_key: Some("test-key-123".into()),
        base_url: Some(base_url),
        ..ModelConfig::new(model_id)
    };
    Arc::from(model_from_config(&config).expect("the model builds"))
}

#[derive(Deserialize, JsonSchema)]
struct NoInput {}

struct FixedVersion;

#[async_trait]
impl Tool<NoInput, String> for FixedVersion {
    fn name(&self) -> &str {
        "fixed_version"
    }
    fn description(&self) -> &str {
        "Return a fixed test version string"
    }
    async fn call(
        &self,
        _: &ExecutionContext,
        _: NoInput,
    ) -> Result<ToolResult<String>, ToolError> {
        Ok(ToolResult::text("v1.2.3".to_owned()))
    }
}

#[tokio::test]
async fn anthropic_thinking_signatures_survive_three_tool_rounds() {
    let server = serve(
        "/v1/messages",
        &[
            "anthropic/stream_thinking_tool_use.sse",
            "anthropic/stream_thinking_tool_use.sse",
            "anthropic/stream_thinking_tool_use.sse",
            "anthropic/stream_text_after_tool.sse",
        ],
    )
    .await;
    let agent = Agent::builder()
        .model(model("claude-haiku-4-5-20251001", server.uri()))
        .tools(ToolSet::new().with(FixedVersion).unwrap())
        .thinking_budget(1024)
        .max_rounds(3)
        .build()
        .unwrap();
    let outcome = agent
        .run("Use the fixed_version tool. Then tell me the version and make one short joke about it. Think about it first.")
        .await
        .unwrap();
    assert_eq!(outcome.stop_reason, Some(StopReason::EndTurn));
    assert_eq!(outcome.rounds, 4);
    assert!(outcome.usage.input_tokens > 0 && outcome.usage.output_tokens > 0);

    let requests = bodies(&server).await;
    assert_eq!(requests.len(), 4);
    // The assistant turn as recorded in the follow-up request of the real conversation.
    let recorded = serde_json::from_slice::<Value>(&fixture(
        "anthropic/stream_thinking_tool_use.followup.request.json",
    ))
    .unwrap();
    let recorded_turn = &recorded["messages"][1];
    let signature = recorded_turn["content"][0]["signature"].as_str().unwrap();
    assert!(signature.len() > 100);
    for (n, request) in requests.iter().enumerate() {
        assert_eq!(request["thinking"]["budget_tokens"], 1024);
        let turns: Vec<&Value> = request["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|turn| turn["role"] == "assistant")
            .collect();
        // Request n carries the n assistant turns before it, each echoed whole: the thinking
        // text and its signature exactly as streamed, then the tool use.
        assert_eq!(turns.len(), n, "request {n}");
        for turn in turns {
            assert_eq!(turn["content"], recorded_turn["content"], "request {n}");
        }
    }
    // The outcome keeps them too.
    let signed = outcome
        .messages
        .iter()
        .filter(|m| m.role == Role::Ai)
        .flat_map(|m| &m.parts)
        .filter(|part| matches!(part, ContentPart::Reasoning(r) if r.signature.as_deref() == Some(signature)))
        .count();
    assert_eq!(signed, 3);
}

#[derive(Deserialize, JsonSchema)]
struct Password {
    /// The password.
    password: String,
}

struct SecretRetrieval;

#[async_trait]
impl Tool<Password, String> for SecretRetrieval {
    fn name(&self) -> &str {
        "secret_retrieval_tool"
    }
    fn description(&self) -> &str {
        "Retrieves a secret for a password."
    }
    async fn call(
        &self,
        _: &ExecutionContext,
        input: Password,
    ) -> Result<ToolResult<String>, ToolError> {
        Ok(ToolResult::text(format!("secret for {}", input.password)))
    }
}

struct GetCountry;

#[async_trait]
impl Tool<NoInput, String> for GetCountry {
    fn name(&self) -> &str {
        "get_country"
    }
    fn description(&self) -> &str {
        "The user's country."
    }
    async fn call(
        &self,
        _: &ExecutionContext,
        _: NoInput,
    ) -> Result<ToolResult<String>, ToolError> {
        Ok(ToolResult::text("Mexico".to_owned()))
    }
}

/// Every `thoughtSignature` in a Gemini request's contents, in order.
fn signatures(request: &Value) -> Vec<String> {
    request["contents"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|content| content["parts"].as_array().cloned().unwrap_or_default())
        .filter_map(|part| part["thoughtSignature"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn gemini_call_signatures_survive_three_tool_rounds() {
    let model_id = "gemini-3-pro-preview";
    let route = format!("/v1beta/models/{model_id}:streamGenerateContent");
    let server = serve(
        &route,
        &[
            "gemini/stream_function_call_signature.sse",
            "gemini/stream_parallel_function_calls.sse",
            "gemini/stream_function_call_signature.sse",
            "gemini/stream_text_after_function_call.sse",
        ],
    )
    .await;
    let tools = ToolSet::new()
        .with(GetCountry)
        .unwrap()
        .with(SecretRetrieval)
        .unwrap();
    let agent = Agent::builder()
        .model(model(model_id, format!("{}/v1beta", server.uri())))
        .tools(tools)
        .max_rounds(3)
        .build()
        .unwrap();
    let outcome = agent
        .run("What is the capital of the user country? Call the tool")
        .await
        .unwrap();
    assert_eq!(outcome.stop_reason, Some(StopReason::EndTurn));
    assert!(outcome.text.starts_with("The capital of Mexico"));

    let requests = bodies(&server).await;
    assert_eq!(requests.len(), 4);
    let first = signatures(&requests[1]);
    assert_eq!(first.len(), 1);
    assert!(first[0].starts_with("EpwICpkIAXLI2nxlU6gs"));
    let second = signatures(&requests[2]);
    assert_eq!(second.len(), 2);
    assert!(second[1].starts_with("CikB0e2Kbw5tJ9dwYB9m"));
    // The last request echoes all three signed calls, in order, signatures unchanged.
    assert_eq!(
        signatures(&requests[3]),
        [first[0].clone(), second[1].clone(), first[0].clone()]
    );
    // Ids the adapter minted are never sent back.
    let text = requests[3].to_string();
    assert!(!text.contains(providers::gemini::MINTED_ID_PREFIX));
    // Both results of the parallel round went back.
    assert!(text.contains("secret for mellon") && text.contains("secret for radiance"));
}

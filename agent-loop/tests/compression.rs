//! Compression before each request: triggered between tool rounds, signatures of the current
//! exchange preserved, fake signature on the summary, attachments cut, pruning without a
//! summary, never a system message mid-chain.

mod common;

use std::sync::Arc;

use agent_loop::{Agent, ContextPolicy, StopReason};
use chain_ast::{BodyPairKind, ChainAst, FAKE_THOUGHT_SIGNATURE, SUMMARIZATION_TOOL_NAME};
use common::*;
use messages::{ContentPart, Message, Reasoning, Role, ToolCall};
use providers::testing::{ScriptedModel, ScriptedResponse};
use providers::{ModelInfo, Provider, ProviderError};
use serde::Deserialize;
use toolchain::{ExecutionContext, JsonSchema, Tool, ToolError, ToolResult, ToolSet, async_trait};

/// A model with a 2 000-token window: 1 800 tokens for input, compression above 1 620, down
/// to 1 260.
fn small_model(responses: Vec<ScriptedResponse>) -> Arc<ScriptedModel> {
    Arc::new(ScriptedModel::new(responses).with_info(ModelInfo {
        id: "claude-small".into(),
        provider: Provider::Anthropic,
        context_window: 2_000,
        max_output_tokens: 200,
        supports_reasoning: true,
        supports_vision: true,
        known: true,
    }))
}

#[derive(Deserialize, JsonSchema)]
struct Page {
    /// Page number.
    n: u32,
}

/// Returns 2 000 bytes per page (≈ 590 estimated tokens).
struct ReadPage;

#[async_trait]
impl Tool<Page, String> for ReadPage {
    fn name(&self) -> &str {
        "read_page"
    }
    fn description(&self) -> &str {
        "Reads a page."
    }
    async fn call(
        &self,
        _: &ExecutionContext,
        page: Page,
    ) -> Result<ToolResult<String>, ToolError> {
        Ok(ToolResult::text(format!("page {} ", page.n).repeat(250)))
    }
}

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
        .tools(ToolSet::new().with(ReadPage).unwrap())
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
        .tools(ToolSet::new().with(ReadPage).unwrap())
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
    // The oldest exchange goes; that is enough to get under the target.
    assert_eq!(report.pairs_pruned, 1);
    assert!(report.tokens_after <= report.limits.unwrap().target);
    let sent = &model.requests()[4].messages;
    let chain = ChainAst::new(sent, false).expect("a valid chain");
    let body = chain.sections()[0].body();
    assert_eq!(body.len(), 2);
    assert_eq!(body[0].ai().tool_calls().next().unwrap().id, "toolu_2");
    assert_eq!(body[1].ai().tool_calls().next(), Some(&call3));
    assert_eq!(sent[0].text(), "Read pages 1 to 3.", "the request stays");
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
async fn no_compression_below_the_trigger() {
    let model = small_model(vec![ScriptedResponse::text("Hi.")]);
    let agent = Agent::builder().model(model).build().unwrap();
    let outcome = agent.run("Hello").await.unwrap();
    assert_eq!(outcome.records[0].compression, None);
    assert!(outcome.records[0].request_tokens < 20);
}

//! Tool approval: a person says yes before a tool runs, and the run waits as long as that takes.
//!
//! An [`ApprovalPolicy`] (set with [`AgentBuilder::approval`](crate::AgentBuilder::approval))
//! says which calls need approval: per tool, per MCP server, per MCP tool or by name pattern,
//! always, never, or when the arguments meet a rule. When a round's answer calls any tool that
//! needs approval (and that no [`ApprovalGrants`] entry allows), none of the round's calls
//! runs: the run ends with [`AgentOutcome::approval`](crate::AgentOutcome::approval) holding a
//! [`PausedRun`] (plain data: keep it anywhere), and a stream ends with
//! [`AgentEvent::ApprovalRequired`](crate::AgentEvent::ApprovalRequired).
//! [`Agent::resume`](crate::Agent::resume) takes the paused run and one [`Decision`] per
//! pending call: approved calls run (with the round's calls that needed none), rejected ones
//! are answered to the model with [`declined_notice`], and the run goes on.
//!
//! ```
//! use std::sync::Arc;
//! use agent_loop::Agent;
//! use agent_loop::approval::{ApprovalPolicy, Decision, Decisions, Requirement};
//! use providers::testing::{ScriptedModel, ScriptedResponse};
//! use toolchain::{async_trait, ExecutionContext, JsonSchema, Tool, ToolError, ToolResult, ToolSet};
//!
//! #[derive(serde::Deserialize, JsonSchema)]
//! struct Path {
//!     /// The file to delete.
//!     path: String,
//! }
//! struct DeleteFile;
//! #[async_trait]
//! impl Tool<Path, String> for DeleteFile {
//!     fn name(&self) -> &str { "delete_file" }
//!     fn description(&self) -> &str { "Deletes a file." }
//!     async fn call(&self, _: &ExecutionContext, input: Path) -> Result<ToolResult<String>, ToolError> {
//!         Ok(ToolResult::text(format!("deleted {}", input.path)))
//!     }
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
//! let model = Arc::new(ScriptedModel::new([
//!     ScriptedResponse::new().tool_call("call_1", "delete_file", r#"{"path": "notes.txt"}"#),
//!     ScriptedResponse::text("Deleted."),
//! ]));
//! let agent = Agent::builder()
//!     .model(model)
//!     .tools(ToolSet::new().with(DeleteFile)?)
//!     .approval(ApprovalPolicy::new().require("delete_file".parse()?, Requirement::Always))
//!     .build()?;
//!
//! let outcome = agent.run("Delete notes.txt").await?;
//! let paused = outcome.approval.expect("the call waits for a person");
//! assert_eq!(paused.pending[0].name, "delete_file");
//!
//! // Later, in any process: the paused run is plain data.
//! let paused = serde_json::from_str(&serde_json::to_string(&paused)?)?;
//! let decisions = Decisions::new().decide("call_1", Decision::Approve);
//! let outcome = agent.resume(paused, decisions).await?;
//! assert_eq!(outcome.text, "Deleted.");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```

mod pause;
mod policy;

pub use pause::{
    ApprovalGrants, Decision, DecisionError, Decisions, PausedRun, PendingCall, TOOL_CALL_DECLINED,
    declined_notice,
};
pub use policy::{
    ApprovalPolicy, ArgumentRule, MCP_SEPARATOR, Pattern, Requirement, SelectorError, ToolSelector,
};

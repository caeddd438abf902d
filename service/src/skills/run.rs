//! The skills of one run: the `load_skill` tool, and the tool provider and prompt modifier that
//! offer a loaded skill's tools and instructions from the next round on. All three share the
//! run's set of loaded skills, seeded from the history so a continued conversation keeps them.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, PoisonError};

use agent_loop::{ConversationContext, PromptModifier, ToolProvider};
use messages::{ContentPart, Message};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolchain::{DynTool, ExecutionContext, Tool, ToolError, ToolResult, ToolSet, async_trait};

use super::{Skill, SkillSet};
use crate::mcp::McpTools;
use tools::BuiltinTools;

/// The name of the tool that loads a skill.
pub const LOAD_SKILL: &str = "load_skill";

/// A skill offered to a run, with its tools resolved (or why they cannot be).
#[derive(Debug)]
struct Offered {
    skill: Skill,
    tools: Result<ToolSet, String>,
}

/// What the three parts of a run's skills share.
#[derive(Debug)]
struct Shared {
    offered: Vec<Offered>,
    loaded: Mutex<BTreeSet<String>>,
}

impl Shared {
    fn loaded(&self) -> BTreeSet<String> {
        self.loaded
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn offered(&self, name: &str) -> Option<&Offered> {
        self.offered
            .iter()
            .find(|offered| offered.skill.name == name)
    }
}

/// The skills of one run.
#[derive(Clone, Debug)]
pub(crate) struct SkillRun {
    shared: Arc<Shared>,
}

/// Why a run's skills cannot be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SkillRunError {
    /// A skill asked for is not among the configured ones.
    #[error("unknown skill `{name}`; the skills are: {known}")]
    Unknown {
        /// The name asked for.
        name: String,
        /// The known names, comma-separated (or "none").
        known: String,
    },
    /// The `load_skill` tool could not be built.
    #[error("cannot offer `load_skill`: {0}")]
    Tool(#[from] ToolError),
}

impl SkillRun {
    /// The skills `names` of `skills` offered to a run with `builtin` tools and the `mcp`
    /// servers; `preload` are loaded from the start, and so is every skill the `history` loaded.
    pub(crate) fn new(
        skills: &SkillSet,
        names: &[String],
        preload: &[String],
        builtin: &BuiltinTools,
        mcp: &McpTools,
        history: &[Message],
    ) -> Result<Self, SkillRunError> {
        let unknown = |name: &str| SkillRunError::Unknown {
            name: name.to_owned(),
            known: known(skills),
        };
        let mut offered = Vec::new();
        for name in names {
            let skill = skills.get(name).ok_or_else(|| unknown(name))?;
            offered.push(Offered {
                skill: skill.clone(),
                tools: tools_of(skill, builtin, mcp),
            });
        }
        let mut loaded = BTreeSet::new();
        for name in preload {
            if !names.contains(name) {
                return Err(unknown(name));
            }
            loaded.insert(name.clone());
        }
        loaded.extend(loaded_in(history).filter(|name| names.contains(name)));
        Ok(SkillRun {
            shared: Arc::new(Shared {
                offered,
                loaded: Mutex::new(loaded),
            }),
        })
    }

    /// The `load_skill` tool, listing the offered skills.
    pub(crate) fn load_tool(&self) -> Result<DynTool, ToolError> {
        let mut description = String::from(
            "Loads a skill: its instructions join yours and its tools become available from \
             your next step. Load a skill as soon as the task matches its description. \
             Skills:",
        );
        for offered in &self.shared.offered {
            description.push_str(&format!(
                "\n- {}: {}",
                offered.skill.name, offered.skill.description
            ));
        }
        DynTool::new(LoadSkill {
            shared: Arc::clone(&self.shared),
            description,
        })
    }

    /// Offers the tools of the loaded skills.
    pub(crate) fn provider(&self) -> impl ToolProvider + 'static {
        let shared = Arc::clone(&self.shared);
        move |_: &ConversationContext| {
            let mut tools = ToolSet::new();
            for name in shared.loaded() {
                if let Some(Offered {
                    tools: Ok(skill_tools),
                    ..
                }) = shared.offered(&name)
                {
                    // Two skills may bring the same tool: it is offered once.
                    let fresh = skill_tools.filtered(|tool| !tools.contains(tool.name()));
                    let _ = tools.extend(&fresh);
                }
            }
            tools
        }
    }

    /// Adds the loaded skills' instructions to the system prompt.
    pub(crate) fn modifier(&self) -> impl PromptModifier + 'static {
        let shared = Arc::clone(&self.shared);
        move |_: &ConversationContext| {
            let sections: Vec<String> = shared
                .loaded()
                .iter()
                .filter_map(|name| shared.offered(name))
                .filter(|offered| !offered.skill.instructions.is_empty())
                .map(|offered| {
                    format!(
                        "# Skill: {}\n{}",
                        offered.skill.name, offered.skill.instructions
                    )
                })
                .collect();
            (!sections.is_empty()).then(|| sections.join("\n\n"))
        }
    }

    /// The skills loaded so far, sorted.
    #[cfg(test)]
    pub(crate) fn loaded(&self) -> Vec<String> {
        self.shared.loaded().into_iter().collect()
    }
}

/// The tools `skill` brings: the built-in ones it names and every tool of its MCP servers; or
/// why this server cannot offer them (the skill stays listed, and loading it says why).
fn tools_of(skill: &Skill, builtin: &BuiltinTools, mcp: &McpTools) -> Result<ToolSet, String> {
    let mut tools = builtin
        .select(skill.tools.iter().map(String::as_str))
        .map_err(|error| error.to_string())?;
    for server in &skill.mcp_servers {
        let Some(server_tools) = mcp.tools(server) else {
            let names: Vec<&str> = mcp.names().collect();
            let configured = if names.is_empty() {
                "none is".to_owned()
            } else {
                format!("the configured ones are {}", names.join(", "))
            };
            return Err(format!(
                "it needs the MCP server `{server}`, which is not configured ({configured})"
            ));
        };
        // MCP tool names carry their server's name, so they cannot clash with built-in names
        // or with another server's.
        tools
            .extend(&server_tools)
            .map_err(|error| error.to_string())?;
    }
    Ok(tools)
}

fn known(skills: &SkillSet) -> String {
    let names: Vec<&str> = skills.names().collect();
    if names.is_empty() {
        "none (configure skill directories)".to_owned()
    } else {
        names.join(", ")
    }
}

/// The skills a stored conversation loaded: `load_skill` calls that have an answer.
fn loaded_in(history: &[Message]) -> impl Iterator<Item = String> + '_ {
    let answered: BTreeSet<&str> = history
        .iter()
        .flat_map(|message| &message.parts)
        .filter_map(|part| match part {
            ContentPart::ToolResponse(response) if response.name == LOAD_SKILL => {
                Some(response.tool_call_id.as_str())
            }
            _ => None,
        })
        .collect();
    history
        .iter()
        .flat_map(Message::tool_calls)
        .filter(move |call| call.name == LOAD_SKILL && answered.contains(call.id.as_str()))
        .filter_map(|call| {
            serde_json::from_str::<LoadSkillInput>(&call.arguments)
                .ok()
                .map(|input| input.name)
        })
}

/// The `load_skill` tool of a run.
struct LoadSkill {
    shared: Arc<Shared>,
    description: String,
}

/// What `load_skill` takes.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct LoadSkillInput {
    /// The name of the skill to load, as listed in this tool's description.
    name: String,
}

/// What `load_skill` answers.
#[derive(Debug, Serialize)]
struct LoadSkillOutput {
    skill: String,
    /// False when it was loaded already (loading twice changes nothing).
    newly_loaded: bool,
    /// The tools it brings, available from the next step.
    tools: Vec<String>,
    message: String,
}

#[async_trait]
impl Tool<LoadSkillInput, LoadSkillOutput> for LoadSkill {
    fn name(&self) -> &str {
        LOAD_SKILL
    }

    fn description(&self) -> &str {
        &self.description
    }

    async fn call(
        &self,
        _ctx: &ExecutionContext,
        input: LoadSkillInput,
    ) -> Result<ToolResult<LoadSkillOutput>, ToolError> {
        let name = input.name.trim();
        let Some(offered) = self.shared.offered(name) else {
            let names: Vec<&str> = self
                .shared
                .offered
                .iter()
                .map(|offered| offered.skill.name.as_str())
                .collect();
            return Err(ToolError::failed(format!(
                "there is no skill `{name}`; the skills you can load are: {}",
                names.join(", ")
            )));
        };
        let tools = match &offered.tools {
            Ok(tools) => tools.names().map(str::to_owned).collect(),
            Err(reason) => {
                return Err(ToolError::failed(format!(
                    "the skill `{name}` cannot be loaded here: {reason}"
                )));
            }
        };
        let newly_loaded = self
            .shared
            .loaded
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(name.to_owned());
        let message = if newly_loaded {
            format!(
                "The skill `{name}` is loaded: its instructions are now part of your \
                 instructions; follow them."
            )
        } else {
            format!("The skill `{name}` was loaded already; nothing changed.")
        };
        Ok(ToolResult::text(LoadSkillOutput {
            skill: name.to_owned(),
            newly_loaded,
            tools,
            message,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use messages::ToolCall;
    use tools::ToolsConfig;

    fn skills() -> SkillSet {
        let dir = tempfile::tempdir().unwrap();
        for (name, tools) in [("arithmetic", "[calculator]"), ("files", "[read_file]")] {
            std::fs::create_dir(dir.path().join(name)).unwrap();
            std::fs::write(
                dir.path().join(name).join("SKILL.md"),
                format!(
                    "---\nname: {name}\ndescription: The {name} skill.\ntools: {tools}\n---\n\
                     Follow the {name} rules.\n"
                ),
            )
            .unwrap();
        }
        SkillSet::load(&[dir.path().to_path_buf()]).unwrap()
    }

    fn run(history: &[Message]) -> SkillRun {
        let builtin = BuiltinTools::new(&ToolsConfig::default()).unwrap();
        let names = ["arithmetic".to_owned(), "files".to_owned()];
        SkillRun::new(
            &skills(),
            &names,
            &[],
            &builtin,
            &McpTools::default(),
            history,
        )
        .unwrap()
    }

    async fn load(run: &SkillRun, name: &str) -> Result<serde_json::Value, ToolError> {
        let tool = run.load_tool().unwrap();
        let arguments = serde_json::json!({ "name": name }).to_string();
        tool.call_json_text(&ExecutionContext::new(), &arguments)
            .await
            .map(|result| result.text)
    }

    #[tokio::test]
    async fn loading_binds_once_and_unknown_names_list_the_known_ones() {
        let run = run(&[]);
        let tool = run.load_tool().unwrap();
        assert!(
            tool.description()
                .contains("- arithmetic: The arithmetic skill.")
        );
        let first = load(&run, "arithmetic").await.unwrap();
        assert_eq!(first["newly_loaded"], true);
        assert_eq!(first["tools"], serde_json::json!(["calculator"]));
        let again = load(&run, "arithmetic").await.unwrap();
        assert_eq!(again["newly_loaded"], false);
        assert_eq!(run.loaded(), ["arithmetic"]);
        let unknown = load(&run, "poetry").await.unwrap_err().to_string();
        assert!(unknown.contains("arithmetic, files"), "{unknown}");
        // A skill whose tools this run cannot have says why and stays unloaded.
        let files = load(&run, "files").await.unwrap_err().to_string();
        assert!(files.contains("read_file"), "{files}");
        assert_eq!(run.loaded(), ["arithmetic"]);
    }

    #[test]
    fn a_continued_conversation_keeps_the_skills_it_loaded() {
        let call = ToolCall::new("c1", LOAD_SKILL, r#"{"name": "arithmetic"}"#);
        let unanswered = ToolCall::new("c2", LOAD_SKILL, r#"{"name": "files"}"#);
        let history = vec![
            Message::human("sum"),
            Message::ai_tool_calls(None, vec![call, unanswered]),
            Message::tool_response("c1", LOAD_SKILL, "{}"),
        ];
        assert_eq!(run(&history).loaded(), ["arithmetic"]);
    }

    #[tokio::test]
    async fn a_skill_brings_every_tool_of_its_mcp_servers() {
        let dir = tempfile::tempdir().unwrap();
        for (name, servers) in [("maths", "[calc]"), ("remote", "[calc, ghost]")] {
            std::fs::create_dir(dir.path().join(name)).unwrap();
            std::fs::write(
                dir.path().join(name).join("SKILL.md"),
                format!("---\nname: {name}\ndescription: d\nmcp_servers: {servers}\n---\n"),
            )
            .unwrap();
        }
        let skills = SkillSet::load(&[dir.path().to_path_buf()]).unwrap();
        let builtin = BuiltinTools::new(&ToolsConfig::default()).unwrap();
        // A stand-in for a connected server: any tools under its name.
        let calculator = builtin.select(["calculator"]).unwrap();
        let mut mcp = McpTools::default();
        mcp.insert("calc", calculator.iter().cloned().collect())
            .unwrap();
        let names = ["maths".to_owned(), "remote".to_owned()];
        let run = SkillRun::new(&skills, &names, &[], &builtin, &mcp, &[]).unwrap();

        let maths = load(&run, "maths").await.unwrap();
        assert_eq!(maths["tools"], serde_json::json!(["calculator"]));
        let remote = load(&run, "remote").await.unwrap_err().to_string();
        assert!(
            remote.contains("`ghost`") && remote.contains("the configured ones are calc"),
            "{remote}"
        );
        assert_eq!(run.loaded(), ["maths"]);
    }
}

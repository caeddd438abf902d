//! [`ApprovalConfig`]: the operator's tool-approval policy, as written in the service
//! configuration, checked once into an [`ApprovalPolicy`].
//!
//! ```
//! use service::approval::ApprovalConfig;
//! use service::skills::SkillSet;
//!
//! let config: ApprovalConfig = serde_saphyr::from_str(
//!     r#"
//! default: never
//! tools:
//!   http_get: {hosts_outside: [docs.rs, "*.rust-lang.org"]}
//!   "mcp:files": always
//!   "mcp:files/read_file": never
//!   "mcp:*/write*": always
//! "#,
//! )?;
//! let policy = config.policy(&SkillSet::default(), &["files"])?;
//! let call = |name: &str, arguments: &str| messages::ToolCall::new("c1", name, arguments);
//! assert!(policy.requires(&call("files__delete", "{}")));
//! assert!(!policy.requires(&call("files__read_file", "{}")));
//! assert!(policy.requires(&call("http_get", r#"{"url": "https://example.com/"}"#)));
//! assert!(!policy.requires(&call("http_get", r#"{"url": "https://docs.rs/"}"#)));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::BTreeMap;
use std::time::Duration;

use agent_loop::approval::{ApprovalPolicy, ArgumentRule, Requirement, ToolSelector};
use serde::Deserialize;
use serde_json::Value;

use crate::skills::SkillSet;

/// The operator's approval policy: `approval:` in the service configuration.
///
/// - `default`: what calls no entry names need, `never` (the default) or `always`.
/// - `tools`: entries from a tool selector to what its calls need. Selectors: a tool's name
///   (`http_get`), `mcp:SERVER` (every tool of a configured MCP server), `mcp:SERVER/TOOL`
///   (one of them), a pattern over model-facing names (`mcp:*/write*`, `*_delete`), or
///   `skill:NAME` (the built-in tools and MCP servers a skill brings). Values: `always`,
///   `never`, or `{hosts_outside: [HOST, …]}` (approval when the call's `url` argument —
///   or the one `argument` names — points outside the hosts; `*.example.com` for
///   subdomains).
///
/// - `timeout`: how long a paused run waits for decisions (default `24h`; seconds or with
///   units, `30m`, `7d`); its calls nobody decided about by then are answered as rejected
///   ([`TIMED_OUT_REASON`](crate::runs::TIMED_OUT_REASON)) and the run goes on.
///
/// The most specific entry decides a call (a named tool, then a pattern, then a server).
/// Requests can add approvals to this policy, never remove one.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ApprovalConfig {
    /// What calls no entry names need (`never` when absent).
    pub default: Option<Value>,
    /// What each selected tool's calls need.
    pub tools: BTreeMap<String, Value>,
    /// How long a paused run waits for decisions before its pending calls are rejected.
    #[serde(deserialize_with = "crate::runs::config::duration")]
    pub timeout: Duration,
}

/// The default [`ApprovalConfig::timeout`]: a day.
pub const DEFAULT_APPROVAL_TIMEOUT: Duration = Duration::from_secs(24 * 3600);

impl Default for ApprovalConfig {
    fn default() -> Self {
        ApprovalConfig {
            default: None,
            tools: BTreeMap::new(),
            timeout: DEFAULT_APPROVAL_TIMEOUT,
        }
    }
}

/// Why the approval configuration is not valid: every bad entry, each named.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`approval` has {} problem(s): {}", problems.len(), problems.join("; "))]
pub struct ApprovalConfigError {
    /// One line per bad entry, naming it and saying what is allowed.
    pub problems: Vec<String>,
}

impl ApprovalConfig {
    /// The policy this configuration describes; `skills` and `mcp_servers` (the configured
    /// ones' names) are what `skill:` and `mcp:` entries may name.
    ///
    /// # Errors
    ///
    /// [`ApprovalConfigError`] naming every bad entry: an unreadable selector, an unknown
    /// skill or MCP server, a value that is not `always`, `never` or `{hosts_outside: […]}`.
    pub fn policy(
        &self,
        skills: &SkillSet,
        mcp_servers: &[&str],
    ) -> Result<ApprovalPolicy, ApprovalConfigError> {
        let mut problems = Vec::new();
        if self.timeout < Duration::from_secs(1) {
            problems.push(format!(
                "`approval.timeout` is {:?}; give a person at least 1s to decide (default 24h)",
                self.timeout
            ));
        }
        let mut policy = ApprovalPolicy::new();
        if let Some(default) = &self.default {
            match requirement(default) {
                Ok(Requirement::When(_)) => problems.push(
                    "`approval.default` must be `always` or `never`; an argument rule needs a \
                     tool, under `approval.tools`"
                        .to_owned(),
                ),
                Ok(requirement) => policy = policy.default_requirement(requirement),
                Err(problem) => problems.push(format!("`approval.default`: {problem}")),
            }
        }
        for (text, value) in &self.tools {
            let requirement = requirement(value)
                .map_err(|problem| problems.push(format!("`approval.tools.{text}`: {problem}")));
            let selectors = selectors(text, skills, mcp_servers)
                .map_err(|problem| problems.push(format!("`approval.tools.{text}`: {problem}")));
            if let (Ok(requirement), Ok(selectors)) = (requirement, selectors) {
                for selector in selectors {
                    policy = policy.require(selector, requirement.clone());
                }
            }
        }
        if problems.is_empty() {
            Ok(policy)
        } else {
            Err(ApprovalConfigError { problems })
        }
    }
}

/// The selectors an entry's key stands for.
fn selectors(
    text: &str,
    skills: &SkillSet,
    mcp_servers: &[&str],
) -> Result<Vec<ToolSelector>, String> {
    if let Some(name) = text.strip_prefix("skill:") {
        let skill = skills.get(name).ok_or_else(|| {
            let known: Vec<&str> = skills.iter().map(|skill| skill.name.as_str()).collect();
            format!(
                "no skill is named `{name}` (the skills in `skills_dirs`: {})",
                list(&known)
            )
        })?;
        let tools = skill.tools.iter().cloned().map(ToolSelector::Tool);
        let servers = skill
            .mcp_servers
            .iter()
            .cloned()
            .map(ToolSelector::McpServer);
        return Ok(tools.chain(servers).collect());
    }
    let selector: ToolSelector = text.parse().map_err(|error| format!("{error}"))?;
    let server = match &selector {
        ToolSelector::McpServer(server) | ToolSelector::McpTool { server, .. } => Some(server),
        ToolSelector::Tool(_) | ToolSelector::Pattern(_) => None,
    };
    if let Some(server) = server
        && !mcp_servers.contains(&server.as_str())
    {
        return Err(format!(
            "no MCP server is named `{server}` (the servers in `mcp_servers`: {})",
            list(mcp_servers)
        ));
    }
    Ok(vec![selector])
}

fn list(names: &[&str]) -> String {
    if names.is_empty() {
        "none".to_owned()
    } else {
        names.join(", ")
    }
}

/// An entry's value, read once: `always`, `never` or `{hosts_outside: […], argument: …}`.
fn requirement(value: &Value) -> Result<Requirement, String> {
    const ALLOWED: &str = "write `always`, `never` or `{hosts_outside: [HOST, …]}`";
    match value {
        Value::String(word) if word == "always" => Ok(Requirement::Always),
        Value::String(word) if word == "never" => Ok(Requirement::Never),
        Value::Object(map) => {
            if let Some(key) = map
                .keys()
                .find(|key| !matches!(key.as_str(), "hosts_outside" | "argument"))
            {
                return Err(format!("unknown key `{key}`; {ALLOWED}"));
            }
            let hosts = match map.get("hosts_outside") {
                Some(Value::Array(hosts)) => hosts
                    .iter()
                    .map(|host| match host {
                        Value::String(host) if !host.trim().is_empty() => Ok(host.clone()),
                        other => Err(format!("`hosts_outside` holds {other}, not a host name")),
                    })
                    .collect::<Result<Vec<String>, String>>()?,
                Some(other) => return Err(format!("`hosts_outside` is {other}, not a list")),
                None => return Err(format!("no `hosts_outside`; {ALLOWED}")),
            };
            let argument = match map.get("argument") {
                None => "url".to_owned(),
                Some(Value::String(argument)) if !argument.is_empty() => argument.clone(),
                Some(other) => return Err(format!("`argument` is {other}, not a name")),
            };
            Ok(Requirement::When(ArgumentRule::HostOutside {
                argument,
                hosts,
            }))
        }
        other => Err(format!("{other} is not a requirement; {ALLOWED}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_time_to_decide_reads_with_units_defaults_to_a_day_and_is_checked() {
        let config: ApprovalConfig = serde_saphyr::from_str("timeout: 30m\n").unwrap();
        assert_eq!(config.timeout, Duration::from_secs(1800));
        assert_eq!(
            ApprovalConfig::default().timeout,
            Duration::from_secs(86_400)
        );
        let config: ApprovalConfig = serde_saphyr::from_str("timeout: 0s\n").unwrap();
        let error = config.policy(&SkillSet::default(), &[]).unwrap_err();
        assert!(error.to_string().contains("`approval.timeout`"), "{error}");
        let error = serde_saphyr::from_str::<ApprovalConfig>("timeout: later\n").unwrap_err();
        assert!(
            error.to_string().contains("`later` is not a duration"),
            "{error}"
        );
    }

    #[test]
    fn every_bad_entry_is_named_at_once() {
        let config: ApprovalConfig = serde_saphyr::from_str(
            r#"
default: sometimes
tools:
  "mcp:": always
  "mcp:mail": always
  "skill:nope": always
  http_get: {hosts: [docs.rs]}
  calculator: maybe
  read_file: never
"#,
        )
        .unwrap();
        let error = config.policy(&SkillSet::default(), &["files"]).unwrap_err();
        let text = error.to_string();
        assert_eq!(error.problems.len(), 6, "{text}");
        for needle in [
            "`approval.default`",
            "`approval.tools.mcp:`",
            "no MCP server is named `mail` (the servers in `mcp_servers`: files)",
            "no skill is named `nope`",
            "`approval.tools.http_get`: unknown key `hosts`",
            "`approval.tools.calculator`: \"maybe\" is not a requirement",
        ] {
            assert!(text.contains(needle), "{needle} not in {text}");
        }
    }

    #[test]
    fn a_skill_entry_covers_its_tools_and_servers() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("deploy")).unwrap();
        std::fs::write(
            dir.path().join("deploy/SKILL.md"),
            "---\nname: deploy\ndescription: Ships it.\ntools: [http_get]\nmcp_servers: [ci]\n---\nShip.\n",
        )
        .unwrap();
        let skills = SkillSet::load(&[dir.path().to_path_buf()]).unwrap();
        let config: ApprovalConfig =
            serde_json::from_str(r#"{"tools": {"skill:deploy": "always"}}"#).unwrap();
        let policy = config.policy(&skills, &["ci"]).unwrap();
        let call = |name: &str| messages::ToolCall::new("c", name, "{}");
        assert!(policy.requires(&call("http_get")));
        assert!(policy.requires(&call("ci__run_pipeline")));
        assert!(!policy.requires(&call("calculator")));
    }

    #[test]
    fn the_service_configuration_holds_it() {
        let config: crate::ServiceConfig = serde_saphyr::from_str(
            "approval:\n  default: always\n  tools:\n    calculator: never\n",
        )
        .unwrap();
        let policy = config.approval.policy(&SkillSet::default(), &[]).unwrap();
        assert!(!policy.requires(&messages::ToolCall::new("c", "calculator", "{}")));
        assert!(policy.requires(&messages::ToolCall::new("c", "http_get", "{}")));
    }

    #[test]
    fn nothing_configured_asks_for_nothing() {
        let policy = ApprovalConfig::default()
            .policy(&SkillSet::default(), &[])
            .unwrap();
        assert!(policy.is_never());
    }
}

//! OpenAI's remote MCP tool on the Responses API: a `tools` entry `{"type": "mcp",
//! "server_label": NAME, …}` checked against the MCP servers the operator configured.
//!
//! Operator policy for what a client may say about a server:
//! - `server_label` must name a configured server (its `name` in `mcp_servers`).
//! - `server_url` may be left out; when given it must be the URL the operator configured for
//!   that server, so a client can never point Skein at a host of its choosing.
//! - `headers` and `authorization` are refused: the credentials an operator's server gets come
//!   from the operator's configuration (`bearer_token_env`), never from a client, so a caller's
//!   secret is never relayed to a server another caller also uses.
//! - `connector_id` (OpenAI's hosted connectors) is refused: Skein has none.

use agent_loop::approval::{ApprovalPolicy, Requirement, ToolSelector};
use serde::{Deserialize, Deserializer};
use serde_json::Value;
use utoipa::ToSchema;

use super::schema::ResponseTool;
use crate::api::openai::error::OpenAiError;

/// One entry of `tools`: a function the client runs, or an MCP server Skein runs.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum ResponseToolEntry {
    /// A function (`"type": "function"`); its calls come back as `function_call` items.
    Function(ResponseTool),
    /// An MCP server the operator configured (`"type": "mcp"`).
    Mcp(McpTool),
}

/// `{"type": "mcp", …}`: a remote MCP server, as OpenAI's Responses API declares one.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct McpTool {
    /// Always `mcp`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The server: the `name` of one of the operator's `mcp_servers`.
    pub server_label: String,
    /// Optional; when given, the URL the operator configured for that server.
    #[serde(default)]
    pub server_url: Option<String>,
    /// What the server does (repeated in the answer; the model reads the tools' own text).
    #[serde(default)]
    pub server_description: Option<String>,
    /// The server's tools the model may call: a list of names, or `{"tool_names": […]}`.
    /// All of them when absent.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub allowed_tools: Option<Value>,
    /// Which calls wait for the client's approval: `always` (OpenAI's default), `never`, or
    /// `{"always": {"tool_names": […]}, "never": {"tool_names": […]}}`. The operator's
    /// approval policy still applies: a request may ask for more approvals, never fewer.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub require_approval: Option<Value>,
    /// Refused: the operator configures a server's credentials.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub headers: Option<Value>,
    /// Refused: the operator configures a server's credentials.
    #[serde(default)]
    pub authorization: Option<String>,
    /// Refused: Skein has no hosted connectors.
    #[serde(default)]
    pub connector_id: Option<String>,
}

/// Reads `tools`, each entry by its `type`, so that an error names the entry's own fields
/// (an untagged read would only say that no kind of tool matched).
pub(crate) fn tool_entries<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Vec<ResponseToolEntry>>, D::Error> {
    use serde::de::Error;
    let Some(values) = Option::<Vec<Value>>::deserialize(deserializer)? else {
        return Ok(None);
    };
    values
        .into_iter()
        .enumerate()
        .map(|(index, value)| {
            let read = if value.get("type").and_then(Value::as_str) == Some("mcp") {
                serde_json::from_value(value).map(ResponseToolEntry::Mcp)
            } else {
                serde_json::from_value(value).map(ResponseToolEntry::Function)
            };
            read.map_err(|error| D::Error::custom(format!("`tools[{index}]`: {error}")))
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// An MCP server the operator configured: its name, and its URL when it is reached over HTTP.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ConfiguredServer<'a> {
    /// The server's name (what `server_label` names).
    pub(crate) name: &'a str,
    /// Its URL (`None` for a server started as a child process).
    pub(crate) url: Option<&'a str>,
}

/// Which calls of a declared server wait for the client's approval.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum RequireApproval {
    /// Every call.
    Always,
    /// No call (the operator's policy may still ask).
    Never,
    /// The named tools: `never` ones run, every other one waits (OpenAI's default).
    Named {
        /// Tools that always wait.
        always: Vec<String>,
        /// Tools that run without asking.
        never: Vec<String>,
    },
}

/// A checked `mcp` tool: the server it names, the tools it allows, what needs approval.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, Deserialize)]
pub(crate) struct McpDeclaration {
    /// The configured server's name.
    pub(crate) server_label: String,
    /// The tools the model may call (`None`: all of them).
    pub(crate) allowed_tools: Option<Vec<String>>,
    /// Which calls wait for approval.
    pub(crate) require_approval: RequireApproval,
}

/// The checked declarations of `tools` (each with its index in `tools`), or one error naming
/// every problem of every entry, its `param` the first offending field.
pub(crate) fn declarations(
    tools: Vec<(usize, McpTool)>,
    servers: &[ConfiguredServer<'_>],
) -> Result<Vec<(usize, McpDeclaration)>, OpenAiError> {
    let mut problems: Vec<(String, String)> = Vec::new();
    let mut checked = Vec::with_capacity(tools.len());
    let known = || {
        let names: Vec<&str> = servers.iter().map(|server| server.name).collect();
        if names.is_empty() {
            "the operator configured none".to_owned()
        } else {
            format!("the configured ones: {}", names.join(", "))
        }
    };
    for (index, tool) in tools {
        let at = |field: &str| format!("tools[{index}].{field}");
        let server = servers
            .iter()
            .find(|server| server.name == tool.server_label);
        match server {
            None => problems.push((
                at("server_label"),
                format!(
                    "no MCP server is named `{}` ({})",
                    tool.server_label,
                    known()
                ),
            )),
            Some(server) => {
                if let Some(url) = &tool.server_url
                    && server.url != Some(url.as_str())
                {
                    problems.push((
                        at("server_url"),
                        format!(
                            "`{url}` is not the URL the operator configured for `{}`; leave \
                             `server_url` out",
                            server.name
                        ),
                    ));
                }
            }
        }
        for (field, given) in [
            ("headers", tool.headers.is_some()),
            ("authorization", tool.authorization.is_some()),
        ] {
            if given {
                problems.push((
                    at(field),
                    format!(
                        "`{field}` is not accepted: the operator configures the credentials \
                         of an MCP server"
                    ),
                ));
            }
        }
        if tool.connector_id.is_some() {
            problems.push((
                at("connector_id"),
                "`connector_id` is not accepted: Skein runs only the operator's MCP servers"
                    .to_owned(),
            ));
        }
        let allowed_tools = tool
            .allowed_tools
            .map(allowed)
            .transpose()
            .map_err(|problem| problems.push((at("allowed_tools"), problem)));
        let require_approval = tool
            .require_approval
            .map_or(Ok(RequireApproval::Always), approval)
            .map_err(|problem| problems.push((at("require_approval"), problem)));
        if let (Ok(allowed_tools), Ok(require_approval)) = (allowed_tools, require_approval) {
            checked.push((
                index,
                McpDeclaration {
                    server_label: tool.server_label,
                    allowed_tools,
                    require_approval,
                },
            ));
        }
    }
    match problems.first() {
        None => Ok(checked),
        Some((param, _)) => {
            let message = problems
                .iter()
                .map(|(field, problem)| format!("`{field}`: {problem}"))
                .collect::<Vec<_>>()
                .join("; ");
            Err(OpenAiError::invalid(param.clone(), message))
        }
    }
}

/// `allowed_tools`: a list of names, or `{"tool_names": […]}`.
fn allowed(value: Value) -> Result<Vec<String>, String> {
    let names = match value {
        Value::Object(mut filter) => {
            if let Some(other) = filter.keys().find(|key| *key != "tool_names") {
                return Err(format!(
                    "`{other}` is not accepted; give `tool_names` (a list of the server's tool \
                     names)"
                ));
            }
            filter
                .remove("tool_names")
                .unwrap_or(Value::Array(Vec::new()))
        }
        names => names,
    };
    names_of(names).ok_or_else(|| {
        "must be a list of the server's tool names, or `{\"tool_names\": […]}`".to_owned()
    })
}

/// `require_approval`: `always`, `never`, or `{"always": {…}, "never": {…}}`.
fn approval(value: Value) -> Result<RequireApproval, String> {
    const EXPECTED: &str = "must be `always`, `never`, or `{\"always\": {\"tool_names\": […]}, \
                            \"never\": {\"tool_names\": […]}}`";
    match value {
        Value::String(text) if text == "always" => Ok(RequireApproval::Always),
        Value::String(text) if text == "never" => Ok(RequireApproval::Never),
        Value::Object(mut filters) => {
            if let Some(other) = filters
                .keys()
                .find(|key| !matches!(key.as_str(), "always" | "never"))
            {
                return Err(format!("`{other}` is not accepted; {EXPECTED}"));
            }
            let mut names = |key: &str| match filters.remove(key) {
                None => Ok(Vec::new()),
                Some(Value::Object(mut filter)) if filter.keys().all(|key| key == "tool_names") => {
                    names_of(
                        filter
                            .remove("tool_names")
                            .unwrap_or(Value::Array(Vec::new())),
                    )
                    .ok_or_else(|| format!("`{key}.tool_names` must be a list of tool names"))
                }
                Some(_) => Err(format!("`{key}` must be `{{\"tool_names\": […]}}`")),
            };
            Ok(RequireApproval::Named {
                always: names("always")?,
                never: names("never")?,
            })
        }
        _ => Err(EXPECTED.to_owned()),
    }
}

/// A JSON list of strings.
fn names_of(value: Value) -> Option<Vec<String>> {
    match value {
        Value::Array(items) => items
            .into_iter()
            .map(|item| match item {
                Value::String(name) => Some(name),
                _ => None,
            })
            .collect(),
        _ => None,
    }
}

/// The MCP servers the operator configured, for [`declarations`].
#[cfg(feature = "mcp")]
pub(crate) fn configured(config: &service::ServiceConfig) -> Vec<ConfiguredServer<'_>> {
    config
        .mcp_servers
        .iter()
        .map(|server| ConfiguredServer {
            name: &server.name,
            url: match &server.transport {
                mcp::Transport::Http { url, .. } => Some(url.as_str()),
                _ => None,
            },
        })
        .collect()
}

/// Without the `mcp` feature no MCP server is configured.
#[cfg(not(feature = "mcp"))]
pub(crate) fn configured(_config: &service::ServiceConfig) -> Vec<ConfiguredServer<'_>> {
    Vec::new()
}

/// The approvals `servers` ask for, as a policy to merge into the operator's (which a
/// request can add to, never take from).
pub(crate) fn request_policy(servers: &[McpDeclaration]) -> ApprovalPolicy {
    let mut policy = ApprovalPolicy::new();
    for server in servers {
        let label = &server.server_label;
        let tool = |name: &String| ToolSelector::McpTool {
            server: label.clone(),
            tool: name.clone(),
        };
        match &server.require_approval {
            RequireApproval::Never => {}
            RequireApproval::Always => {
                policy =
                    policy.require(ToolSelector::McpServer(label.clone()), Requirement::Always);
            }
            RequireApproval::Named { always, never } => {
                policy =
                    policy.require(ToolSelector::McpServer(label.clone()), Requirement::Always);
                for name in never {
                    policy = policy.require(tool(name), Requirement::Never);
                }
                for name in always {
                    policy = policy.require(tool(name), Requirement::Always);
                }
            }
        }
    }
    policy
}

pub(crate) mod run;

#[cfg(test)]
mod tests;

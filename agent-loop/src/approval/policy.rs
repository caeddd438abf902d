//! [`ApprovalPolicy`]: which tool calls a person must approve before they run.

use std::fmt;
use std::str::FromStr;

use globset::{Glob, GlobMatcher};
use messages::ToolCall;

/// Between an MCP server's name and its tool's in the name the model sees
/// (`{server}__{tool}`, as the `mcp` crate names them).
pub const MCP_SEPARATOR: &str = "__";

/// Which tools a policy entry is about, by the names the model calls them by.
///
/// Parsed from its text form ([`ToolSelector::from_str`]):
///
/// | text | selects |
/// |---|---|
/// | `http_get` | the tool of that name (a built-in tool, or any tool by its model-facing name) |
/// | `mcp:files` | every tool of the MCP server `files` (`files__…`) |
/// | `mcp:files/write_file` | one tool of that server (`files__write_file`) |
/// | `mcp:*/write*`, `files__*`, `*_delete` | every tool whose model-facing name matches the glob |
///
/// ```
/// use agent_loop::approval::ToolSelector;
///
/// let selector: ToolSelector = "mcp:*/write*".parse()?;
/// assert!(selector.matches("files__write_file"));
/// assert!(!selector.matches("files__read_file"));
/// # Ok::<(), agent_loop::approval::SelectorError>(())
/// ```
#[derive(Clone, Debug)]
pub enum ToolSelector {
    /// One tool, by the name the model calls it by.
    Tool(String),
    /// Every tool of one MCP server.
    McpServer(String),
    /// One tool of one MCP server, by its model-facing name after the server's prefix.
    McpTool {
        /// The server's configured name.
        server: String,
        /// The tool's name.
        tool: String,
    },
    /// Every tool whose model-facing name matches a glob (`*`, `?`, `[abc]`).
    Pattern(Pattern),
}

/// A compiled glob over model-facing tool names, with the text it came from.
#[derive(Clone)]
pub struct Pattern {
    text: String,
    matcher: GlobMatcher,
}

impl Pattern {
    /// The glob, as the model-facing names it matches are written (`files__write*`).
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

impl fmt::Debug for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Pattern").field(&self.text).finish()
    }
}

/// Why a tool selector's text could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SelectorError {
    /// The text is empty.
    #[error("a tool selector is empty; write a tool name, `mcp:SERVER` or `mcp:SERVER/TOOL`")]
    Empty,
    /// `mcp:` without a server name, or with an empty tool name.
    #[error("`{text}` names no MCP server or tool; write `mcp:SERVER` or `mcp:SERVER/TOOL`")]
    IncompleteMcp {
        /// The selector.
        text: String,
    },
    /// An unknown `prefix:`.
    #[error(
        "`{text}` starts with an unknown prefix `{prefix}:`; the prefixes are `mcp:` (and \
         `skill:` in a service configuration)"
    )]
    UnknownPrefix {
        /// The selector.
        text: String,
        /// What came before the `:`.
        prefix: String,
    },
    /// The glob does not compile.
    #[error("`{text}` is not a valid name pattern: {reason}")]
    BadPattern {
        /// The selector.
        text: String,
        /// What the glob parser said.
        reason: String,
    },
}

impl FromStr for ToolSelector {
    type Err = SelectorError;

    fn from_str(text: &str) -> Result<Self, SelectorError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(SelectorError::Empty);
        }
        let Some((prefix, rest)) = text.split_once(':') else {
            return pattern_or(text, || ToolSelector::Tool(text.to_owned()));
        };
        if prefix != "mcp" {
            return Err(SelectorError::UnknownPrefix {
                text: text.to_owned(),
                prefix: prefix.to_owned(),
            });
        }
        let incomplete = || SelectorError::IncompleteMcp {
            text: text.to_owned(),
        };
        match rest.split_once('/') {
            None if rest.is_empty() => Err(incomplete()),
            None if is_glob(rest) => compile(text, &format!("{rest}{MCP_SEPARATOR}*")),
            None => Ok(ToolSelector::McpServer(rest.to_owned())),
            Some((server, tool)) if server.is_empty() || tool.is_empty() => Err(incomplete()),
            Some((server, tool)) => {
                let name = format!("{server}{MCP_SEPARATOR}{tool}");
                pattern_or(&name, || ToolSelector::McpTool {
                    server: server.to_owned(),
                    tool: tool.to_owned(),
                })
                .map_err(|error| match error {
                    SelectorError::BadPattern { reason, .. } => SelectorError::BadPattern {
                        text: text.to_owned(),
                        reason,
                    },
                    other => other,
                })
            }
        }
    }
}

fn is_glob(text: &str) -> bool {
    text.contains(['*', '?', '['])
}

fn pattern_or(
    name: &str,
    exact: impl FnOnce() -> ToolSelector,
) -> Result<ToolSelector, SelectorError> {
    if is_glob(name) {
        compile(name, name)
    } else {
        Ok(exact())
    }
}

fn compile(text: &str, glob: &str) -> Result<ToolSelector, SelectorError> {
    let matcher = Glob::new(glob)
        .map_err(|error| SelectorError::BadPattern {
            text: text.to_owned(),
            reason: error.kind().to_string(),
        })?
        .compile_matcher();
    Ok(ToolSelector::Pattern(Pattern {
        text: glob.to_owned(),
        matcher,
    }))
}

impl ToolSelector {
    /// Whether this selects the tool the model calls `name`.
    pub fn matches(&self, name: &str) -> bool {
        match self {
            ToolSelector::Tool(tool) => tool == name,
            ToolSelector::McpServer(server) => name
                .strip_prefix(server.as_str())
                .is_some_and(|rest| rest.starts_with(MCP_SEPARATOR)),
            ToolSelector::McpTool { server, tool } => name
                .strip_prefix(server.as_str())
                .and_then(|rest| rest.strip_prefix(MCP_SEPARATOR))
                .is_some_and(|rest| rest == tool),
            ToolSelector::Pattern(pattern) => pattern.matcher.is_match(name),
        }
    }

    /// How specific the selector is: a named tool beats a pattern, which beats a whole server.
    fn rank(&self) -> u8 {
        match self {
            ToolSelector::Tool(_) | ToolSelector::McpTool { .. } => 3,
            ToolSelector::Pattern(_) => 2,
            ToolSelector::McpServer(_) => 1,
        }
    }
}

/// Whether calls of a tool need a person's approval.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Requirement {
    /// Every call waits for approval.
    Always,
    /// No call does.
    Never,
    /// A call waits when its arguments meet the rule.
    When(ArgumentRule),
}

/// A rule on a call's arguments (a JSON object), for [`Requirement::When`]. Arguments the rule
/// cannot read (not JSON, the argument missing or not what the rule expects) need approval:
/// what cannot be checked is not trusted.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ArgumentRule {
    /// The URL in `argument` (for `http_get`, `url`) points to a host outside `hosts`. A host
    /// entry matches itself; `*.example.com` matches its subdomains (not `example.com`).
    HostOutside {
        /// The argument holding the URL.
        argument: String,
        /// The hosts calls may reach without approval.
        hosts: Vec<String>,
    },
}

impl ArgumentRule {
    /// [`HostOutside`](ArgumentRule::HostOutside) on the `url` argument (`http_get`'s).
    pub fn url_host_outside<S: Into<String>>(hosts: impl IntoIterator<Item = S>) -> Self {
        ArgumentRule::HostOutside {
            argument: "url".to_owned(),
            hosts: hosts.into_iter().map(Into::into).collect(),
        }
    }

    /// Whether `arguments` (the call's JSON text) meet the rule.
    pub fn holds(&self, arguments: &str) -> bool {
        match self {
            ArgumentRule::HostOutside { argument, hosts } => {
                let host = serde_json::from_str::<serde_json::Value>(arguments)
                    .ok()
                    .and_then(|value| value.get(argument)?.as_str().map(str::to_owned))
                    .and_then(|text| url::Url::parse(&text).ok())
                    .and_then(|url| url.host_str().map(str::to_ascii_lowercase));
                match host {
                    Some(host) => !hosts.iter().any(|allowed| host_matches(allowed, &host)),
                    None => true,
                }
            }
        }
    }
}

fn host_matches(allowed: &str, host: &str) -> bool {
    let allowed = allowed.trim().to_ascii_lowercase();
    match allowed.strip_prefix("*.") {
        Some(domain) => host
            .strip_suffix(domain)
            .is_some_and(|sub| sub.ends_with('.') && sub.len() > 1),
        None => host == allowed,
    }
}

impl Requirement {
    fn requires(&self, call: &ToolCall) -> bool {
        match self {
            Requirement::Always => true,
            Requirement::Never => false,
            Requirement::When(rule) => rule.holds(&call.arguments),
        }
    }
}

/// Which tool calls wait for a person's approval before they run.
///
/// Entries name tools by [`ToolSelector`]; for a call, the most specific matching entry
/// decides (a named tool, then a pattern, then a whole MCP server; among equally specific
/// ones, approval is needed if any asks for it); a call no entry matches follows the
/// default ([`Requirement::Never`] unless [`default_requirement`](Self::default_requirement)
/// says otherwise). A policy [`with_request`](Self::with_request) merged in can only add
/// approvals.
///
/// ```
/// use agent_loop::approval::{ApprovalPolicy, ArgumentRule, Requirement};
/// use messages::ToolCall;
///
/// let policy = ApprovalPolicy::new()
///     .require("mcp:files".parse()?, Requirement::Always)
///     .require("mcp:files/read_file".parse()?, Requirement::Never)
///     .require(
///         "http_get".parse()?,
///         Requirement::When(ArgumentRule::url_host_outside(["docs.rs", "*.rust-lang.org"])),
///     );
/// let call = |name: &str, arguments: &str| ToolCall {
///     id: "c1".into(),
///     name: name.into(),
///     arguments: arguments.into(),
///     ..Default::default()
/// };
/// assert!(policy.requires(&call("files__write_file", "{}")));
/// assert!(!policy.requires(&call("files__read_file", "{}")));
/// assert!(!policy.requires(&call("http_get", r#"{"url": "https://doc.rust-lang.org/std"}"#)));
/// assert!(policy.requires(&call("http_get", r#"{"url": "https://example.com/"}"#)));
/// assert!(!policy.requires(&call("calculator", r#"{"expression": "1+1"}"#)));
/// # Ok::<(), agent_loop::approval::SelectorError>(())
/// ```
#[derive(Clone, Debug)]
pub struct ApprovalPolicy {
    entries: Vec<(ToolSelector, Requirement)>,
    default: Requirement,
    /// Policies merged in: a call waits if any of them asks.
    stricter: Vec<ApprovalPolicy>,
}

impl Default for ApprovalPolicy {
    fn default() -> Self {
        ApprovalPolicy::new()
    }
}

impl ApprovalPolicy {
    /// A policy under which no call waits (until entries are added).
    pub fn new() -> Self {
        ApprovalPolicy {
            entries: Vec::new(),
            default: Requirement::Never,
            stricter: Vec::new(),
        }
    }

    /// A policy under which every call waits: what a front end asks for when it wants to see
    /// every call first.
    pub fn always() -> Self {
        ApprovalPolicy::new().default_requirement(Requirement::Always)
    }

    /// Adds an entry: calls of the tools `selector` names follow `requirement`.
    #[must_use]
    pub fn require(mut self, selector: ToolSelector, requirement: Requirement) -> Self {
        self.entries.push((selector, requirement));
        self
    }

    /// What calls no entry matches follow.
    #[must_use]
    pub fn default_requirement(mut self, requirement: Requirement) -> Self {
        self.default = requirement;
        self
    }

    /// This policy (the operator's) with a request's merged in: a call waits when either asks
    /// for approval, so a request can add approvals and never remove one the operator set.
    #[must_use]
    pub fn with_request(mut self, request: ApprovalPolicy) -> Self {
        self.stricter.push(request);
        self
    }

    /// Whether `call` must be approved before it runs.
    pub fn requires(&self, call: &ToolCall) -> bool {
        self.own_requires(call) || self.stricter.iter().any(|policy| policy.requires(call))
    }

    /// Whether no call can ever wait under this policy.
    pub fn is_never(&self) -> bool {
        self.default == Requirement::Never
            && self
                .entries
                .iter()
                .all(|(_, requirement)| *requirement == Requirement::Never)
            && self.stricter.iter().all(ApprovalPolicy::is_never)
    }

    fn own_requires(&self, call: &ToolCall) -> bool {
        let matching = self
            .entries
            .iter()
            .filter(|(selector, _)| selector.matches(&call.name));
        let Some(rank) = matching.clone().map(|(selector, _)| selector.rank()).max() else {
            return self.default.requires(call);
        };
        matching
            .filter(|(selector, _)| selector.rank() == rank)
            .any(|(_, requirement)| requirement.requires(call))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str, arguments: &str) -> ToolCall {
        ToolCall {
            id: "c".into(),
            name: name.into(),
            arguments: arguments.into(),
            ..Default::default()
        }
    }

    fn selector(text: &str) -> ToolSelector {
        text.parse().unwrap()
    }

    #[test]
    fn selectors_read_every_form() {
        assert!(matches!(selector("http_get"), ToolSelector::Tool(name) if name == "http_get"));
        assert!(matches!(selector("mcp:files"), ToolSelector::McpServer(s) if s == "files"));
        assert!(selector("mcp:files").matches("files__read"));
        assert!(!selector("mcp:files").matches("filesystem__read"));
        assert!(selector("mcp:files/read").matches("files__read"));
        assert!(!selector("mcp:files/read").matches("files__read_all"));
        assert!(selector("mcp:*/write*").matches("fs__write_file"));
        assert!(selector("mcp:f*").matches("fs__anything"));
        assert!(selector("*_delete").matches("fs__file_delete"));
    }

    #[test]
    fn bad_selectors_say_what_is_wrong() {
        assert_eq!(
            "".parse::<ToolSelector>().unwrap_err(),
            SelectorError::Empty
        );
        assert!(matches!(
            "mcp:".parse::<ToolSelector>(),
            Err(SelectorError::IncompleteMcp { .. })
        ));
        assert!(matches!(
            "mcp:files/".parse::<ToolSelector>(),
            Err(SelectorError::IncompleteMcp { .. })
        ));
        assert!(matches!(
            "tool:x".parse::<ToolSelector>(),
            Err(SelectorError::UnknownPrefix { prefix, .. }) if prefix == "tool"
        ));
        let error = "mcp:files/[write".parse::<ToolSelector>().unwrap_err();
        assert!(error.to_string().contains("mcp:files/[write"), "{error}");
    }

    #[test]
    fn the_most_specific_entry_decides() {
        let policy = ApprovalPolicy::new()
            .require(selector("mcp:files"), Requirement::Always)
            .require(selector("mcp:files/read"), Requirement::Never)
            .require(selector("mcp:*/write*"), Requirement::Always);
        assert!(policy.requires(&call("files__list", "{}")));
        assert!(!policy.requires(&call("files__read", "{}")));
        assert!(policy.requires(&call("mail__write_draft", "{}")));
        assert!(!policy.requires(&call("mail__read", "{}")));
    }

    #[test]
    fn host_rules_trust_listed_hosts_only() {
        let rule = ArgumentRule::url_host_outside(["docs.rs", "*.example.org"]);
        assert!(!rule.holds(r#"{"url": "https://docs.rs/serde"}"#));
        assert!(!rule.holds(r#"{"url": "https://api.example.org/x"}"#));
        assert!(rule.holds(r#"{"url": "https://example.org/x"}"#));
        assert!(rule.holds(r#"{"url": "https://docs.rs.evil.com/"}"#));
        assert!(rule.holds(r#"{"url": "https://evildocs.rs/"}"#));
        // What cannot be read is not trusted.
        assert!(rule.holds("not json"));
        assert!(rule.holds(r#"{"link": "https://docs.rs/"}"#));
        assert!(rule.holds(r#"{"url": "docs.rs"}"#));
    }

    #[test]
    fn a_request_adds_approvals_and_never_removes_one() {
        let operator = ApprovalPolicy::new().require(selector("http_get"), Requirement::Always);
        let request = ApprovalPolicy::new()
            .require(selector("http_get"), Requirement::Never)
            .require(selector("calculator"), Requirement::Always);
        let merged = operator.with_request(request);
        assert!(merged.requires(&call("http_get", "{}")));
        assert!(merged.requires(&call("calculator", "{}")));
        assert!(!merged.requires(&call("files__read", "{}")));
        assert!(!merged.is_never());
        assert!(ApprovalPolicy::new().is_never());
    }
}

//! The table of built-in tools ([`BUILTINS`]) and what a configuration makes of it
//! ([`BuiltinTools`]).

use toolchain::{DynTool, Tool, ToolSet};

use crate::{ToolsConfig, ToolsConfigError, calculator, files, http_get, web_search};

/// Every built-in tool a configuration can offer, in the order they are listed. Adding a tool
/// is its module and one line here.
pub const BUILTINS: &[Builtin] = &[
    calculator::BUILTIN,
    files::READ_FILE,
    files::LIST_FILES,
    http_get::BUILTIN,
    web_search::BUILTIN,
];

/// The names of every built-in tool, in the order [`BUILTINS`] lists them.
pub const BUILTIN_TOOL_NAMES: [&str; BUILTINS.len()] = {
    let mut names = [""; BUILTINS.len()];
    let mut i = 0;
    while i < BUILTINS.len() {
        names[i] = BUILTINS[i].name;
        i += 1;
    }
    names
};

/// One built-in tool: its name, how a configuration builds it, and how to turn it on.
#[derive(Clone, Copy, Debug)]
pub struct Builtin {
    /// The name the model calls it by, and requests and tool events name it by.
    pub name: &'static str,
    /// What to configure to turn it on, for a configuration that leaves it off.
    pub enable: &'static str,
    /// The tool as `config` sets it up; `None` when `config` leaves it off.
    pub build: fn(&ToolsConfig) -> Result<Option<Offered>, ToolsConfigError>,
}

/// A built-in tool a configuration turns on, with the secrets it holds.
#[derive(Clone, Debug)]
pub struct Offered {
    /// The tool.
    pub tool: DynTool,
    /// What it must never show (a backend's key); every log line and tool result of a run
    /// goes through a redactor that knows it.
    pub secrets: messages::Redactor,
}

impl Offered {
    /// `tool`, which holds no secret.
    pub fn new<T, I, O>(tool: T) -> Result<Self, ToolsConfigError>
    where
        T: Tool<I, O> + 'static,
        I: serde::de::DeserializeOwned + schemars::JsonSchema + Send + 'static,
        O: serde::Serialize + Send + 'static,
    {
        Ok(Offered {
            tool: DynTool::new(tool)?,
            secrets: messages::Redactor::new(),
        })
    }

    /// This tool, holding the secrets `secrets` knows.
    #[must_use]
    pub fn with_secrets(mut self, secrets: messages::Redactor) -> Self {
        self.secrets = secrets;
        self
    }
}

/// A requested tool that is not available.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ToolSelectError {
    /// No built-in tool has this name.
    #[error("unknown tool `{name}`; the built-in tools are: {}", BUILTIN_TOOL_NAMES.join(", "))]
    Unknown {
        /// The name asked for.
        name: String,
    },
    /// The tool exists but this configuration leaves it off.
    #[error("tool `{name}` is off here: {how}")]
    Disabled {
        /// The tool.
        name: String,
        /// How to turn it on.
        how: &'static str,
    },
}

/// The built-in tools a configuration makes available.
#[derive(Clone, Debug)]
pub struct BuiltinTools {
    available: Vec<DynTool>,
    silent_exit: DynTool,
    /// The secrets the tools hold (the web search key).
    secrets: messages::Redactor,
}

impl BuiltinTools {
    /// Builds the tools `config` makes available.
    pub fn new(config: &ToolsConfig) -> Result<Self, ToolsConfigError> {
        let mut available = Vec::new();
        let mut secrets = messages::Redactor::new();
        for builtin in BUILTINS {
            if let Some(offered) = (builtin.build)(config)? {
                secrets.extend(&offered.secrets);
                available.push(offered.tool);
            }
        }
        Ok(BuiltinTools {
            available,
            silent_exit: DynTool::new(crate::SilentExit)?,
            secrets,
        })
    }

    /// A redactor that knows the secrets the tools hold (the web search key).
    pub fn redactor(&self) -> &messages::Redactor {
        &self.secrets
    }

    /// The names of the available tools.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.available.iter().map(DynTool::name)
    }

    /// The `silent_exit` tool of subscription runs (not selectable by name: a model-facing
    /// run only gets it when the request is a subscription).
    pub fn silent_exit(&self) -> DynTool {
        self.silent_exit.clone()
    }

    /// A tool set holding the named tools, in the order given (duplicates count once).
    pub fn select<'a>(
        &self,
        names: impl IntoIterator<Item = &'a str>,
    ) -> Result<ToolSet, ToolSelectError> {
        let mut set = ToolSet::new();
        for name in names {
            if set.contains(name) {
                continue;
            }
            let tool = self
                .available
                .iter()
                .find(|tool| tool.name() == name)
                .ok_or_else(|| unavailable(name))?;
            // Names are unique here, so adding cannot fail.
            set.add_dyn(tool.clone()).map_err(|_| unavailable(name))?;
        }
        Ok(set)
    }
}

/// Why `name` is not available: a built-in tool this configuration leaves off, or none.
fn unavailable(name: &str) -> ToolSelectError {
    match BUILTINS.iter().find(|builtin| builtin.name == name) {
        Some(builtin) => ToolSelectError::Disabled {
            name: name.to_owned(),
            how: builtin.enable,
        },
        None => ToolSelectError::Unknown {
            name: name.to_owned(),
        },
    }
}

#[cfg(test)]
mod tests;

//! The built-in tools the CLI and the server offer, safe by default.
//!
//! | name | what it does | available |
//! |---|---|---|
//! | `calculator` | evaluates arithmetic ([`Calculator`]) | always |
//! | `read_file`, `list_files` | read inside one directory ([`FileRoot`]) | when a root is configured |
//! | `http_get` | fetches allow-listed hosts ([`HttpGetPolicy`]) | when a policy is configured |
//! | `web_search` | searches the web through SearxNG, Brave Search or Tavily ([`WebSearchConfig`]) | when a backend is configured |
//!
//! [`BuiltinTools`] builds the available ones from a [`ToolsConfig`]; a request then picks
//! tools by name with [`BuiltinTools::select`], and asking for one that is not available is an
//! error that says how to make it available. The tools are ordinary `toolchain` tools, so an
//! embedder can also add them to its own `ToolSet`.

mod calculator;
mod expr;
mod files;
mod http;
mod http_get;
mod silent_exit;
mod web_search;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use toolchain::{DynTool, ToolSet};

pub use calculator::{Calculator, CalculatorInput, CalculatorOutput};
pub use files::{
    DEFAULT_MAX_FILE_BYTES, DEFAULT_MAX_LIST_ENTRIES, FileEntry, FileRoot, FileRootError,
    ListFiles, ListFilesInput, ListFilesOutput, ReadFile, ReadFileInput, ReadFileOutput,
};
pub use http_get::{HttpGet, HttpGetInput, HttpGetOutput, HttpGetPolicy, HttpGetPolicyError};
pub use silent_exit::{SilentExit, SilentExitInput};
pub use web_search::{
    BRAVE_KEY_ENV, BRAVE_URL, DEFAULT_MAX_RESULTS, MAX_QUERY_CHARS, MAX_RESULTS, TAVILY_KEY_ENV,
    TAVILY_URL, WEB_SEARCH, WebSearch, WebSearchConfig, WebSearchConfigError, WebSearchInput,
    WebSearchOutput, WebSearchResult, WebSearchSource,
};

/// The names of every built-in tool, in the order they are listed.
pub const BUILTIN_TOOL_NAMES: [&str; 5] = [
    "calculator",
    "read_file",
    "list_files",
    "http_get",
    WEB_SEARCH,
];

/// Which built-in tools exist and their limits. The default offers only `calculator`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolsConfig {
    /// The directory `read_file` and `list_files` are confined to; without it they are off.
    #[serde(default)]
    pub files_root: Option<PathBuf>,
    /// Largest file `read_file` returns, in bytes (default 256 KiB).
    #[serde(default)]
    pub max_file_bytes: Option<u64>,
    /// Most entries `list_files` returns (default 1000).
    #[serde(default)]
    pub max_list_entries: Option<usize>,
    /// Where `http_get` may go; without it `http_get` is off.
    #[serde(default)]
    pub http_get: Option<HttpGetPolicy>,
    /// The search backend of `web_search`; without it `web_search` is off.
    #[serde(default)]
    pub web_search: Option<WebSearchConfig>,
}

/// A tool configuration that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ToolsConfigError {
    /// The file root is unusable.
    #[error(transparent)]
    FileRoot(#[from] FileRootError),
    /// The `http_get` policy is unusable.
    #[error(transparent)]
    HttpGet(#[from] HttpGetPolicyError),
    /// The `web_search` backend is unusable.
    #[error(transparent)]
    WebSearch(#[from] WebSearchConfigError),
    /// A tool could not be registered (a bug in a built-in tool's schema).
    #[error("built-in tool cannot be registered: {0}")]
    Register(#[from] toolchain::ToolError),
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
        let mut available = vec![DynTool::new(Calculator)?];
        if let Some(dir) = &config.files_root {
            let root = FileRoot::with_limits(
                dir,
                config.max_file_bytes.unwrap_or(DEFAULT_MAX_FILE_BYTES),
                config.max_list_entries.unwrap_or(DEFAULT_MAX_LIST_ENTRIES),
            )?;
            available.push(DynTool::new(ReadFile::new(root.clone()))?);
            available.push(DynTool::new(ListFiles::new(root))?);
        }
        if let Some(policy) = &config.http_get {
            available.push(DynTool::new(HttpGet::new(policy)?)?);
        }
        let mut secrets = messages::Redactor::new();
        if let Some(search) = &config.web_search {
            let search = WebSearch::new(search)?;
            secrets.extend(&search.redactor());
            available.push(DynTool::new(search)?);
        }
        Ok(BuiltinTools {
            available,
            silent_exit: DynTool::new(SilentExit)?,
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

fn unavailable(name: &str) -> ToolSelectError {
    let how = match name {
        "read_file" | "list_files" => {
            "configure a root directory for the file tools (`tools.files_root`, or `skein --root DIR`)"
        }
        "http_get" => {
            "configure an allow-list of hosts (`tools.http_get.allow`, or `skein --allow-host HOST`)"
        }
        WEB_SEARCH => {
            "configure a search backend (`tools.web_search` with `backend: searxng` and its `url`, or `backend: brave` / `tavily` with the key in an environment variable)"
        }
        _ => {
            return ToolSelectError::Unknown {
                name: name.to_owned(),
            };
        }
    };
    ToolSelectError::Disabled {
        name: name.to_owned(),
        how,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_calculator_by_default() {
        let tools = BuiltinTools::new(&ToolsConfig::default()).unwrap();
        assert_eq!(tools.names().collect::<Vec<_>>(), ["calculator"]);
        let set = tools.select(["calculator", "calculator"]).unwrap();
        assert_eq!(set.names().collect::<Vec<_>>(), ["calculator"]);
        assert!(matches!(
            tools.select(["read_file"]),
            Err(ToolSelectError::Disabled { .. })
        ));
        assert!(matches!(
            tools.select(["http_get"]),
            Err(ToolSelectError::Disabled { .. })
        ));
        let err = tools.select(["web_search"]).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("tool `web_search` is off here: configure a search backend"),
            "{err}"
        );
        let err = tools.select(["shell"]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown tool `shell`; the built-in tools are: calculator, read_file, list_files, http_get, web_search"
        );
    }

    /// Every built-in tool, the file tools confined to `root`.
    fn every_tool(root: &std::path::Path) -> BuiltinTools {
        BuiltinTools::new(&ToolsConfig {
            files_root: Some(root.to_path_buf()),
            http_get: Some(HttpGetPolicy::allow(["example.com"])),
            web_search: Some(WebSearchConfig::searxng("http://127.0.0.1:8888")),
            ..Default::default()
        })
        .unwrap()
    }

    /// What a model reads about a tool is written for models: no rustdoc link syntax, no
    /// Rust type names standing in for a description.
    #[test]
    fn tool_descriptions_and_schemas_are_written_for_models() {
        let dir = tempfile::tempdir().unwrap();
        let tools = every_tool(dir.path());
        let mut set = tools.select(BUILTIN_TOOL_NAMES.iter().copied()).unwrap();
        set.add_dyn(tools.silent_exit()).unwrap();
        let specs = set.specs();
        assert_eq!(specs.len(), BUILTIN_TOOL_NAMES.len() + 1);
        for spec in specs {
            let text = format!("{} {}", spec.description, spec.parameters);
            for markup in ["[`", "`]", "](", "Input of", "Output of", "::"] {
                assert!(
                    !text.contains(markup),
                    "{}: {markup:?} in {text}",
                    spec.name
                );
            }
            assert!(
                !spec.description.is_empty(),
                "{} has no description",
                spec.name
            );
        }
    }

    #[test]
    fn configured_tools_are_available() {
        let dir = tempfile::tempdir().unwrap();
        let tools = every_tool(dir.path());
        assert_eq!(tools.names().collect::<Vec<_>>(), BUILTIN_TOOL_NAMES);
        let set = tools.select(["list_files", "calculator"]).unwrap();
        assert_eq!(
            set.names().collect::<Vec<_>>(),
            ["list_files", "calculator"]
        );
    }
}

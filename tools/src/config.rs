//! [`ToolsConfig`]: which built-in tools a configuration turns on, and their limits.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::builtin::BUILTINS;
use crate::{
    FileRootError, HttpGetPolicy, HttpGetPolicyError, WebSearchConfig, WebSearchConfigError,
};

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

impl ToolsConfig {
    /// A redactor that knows every secret the tools of this configuration would hold (the web
    /// search key, read from the environment); a tool that cannot be built holds none.
    pub fn redactor(&self) -> messages::Redactor {
        let mut redactor = messages::Redactor::new();
        for builtin in BUILTINS {
            if let Ok(Some(offered)) = (builtin.build)(self) {
                redactor.extend(&offered.secrets);
            }
        }
        redactor
    }
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

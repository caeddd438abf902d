//! Skein's built-in tools: the ones that hold no state of ours (a store-backed tool lives with
//! its store, as `knowledge_base_search` does in `knowledge-base`; remote tools come from MCP
//! servers through `mcp`). Each is an ordinary `toolchain` tool, safe by default.
//!
//! ```
//! use tools::{BuiltinTools, ToolsConfig};
//! use toolchain::ExecutionContext;
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! // The default configuration offers the calculator only.
//! let builtin = BuiltinTools::new(&ToolsConfig::default())?;
//! let tools = builtin.select(["calculator"])?;
//! let calculator = tools.get("calculator").expect("selected");
//! let ctx = ExecutionContext::new();
//! let answer = calculator
//!     .call_json_text(&ctx, r#"{"expression": "(2 + 3) * 4"}"#)
//!     .await?;
//! assert_eq!(answer.text["result"], 20.0);
//!
//! // A tool the configuration leaves off says how to turn it on.
//! let off = builtin.select(["http_get"]).unwrap_err();
//! assert!(off.to_string().contains("tools.http_get.allow"), "{off}");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```
//!
//! | name | what it does | available |
//! |---|---|---|
//! | `calculator` | evaluates arithmetic ([`Calculator`]) | always |
//! | `read_file`, `list_files` | read inside one directory ([`FileRoot`]) | when a root is configured |
//! | `http_get` | fetches allow-listed hosts ([`HttpGetPolicy`]) | when a policy is configured |
//! | `web_search` | searches the web through SearxNG, Brave Search or Tavily ([`WebSearchConfig`]) | when a backend is configured |
//! | `silent_exit` | ends a subscription run without a reply ([`SilentExit`]) | offered by the service, never by name |
//!
//! [`BUILTINS`] is the one table of the tools a configuration offers: every list of names,
//! every "how to turn it on" message and [`BuiltinTools`] read it. Adding a tool is its own
//! module (the tool, and a [`Builtin`] entry saying how a [`ToolsConfig`] builds it) and one
//! line in that table; a tool with settings also adds its field to [`ToolsConfig`]. What a
//! tool contributes to an answer's sources is read from its typed output
//! ([`Tool::sources`](toolchain::Tool::sources)), never looked up by its name.
//!
//! A request picks tools by name with [`BuiltinTools::select`]; asking for one that is not
//! available is an error that says how to make it available.

mod builtin;
mod calculator;
mod config;
mod fetch_media;
mod files;
mod http;
mod http_get;
mod silent_exit;
mod web_search;

pub use builtin::{BUILTIN_TOOL_NAMES, BUILTINS, Builtin, BuiltinTools, Offered, ToolSelectError};
pub use calculator::{Calculator, CalculatorInput, CalculatorOutput};
pub use config::{ToolsConfig, ToolsConfigError};
pub use fetch_media::{FetchedMedia, MediaFetchError, MediaFetchPolicy, MediaFetcher};
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

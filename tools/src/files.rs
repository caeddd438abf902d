//! `read_file` and `list_files`, confined to one root directory ([`FileRoot`]).

use std::io::Read as _;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolchain::{ExecutionContext, Tool, ToolError, ToolResult, async_trait};

use crate::{Builtin, Offered, ToolsConfig, ToolsConfigError};

/// Largest file `read_file` returns by default, in bytes (more is cut, and says so).
pub const DEFAULT_MAX_FILE_BYTES: u64 = 256 * 1024;
/// Most entries `list_files` returns by default.
pub const DEFAULT_MAX_LIST_ENTRIES: usize = 1000;

/// What turns the file tools on, for a configuration that leaves them off.
const ENABLE: &str =
    "configure a root directory for the file tools (`tools.files_root`, or `skein --root DIR`)";

/// `read_file` in the table of built-in tools: on when `files_root` is configured.
pub(crate) const READ_FILE: Builtin = Builtin {
    name: "read_file",
    enable: ENABLE,
    build: |config| {
        configured_root(config)?
            .map(ReadFile::new)
            .map(Offered::new)
            .transpose()
    },
};

/// `list_files` in the table of built-in tools: on when `files_root` is configured.
pub(crate) const LIST_FILES: Builtin = Builtin {
    name: "list_files",
    enable: ENABLE,
    build: |config| {
        configured_root(config)?
            .map(ListFiles::new)
            .map(Offered::new)
            .transpose()
    },
};

/// The root `config` confines the file tools to, with its limits; `None` without one.
fn configured_root(config: &ToolsConfig) -> Result<Option<FileRoot>, ToolsConfigError> {
    let Some(dir) = &config.files_root else {
        return Ok(None);
    };
    Ok(Some(FileRoot::with_limits(
        dir,
        config.max_file_bytes.unwrap_or(DEFAULT_MAX_FILE_BYTES),
        config.max_list_entries.unwrap_or(DEFAULT_MAX_LIST_ENTRIES),
    )?))
}

/// A directory the file tools may read, and nothing outside it.
///
/// A path from the model is resolved in three steps: it must be relative and free of `..`
/// (both refused outright, whatever they would lead to); it is joined to the root; and the
/// result, with every symbolic link resolved, must still lie inside the (equally resolved)
/// root. So neither `../secret`, `/etc/passwd` nor a link inside the root pointing outside it
/// reads anything outside. Entries are listed without following links.
///
/// Limitation: a process that can write inside the root and swaps a directory for a link
/// between the check and the read could race it; the root is meant to be a directory whose
/// writers are trusted, the model being the untrusted party.
#[derive(Clone, Debug)]
pub struct FileRoot {
    inner: Arc<Root>,
}

#[derive(Debug)]
struct Root {
    dir: PathBuf,
    max_file_bytes: u64,
    max_list_entries: usize,
}

/// A file root that cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("the file-tool root `{}` cannot be used: {source}; give an existing directory", path.display())]
pub struct FileRootError {
    path: PathBuf,
    #[source]
    source: std::io::Error,
}

impl FileRoot {
    /// Confines the file tools to `dir` (which must exist), with the default limits.
    pub fn new(dir: impl AsRef<Path>) -> Result<Self, FileRootError> {
        Self::with_limits(dir, DEFAULT_MAX_FILE_BYTES, DEFAULT_MAX_LIST_ENTRIES)
    }

    /// Confines the file tools to `dir`, reading at most `max_file_bytes` of a file and listing
    /// at most `max_list_entries` entries.
    pub fn with_limits(
        dir: impl AsRef<Path>,
        max_file_bytes: u64,
        max_list_entries: usize,
    ) -> Result<Self, FileRootError> {
        let path = dir.as_ref().to_path_buf();
        let error = |source| FileRootError {
            path: path.clone(),
            source,
        };
        let dir = std::fs::canonicalize(&path).map_err(error)?;
        if !dir.is_dir() {
            return Err(error(std::io::Error::new(
                std::io::ErrorKind::NotADirectory,
                "not a directory",
            )));
        }
        Ok(FileRoot {
            inner: Arc::new(Root {
                dir,
                max_file_bytes,
                max_list_entries,
            }),
        })
    }

    /// The root directory, with links resolved.
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// The path inside the root that `relative` names, links resolved; an error for anything
    /// that is absolute, climbs with `..`, does not exist or leads outside through a link.
    pub fn resolve(&self, relative: &str) -> Result<PathBuf, ToolError> {
        let path = Path::new(relative);
        for component in path.components() {
            match component {
                Component::Normal(_) | Component::CurDir => {}
                Component::ParentDir => {
                    return Err(ToolError::failed(format!(
                        "`{relative}` contains `..`; give a path relative to the root without `..`"
                    )));
                }
                Component::RootDir | Component::Prefix(_) => {
                    return Err(ToolError::failed(format!(
                        "`{relative}` is absolute; give a path relative to the root, e.g. `src/main.rs`"
                    )));
                }
            }
        }
        let joined = self.inner.dir.join(path);
        let resolved = std::fs::canonicalize(&joined).map_err(|err| {
            ToolError::failed(format!("cannot open `{relative}`: {}", io_reason(&err)))
        })?;
        if !resolved.starts_with(&self.inner.dir) {
            return Err(ToolError::failed(format!(
                "`{relative}` leads outside the root through a symbolic link; only files inside the root can be read"
            )));
        }
        Ok(resolved)
    }

    /// The path relative to the root, with `/` separators, for output.
    fn display(&self, path: &Path) -> String {
        let relative = path.strip_prefix(&self.inner.dir).unwrap_or(path);
        let parts: Vec<_> = relative
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect();
        if parts.is_empty() {
            ".".to_owned()
        } else {
            parts.join("/")
        }
    }
}

fn io_reason(err: &std::io::Error) -> String {
    match err.kind() {
        std::io::ErrorKind::NotFound => "no such file or directory".to_owned(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_owned(),
        _ => err.to_string(),
    }
}

/// Runs blocking file work off the async threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ToolError> + Send + 'static,
) -> Result<T, ToolError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|err| ToolError::failed(format!("file access failed: {err}")))?
}

/// The `read_file` tool.
#[derive(Clone, Debug)]
pub struct ReadFile {
    root: FileRoot,
}

impl ReadFile {
    /// `read_file` confined to `root`.
    pub fn new(root: FileRoot) -> Self {
        ReadFile { root }
    }
}

/// Input of [`ReadFile`].
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadFileInput {
    /// Path of the file, relative to the root directory (e.g. `src/main.rs`).
    pub path: String,
}

/// Output of [`ReadFile`].
#[derive(Debug, PartialEq, Serialize)]
pub struct ReadFileOutput {
    /// The path relative to the root.
    pub path: String,
    /// The file's size in bytes.
    pub size: u64,
    /// The text (UTF-8), possibly cut.
    pub content: String,
    /// Whether `content` stops before the end of the file.
    pub truncated: bool,
}

#[async_trait]
impl Tool<ReadFileInput, ReadFileOutput> for ReadFile {
    fn name(&self) -> &str {
        "read_file"
    }

    fn description(&self) -> &str {
        "Reads a UTF-8 text file inside the working directory. Paths are relative to that \
         directory; list it with list_files first if unsure."
    }

    async fn call(
        &self,
        _ctx: &ExecutionContext,
        input: ReadFileInput,
    ) -> Result<ToolResult<ReadFileOutput>, ToolError> {
        let root = self.root.clone();
        blocking(move || {
            let path = root.resolve(&input.path)?;
            if !path.is_file() {
                return Err(ToolError::failed(format!(
                    "`{}` is not a file; use list_files for directories",
                    input.path
                )));
            }
            let failed = |err: std::io::Error| {
                ToolError::failed(format!("cannot read `{}`: {}", input.path, io_reason(&err)))
            };
            let file = std::fs::File::open(&path).map_err(failed)?;
            let size = file.metadata().map_err(failed)?.len();
            let limit = root.inner.max_file_bytes;
            let mut bytes = Vec::new();
            file.take(limit.saturating_add(1))
                .read_to_end(&mut bytes)
                .map_err(failed)?;
            let truncated = bytes.len() as u64 > limit;
            bytes.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
            let content = text(bytes, truncated).ok_or_else(|| {
                ToolError::failed(format!(
                    "`{}` is not a UTF-8 text file; read_file only returns text",
                    input.path
                ))
            })?;
            Ok(ToolResult::text(ReadFileOutput {
                path: root.display(&path),
                size,
                content,
                truncated,
            }))
        })
        .await
    }
}

/// The bytes as text, allowing a character cut in half at the end of a truncated read.
fn text(mut bytes: Vec<u8>, truncated: bool) -> Option<String> {
    match std::str::from_utf8(&bytes) {
        Ok(_) => {}
        Err(err) if truncated && err.error_len().is_none() => bytes.truncate(err.valid_up_to()),
        Err(_) => return None,
    }
    String::from_utf8(bytes).ok()
}

/// The `list_files` tool.
#[derive(Clone, Debug)]
pub struct ListFiles {
    root: FileRoot,
}

impl ListFiles {
    /// `list_files` confined to `root`.
    pub fn new(root: FileRoot) -> Self {
        ListFiles { root }
    }
}

/// Input of [`ListFiles`].
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListFilesInput {
    /// Directory to list, relative to the root directory; `.` (the default) is the root.
    #[serde(default = "dot")]
    pub path: String,
    /// Whether to list subdirectories too (links are listed, never followed).
    #[serde(default)]
    pub recursive: bool,
}

fn dot() -> String {
    ".".to_owned()
}

/// Output of [`ListFiles`].
#[derive(Debug, PartialEq, Serialize)]
pub struct ListFilesOutput {
    /// The directory listed, relative to the root.
    pub path: String,
    /// Its entries, sorted by path.
    pub entries: Vec<FileEntry>,
    /// Whether the listing stopped at the entry limit.
    pub truncated: bool,
}

/// One entry of a listing.
#[derive(Debug, PartialEq, Serialize)]
pub struct FileEntry {
    /// Path relative to the root, `/`-separated.
    pub path: String,
    /// `file`, `dir`, `symlink` or `other`.
    pub kind: &'static str,
    /// Size in bytes, for files.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
}

#[async_trait]
impl Tool<ListFilesInput, ListFilesOutput> for ListFiles {
    fn name(&self) -> &str {
        "list_files"
    }

    fn description(&self) -> &str {
        "Lists the files and directories inside the working directory (or one of its \
         subdirectories), optionally recursively."
    }

    async fn call(
        &self,
        _ctx: &ExecutionContext,
        input: ListFilesInput,
    ) -> Result<ToolResult<ListFilesOutput>, ToolError> {
        let root = self.root.clone();
        blocking(move || {
            let dir = root.resolve(&input.path)?;
            if !dir.is_dir() {
                return Err(ToolError::failed(format!(
                    "`{}` is not a directory; use read_file for files",
                    input.path
                )));
            }
            let limit = root.inner.max_list_entries;
            let mut entries = Vec::new();
            let mut pending = vec![dir.clone()];
            let mut truncated = false;
            while let Some(current) = pending.pop() {
                let mut children = read_dir(&current, &input.path)?;
                children.sort();
                for child in children {
                    if entries.len() == limit {
                        truncated = true;
                        break;
                    }
                    let entry = describe(&root, &child);
                    if input.recursive && entry.kind == "dir" {
                        pending.push(child);
                    }
                    entries.push(entry);
                }
                if truncated {
                    break;
                }
            }
            entries.sort_by(|a, b| a.path.cmp(&b.path));
            Ok(ToolResult::text(ListFilesOutput {
                path: root.display(&dir),
                entries,
                truncated,
            }))
        })
        .await
    }
}

fn read_dir(dir: &Path, shown: &str) -> Result<Vec<PathBuf>, ToolError> {
    let failed = |err: std::io::Error| {
        ToolError::failed(format!("cannot list `{shown}`: {}", io_reason(&err)))
    };
    std::fs::read_dir(dir)
        .map_err(failed)?
        .map(|entry| entry.map(|entry| entry.path()).map_err(failed))
        .collect()
}

fn describe(root: &FileRoot, path: &Path) -> FileEntry {
    // `symlink_metadata` does not follow links: a link is reported as a link, never entered.
    let metadata = std::fs::symlink_metadata(path);
    let (kind, size) = match &metadata {
        Ok(meta) if meta.file_type().is_symlink() => ("symlink", None),
        Ok(meta) if meta.is_dir() => ("dir", None),
        Ok(meta) if meta.is_file() => ("file", Some(meta.len())),
        _ => ("other", None),
    };
    FileEntry {
        path: root.display(path),
        kind,
        size,
    }
}

#[cfg(test)]
mod tests;

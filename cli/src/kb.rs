//! `skein kb`: knowledge bases in the log database. `add` reads files (text, Markdown, source
//! code; a directory is read whole) into a named base, chunked with overlap; `search` shows the
//! best passages with where they come from; `list` and `remove` manage the bases.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use knowledge_base::{Document, KnowledgeStore};

use crate::common::db_location;
use crate::error::CliError;
use crate::sanitize::for_terminal;

/// `skein kb`.
#[derive(Debug, Args)]
pub(crate) struct KbArgs {
    #[command(subcommand)]
    command: KbCommand,
}

#[derive(Debug, Subcommand)]
enum KbCommand {
    /// Add files to a knowledge base (created if new); a file added again replaces its old
    /// text. Directories are read whole, skipping hidden entries and files that are not text.
    Add {
        /// The knowledge base.
        name: String,
        /// Files or directories.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
    /// Search a knowledge base: the best passages, with their file and lines.
    Search {
        /// The knowledge base.
        name: String,
        /// What to look for, in plain words.
        query: String,
        /// How many passages.
        #[arg(long, default_value_t = 5)]
        limit: usize,
        /// Print each passage as a JSON line.
        #[arg(long)]
        json: bool,
    },
    /// List the knowledge bases.
    List,
    /// Remove a knowledge base.
    Remove {
        /// The knowledge base.
        name: String,
    },
}

/// Runs `skein kb …` on the log database `db`, writing to `out` and notes to `err`.
pub(crate) async fn run(
    args: &KbArgs,
    db: Option<&str>,
    out: &mut impl Write,
    err: &mut impl Write,
) -> Result<(), CliError> {
    let store = KnowledgeStore::open(&db_location(db)?).await?;
    match &args.command {
        KbCommand::Add { name, paths } => {
            let mut documents = Vec::new();
            for path in paths {
                collect(path, &mut documents, err)?;
            }
            if documents.is_empty() {
                return Err(CliError::Usage(
                    "no text files among the paths given; nothing was added".to_owned(),
                ));
            }
            let report = store.add(name, documents).await?;
            writeln!(
                out,
                "{name}: added {} document(s) in {} chunk(s){}",
                report.documents,
                report.chunks,
                if report.replaced > 0 {
                    format!(", {} replaced", report.replaced)
                } else {
                    String::new()
                }
            )?;
        }
        KbCommand::Search {
            name,
            query,
            limit,
            json,
        } => {
            let passages = store.search(&[name], query, *limit).await?;
            for passage in passages {
                if *json {
                    let line = serde_json::json!({
                        "base": passage.base, "title": passage.title,
                        "location": passage.location, "score": passage.score,
                        "text": passage.text,
                    });
                    writeln!(out, "{line}")?;
                } else {
                    writeln!(
                        out,
                        "{} ({})",
                        for_terminal(&passage.location),
                        score_text(passage.score)
                    )?;
                    for line in passage.text.lines().take(6) {
                        writeln!(out, "    {}", for_terminal(line))?;
                    }
                }
            }
        }
        KbCommand::List => {
            for base in store.list().await? {
                writeln!(
                    out,
                    "{}  {} document(s), {} chunk(s)",
                    base.name, base.documents, base.chunks
                )?;
            }
        }
        KbCommand::Remove { name } => {
            let removed = store.remove(name).await?;
            writeln!(
                out,
                "removed {} ({} document(s))",
                removed.name, removed.documents
            )?;
        }
    }
    Ok(())
}

/// The documents of `path`: the file, or every text file below the directory.
fn collect(
    path: &Path,
    documents: &mut Vec<Document>,
    err: &mut impl Write,
) -> Result<(), CliError> {
    if path.is_dir() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
            .map_err(|source| CliError::Read {
                path: path.to_owned(),
                source,
            })?
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .filter(|entry| {
                !entry
                    .file_name()
                    .is_some_and(|name| name.to_string_lossy().starts_with('.'))
            })
            .collect();
        entries.sort();
        for entry in entries {
            // A link to a directory may lead back up the tree (`docs/up -> ..`): followed, the
            // walk would never end. Files behind links are read; directories only when named.
            if entry.is_symlink() && entry.is_dir() {
                writeln!(
                    err,
                    "skein: skipped {}: a link to a directory (name it to add what it holds)",
                    entry.display()
                )?;
                continue;
            }
            match collect(&entry, documents, err) {
                Ok(()) => {}
                // Inside a directory, a file that is not text is passed over, and said so.
                Err(CliError::Knowledge(error)) => {
                    writeln!(err, "skein: skipped {}: {error}", entry.display())?;
                }
                Err(other) => return Err(other),
            }
        }
        return Ok(());
    }
    documents.push(Document::from_file(path)?);
    Ok(())
}

/// A score with two significant digits: BM25 scores of a small base are often far below 0.01
/// (a word in most passages weighs next to nothing), and two decimals printed them all as
/// `0.00`.
fn score_text(score: f64) -> String {
    if !score.is_finite() || score == 0.0 {
        return format!("{score}");
    }
    // Digits after the point: two significant ones, none for scores of 10 and more.
    let magnitude = score.abs().log10().floor();
    let decimals = (1.0 - magnitude).clamp(0.0, 17.0) as usize;
    format!("{score:.decimals$}")
}

#[cfg(test)]
mod tests {
    use super::score_text;

    #[test]
    fn scores_keep_two_significant_digits() {
        assert_eq!(score_text(0.000_001_234), "0.0000012");
        assert_eq!(score_text(0.042), "0.042");
        assert_eq!(score_text(3.456), "3.5");
        assert_eq!(score_text(12.7), "13");
        assert_eq!(score_text(0.0), "0");
    }
}

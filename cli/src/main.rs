//! `skein`: run agents, chat, serve the Chat Shell API, read the logs, check transcripts.
//!
//! Every command works offline: without a provider key the `echo` debug model answers. The
//! commands are thin: agents run through `service::ChatService` (the same code the HTTP API
//! uses), the logs are conversation-tree stores, transcripts are checked by `chain-ast`.

mod approve;
mod chain;
mod chat;
mod common;
mod error;
mod kb;
mod logs;
#[cfg(feature = "mcp")]
mod mcp;
mod models;
mod redacted_log;
mod render;
mod run;
mod sanitize;
mod schema;
mod serve;
mod signal;

use std::io::Write as _;
use std::num::NonZeroUsize;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::error::CliError;

/// Run LLM agents from the command line, keep every conversation, serve them over HTTP.
#[derive(Debug, Parser)]
#[command(
    name = "skein",
    version,
    propagate_version = true,
    after_help = "\
Examples:
  skein run \"Ten names for a pet pelican\"      stream an answer (echo model without keys)
  skein run -m gpt-4o-mini --tool calculator \"What is 1231 * 2331?\"
  cat notes.md | skein run -s \"Summarise\"       stdin is added to the prompt
  skein run -c \"And in French?\"                continue the last conversation
  skein chat                                    a conversation in the terminal
  skein logs --tree                             the last conversation as a tree
  skein models                                  models, context windows, keys set
  skein chain check transcript.json             validate a transcript
  skein serve --listen 127.0.0.1:8080           Chat Shell and OpenAI-compatible HTTP API

Keys come from OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY and OPENROUTER_API_KEY."
)]
struct Cli {
    /// The log database: a SQLite file or a postgres:// URL [default: skein/logs.db in the
    /// platform data directory, also when empty].
    #[arg(long, global = true, env = "SKEIN_DB", value_name = "PATH|URL")]
    db: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Ask once and stream the answer.
    Run(run::RunArgs),
    /// Chat in the terminal (a REPL that keeps the conversation).
    Chat(chat::ChatArgs),
    /// Serve the HTTP API: POST /v1/response with server-sent events.
    Serve(serve::ServeArgs),
    /// List and show logged conversations, or draw one as a tree.
    Logs(logs::LogsArgs),
    /// List known models with their context windows, and which provider keys are set.
    Models(models::ModelsArgs),
    /// Check transcripts against the chain rules.
    Chain(chain::ChainArgs),
    /// Knowledge bases: add files, search them (`skein run --kb NAME` lets the model search).
    Kb(kb::KbArgs),
    /// Inspect MCP servers: list the tools a server offers.
    #[cfg(feature = "mcp")]
    Mcp(mcp::McpArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Models(args) => {
            models::run(args, &mut std::io::stdout().lock()).map(|()| Outcome::Done)
        }
        Command::Chain(args) => chain::run(
            args,
            &mut std::io::stdout().lock(),
            &mut std::io::stderr().lock(),
        )
        .map(|()| Outcome::Done),
        command => {
            let workers = match command {
                Command::Serve(args) => args.workers(),
                _ => None,
            };
            runtime(workers).and_then(|runtime| runtime.block_on(dispatch(&cli)))
        }
    };
    match result {
        Ok(Outcome::Done) => ExitCode::SUCCESS,
        Ok(Outcome::Interrupted) => ExitCode::from(130),
        // A closed pipe (`skein logs | head`) is the reader's choice, not a failure.
        Err(CliError::Io(error)) if error.kind() == std::io::ErrorKind::BrokenPipe => {
            ExitCode::SUCCESS
        }
        Err(error) => {
            let _ = std::io::stdout().flush();
            // Errors may quote a provider or a stored log: sanitised like all of stderr.
            eprintln!(
                "skein: error: {}",
                sanitize::for_terminal(&error.to_string())
            );
            ExitCode::from(error.exit_code())
        }
    }
}

async fn dispatch(cli: &Cli) -> Result<Outcome, CliError> {
    // `SKEIN_DB=` (set but empty) is how a shell unsets a variable for one command: the
    // default location, never an empty path (SQLite would log into a temporary file).
    let db = cli.db.as_deref().filter(|db| !db.is_empty());
    match &cli.command {
        Command::Run(args) => run::run(args, db).await,
        Command::Chat(args) => chat::run(args, db).await,
        Command::Serve(args) => serve::run(args, db).await.map(|()| Outcome::Done),
        Command::Logs(args) => logs::run(args, db).await.map(|()| Outcome::Done),
        Command::Kb(args) => kb::run(
            args,
            db,
            &mut std::io::stdout().lock(),
            &mut std::io::stderr().lock(),
        )
        .await
        .map(|()| Outcome::Done),
        #[cfg(feature = "mcp")]
        Command::Mcp(args) => mcp::run(args, &mut std::io::stdout().lock())
            .await
            .map(|()| Outcome::Done),
        Command::Models(_) | Command::Chain(_) => Ok(Outcome::Done),
    }
}

/// How a command that did not fail ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Normally.
    Done,
    /// Interrupted (Ctrl-C): exit status 130, as shells expect.
    Interrupted,
}

/// The runtime commands run on: `workers` threads, else tokio's default (one per core, or
/// `TOKIO_WORKER_THREADS`).
fn runtime(workers: Option<NonZeroUsize>) -> Result<tokio::runtime::Runtime, CliError> {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(workers) = workers {
        builder.worker_threads(workers.get());
    }
    Ok(builder.enable_all().build()?)
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory as _;

    use super::Cli;

    /// The long help of `command` and of each of its subcommands, with their names.
    fn helps(command: &mut clap::Command, name: &str, found: &mut Vec<(String, String)>) {
        found.push((name.to_owned(), command.render_long_help().to_string()));
        for sub in command.get_subcommands_mut() {
            let name = format!("{name} {}", sub.get_name());
            helps(sub, &name, found);
        }
    }

    /// `--help` is read by people at a terminal: no rustdoc link syntax, no paths into the
    /// code, in any command's text.
    #[test]
    fn help_texts_hold_no_rustdoc_markup() {
        let mut command = Cli::command();
        command.build();
        let mut found = Vec::new();
        helps(&mut command, "skein", &mut found);
        assert!(found.len() > 8, "only {} commands", found.len());
        let marked: Vec<String> = found
            .iter()
            .flat_map(|(name, help)| {
                help.lines()
                    .filter(|line| {
                        ["[`", "`]", "](", "crate::", "Self::", "super::"]
                            .iter()
                            .any(|markup| line.contains(markup))
                    })
                    .map(move |line| format!("{name}: {}", line.trim()))
            })
            .collect();
        assert!(
            marked.is_empty(),
            "rustdoc markup in:\n{}",
            marked.join("\n")
        );
    }
}

//! `skein logs`: list conversations, show one, or draw it as a tree.

mod show;
mod tree;

use std::io::{IsTerminal as _, Write};

use clap::{Args, Subcommand};
use conversation_tree::{ConversationId, ConversationSummary, Store, StoreError, Timestamp};
use serde_json::json;

use crate::CliError;
use crate::common::open_store_read_only;
use crate::sanitize::{Output, escape_json_controls, for_terminal};

/// Arguments of `skein logs`.
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  skein logs                    the 10 most recent conversations
  skein logs -n 0 --json        all of them, as JSON
  skein logs show               every response of the last conversation, as Markdown
  skein logs show 7f3a… -u      a given conversation, with token usage
  skein logs --tree             the last conversation as a tree: branches and cache hits
  skein logs --tree --cid 7f3a…")]
pub(crate) struct LogsArgs {
    #[command(subcommand)]
    command: Option<LogsCommand>,
    /// Draw a conversation as a tree (the last one, or --cid).
    #[arg(long)]
    tree: bool,
    /// The conversation for --tree.
    #[arg(long, value_name = "ID", requires = "tree")]
    cid: Option<String>,
    /// How many conversations to list (0: all).
    #[arg(short = 'n', long, default_value_t = 10)]
    count: usize,
    /// Print JSON.
    #[arg(long, global = true)]
    json: bool,
}

#[derive(Debug, Subcommand)]
enum LogsCommand {
    /// List conversations, most recent first.
    List,
    /// Every response of a conversation (default: the last one), oldest first.
    Show {
        /// The conversation id.
        cid: Option<String>,
        /// Include token usage.
        #[arg(short = 'u', long)]
        usage: bool,
    },
    /// Draw a conversation (default: the last one) as a tree of its responses.
    Tree {
        /// The conversation id.
        cid: Option<String>,
    },
}

pub(crate) async fn run(args: &LogsArgs, db: Option<&str>) -> Result<(), CliError> {
    // Reading never writes: a read-only file works, and a writer's lock is waited for.
    let store = open_store_read_only(db).await?;
    let store = store.as_ref();
    // Stored prompts, answers and tool output are sanitised on a terminal; piped, they are the
    // stored text (`crate::sanitize`). JSON output is escaped either way.
    let stdout = std::io::stdout();
    let out = &mut Output::new(stdout.lock(), stdout.is_terminal() && !args.json);
    match (&args.command, args.tree) {
        (Some(LogsCommand::Tree { cid }), _) => {
            let summary = conversation(store, cid.as_deref()).await?;
            let drawn = tree::draw(store, &summary, args.json, out).await;
            damaged(&summary, drawn)
        }
        (None, true) => {
            let summary = conversation(store, args.cid.as_deref()).await?;
            let drawn = tree::draw(store, &summary, args.json, out).await;
            damaged(&summary, drawn)
        }
        (Some(LogsCommand::Show { cid, usage }), _) => {
            let summary = conversation(store, cid.as_deref()).await?;
            let shown = show::show(store, &summary, *usage, args.json, out).await;
            damaged(&summary, shown)
        }
        (Some(LogsCommand::List) | None, _) => list(store, args.count, args.json, out).await,
    }
}

/// A stored row of the conversation that cannot be read back fails the command with an error
/// naming the conversation (the store's error names the row); the listing's note of damage
/// that did not stop the command is repeated on stderr.
fn damaged(summary: &ConversationSummary, result: Result<(), CliError>) -> Result<(), CliError> {
    match result {
        Err(CliError::Store(source @ StoreError::Corrupt { .. })) => Err(CliError::Damaged {
            conversation: summary.id.to_string(),
            source,
        }),
        Ok(()) => {
            if let Some(reason) = &summary.damaged {
                eprintln!(
                    "skein: conversation {} is damaged: {}",
                    for_terminal(summary.id.as_str()),
                    for_terminal(reason)
                );
            }
            Ok(())
        }
        other => other,
    }
}

async fn list(
    store: &dyn Store,
    count: usize,
    json: bool,
    out: &mut impl Write,
) -> Result<(), CliError> {
    let limit = if count == 0 { usize::MAX } else { count };
    let conversations = store.conversations(limit).await?;
    if json {
        return write_json(out, &conversations);
    }
    if conversations.is_empty() {
        writeln!(
            out,
            "No conversations logged yet: `skein run \"Hello\"` starts one."
        )?;
        return Ok(());
    }
    writeln!(
        out,
        "{:<38} {:<20} {:>9}  NAME",
        "CONVERSATION", "UPDATED (UTC)", "RESPONSES"
    )?;
    for summary in &conversations {
        let name = summary
            .name
            .as_deref()
            .map(|name| one_line(name, 50))
            .unwrap_or_default();
        // A damaged row's id may hold control characters: escape them.
        let (id, name) = match &summary.damaged {
            Some(reason) => (
                summary.id.as_str().escape_debug().to_string(),
                format!("[damaged: {}] {name}", one_line(reason, 120)),
            ),
            None => (summary.id.to_string(), name),
        };
        writeln!(
            out,
            "{:<38} {:<20} {:>9}  {}",
            id,
            time(summary.updated_utc),
            summary.responses,
            name.trim_end()
        )?;
    }
    let damaged = conversations.iter().filter(|s| s.damaged.is_some()).count();
    if damaged > 0 {
        writeln!(
            out,
            "\n{damaged} conversation{} damaged: a stored row cannot be read back; the others \
             are intact.",
            if damaged == 1 { " is" } else { "s are" }
        )?;
    }
    Ok(())
}

/// The named conversation, or the most recent one.
async fn conversation(
    store: &dyn Store,
    cid: Option<&str>,
) -> Result<ConversationSummary, CliError> {
    match cid {
        Some(cid) => {
            let id = ConversationId::new(cid)?;
            store.conversation(&id).await?.ok_or_else(|| {
                CliError::Usage(format!(
                    "no conversation `{cid}` in the log; `skein logs` lists them"
                ))
            })
        }
        None => store
            .conversations(1)
            .await?
            .into_iter()
            .next()
            .ok_or_else(|| CliError::Usage("no conversations logged yet".into())),
    }
}

/// `2026-11-23 11:02:01`.
fn time(at: Timestamp) -> String {
    at.strftime("%Y-%m-%d %H:%M:%S").to_string()
}

/// The text on one line, cut to `max` characters.
fn one_line(text: &str, max: usize) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(max) {
        Some((end, _)) => format!("{}…", &line[..end]),
        None => line,
    }
}

/// `value` as pretty JSON on a line of its own, DEL and C1 controls escaped
/// ([`escape_json_controls`]).
fn write_json(out: &mut impl Write, value: &impl serde::Serialize) -> Result<(), CliError> {
    let json = serde_json::to_string_pretty(value)?;
    writeln!(out, "{}", escape_json_controls(&json))?;
    Ok(())
}

/// JSON for a conversation summary.
fn summary_json(summary: &ConversationSummary) -> serde_json::Value {
    let mut document = json!({
        "id": summary.id,
        "name": summary.name,
        "created_utc": summary.created_utc.to_string(),
        "updated_utc": summary.updated_utc.to_string(),
        "responses": summary.responses,
    });
    if let Some(reason) = &summary.damaged {
        document["damaged"] = json!(reason);
    }
    document
}

//! `skein logs`: list conversations, show one, or draw it as a tree.

mod show;
mod tree;

use std::io::Write;

use clap::{Args, Subcommand};
use conversation_tree::{ConversationId, ConversationSummary, Store, Timestamp};
use serde_json::json;

use crate::CliError;
use crate::common::open_store;

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
    let store = open_store(db).await?;
    let store = store.as_ref();
    let out = &mut std::io::stdout().lock();
    match (&args.command, args.tree) {
        (Some(LogsCommand::Tree { cid }), _) => {
            let summary = conversation(store, cid.as_deref()).await?;
            tree::draw(store, &summary, args.json, out).await
        }
        (None, true) => {
            let summary = conversation(store, args.cid.as_deref()).await?;
            tree::draw(store, &summary, args.json, out).await
        }
        (Some(LogsCommand::Show { cid, usage }), _) => {
            let summary = conversation(store, cid.as_deref()).await?;
            show::show(store, &summary, *usage, args.json, out).await
        }
        (Some(LogsCommand::List) | None, _) => list(store, args.count, args.json, out).await,
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
        writeln!(out, "{}", serde_json::to_string_pretty(&conversations)?)?;
        return Ok(());
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
        writeln!(
            out,
            "{:<38} {:<20} {:>9}  {}",
            summary.id,
            time(summary.updated_utc),
            summary.responses,
            summary
                .name
                .as_deref()
                .map(|name| one_line(name, 50))
                .unwrap_or_default()
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

/// JSON for a conversation summary.
fn summary_json(summary: &ConversationSummary) -> serde_json::Value {
    json!({
        "id": summary.id,
        "name": summary.name,
        "created_utc": summary.created_utc.to_string(),
        "updated_utc": summary.updated_utc.to_string(),
        "responses": summary.responses,
    })
}

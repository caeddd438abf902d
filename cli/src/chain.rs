//! `skein chain check FILE`: ChainAST validation and repair of a transcript.

use std::io::Write;
use std::path::PathBuf;

use chain_ast::{ChainAst, ChainError};
use clap::{Args, Subcommand};
use messages::Message;
use serde_json::json;

use crate::CliError;

/// Arguments of `skein chain`.
#[derive(Debug, Args)]
pub(crate) struct ChainArgs {
    #[command(subcommand)]
    command: ChainCommand,
}

#[derive(Debug, Subcommand)]
enum ChainCommand {
    /// Check a transcript against the seven chain rules and draw its tree.
    ///
    /// FILE holds a transcript in Skein's canonical JSON: an array of
    /// {"role": "system"|"human"|"ai"|"tool", "parts": [...]} objects (`-` reads stdin).
    /// A valid chain prints its tree and exits 0. A broken one prints the first broken rule
    /// and the message index, and exits 1; with --repair every break is repaired instead, the
    /// repairs are listed on stderr and the repaired transcript is printed (exit 0).
    #[command(after_help = "\
Examples:
  skein chain check conversation.json            validate and draw the tree
  skein chain check broken.json --repair > fixed.json
  skein chain check conversation.json --json     a machine-readable report
  skein logs show --json | jq .messages > t.json && skein chain check t.json")]
    Check(CheckArgs),
}

#[derive(Debug, Args)]
struct CheckArgs {
    /// The transcript file (`-` for stdin).
    file: PathBuf,
    /// Repair every broken rule and print the repaired transcript.
    #[arg(long)]
    repair: bool,
    /// Print a JSON report instead of text.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(
    args: &ChainArgs,
    out: &mut impl Write,
    err: &mut impl Write,
) -> Result<(), CliError> {
    let ChainCommand::Check(args) = &args.command;
    let text = if args.file.as_os_str() == "-" {
        std::io::read_to_string(std::io::stdin())?
    } else {
        std::fs::read_to_string(&args.file).map_err(|source| CliError::Read {
            path: args.file.clone(),
            source,
        })?
    };
    let messages =
        messages::transcript::from_json(&text).map_err(|source| CliError::Transcript {
            path: args.file.clone(),
            source,
        })?;
    if args.repair {
        let (ast, repairs) = ChainAst::repair(&messages);
        let repaired = ast.messages();
        if args.json {
            let report = json!({
                "valid": repairs.is_empty(),
                "problems": repairs.iter().map(problem_json).collect::<Vec<_>>(),
                "repaired": serde_json::to_value(&repaired)?,
            });
            writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?;
        } else {
            for repair in &repairs {
                writeln!(err, "repaired: {}", repair)?;
            }
            writeln!(
                err,
                "{} problem(s) repaired; {} messages in, {} out",
                repairs.len(),
                messages.len(),
                repaired.len()
            )?;
            write!(err, "{ast}")?;
            writeln!(out, "{}", messages::transcript::to_json(&repaired))?;
        }
        return Ok(());
    }
    match ChainAst::new(&messages, false) {
        Ok(ast) => {
            if args.json {
                let report = json!({
                    "valid": true,
                    "messages": messages.len(),
                    "sections": ast.sections().len(),
                    "bytes": ast.size(),
                    "tree": ast.to_string(),
                });
                writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?;
            } else {
                writeln!(out, "valid chain: {}", summary(&messages, &ast))?;
                write!(out, "{ast}")?;
            }
            Ok(())
        }
        Err(error) => {
            if args.json {
                let report = json!({"valid": false, "problems": [problem_json(&error)]});
                writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?;
            }
            Err(CliError::BrokenChain {
                path: args.file.clone(),
                detail: error.to_string(),
            })
        }
    }
}

fn summary(messages: &[Message], ast: &ChainAst) -> String {
    format!(
        "{} messages, {} section(s), {} bytes",
        messages.len(),
        ast.sections().len(),
        ast.size()
    )
}

fn problem_json(error: &ChainError) -> serde_json::Value {
    json!({
        "rule": error.rule().map(|rule| rule.number()),
        "rule_summary": error.rule().map(|rule| rule.summary()),
        "index": error.index(),
        "message": error.to_string(),
    })
}

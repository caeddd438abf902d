//! `skein chat`: a REPL that keeps the conversation.

use std::io::{IsTerminal as _, Write as _};

use clap::Args;
use conversation_tree::ConversationId;
use messages::Message;
use service::RunInput;
use tokio::io::{AsyncBufReadExt as _, BufReader};

use crate::common::{AgentArgs, open_store};
use crate::{CliError, Outcome, render};

/// Arguments of `skein chat`.
#[derive(Debug, Args)]
#[command(after_help = "\
In the chat:
  exit or quit       leave
  !multi … !end      a message of several lines
  Ctrl-C             stop the current answer (at the prompt: leave)

Examples:
  skein chat
  skein chat -m gpt-4o -s \"You are a terse assistant\"
  skein chat -c                         go on with the last conversation
  printf 'Hi\\nAnd again\\n' | skein chat   scripted: one message per line")]
pub(crate) struct ChatArgs {
    #[command(flatten)]
    agent: AgentArgs,
}

pub(crate) async fn run(args: &ChatArgs, db: Option<&str>) -> Result<Outcome, CliError> {
    args.agent.check()?;
    args.agent.tool_protocol()?;
    let mut approval = args.agent.approval()?;
    let store = open_store(db).await?;
    let service = args.agent.service(store.clone(), db).await?;
    let mut resume = args.agent.resume(store.as_ref()).await?;
    let model = args.agent.model(&resume);
    let mut messages: Vec<Message> = match (resume.history.take(), &resume.conversation) {
        (Some(history), _) => history,
        (None, Some(conversation)) => service.history(conversation, None).await?,
        (None, None) => Vec::new(),
    };
    // Every turn logs into one conversation, a new one unless -c, --cid or --from named one.
    let conversation = resume
        .conversation
        .get_or_insert_with(ConversationId::random)
        .clone();
    let interactive = std::io::stdin().is_terminal();
    eprintln!("Chatting with {model} (conversation {conversation})");
    eprintln!("Type 'exit' or 'quit' to exit");
    eprintln!("Type '!multi' to enter multiple lines, then '!end' to finish");

    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    loop {
        if interactive {
            eprint!("> ");
            let _ = std::io::stderr().flush();
        }
        let Some(prompt) = read_message(&mut lines).await? else {
            break;
        };
        if prompt.trim().is_empty() {
            continue;
        }
        if matches!(prompt.trim(), "exit" | "quit") {
            break;
        }
        let mut input = messages.clone();
        input.push(Message::human(prompt));
        let spec = args
            .agent
            .spec(&service, model.clone(), RunInput::Messages(input), &resume)?;
        // Approval questions are answered on the chat's own input, when it is a terminal.
        let answers = interactive.then_some(&mut lines);
        let ended = render::run_in_terminal(&service, spec, false, &mut approval, answers).await;
        // A failed turn is reported and the chat goes on from where it was.
        match ended {
            Ok(ended) => messages = ended.messages,
            Err(error) => eprintln!(
                "skein: error: {}",
                crate::sanitize::for_terminal(&error.to_string())
            ),
        }
    }
    Ok(Outcome::Done)
}

/// The next message: a line, or the lines between `!multi` and `!end`. `None` at the end of
/// input or on Ctrl-C.
async fn read_message(
    lines: &mut tokio::io::Lines<BufReader<tokio::io::Stdin>>,
) -> Result<Option<String>, CliError> {
    let Some(line) = next_line(lines).await? else {
        return Ok(None);
    };
    let Some(rest) = line.trim().strip_prefix("!multi") else {
        return Ok(Some(line));
    };
    // `!multi abc` ends at `!end abc`, so a message may contain a plain `!end`.
    let end = match rest.trim() {
        "" => "!end".to_owned(),
        marker => format!("!end {marker}"),
    };
    let mut text = Vec::new();
    while let Some(line) = next_line(lines).await? {
        if line.trim() == end {
            break;
        }
        text.push(line);
    }
    Ok(Some(text.join("\n")))
}

async fn next_line(
    lines: &mut tokio::io::Lines<BufReader<tokio::io::Stdin>>,
) -> Result<Option<String>, CliError> {
    tokio::select! {
        line = lines.next_line() => Ok(line?),
        _ = tokio::signal::ctrl_c() => Ok(None),
    }
}

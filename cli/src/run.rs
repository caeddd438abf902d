//! `skein run PROMPT`: ask once, stream the answer.

use std::io::{IsTerminal as _, Read as _};

use clap::Args;
use messages::ContentPart;
use service::RunInput;

use crate::common::{AgentArgs, open_store};
use crate::{CliError, Outcome, render};

/// Arguments of `skein run`.
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  skein run \"Ten names for a pet pelican\"
  skein run -m claude-sonnet-4-5 -s \"Answer in French\" \"Hello\"
  skein run --tool calculator \"What is 1231 * 2331?\"
  skein run --tool read_file --tool list_files --root . \"What does this project do?\"
  git diff | skein run \"Write a commit message for this diff\"
  skein run -c \"Shorter, please\"              continue the last conversation
  skein run --cid 7f3a… \"Go on\"               continue a given conversation
  skein run --from 3 \"Try again\"               a new branch after response #3
  skein run --json \"Hi\" | jq -c .event        the SSE events as JSON lines
  skein run --schema \"name, age int\" \"Invent a pelican\"   a JSON answer for the schema
  skein run --base-url http://localhost:11434/v1 -m llama3.2 \"Hi\"   any OpenAI-compatible server

Ctrl-C stops the answer (and the model call); what was said so far is logged.")]
pub(crate) struct RunArgs {
    /// The prompt. Text piped on stdin is put before it.
    prompt: Option<String>,
    #[command(flatten)]
    agent: AgentArgs,
    /// Print every event as a JSON line: {"event": "content.delta", "data": {…}}.
    #[arg(long)]
    json: bool,
    /// Answer with JSON valid for this schema: a JSON Schema inline or in a file, or fields
    /// such as "name, age int, bio: their bio" (as `llm --schema`).
    #[arg(long, value_name = "JSON|FILE")]
    schema: Option<String>,
}

pub(crate) async fn run(args: &RunArgs, db: Option<&str>) -> Result<Outcome, CliError> {
    args.agent.check()?;
    let response_format = args
        .schema
        .as_deref()
        .map(crate::schema::response_format)
        .transpose()?;
    let prompt = prompt(args.prompt.as_deref())?;
    // Options that cannot go together are refused before anything is opened.
    args.agent.tool_protocol()?;
    let mut approval = args.agent.approval()?;
    let store = open_store(db).await?;
    let service = args.agent.service(store.clone(), db).await?;
    let resume = args.agent.resume(store.as_ref()).await?;
    let model = args.agent.model(&resume);
    // After the response `--from` names or the conversation's latest one (loaded by the
    // service, so the answer is logged below that very node), or a new conversation.
    let input = RunInput::Parts(vec![ContentPart::text(prompt)]);
    let mut spec = args.agent.spec(&service, model, input, &resume)?;
    spec.response_format = response_format;
    // The prompt came from the arguments when stdin is a terminal: it is free for answers.
    let mut answers = std::io::stdin()
        .is_terminal()
        .then(|| tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(tokio::io::stdin())));
    let ended =
        render::run_in_terminal(&service, spec, args.json, &mut approval, answers.as_mut()).await;
    Ok(ended?.outcome)
}

/// The prompt: the argument, after piped stdin when there is any.
fn prompt(argument: Option<&str>) -> Result<String, CliError> {
    let mut piped = String::new();
    if !std::io::stdin().is_terminal() {
        std::io::stdin().read_to_string(&mut piped)?;
    }
    let piped = piped.trim_end();
    let prompt = match (piped.is_empty(), argument) {
        (true, Some(argument)) => argument.to_owned(),
        (false, Some(argument)) => format!("{piped}\n\n{argument}"),
        (false, None) => piped.to_owned(),
        (true, None) => {
            return Err(CliError::Usage(
                "give a prompt: `skein run \"…\"`, or pipe text into `skein run`".into(),
            ));
        }
    };
    Ok(prompt)
}

//! Showing a run's events: the answer on stdout as it streams, reasoning and tool activity on
//! stderr (as `llm` does), or every event as a JSON line with `--json`.

use std::io::{self, IsTerminal as _, Write};

use futures::StreamExt as _;
use server::{AgentEvent, AgentStream, CancellationToken, ChatService, RunSpec};

use crate::{CliError, Outcome};

/// Longest tool input or output shown on the terminal, in characters.
const SHOWN: usize = 160;

/// How a run ended, for the caller.
pub(crate) struct Ended {
    pub(crate) outcome: Outcome,
    /// The conversation after the run (history, input, answers), when it ended normally or was
    /// cancelled.
    pub(crate) messages: Vec<messages::Message>,
}

/// Prepares `spec`, then shows its run on stdout and stderr until it ends; Ctrl-C or SIGTERM
/// cancels the run (the model call and the tools) and what was said so far is logged.
pub(crate) async fn run_in_terminal(
    service: &ChatService,
    spec: RunSpec,
    json: bool,
) -> Result<Ended, CliError> {
    let prepared = service
        .prepare(spec)
        .await
        .map_err(|error| CliError::Run(error.to_string()))?;
    let cancel = CancellationToken::new();
    let interrupt = tokio::spawn({
        let cancel = cancel.clone();
        async move {
            crate::signal::interrupted().await;
            cancel.cancel();
        }
    });
    let ended = show(
        prepared.stream(cancel),
        json,
        &mut std::io::stdout().lock(),
        &mut std::io::stderr().lock(),
    )
    .await;
    interrupt.abort();
    ended
}

/// Streams `events` to `out` and `err` until the run ends.
pub(crate) async fn show(
    mut events: AgentStream,
    json: bool,
    out: &mut impl Write,
    err: &mut impl Write,
) -> Result<Ended, CliError> {
    let mut screen = Screen {
        dim: io::stderr().is_terminal(),
        ..Screen::default()
    };
    while let Some(event) = events.next().await {
        if json {
            let line = serde_json::json!({"event": event.sse_name(), "data": event.payload()});
            writeln!(out, "{line}")?;
            out.flush()?;
        } else {
            screen.show(&event, out, err)?;
        }
        match event {
            AgentEvent::ResponseDone { outcome, .. } => {
                return Ok(Ended {
                    outcome: Outcome::Done,
                    messages: outcome.messages.clone(),
                });
            }
            AgentEvent::ResponseCancelled { outcome, .. } => {
                return Ok(Ended {
                    outcome: Outcome::Interrupted,
                    messages: outcome.messages.clone(),
                });
            }
            AgentEvent::ResponseError { message, .. } => return Err(CliError::Run(message)),
            _ => {}
        }
    }
    Err(CliError::Run("the run ended without a final event".into()))
}

/// Terminal display state.
#[derive(Default)]
struct Screen {
    /// Whether stderr takes ANSI dimming.
    dim: bool,
    /// Whether reasoning text is being written (a newline ends it before the answer).
    reasoning: bool,
    /// Whether the answer's last character written was not a newline.
    open_line: bool,
}

impl Screen {
    fn show(
        &mut self,
        event: &AgentEvent,
        out: &mut impl Write,
        err: &mut impl Write,
    ) -> io::Result<()> {
        match event {
            AgentEvent::ContentDelta { text, .. } => {
                self.end_reasoning(err)?;
                write!(out, "{text}")?;
                out.flush()?;
                if !text.is_empty() {
                    self.open_line = !text.ends_with('\n');
                }
            }
            AgentEvent::ReasoningDelta { text } => {
                if !self.reasoning && self.dim {
                    write!(err, "\x1b[2m")?;
                }
                self.reasoning = true;
                write!(err, "{text}")?;
                err.flush()?;
            }
            AgentEvent::ToolStart { name, input, .. } => {
                self.end_reasoning(err)?;
                self.end_line(out)?;
                writeln!(err, "[{name}] {}", cut(&input.to_string()))?;
            }
            AgentEvent::ToolDone {
                name,
                output,
                error,
                ..
            } => match error {
                Some(error) => writeln!(err, "[{name}] failed: {}", cut(error))?,
                None => writeln!(err, "[{name}] → {}", cut(output))?,
            },
            AgentEvent::ResponseCancelled { .. } => {
                self.end_reasoning(err)?;
                self.end_line(out)?;
                writeln!(err, "skein: cancelled")?;
            }
            AgentEvent::ResponseDone { .. } | AgentEvent::ResponseError { .. } => {
                self.end_reasoning(err)?;
                self.end_line(out)?;
            }
            _ => {}
        }
        Ok(())
    }

    fn end_reasoning(&mut self, err: &mut impl Write) -> io::Result<()> {
        if self.reasoning {
            self.reasoning = false;
            if self.dim {
                write!(err, "\x1b[0m")?;
            }
            writeln!(err)?;
        }
        Ok(())
    }

    fn end_line(&mut self, out: &mut impl Write) -> io::Result<()> {
        if self.open_line {
            self.open_line = false;
            writeln!(out)?;
            out.flush()?;
        }
        Ok(())
    }
}

/// One line of at most [`SHOWN`] characters.
fn cut(text: &str) -> String {
    let line = text.replace('\n', " ");
    match line.char_indices().nth(SHOWN) {
        Some((end, _)) => format!("{}…", &line[..end]),
        None => line,
    }
}

//! Showing a run's events: the answer on stdout as it streams, reasoning and tool activity on
//! stderr (as `llm` does), or every event as a JSON line with `--json`.
//!
//! Text from the model and the tools goes through [`crate::sanitize`]: the answer when stdout
//! is a terminal (piped, it is the model's exact text), everything written to stderr always.

use std::io::{self, IsTerminal as _, Write};

use futures::StreamExt as _;
use server::encode::chat_shell::ChatShellEncoder;
use service::{AgentEvent, AgentStream, CancellationToken, ChatService, RunSpec};

use crate::approve::{self, Answers, Approval};
use crate::sanitize::{Sanitizer, escape_json_controls, for_terminal};
use crate::{CliError, Outcome};

/// Longest tool input or output shown on the terminal, in characters.
const SHOWN: usize = 160;

/// How a run ended, for the caller.
pub(crate) struct Ended {
    pub(crate) outcome: Outcome,
    /// The conversation after the run (history, input, answers), when it ended normally or was
    /// cancelled.
    pub(crate) messages: Vec<messages::Message>,
    /// The paused run and its response id, when the run stopped for approval.
    pub(crate) paused: Option<(String, agent_loop::approval::PausedRun)>,
    /// The tools approved "always" in the conversation, after the run.
    pub(crate) grants: agent_loop::approval::ApprovalGrants,
}

/// Prepares `spec`, then shows its run on stdout and stderr until it ends; Ctrl-C or SIGTERM
/// cancels the run (the model call and the tools) and what was said so far is logged. Calls
/// `approval` says need a yes are asked about on stderr and answered from `answers` (the
/// terminal; `None` when stdin is not one, and they are declined), and the run resumes.
pub(crate) async fn run_in_terminal(
    service: &ChatService,
    spec: RunSpec,
    json: bool,
    approval: &mut Approval,
    mut answers: Option<&mut Answers>,
) -> Result<Ended, CliError> {
    let prepared = service
        .prepare(spec)
        .await
        .map_err(|error| CliError::Run(error.to_string()))?;
    let prepared = approval.apply(prepared)?;
    let agent = prepared.agent().clone();
    let cancel = CancellationToken::new();
    let interrupt = tokio::spawn({
        let cancel = cancel.clone();
        async move {
            crate::signal::interrupted().await;
            cancel.cancel();
        }
    });
    let terminal = Terminal {
        stdout: io::stdout().is_terminal(),
        stderr: io::stderr().is_terminal(),
    };
    let mut stream = prepared.stream(cancel.clone());
    let ended = loop {
        let ended = show(
            stream,
            json,
            terminal,
            &mut std::io::stdout().lock(),
            &mut std::io::stderr().lock(),
        )
        .await;
        let (id, paused) = match ended {
            Ok(Ended {
                paused: Some(paused),
                ..
            }) => paused,
            other => break other,
        };
        let decided = approve::decide(&paused, answers.as_deref_mut(), &mut io::stderr()).await;
        match decided {
            Ok(Some(decisions)) if !cancel.is_cancelled() => {
                // The resumed run goes on under the paused one's response id.
                stream = agent.resume_stream(paused, decisions, Some(id), cancel.clone());
            }
            // Ctrl-C at the prompt: the run stops as if cancelled while paused.
            Ok(_) => {
                writeln!(io::stderr(), "skein: cancelled")?;
                break Ok(Ended {
                    outcome: Outcome::Interrupted,
                    messages: paused.messages,
                    grants: paused.grants,
                    paused: None,
                });
            }
            Err(error) => break Err(error),
        }
    };
    interrupt.abort();
    if let Ok(ended) = &ended {
        approval.grants = ended.grants.clone();
    }
    ended
}

/// Which of stdout and stderr are terminals.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Terminal {
    /// Whether stdout is (the answer is then sanitised).
    pub(crate) stdout: bool,
    /// Whether stderr is (reasoning is then dimmed).
    pub(crate) stderr: bool,
}

/// Streams `events` to `out` and `err` until the run ends.
pub(crate) async fn show(
    mut events: AgentStream,
    json: bool,
    terminal: Terminal,
    out: &mut impl Write,
    err: &mut impl Write,
) -> Result<Ended, CliError> {
    let mut screen = Screen::new(terminal);
    let mut encoder = ChatShellEncoder::default();
    while let Some(event) = events.next().await {
        if let AgentEvent::ApprovalRequired {
            id, calls, outcome, ..
        } = &event
        {
            if json {
                // The event a Chat Shell client reads for a paused run.
                let data = serde_json::json!({"id": id, "calls": calls});
                let line = serde_json::json!({"event": "tool.approval", "data": data});
                writeln!(out, "{}", escape_json_controls(&line.to_string()))?;
                out.flush()?;
            } else {
                screen.pause(out, err)?;
            }
            return Ok(Ended {
                outcome: Outcome::Done,
                messages: outcome.messages.clone(),
                paused: outcome.approval.clone().map(|paused| (id.clone(), paused)),
                grants: outcome.grants.clone(),
            });
        }
        if json {
            let frame = encoder.encode(&event);
            let line = serde_json::json!({"event": frame.name(), "data": frame});
            writeln!(out, "{}", escape_json_controls(&line.to_string()))?;
            out.flush()?;
        } else {
            screen.show(&event, out, err)?;
        }
        match event {
            AgentEvent::ResponseDone { outcome, .. } => {
                return Ok(Ended {
                    outcome: Outcome::Done,
                    messages: outcome.messages.clone(),
                    paused: None,
                    grants: outcome.grants.clone(),
                });
            }
            AgentEvent::ResponseCancelled { outcome, .. } => {
                return Ok(Ended {
                    outcome: Outcome::Interrupted,
                    messages: outcome.messages.clone(),
                    paused: None,
                    grants: outcome.grants.clone(),
                });
            }
            AgentEvent::ResponseError { error, .. } => {
                return Err(CliError::Run(error.to_string()));
            }
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
    /// Sanitises the answer (when stdout is a terminal).
    answer: Option<Sanitizer>,
    /// Sanitises the reasoning on stderr.
    reasoning_text: Sanitizer,
    /// Whether reasoning text is being written (a newline ends it before the answer).
    reasoning: bool,
    /// Whether the answer's last character written was not a newline.
    open_line: bool,
    /// The text block written last: each model answer of a run has its own.
    block: Option<String>,
}

impl Screen {
    fn new(terminal: Terminal) -> Self {
        Screen {
            dim: terminal.stderr,
            answer: terminal.stdout.then(Sanitizer::default),
            ..Screen::default()
        }
    }

    fn show(
        &mut self,
        event: &AgentEvent,
        out: &mut impl Write,
        err: &mut impl Write,
    ) -> io::Result<()> {
        match event {
            AgentEvent::ContentDelta { text, block_id, .. } => {
                self.end_reasoning(err)?;
                // Another model answer (a round whose calls did not run, then the final
                // answer) starts on its own line instead of running on from the last one.
                if self.block.as_ref() != Some(block_id) {
                    self.end_line(out)?;
                    self.block = Some(block_id.clone());
                }
                match &mut self.answer {
                    Some(sanitizer) => write!(out, "{}", sanitizer.push(text))?,
                    None => write!(out, "{text}")?,
                }
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
                write!(err, "{}", self.reasoning_text.push(text))?;
                err.flush()?;
            }
            AgentEvent::ToolStart { name, input, .. } => {
                self.end_reasoning(err)?;
                self.end_line(out)?;
                writeln!(err, "[{}] {}", for_terminal(name), cut(&input.to_string()))?;
            }
            AgentEvent::ToolDone {
                name,
                output,
                error,
                ..
            } => {
                let name = for_terminal(name);
                match error {
                    Some(error) => writeln!(err, "[{name}] failed: {}", cut(error))?,
                    None => writeln!(err, "[{name}] → {}", cut(output))?,
                }
            }
            AgentEvent::ResponseCancelled { .. } => {
                self.end_reasoning(err)?;
                self.end_line(out)?;
                writeln!(err, "skein: cancelled")?;
            }
            AgentEvent::ResponseDone { outcome, .. } => {
                self.end_reasoning(err)?;
                self.end_line(out)?;
                if let Some(notice) = outcome.compression_notice() {
                    writeln!(err, "skein: note: {}", compression_note(&notice))?;
                }
            }
            AgentEvent::ResponseError { .. } => {
                self.end_reasoning(err)?;
                self.end_line(out)?;
            }
            _ => {}
        }
        Ok(())
    }

    /// The run paused for approval: what was being written ends before the question.
    fn pause(&mut self, out: &mut impl Write, err: &mut impl Write) -> io::Result<()> {
        self.end_reasoning(err)?;
        self.end_line(out)
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

/// What compression did, for people: above all, whether the model read the whole prompt.
fn compression_note(notice: &agent_loop::CompressionNotice) -> String {
    if notice.prompt_truncated {
        format!(
            "the prompt did not fit the model's context: texts over {} characters were cut in \
             the middle, so the model answered without reading all of it; send less, or split it",
            agent_loop::ATTACHMENT_TRUNCATE_CHARS
        )
    } else {
        "the conversation did not fit the model's context: earlier content was cut, summarised \
         or left out before the model answered"
            .to_owned()
    }
}

/// One line of at most [`SHOWN`] characters, sanitised.
fn cut(text: &str) -> String {
    let line = for_terminal(text).replace(['\n', '\t'], " ");
    match line.char_indices().nth(SHOWN) {
        Some((end, _)) => format!("{}…", &line[..end]),
        None => line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delta(text: &str, block: &str) -> AgentEvent {
        AgentEvent::ContentDelta {
            text: text.into(),
            block_id: block.into(),
            block_offset: 0,
        }
    }

    #[test]
    fn each_model_answer_starts_on_its_own_line() {
        let mut screen = Screen::new(Terminal::default());
        let (mut out, mut err) = (Vec::new(), Vec::new());
        for event in [
            delta("Let me ", "text-1"),
            delta("check.", "text-1"),
            delta("It is sunny.", "text-2"),
        ] {
            screen.show(&event, &mut out, &mut err).unwrap();
        }
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "Let me check.\nIt is sunny."
        );
        assert!(err.is_empty());
    }
}

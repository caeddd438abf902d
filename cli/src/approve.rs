//! Tool approval at the terminal: `--ask TOOL` makes calls of a tool wait for a yes, asked on
//! stderr and answered on stdin; `--yes-tools` trusts every tool (for scripts). Without a
//! terminal to ask at, a call that needs approval is declined, and the model and the user are
//! told how to allow it.

use std::io::Write;

use agent_loop::approval::{
    ApprovalGrants, ApprovalPolicy, Decision, Decisions, PausedRun, PendingCall, Requirement,
    ToolSelector,
};
use service::PreparedRun;
use tokio::io::{BufReader, Lines, Stdin};

use crate::CliError;
use crate::sanitize::for_terminal;

/// Where the answers come from: the terminal's lines, when stdin is one.
pub(crate) type Answers = Lines<BufReader<Stdin>>;

/// What the model reads when a call was declined for want of a terminal.
pub(crate) const NO_TERMINAL_REASON: &str = "no one could approve it: skein was not run at a \
     terminal, and --yes-tools was not given";

/// The approval settings of a `skein run` or `skein chat`, and the tools approved "always" in
/// its conversation so far.
#[derive(Debug, Default)]
pub(crate) struct Approval {
    policy: Option<ApprovalPolicy>,
    /// Tools approved "always": a chat keeps them from turn to turn.
    pub(crate) grants: ApprovalGrants,
}

impl Approval {
    /// From `--ask` (selectors) and `--yes-tools`.
    ///
    /// # Errors
    ///
    /// [`CliError::Usage`] naming every `--ask` value that is not a tool selector.
    pub(crate) fn from_args(ask: &[String], trust_all: bool) -> Result<Self, CliError> {
        if trust_all || ask.is_empty() {
            return Ok(Approval::default());
        }
        let mut problems = Vec::new();
        let mut policy = ApprovalPolicy::new();
        for text in ask {
            match text.parse::<ToolSelector>() {
                Ok(selector) => policy = policy.require(selector, Requirement::Always),
                Err(error) => problems.push(format!("--ask {text}: {error}")),
            }
        }
        if problems.is_empty() {
            Ok(Approval {
                policy: Some(policy),
                grants: ApprovalGrants::new(),
            })
        } else {
            Err(CliError::Usage(problems.join("; ")))
        }
    }

    /// `prepared` with this policy and these grants.
    pub(crate) fn apply(&self, prepared: PreparedRun) -> Result<PreparedRun, CliError> {
        match &self.policy {
            None => Ok(prepared),
            Some(policy) => prepared
                .with_approval(policy.clone(), self.grants.clone())
                .map_err(|error| CliError::Usage(error.to_string())),
        }
    }
}

/// One decision per pending call of `paused`: asked on `err` and read from `answers`, or,
/// without a terminal (`answers` is `None`), each declined with [`NO_TERMINAL_REASON`] and
/// the user told how to allow it. `None` when the user pressed Ctrl-C (or stdin ended) at
/// the prompt.
pub(crate) async fn decide(
    paused: &PausedRun,
    answers: Option<&mut Answers>,
    err: &mut impl Write,
) -> Result<Option<Decisions>, CliError> {
    let Some(answers) = answers else {
        let mut decisions = Decisions::new();
        for call in &paused.pending {
            writeln!(
                err,
                "skein: {} needs approval and there is no terminal to ask at, so it was \
                 declined; run skein in a terminal to answer, or pass --yes-tools to run every \
                 tool without asking",
                for_terminal(&call.name)
            )?;
            decisions = decisions.decide(call.id.clone(), Decision::reject(NO_TERMINAL_REASON));
        }
        return Ok(Some(decisions));
    };
    let mut decisions = Decisions::new();
    let mut always: Vec<String> = Vec::new();
    for call in &paused.pending {
        // A tool approved "always" a moment ago, for an earlier call of this round.
        if always.contains(&call.name) {
            decisions = decisions.decide(call.id.clone(), Decision::Approve);
            continue;
        }
        let Some(decision) = ask(call, answers, err).await? else {
            return Ok(None);
        };
        if decision == Decision::ApproveAlways {
            always.push(call.name.clone());
        }
        decisions = decisions.decide(call.id.clone(), decision);
    }
    Ok(Some(decisions))
}

/// Asks about `call` until the answer is y, n or a.
async fn ask(
    call: &PendingCall,
    answers: &mut Answers,
    err: &mut impl Write,
) -> Result<Option<Decision>, CliError> {
    let name = for_terminal(&call.name);
    writeln!(
        err,
        "skein: the model wants to run {name} with {}",
        for_terminal(&call.arguments)
    )?;
    loop {
        write!(
            err,
            "Run it? [y]es, [n]o (a reason may follow), [a]lways for {name} in this conversation: "
        )?;
        err.flush()?;
        let line = tokio::select! {
            line = answers.next_line() => line?,
            _ = tokio::signal::ctrl_c() => None,
        };
        let Some(line) = line else {
            writeln!(err)?;
            return Ok(None);
        };
        if let Some(decision) = read_answer(&line) {
            return Ok(Some(decision));
        }
    }
}

/// `y`/`yes`, `a`/`always`, or `n`/`no` with an optional reason after it.
fn read_answer(line: &str) -> Option<Decision> {
    let line = line.trim();
    let (word, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    match word.to_ascii_lowercase().as_str() {
        "y" | "yes" => Some(Decision::Approve),
        "a" | "always" => Some(Decision::ApproveAlways),
        "n" | "no" => Some(Decision::reject(match rest.trim() {
            "" => "the user said no at the terminal",
            reason => reason,
        })),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_read_by_their_first_word() {
        assert_eq!(read_answer("y"), Some(Decision::Approve));
        assert_eq!(read_answer(" YES "), Some(Decision::Approve));
        assert_eq!(read_answer("a"), Some(Decision::ApproveAlways));
        assert_eq!(
            read_answer("n not that file"),
            Some(Decision::reject("not that file"))
        );
        assert_eq!(
            read_answer("no"),
            Some(Decision::reject("the user said no at the terminal"))
        );
        assert_eq!(read_answer(""), None);
        assert_eq!(read_answer("maybe"), None);
    }

    #[test]
    fn bad_selectors_are_all_named() {
        let error = Approval::from_args(&["mcp:".into(), "ok".into(), "x:y".into()], false)
            .unwrap_err()
            .to_string();
        assert!(error.contains("--ask mcp:"), "{error}");
        assert!(error.contains("--ask x:y"), "{error}");
    }

    #[test]
    fn trusting_every_tool_asks_for_none() {
        let approval = Approval::from_args(&["*".into()], true).unwrap();
        assert!(approval.policy.is_none());
    }
}

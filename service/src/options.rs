//! The one rule for a run's sampling and limit options, applied by request planning
//! (`POST /v1/response`) and by `skein run` / `skein chat` alike, so that the same values are
//! refused with the same reasons whichever way a run is asked for.

use std::fmt;

/// Highest output token limit a run may ask for. No provider's model writes more than a few
/// hundred thousand tokens in one answer; a larger value is a mistake, not a wish.
pub const MAX_OUTPUT_TOKENS_LIMIT: u32 = 1 << 20;

/// Lowest and highest sampling temperature (every provider accepts this range, some less).
pub const TEMPERATURE_RANGE: std::ops::RangeInclusive<f64> = 0.0..=2.0;

/// A run option checked by [`check_run_options`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RunOption {
    /// The sampling temperature.
    Temperature,
    /// The output token limit.
    MaxTokens,
    /// The tool rounds before the model must answer.
    MaxRounds,
}

impl RunOption {
    /// The request field naming it: `temperature`, `max_tokens` or `tools.max_tool_calls`.
    pub const fn field(self) -> &'static str {
        match self {
            RunOption::Temperature => "temperature",
            RunOption::MaxTokens => "max_tokens",
            RunOption::MaxRounds => "tools.max_tool_calls",
        }
    }

    /// The command-line flag naming it: `--temperature`, `--max-tokens` or `--max-rounds`.
    pub const fn flag(self) -> &'static str {
        match self {
            RunOption::Temperature => "--temperature",
            RunOption::MaxTokens => "--max-tokens",
            RunOption::MaxRounds => "--max-rounds",
        }
    }
}

/// A run option with a value no run can take: which one, and the reason (which says what
/// values are accepted). Displayed as the reason alone, so each front end names the option its
/// own way (a request field, a flag) around the same words.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct OptionProblem {
    /// The option.
    pub option: RunOption,
    /// What is wrong with its value and what to send instead.
    pub reason: String,
}

impl OptionProblem {
    fn new(option: RunOption, reason: impl Into<String>) -> Self {
        OptionProblem {
            option,
            reason: reason.into(),
        }
    }

    /// The problem as a command-line error: `--temperature: must be between 0 and 2`.
    pub fn for_flag(&self) -> impl fmt::Display + '_ {
        FlagProblem(self)
    }
}

struct FlagProblem<'a>(&'a OptionProblem);

impl fmt::Display for FlagProblem<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.0.option.flag(), self.0.reason)
    }
}

/// The sampling and limit options of a run, as asked for (`None`: the default).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RunOptions {
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// Output token limit.
    pub max_tokens: Option<u32>,
    /// Tool rounds before the model must answer.
    pub max_rounds: usize,
}

/// Checks a sampling temperature: a finite number in [`TEMPERATURE_RANGE`] (NaN and the
/// infinities are refused).
pub fn check_temperature(temperature: f64) -> Result<f64, OptionProblem> {
    if temperature.is_finite() && TEMPERATURE_RANGE.contains(&temperature) {
        Ok(temperature)
    } else {
        Err(OptionProblem::new(
            RunOption::Temperature,
            "must be between 0 and 2",
        ))
    }
}

/// Checks an output token limit: at least 1, at most [`MAX_OUTPUT_TOKENS_LIMIT`].
pub fn check_max_tokens(tokens: u32) -> Result<u32, OptionProblem> {
    match tokens {
        0 => Err(OptionProblem::new(
            RunOption::MaxTokens,
            "must be at least 1",
        )),
        n if n > MAX_OUTPUT_TOKENS_LIMIT => Err(OptionProblem::new(
            RunOption::MaxTokens,
            format!("must be at most {MAX_OUTPUT_TOKENS_LIMIT}"),
        )),
        n => Ok(n),
    }
}

/// Checks a number of tool rounds against the most allowed (`ServiceConfig::max_tool_rounds`
/// for a server, [`DEFAULT_MAX_TOOL_ROUNDS`](crate::config::DEFAULT_MAX_TOOL_ROUNDS) for the
/// CLI).
pub fn check_max_rounds(rounds: usize, allowed: u32) -> Result<usize, OptionProblem> {
    if rounds > allowed as usize {
        Err(OptionProblem::new(
            RunOption::MaxRounds,
            format!("must be at most {allowed}: no more tool rounds are allowed"),
        ))
    } else {
        Ok(rounds)
    }
}

/// Every problem of `options` (empty when the run can take them), in the order temperature,
/// output tokens, tool rounds; `allowed_rounds` as for [`check_max_rounds`].
pub fn check_run_options(options: &RunOptions, allowed_rounds: u32) -> Vec<OptionProblem> {
    let mut problems = Vec::new();
    if let Some(Err(problem)) = options.temperature.map(check_temperature) {
        problems.push(problem);
    }
    if let Some(Err(problem)) = options.max_tokens.map(check_max_tokens) {
        problems.push(problem);
    }
    if let Err(problem) = check_max_rounds(options.max_rounds, allowed_rounds) {
        problems.push(problem);
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_what_no_run_can_take() {
        for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -0.1, 2.01] {
            assert_eq!(
                check_temperature(bad).unwrap_err().reason,
                "must be between 0 and 2",
                "{bad}"
            );
        }
        assert_eq!(check_temperature(0.0), Ok(0.0));
        assert_eq!(check_temperature(2.0), Ok(2.0));
        assert_eq!(
            check_max_tokens(0).unwrap_err().reason,
            "must be at least 1"
        );
        assert!(check_max_tokens(MAX_OUTPUT_TOKENS_LIMIT + 1).is_err());
        assert_eq!(check_max_tokens(1), Ok(1));
        assert!(check_max_rounds(51, 50).is_err());
        assert_eq!(check_max_rounds(0, 50), Ok(0));

        let all = check_run_options(
            &RunOptions {
                temperature: Some(f64::NAN),
                max_tokens: Some(0),
                max_rounds: 1000,
            },
            50,
        );
        let named: Vec<_> = all.iter().map(|p| p.option.field()).collect();
        assert_eq!(named, ["temperature", "max_tokens", "tools.max_tool_calls"]);
        assert_eq!(
            all[0].for_flag().to_string(),
            "--temperature: must be between 0 and 2"
        );
        assert!(check_run_options(&RunOptions::default(), 50).is_empty());
    }
}

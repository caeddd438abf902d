//! The figures of a chaos run, and which goals they meet.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use bench::stats::percentile;

/// Everything measured.
#[derive(Debug, Default)]
pub(crate) struct Figures {
    pub(crate) backend: String,
    pub(crate) replicas: usize,
    pub(crate) runs: usize,
    pub(crate) streamed: usize,
    pub(crate) accepted: usize,
    /// Runs per final status, as `GET /v1/responses/{id}` showed it at the end.
    pub(crate) statuses: BTreeMap<String, usize>,
    pub(crate) kills: usize,
    pub(crate) runs_held_at_kills: usize,
    pub(crate) takeovers: Vec<Duration>,
    pub(crate) not_taken_over: usize,
    pub(crate) segments: usize,
    pub(crate) differing_segments: usize,
    pub(crate) lost_nodes: usize,
    pub(crate) duplicated_nodes: usize,
    pub(crate) model_calls_again: usize,
    /// Completed runs whose record names no last node.
    pub(crate) no_last_node: usize,
    pub(crate) protocol_errors: usize,
    pub(crate) seen_by_other_token: usize,
    pub(crate) replica_problems: Vec<String>,
    pub(crate) duration: Duration,
    pub(crate) seed: u64,
}

impl Figures {
    fn count(&self, status: &str) -> usize {
        self.statuses.get(status).copied().unwrap_or(0)
    }

    /// Runs whose final status is terminal.
    pub(crate) fn terminal(&self) -> usize {
        ["completed", "failed", "cancelled", "incomplete"]
            .iter()
            .map(|status| self.count(status))
            .sum()
    }

    /// The goals missed, one line each; empty when all are met.
    pub(crate) fn missed(&self) -> Vec<String> {
        let mut missed = Vec::new();
        let mut goal = |met: bool, what: String| {
            if !met {
                missed.push(what);
            }
        };
        goal(
            self.accepted == self.runs,
            format!("{} of {} runs were accepted", self.accepted, self.runs),
        );
        goal(
            self.terminal() == self.runs,
            format!(
                "{} of {} runs reached a terminal state",
                self.terminal(),
                self.runs
            ),
        );
        // The provider never fails and nothing cancels: every run ends completed, those taken
        // over mid-run too (an agent's tool call in flight answered by the integrity rules).
        goal(
            self.count("completed") == self.runs,
            format!(
                "{} of {} runs completed",
                self.count("completed"),
                self.runs
            ),
        );
        goal(
            self.no_last_node == 0,
            format!(
                "{} completed runs' records name no last node",
                self.no_last_node
            ),
        );
        goal(
            self.lost_nodes == 0,
            format!("{} nodes lost", self.lost_nodes),
        );
        goal(
            self.duplicated_nodes == 0,
            format!("{} nodes duplicated", self.duplicated_nodes),
        );
        goal(
            self.differing_segments == 0,
            format!(
                "{} resumed streams differ from the full replay",
                self.differing_segments
            ),
        );
        goal(
            self.not_taken_over == 0,
            format!(
                "{} runs held by a killed replica were not taken over",
                self.not_taken_over
            ),
        );
        goal(
            self.protocol_errors == 0,
            format!(
                "{} protocol errors (see the notes above)",
                self.protocol_errors
            ),
        );
        goal(
            self.seen_by_other_token == 0,
            format!(
                "{} runs were readable with another token",
                self.seen_by_other_token
            ),
        );
        missed.extend(self.replica_problems.iter().cloned());
        missed
    }

    /// The Markdown table of the figures.
    pub(crate) fn table(&self) -> String {
        let mut sorted: Vec<f64> = self
            .takeovers
            .iter()
            .map(|taken| taken.as_secs_f64())
            .collect();
        sorted.sort_by(f64::total_cmp);
        let seconds = |p| percentile(&sorted, p).map_or("—".to_owned(), |s| format!("{s:.2} s"));
        let statuses = self
            .statuses
            .iter()
            .map(|(status, count)| format!("{status} {count}"))
            .collect::<Vec<_>>()
            .join(", ");
        let mut text = String::new();
        let rows = [
            (
                "backend",
                format!(
                    "{} ({} replica{})",
                    self.backend,
                    self.replicas,
                    if self.replicas == 1 { "" } else { "s" }
                ),
            ),
            (
                "background runs",
                format!("{} ({} with `stream: true`)", self.runs, self.streamed),
            ),
            (
                "runs that reached a terminal state (goal: all)",
                format!("{} / {} ({statuses})", self.terminal(), self.runs),
            ),
            (
                "kill -9 (each followed by a restart)",
                format!(
                    "{} ({} runs held by the killed replica)",
                    self.kills, self.runs_held_at_kills
                ),
            ),
            (
                "takeover time p50 / p99 (kill to the next stored event)",
                format!(
                    "{} / {} ({} takeovers, {} missing)",
                    seconds(0.5),
                    seconds(0.99),
                    self.takeovers.len(),
                    self.not_taken_over
                ),
            ),
            ("nodes lost (goal: 0)", self.lost_nodes.to_string()),
            (
                "nodes duplicated (goal: 0)",
                self.duplicated_nodes.to_string(),
            ),
            (
                "resumed streams that differ from the full replay (goal: 0)",
                format!("{} of {}", self.differing_segments, self.segments),
            ),
            (
                "model calls made again after a kill",
                self.model_calls_again.to_string(),
            ),
            (
                "completed runs whose record names no last node (goal: 0)",
                self.no_last_node.to_string(),
            ),
            (
                "runs another token could read (goal: 0)",
                self.seen_by_other_token.to_string(),
            ),
            (
                "duration",
                format!("{:.1} s (seed {})", self.duration.as_secs_f64(), self.seed),
            ),
        ];
        let _ = writeln!(text, "| measure | figure |\n|---|---|");
        for (measure, figure) in rows {
            let _ = writeln!(text, "| {measure} | {figure} |");
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clean_run_meets_every_goal() {
        let mut figures = Figures {
            runs: 2,
            accepted: 2,
            ..Figures::default()
        };
        figures.statuses.insert("completed".to_owned(), 2);
        figures.takeovers = vec![Duration::from_millis(3200), Duration::from_millis(3900)];
        assert!(figures.missed().is_empty(), "{:?}", figures.missed());
        assert!(
            figures
                .table()
                .contains("| 3.20 s / 3.90 s (2 takeovers, 0 missing) |")
        );
        figures.lost_nodes = 1;
        assert_eq!(figures.missed(), ["1 nodes lost"]);
    }
}

//! The harness's command line.

use std::path::PathBuf;
use std::time::Duration;

/// The usage text.
pub(crate) const USAGE: &str = "\
follow --skein PATH --work-dir DIR --pg-url URL
       [--runs N] [--concurrency N] [--deltas N] [--delta-ms MS]

Starts two `skein serve` replicas (A and B) on the PostgreSQL database at URL and starts N
background streaming runs (default 60) on A, C at a time (default 20), whose model streams
N deltas (default 200) MS apart (default 10). Each run is read live by its POST client on A and
followed with GET /v1/responses/{id}?stream=true on B and on A; prints the delay of each
follower behind the POST client per event (p50/p90/p99/max), and fails when a follower's bytes
differ from the POST client's or a follower misses an event.";

/// What one invocation does.
#[derive(Clone, Debug)]
pub(crate) struct Options {
    pub(crate) skein: PathBuf,
    pub(crate) work_dir: PathBuf,
    pub(crate) pg_url: String,
    pub(crate) runs: usize,
    pub(crate) concurrency: usize,
    pub(crate) deltas: usize,
    pub(crate) delta_delay: Duration,
}

impl Options {
    /// Reads `args` (without the program name); every problem is named at once.
    pub(crate) fn parse(args: &[String]) -> Result<Self, String> {
        let mut skein = None;
        let mut work_dir = None;
        let mut pg_url = None;
        let mut numbers: [(&str, u64); 4] = [
            ("--runs", 60),
            ("--concurrency", 20),
            ("--deltas", 200),
            ("--delta-ms", 10),
        ];
        let mut problems = Vec::new();
        let mut args = args.iter();
        while let Some(flag) = args.next() {
            let Some(value) = args.next() else {
                problems.push(format!("`{flag}` needs a value"));
                break;
            };
            match flag.as_str() {
                "--skein" => skein = Some(PathBuf::from(value)),
                "--work-dir" => work_dir = Some(PathBuf::from(value)),
                "--pg-url" => pg_url = Some(value.clone()),
                _ => match numbers.iter_mut().find(|(name, _)| name == flag) {
                    Some((_, slot)) => match value.parse() {
                        Ok(number) => *slot = number,
                        Err(_) => {
                            problems.push(format!("`{flag}` takes a whole number, got `{value}`"))
                        }
                    },
                    None => problems.push(format!("unknown option `{flag}`")),
                },
            }
        }
        for (name, value) in &numbers[..3] {
            if *value == 0 {
                problems.push(format!("`{name}` must be at least 1"));
            }
        }
        let [runs, concurrency, deltas, delta_ms] = numbers.map(|(_, value)| value);
        let missing = |name: &str, problems: &mut Vec<String>| {
            problems.push(format!("`{name}` is required"));
        };
        if skein.is_none() {
            missing("--skein", &mut problems);
        }
        if work_dir.is_none() {
            missing("--work-dir", &mut problems);
        }
        if pg_url.is_none() {
            missing("--pg-url", &mut problems);
        }
        match (skein, work_dir, pg_url) {
            (Some(skein), Some(work_dir), Some(pg_url)) if problems.is_empty() => Ok(Options {
                skein,
                work_dir,
                pg_url,
                runs: runs as usize,
                concurrency: concurrency as usize,
                deltas: deltas as usize,
                delta_delay: Duration::from_millis(delta_ms),
            }),
            _ => Err(problems.join("; ")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn defaults_fill_what_is_not_given() {
        let options = Options::parse(&args(
            "--skein s --work-dir w --pg-url postgres://x --runs 5",
        ))
        .unwrap();
        assert_eq!(options.runs, 5);
        assert_eq!(options.concurrency, 20);
        assert_eq!(options.delta_delay, Duration::from_millis(10));
    }

    #[test]
    fn every_problem_is_named_at_once() {
        let err = Options::parse(&args("--runs zero --deltas 0 --bogus 1")).unwrap_err();
        for part in [
            "`--runs` takes a whole number",
            "`--deltas` must be at least 1",
            "unknown option `--bogus`",
            "`--skein` is required",
            "`--pg-url` is required",
        ] {
            assert!(err.contains(part), "{part} not in {err}");
        }
    }
}

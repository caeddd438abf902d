//! The harness's command line.

use std::path::PathBuf;
use std::time::Duration;

/// The usage text.
pub(crate) const USAGE: &str = "\
chaos-runs --skein PATH --work-dir DIR (--pg-url URL | --sqlite)
           [--replicas N] [--runs N] [--kills N] [--lease-ttl SECS] [--chunk-ms MS]
           [--seed N]

Drives background runs (`background: true` on POST /v1/responses) through `skein serve`
replicas that it kills with SIGKILL at random instants and restarts, and checks that every run
ends, that the conversation tree holds each run's rounds exactly once, and that every resumed
stream is the full replay's suffix, byte for byte. PostgreSQL: --replicas (default 3) on the
database at URL (it must be empty); --sqlite: one replica on a SQLite file in DIR. Defaults:
100 runs and 10 kills on PostgreSQL, 20 runs and 4 kills on SQLite; a lease ttl of 3 s; the
loopback provider sends a chunk every 40 ms; seed from the clock (printed, to replay a run).";

/// Where the replicas keep their runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Backend {
    /// Several replicas on one PostgreSQL database.
    Postgres(String),
    /// One replica on a SQLite file (in the work directory).
    Sqlite,
}

/// What one invocation does.
#[derive(Clone, Debug)]
pub(crate) struct Options {
    pub(crate) skein: PathBuf,
    pub(crate) work_dir: PathBuf,
    pub(crate) backend: Backend,
    pub(crate) replicas: usize,
    pub(crate) runs: usize,
    pub(crate) kills: usize,
    pub(crate) lease_ttl: Duration,
    pub(crate) chunk_delay: Duration,
    pub(crate) seed: u64,
}

impl Options {
    /// Reads `args` (without the program name); every problem is named at once.
    pub(crate) fn parse(args: &[String]) -> Result<Self, String> {
        let mut skein = None;
        let mut work_dir = None;
        let mut pg_url = None;
        let mut sqlite = false;
        let mut numbers: [(&str, Option<u64>); 6] = [
            ("--replicas", None),
            ("--runs", None),
            ("--kills", None),
            ("--lease-ttl", None),
            ("--chunk-ms", None),
            ("--seed", None),
        ];
        let mut problems = Vec::new();
        let mut args = args.iter();
        while let Some(flag) = args.next() {
            if flag == "--sqlite" {
                sqlite = true;
                continue;
            }
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
                        Ok(number) => *slot = Some(number),
                        Err(_) => {
                            problems.push(format!("`{flag}` takes a whole number, got `{value}`"))
                        }
                    },
                    None => problems.push(format!("unknown option `{flag}`")),
                },
            }
        }
        let backend = match (pg_url, sqlite) {
            (Some(url), false) => Some(Backend::Postgres(url)),
            (None, true) => Some(Backend::Sqlite),
            (Some(_), true) => {
                problems.push("give --pg-url or --sqlite, not both".to_owned());
                None
            }
            (None, false) => {
                problems.push("give --pg-url URL or --sqlite".to_owned());
                None
            }
        };
        if skein.is_none() {
            problems.push("--skein PATH is required".to_owned());
        }
        if work_dir.is_none() {
            problems.push("--work-dir DIR is required".to_owned());
        }
        let [replicas, runs, kills, lease_ttl, chunk_ms, seed] = numbers.map(|(_, value)| value);
        let on_sqlite = backend == Some(Backend::Sqlite);
        if on_sqlite && replicas.is_some_and(|n| n != 1) {
            problems.push("--sqlite runs one replica (SQLite is one process's store)".to_owned());
        }
        if replicas == Some(0) || runs == Some(0) || lease_ttl == Some(0) {
            problems.push("--replicas, --runs and --lease-ttl must be at least 1".to_owned());
        }
        match (skein, work_dir, backend) {
            (Some(skein), Some(work_dir), Some(backend)) if problems.is_empty() => Ok(Options {
                skein,
                work_dir,
                backend,
                replicas: if on_sqlite {
                    1
                } else {
                    replicas.unwrap_or(3) as usize
                },
                runs: runs.unwrap_or(if on_sqlite { 20 } else { 100 }) as usize,
                kills: kills.unwrap_or(if on_sqlite { 4 } else { 10 }) as usize,
                lease_ttl: Duration::from_secs(lease_ttl.unwrap_or(3)),
                chunk_delay: Duration::from_millis(chunk_ms.unwrap_or(40)),
                seed: seed.unwrap_or_else(clock_seed),
            }),
            _ => Err(problems.join("; ")),
        }
    }
}

fn clock_seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |elapsed| elapsed.as_nanos() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Options, String> {
        Options::parse(&args.iter().map(|arg| (*arg).to_owned()).collect::<Vec<_>>())
    }

    #[test]
    fn defaults_follow_the_backend() {
        let pg = parse(&[
            "--skein",
            "s",
            "--work-dir",
            "d",
            "--pg-url",
            "postgres://x",
        ])
        .unwrap();
        assert_eq!((pg.replicas, pg.runs, pg.kills), (3, 100, 10));
        let lite = parse(&["--skein", "s", "--work-dir", "d", "--sqlite", "--seed", "7"]).unwrap();
        assert_eq!(
            (lite.replicas, lite.runs, lite.kills, lite.seed),
            (1, 20, 4, 7)
        );
    }

    #[test]
    fn every_problem_is_named_at_once() {
        let err = parse(&["--runs", "many", "--bogus", "1"]).unwrap_err();
        for expected in [
            "`--runs` takes a whole number",
            "unknown option `--bogus`",
            "--pg-url",
            "--skein",
        ] {
            assert!(err.contains(expected), "{err}");
        }
    }
}

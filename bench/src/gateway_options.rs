//! The options of the `gateway` harness, parsed in one place for the harness and for
//! `cargo xtask bench gateway` (which checks them before it builds anything).

use std::path::PathBuf;

use crate::Error;

/// The targets the harness can measure, by the id `--only` takes, in report order.
pub const TARGETS: [&str; 6] = [
    "direct",
    "skein",
    "skein-chat",
    "skein-responses",
    "nginx",
    "litellm",
];

/// The options' summary.
pub const USAGE: &str = "\
[--seconds S] [--concurrency 50,200] [--rounds N] [--deltas N] [--delay-ms MS]
[--only direct,skein,skein-chat,skein-responses,nginx,litellm]
[--skein PATH] [--baseline-skein PATH] [--nginx PATH | --nginx-note TEXT]
[--litellm PATH | --litellm-note TEXT]
[--work-dir DIR] [--provider-nagle on|off] [--samples-dir DIR]";

/// What the harness is asked to do.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// Seconds of load per row.
    pub seconds: u64,
    /// The numbers of concurrent streams, one set of rounds each.
    pub concurrency: Vec<usize>,
    /// Rounds per concurrency; each round measures every target once, in the same order, so
    /// that a Skein row and the nginx row of one round saw the same machine.
    pub rounds: usize,
    /// Deltas per answer.
    pub deltas: usize,
    /// Milliseconds between two deltas of one answer.
    pub delay_ms: u64,
    /// The `skein` binary (its rows are skipped without it).
    pub skein: Option<PathBuf>,
    /// Another `skein` binary (the build before a change) measured beside `skein` in every
    /// round, in alternating order, so that the two builds compare on the same machine state.
    pub baseline_skein: Option<PathBuf>,
    /// The nginx executable (its rows are skipped without it).
    pub nginx: Option<PathBuf>,
    /// Why nginx is not measured, shown in its rows.
    pub nginx_note: Option<String>,
    /// LiteLLM's `litellm` executable (its rows are skipped without it).
    pub litellm: Option<PathBuf>,
    /// Why LiteLLM is not measured, shown in its rows.
    pub litellm_note: Option<String>,
    /// The target ids to measure (all when `None`).
    pub only: Option<Vec<String>>,
    /// Where logs, configurations and stores go (a temporary folder when `None`).
    pub work_dir: Option<PathBuf>,
    /// Serve the provider with `server::testing::StreamingProvider` instead of the harness's
    /// own provider (`on`).
    pub provider_nagle: bool,
    /// Where every stream's timings are written, one file per row.
    pub samples_dir: Option<PathBuf>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            seconds: 20,
            concurrency: vec![50, 200],
            rounds: 3,
            deltas: 500,
            delay_ms: 1,
            skein: None,
            baseline_skein: None,
            nginx: None,
            nginx_note: None,
            litellm: None,
            litellm_note: None,
            only: None,
            work_dir: None,
            provider_nagle: false,
            samples_dir: None,
        }
    }
}

impl Options {
    /// Reads `--name value` pairs over the defaults.
    pub fn parse(args: &[String]) -> Result<Options, Error> {
        let mut options = Options::default();
        for pair in args.chunks(2) {
            let [name, value] = pair else {
                return Err(usage(format!("`{}` needs a value", pair[0])));
            };
            let number = |text: &str| {
                text.trim()
                    .parse::<u64>()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or_else(|| usage(format!("{name}: `{text}` is not a positive number")))
            };
            let path = || Some(PathBuf::from(value));
            match name.as_str() {
                "--seconds" => options.seconds = number(value)?,
                "--concurrency" => {
                    options.concurrency = value
                        .split(',')
                        .map(|n| number(n).map(|n| n as usize))
                        .collect::<Result<_, _>>()?;
                }
                "--rounds" => options.rounds = number(value)? as usize,
                "--deltas" => options.deltas = number(value)? as usize,
                "--delay-ms" => options.delay_ms = number(value)?,
                "--skein" => options.skein = path(),
                "--baseline-skein" => options.baseline_skein = path(),
                "--nginx" => options.nginx = path(),
                "--nginx-note" => options.nginx_note = Some(value.clone()),
                "--litellm" => options.litellm = path(),
                "--litellm-note" => options.litellm_note = Some(value.clone()),
                "--only" => {
                    let ids: Vec<String> = value.split(',').map(str::to_owned).collect();
                    if let Some(unknown) = ids.iter().find(|id| !TARGETS.contains(&id.as_str())) {
                        return Err(usage(format!(
                            "--only: `{unknown}` is not a target (one of {})",
                            TARGETS.join(", ")
                        )));
                    }
                    options.only = Some(ids);
                }
                "--work-dir" => options.work_dir = path(),
                "--samples-dir" => options.samples_dir = path(),
                "--provider-nagle" => {
                    options.provider_nagle = match value.as_str() {
                        "on" => true,
                        "off" => false,
                        _ => {
                            return Err(usage(format!(
                                "--provider-nagle: `{value}` is not on or off"
                            )));
                        }
                    }
                }
                other => return Err(usage(format!("unknown option `{other}`"))),
            }
        }
        Ok(options)
    }

    /// Whether the target `id` (one of [`TARGETS`]) is to be measured.
    pub fn wants(&self, id: &str) -> bool {
        self.only
            .as_ref()
            .is_none_or(|only| only.iter().any(|wanted| wanted == id))
    }
}

fn usage(message: String) -> Error {
    Error::Usage {
        message,
        usage: USAGE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn options_override_the_defaults() {
        let options = Options::parse(&args("--concurrency 50 --rounds 5 --only nginx,skein-chat"))
            .expect("valid options");
        assert_eq!(options.concurrency, [50]);
        assert_eq!(options.rounds, 5);
        assert!(options.wants("nginx") && !options.wants("litellm"));
        assert_eq!(options.seconds, Options::default().seconds);
    }

    #[test]
    fn unknown_options_targets_and_missing_values_are_refused() {
        for bad in ["--fast 1", "--only relay", "--seconds", "--rounds 0"] {
            assert!(Options::parse(&args(bad)).is_err(), "{bad} was accepted");
        }
    }
}

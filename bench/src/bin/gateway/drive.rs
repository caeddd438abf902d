//! The driver: every round of every target at every concurrency, then the report.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bench::gateway_options::Options;

use crate::measure::{Measured, Outcome, measure};
use crate::processes::Process;
use crate::report::{print_goals, print_row_line, print_summary, print_table};
use crate::runtime;
use crate::targets::{
    BodyFn, CHAT_SHELL_EVENTS, Kind, RESPONSES_EVENTS, Reader, Target, chat_completions_body,
    chat_shell_body, responses_body,
};

/// One row of the report: one target, one concurrency, one round.
pub(crate) struct Row {
    pub(crate) kind: Kind,
    /// Whether this is the `--baseline-skein` build's row.
    pub(crate) baseline: bool,
    pub(crate) concurrency: usize,
    /// 1 to `--rounds`.
    pub(crate) round: usize,
    pub(crate) measured: Option<Measured>,
    /// Why the row has no figures, or what to know about them.
    pub(crate) note: Option<String>,
}

impl Row {
    pub(crate) fn name(&self) -> String {
        name(self.kind, self.baseline)
    }
}

/// A target's name, marked when it is the baseline build's.
pub(crate) fn name(kind: Kind, baseline: bool) -> String {
    if baseline {
        format!("{} (baseline)", kind.name())
    } else {
        kind.name().to_owned()
    }
}

pub(crate) fn drive(options: Options) -> Result<(), String> {
    let runtime = runtime()?;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let work_dir = match &options.work_dir {
        Some(dir) => dir.clone(),
        None => std::env::temp_dir().join(format!("skein-gateway-{}", std::process::id())),
    };
    std::fs::create_dir_all(&work_dir)
        .map_err(|err| format!("cannot create {}: {err}", work_dir.display()))?;
    println!(
        "gateway: {} deltas per answer {} ms apart; {} s of load per row at {:?} concurrent \
         streams, {} rounds; logs in {}",
        options.deltas,
        options.delay_ms,
        options.seconds,
        options.concurrency,
        options.rounds,
        work_dir.display()
    );
    let expected: Arc<str> = Arc::from(
        (0..options.deltas)
            .map(|i| format!("w{i} "))
            .collect::<String>(),
    );
    let mut rows = Vec::new();
    for &concurrency in &options.concurrency {
        for round in 1..=options.rounds {
            for kind in Kind::ALL
                .into_iter()
                .filter(|kind| options.wants(kind.id()))
            {
                for baseline in builds(&options, kind, round) {
                    let at = RowAt {
                        kind,
                        baseline,
                        concurrency,
                        round,
                    };
                    eprintln!(
                        "\n==> {} at {concurrency} streams, round {round}",
                        name(kind, baseline)
                    );
                    let row = run_row(&runtime, &options, &work_dir, at, &expected)
                        .unwrap_or_else(|message| at.row(None, Some(message)));
                    print_row_line(&row);
                    rows.push(row);
                }
            }
        }
    }
    println!();
    print_table(&rows);
    print_summary(&rows, &options);
    print_goals(&rows, &options);
    let skein_failures: usize = rows
        .iter()
        .filter(|row| row.kind.is_skein() || row.kind == Kind::Direct)
        .filter_map(|row| row.measured.as_ref())
        .map(|measured| measured.failed)
        .sum();
    let mut unmeasured: Vec<String> = rows
        .iter()
        .filter(|row| {
            row.measured.is_none() && matches!(row.kind, Kind::Direct | Kind::SkeinResponse)
        })
        .map(Row::name)
        .collect();
    unmeasured.dedup();
    if !unmeasured.is_empty() {
        return Err(format!(
            "could not measure: {} (see the notes above and the logs in {})",
            unmeasured.join(", "),
            work_dir.display()
        ));
    }
    if skein_failures > 0 {
        return Err(format!(
            "{skein_failures} streams of the provider or of skein serve failed (logs in {})",
            work_dir.display()
        ));
    }
    if options.work_dir.is_none() {
        let _ = std::fs::remove_dir_all(&work_dir);
    }
    Ok(())
}

/// The builds a round measures of `kind` (`true`: the baseline): with a baseline, each Skein
/// target in both, the first of the two alternating from round to round.
fn builds(options: &Options, kind: Kind, round: usize) -> Vec<bool> {
    match (
        kind.is_skein() && options.baseline_skein.is_some(),
        round % 2,
    ) {
        (false, _) => vec![false],
        (true, 0) => vec![false, true],
        (true, _) => vec![true, false],
    }
}

/// Which row is being measured.
#[derive(Clone, Copy)]
struct RowAt {
    kind: Kind,
    baseline: bool,
    concurrency: usize,
    round: usize,
}

impl RowAt {
    fn row(self, measured: Option<Measured>, note: Option<String>) -> Row {
        Row {
            kind: self.kind,
            baseline: self.baseline,
            concurrency: self.concurrency,
            round: self.round,
            measured,
            note,
        }
    }
}

/// The `skein` a row runs: the `--baseline-skein` build for a baseline row, else the tree's.
fn skein_binary(options: &Options, baseline: bool) -> Option<&PathBuf> {
    if baseline {
        options.baseline_skein.as_ref()
    } else {
        options.skein.as_ref()
    }
}

/// Starts the row's processes, measures, stops them.
fn run_row(
    runtime: &tokio::runtime::Runtime,
    options: &Options,
    work_dir: &Path,
    at: RowAt,
    expected: &Arc<str>,
) -> Result<Row, String> {
    let RowAt {
        kind,
        baseline,
        concurrency,
        round,
    } = at;
    let build = if baseline { "-baseline" } else { "" };
    let tag = format!("{}{build}-{concurrency}-{round}", kind.id());
    let skip = |note: String| Ok(at.row(None, Some(note)));
    let relay_binary =
        match kind {
            Kind::Direct => None,
            Kind::SkeinResponse | Kind::SkeinChat | Kind::SkeinResponses => {
                match skein_binary(options, baseline) {
                    Some(path) => Some(path.clone()),
                    None => return skip("not measured: no --skein binary given".to_owned()),
                }
            }
            Kind::Nginx => match &options.nginx {
                Some(path) => Some(path.clone()),
                None => {
                    return skip(options.nginx_note.clone().unwrap_or_else(|| {
                        format!(
                            "not measured: no --nginx executable given; {}",
                            bench::nginx::INSTALL_HINT
                        )
                    }));
                }
            },
            Kind::LiteLlm => match &options.litellm {
                Some(path) => Some(path.clone()),
                None => {
                    return skip(options.litellm_note.clone().unwrap_or_else(|| {
                        "not measured: no --litellm executable given".to_owned()
                    }));
                }
            },
        };
    let binary = relay_binary.unwrap_or_default();

    let provider = Process::provider(options, work_dir, &tag)?;
    let base_url = provider.base_url.clone().unwrap_or_default();
    let (path, body, read): (_, BodyFn, _) = match kind {
        Kind::SkeinResponse => (
            "/v1/response",
            chat_shell_body,
            Reader::Named(CHAT_SHELL_EVENTS),
        ),
        Kind::SkeinResponses => (
            "/v1/responses",
            responses_body,
            Reader::Named(RESPONSES_EVENTS),
        ),
        _ => (
            "/v1/chat/completions",
            chat_completions_body,
            Reader::Chunks,
        ),
    };
    let relay = match kind {
        Kind::Direct => None,
        Kind::SkeinResponse | Kind::SkeinChat | Kind::SkeinResponses => {
            Some(Process::skein(&binary, work_dir, &tag, &base_url)?)
        }
        Kind::Nginx => Some(Process::nginx(
            &binary,
            work_dir,
            &tag,
            &base_url,
            concurrency,
        )?),
        Kind::LiteLlm => Some(Process::litellm(&binary, work_dir, &tag, &base_url)?),
    };
    let url = match &relay {
        Some(relay) => format!("http://{}{path}", relay.address),
        None => format!("{base_url}/chat/completions"),
    };
    let target = Target {
        name: kind.name(),
        url,
        body,
        read,
    };
    let endpoint = target.url.clone();
    let measured_process = relay.as_ref().unwrap_or(&provider);
    let health = relay.as_ref().map(|relay| relay.health_url.clone());
    let result = runtime.block_on(measure(
        target,
        health,
        measured_process,
        concurrency,
        options.seconds,
        Arc::clone(expected),
        options
            .samples_dir
            .as_ref()
            .map(|dir| dir.join(format!("{tag}.tsv"))),
    ));
    let relay_exit = relay.map(Process::stop).transpose();
    let provider_exit = provider.stop();
    let mut row = match result {
        Ok(Outcome::Measured(measured)) => at.row(Some(measured), None),
        Ok(Outcome::NotFound) => {
            return skip(format!(
                "skipped: POST {endpoint} answered 404 (this build does not have that \
                 endpoint yet)"
            ));
        }
        Err(message) => return Err(message),
    };
    let exits: Vec<String> = [relay_exit.err(), provider_exit.err()]
        .into_iter()
        .flatten()
        .collect();
    if !exits.is_empty() {
        row.note = Some(exits.join("; "));
    }
    Ok(row)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_baseline_row_runs_the_baseline_build() {
        let options = Options {
            skein: Some(PathBuf::from("/builds/after/skein")),
            baseline_skein: Some(PathBuf::from("/builds/before/skein")),
            ..Options::default()
        };
        assert_eq!(
            skein_binary(&options, true),
            Some(&PathBuf::from("/builds/before/skein"))
        );
        assert_eq!(
            skein_binary(&options, false),
            Some(&PathBuf::from("/builds/after/skein"))
        );
    }
}

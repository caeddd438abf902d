//! The report: a line per row as it ends, then a Markdown table of every row, the medians of
//! the paired rounds against nginx, and which goals are met.

use bench::gateway_options::Options;
use bench::stats::{median, percentile};

use crate::drive::{Row, name};
use crate::measure::{Measured, WARM_REQUESTS};
use crate::targets::Kind;

/// Skein's goals against nginx, as the median of the paired rounds: CPU per delta at most
/// this many times nginx's, per endpoint.
const CPU_GOALS: [(Kind, f64); 2] = [(Kind::SkeinChat, 1.6), (Kind::SkeinResponse, 1.8)];
/// Write syscalls per delta at most this many times nginx's, at [`WRITES_GOAL_STREAMS`].
const WRITES_GOAL: f64 = 1.5;
const WRITES_GOAL_STREAMS: usize = 200;
/// Time to first token p50 at most this many milliseconds above nginx's, at
/// [`TTFT_GOAL_STREAMS`].
const TTFT_GOAL_MS: f64 = 2.0;
const TTFT_GOAL_STREAMS: usize = 50;

fn ms(value: Option<f64>) -> String {
    value.map_or_else(|| "–".to_owned(), |ms| format!("{ms:.2} ms"))
}

fn number(value: Option<f64>, unit: &str) -> String {
    value.map_or_else(|| "–".to_owned(), |value| format!("{value:.2}{unit}"))
}

fn mib(kib: Option<u64>) -> String {
    kib.map_or_else(
        || "–".to_owned(),
        |kib| format!("{:.1} MiB", kib as f64 / 1024.0),
    )
}

pub(crate) fn print_row_line(row: &Row) {
    match &row.measured {
        Some(m) => eprintln!(
            "<== {} at {}, round {}: {} complete, {} failed in {:.1} s; TTFT p50 {}, p99 {} \
             (first event p50 {}, p99 {}); first {}, warm {}; CPU {} per delta, {} writes per \
             delta; peak RSS {}",
            row.name(),
            row.concurrency,
            row.round,
            m.completed,
            m.failed,
            m.wall.as_secs_f64(),
            ms(percentile(&m.ttft_ms, 0.5)),
            ms(percentile(&m.ttft_ms, 0.99)),
            ms(percentile(&m.ttfe_ms, 0.5)),
            ms(percentile(&m.ttfe_ms, 0.99)),
            ms(Some(m.first_ttft_ms)),
            ms(median(&m.warm_ttft_ms)),
            number(m.cpu_us_per_delta(), " µs"),
            number(m.writes_per_delta(), ""),
            mib(m.peak_rss_kib),
        ),
        None => eprintln!(
            "<== {} at {}, round {}: no figures",
            row.name(),
            row.concurrency,
            row.round
        ),
    }
    if let Some(note) = &row.note {
        eprintln!("    note: {note}");
    }
}

/// Every row as a Markdown table, then the notes and each row's details.
pub(crate) fn print_table(rows: &[Row]) {
    println!(
        "| target | streams | round | completed | failed | TTFT p50 | TTFT p99 | relay CPU per \
         delta (user + system) | writes per delta | peak RSS | first request TTFT | warm TTFT \
         (median of {WARM_REQUESTS}) |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for row in rows {
        match &row.measured {
            Some(m) => println!(
                "| {} | {} | {} | {} | {} | {} | {} | {} ({} + {}) | {} | {} | {} | {} |",
                row.name(),
                row.concurrency,
                row.round,
                m.completed,
                m.failed,
                ms(percentile(&m.ttft_ms, 0.5)),
                ms(percentile(&m.ttft_ms, 0.99)),
                number(m.cpu_us_per_delta(), " µs"),
                number(m.usage.and_then(|u| m.per_delta(u.user * 1e6)), ""),
                number(m.usage.and_then(|u| m.per_delta(u.system * 1e6)), ""),
                number(m.writes_per_delta(), ""),
                mib(m.peak_rss_kib),
                ms(Some(m.first_ttft_ms)),
                ms(median(&m.warm_ttft_ms)),
            ),
            None => println!(
                "| {} | {} | {} | – | – | – | – | – | – | – | – | – |",
                row.name(),
                row.concurrency,
                row.round
            ),
        }
    }
    println!();
    for row in rows {
        if let Some(note) = &row.note {
            println!(
                "- {} at {}, round {}: {note}",
                row.name(),
                row.concurrency,
                row.round
            );
        }
        if let Some(m) = &row.measured {
            let wall = m.wall.as_secs_f64();
            println!(
                "- {} at {}, round {}: {:.1} streams/s, {:.0} deltas/s over {wall:.1} s; relay \
                 CPU {} ({:.0} % of a core), client CPU {} ({:.0} %); time to first event p50 \
                 {}, p99 {}",
                row.name(),
                row.concurrency,
                row.round,
                m.completed as f64 / wall,
                m.deltas as f64 / wall,
                number(m.usage.map(|usage| usage.cpu()), " s"),
                100.0 * m.usage.map_or(0.0, |usage| usage.cpu()) / wall,
                number(m.client_cpu_seconds, " s"),
                100.0 * m.client_cpu_seconds.unwrap_or(0.0) / wall,
                ms(percentile(&m.ttfe_ms, 0.5)),
                ms(percentile(&m.ttfe_ms, 0.99)),
            );
        }
    }
}

/// One target's figures over the rounds of one concurrency, each beside nginx's of the same
/// round.
struct Paired {
    cpu_us: Vec<f64>,
    cpu_ratio: Vec<f64>,
    writes: Vec<f64>,
    writes_ratio: Vec<f64>,
    ttft_p50_ms: Vec<f64>,
    ttft_over_nginx_ms: Vec<f64>,
}

fn paired(rows: &[Row], kind: Kind, baseline: bool, concurrency: usize) -> Paired {
    let measured = |kind: Kind, baseline: bool, round: usize| {
        rows.iter()
            .find(|row| {
                row.kind == kind
                    && row.baseline == baseline
                    && row.concurrency == concurrency
                    && row.round == round
            })
            .and_then(|row| row.measured.as_ref())
    };
    let mut paired = Paired {
        cpu_us: Vec::new(),
        cpu_ratio: Vec::new(),
        writes: Vec::new(),
        writes_ratio: Vec::new(),
        ttft_p50_ms: Vec::new(),
        ttft_over_nginx_ms: Vec::new(),
    };
    let rounds = rows.iter().map(|row| row.round).max().unwrap_or(0);
    for round in 1..=rounds {
        let Some(m) = measured(kind, baseline, round) else {
            continue;
        };
        let nginx = measured(Kind::Nginx, false, round);
        let ratio = |of: Option<f64>, to: Option<f64>| of.zip(to).map(|(of, to)| of / to);
        if let Some(cpu) = m.cpu_us_per_delta() {
            paired.cpu_us.push(cpu);
        }
        if let Some(ratio) = ratio(
            m.cpu_us_per_delta(),
            nginx.and_then(Measured::cpu_us_per_delta),
        ) {
            paired.cpu_ratio.push(ratio);
        }
        if let Some(writes) = m.writes_per_delta() {
            paired.writes.push(writes);
        }
        if let Some(ratio) = ratio(
            m.writes_per_delta(),
            nginx.and_then(Measured::writes_per_delta),
        ) {
            paired.writes_ratio.push(ratio);
        }
        let p50 = |m: &Measured| percentile(&m.ttft_ms, 0.5);
        if let Some(ttft) = p50(m) {
            paired.ttft_p50_ms.push(ttft);
        }
        if let Some((ttft, nginx)) = p50(m).zip(nginx.and_then(p50)) {
            paired.ttft_over_nginx_ms.push(ttft - nginx);
        }
    }
    paired
}

/// The median over the rounds of each target's figures, and of its ratios to nginx's of the
/// same round.
pub(crate) fn print_summary(rows: &[Row], options: &Options) {
    println!(
        "\nmedians of the {} rounds (ratios and differences are taken per round, against \
         nginx's row of the same round, then their median):\n",
        options.rounds
    );
    println!(
        "| target | streams | relay CPU per delta | × nginx | writes per delta | × nginx | TTFT \
         p50 | − nginx's |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    let builds: &[bool] = if options.baseline_skein.is_some() {
        &[true, false]
    } else {
        &[false]
    };
    for &concurrency in &options.concurrency {
        for (kind, &baseline) in Kind::ALL
            .into_iter()
            .flat_map(|kind| builds.iter().map(move |build| (kind, build)))
        {
            let p = paired(rows, kind, baseline, concurrency);
            if p.cpu_us.is_empty() && p.ttft_p50_ms.is_empty() {
                continue;
            }
            println!(
                "| {} | {concurrency} | {} | {} | {} | {} | {} | {} |",
                name(kind, baseline),
                number(median(&p.cpu_us), " µs"),
                number(median(&p.cpu_ratio), "×"),
                number(median(&p.writes), ""),
                number(median(&p.writes_ratio), "×"),
                ms(median(&p.ttft_p50_ms)),
                median(&p.ttft_over_nginx_ms)
                    .map_or_else(|| "–".to_owned(), |ms| format!("{ms:+.2} ms")),
            );
        }
    }
}

/// The goals, met or not, for each Skein row.
pub(crate) fn print_goals(rows: &[Row], options: &Options) {
    println!("\ngoals (medians of the paired rounds):");
    let verdict = |met: bool| if met { "met" } else { "MISSED" };
    for row in rows {
        let Some(m) = &row.measured else { continue };
        if m.failed > 0 {
            println!(
                "- 0 failed streams: {} for {} at {}, round {} ({} failed)",
                verdict(false),
                row.name(),
                row.concurrency,
                row.round,
                m.failed
            );
        }
    }
    for &concurrency in &options.concurrency {
        for (kind, goal) in CPU_GOALS {
            if let Some(ratio) = median(&paired(rows, kind, false, concurrency).cpu_ratio) {
                println!(
                    "- CPU per delta at most {goal}× nginx's: {} for {} at {concurrency} \
                     ({ratio:.2}×)",
                    verdict(ratio <= goal),
                    kind.name()
                );
            }
        }
        for kind in Kind::SKEIN {
            let p = paired(rows, kind, false, concurrency);
            if concurrency == WRITES_GOAL_STREAMS
                && let Some(ratio) = median(&p.writes_ratio)
            {
                println!(
                    "- writes per delta at most {WRITES_GOAL}× nginx's: {} for {} at \
                     {concurrency} ({ratio:.2}×)",
                    verdict(ratio <= WRITES_GOAL),
                    kind.name()
                );
            }
            if concurrency == TTFT_GOAL_STREAMS
                && let Some(over) = median(&p.ttft_over_nginx_ms)
            {
                println!(
                    "- TTFT p50 at most {TTFT_GOAL_MS} ms above nginx's: {} for {} at \
                     {concurrency} ({over:+.2} ms)",
                    verdict(over <= TTFT_GOAL_MS),
                    kind.name()
                );
            }
        }
    }
    for &concurrency in &options.concurrency {
        for kind in Kind::SKEIN {
            let (mut met, mut rounds, mut worst) = (0, 0, None::<(f64, f64)>);
            for row in rows
                .iter()
                .filter(|row| row.kind == kind && !row.baseline && row.concurrency == concurrency)
            {
                let Some(m) = &row.measured else { continue };
                let Some(warm) = median(&m.warm_ttft_ms) else {
                    continue;
                };
                rounds += 1;
                if m.first_ttft_ms <= warm + 1.0 {
                    met += 1;
                }
                if worst.is_none_or(|(first, warm_of)| m.first_ttft_ms - warm > first - warm_of) {
                    worst = Some((m.first_ttft_ms, warm));
                }
            }
            if let Some((first, warm)) = worst {
                println!(
                    "- first request as fast as the rest (within 1 ms of the warm median): {} \
                     for {} at {concurrency} in {met} of {rounds} rounds (worst {first:.2} ms \
                     vs {warm:.2} ms)",
                    verdict(met == rounds),
                    kind.name()
                );
            }
        }
    }
}

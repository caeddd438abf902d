//! Load scenario (`cargo xtask bench`): N concurrent streaming clients for D seconds against a
//! server process, whose model is a loopback provider streaming `deltas` chunks per answer.
//!
//! ```text
//! cargo run --release -p bench --bin load -- --concurrency 200 --seconds 30 --deltas 500
//! ```
//!
//! The server runs in a child process (this harness, started with `--serve`), so its CPU time
//! can be read from `/proc/<pid>/stat` without the clients' and the provider's; the clients
//! and the provider (`server::testing::StreamingProvider`) run here. Every response is logged
//! into a SQLite file, as in production. A stream counts as good when it brings
//! `response.start`, exactly `deltas` `content.delta`s and `response.done`; anything else
//! (an HTTP error, a `response.error`, a stream that ends early) is a failure.

use std::io::{BufRead as _, BufReader, Write as _};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bench::procfs::{Usage, tree_usage};
use bench::stats::percentile;
use futures::StreamExt as _;
use providers::Provider;
use server::schema::Secret;
use server::testing::StreamingProvider;
use server::{Server, ServerConfig};
use service::ServiceConfig;
use service::config::ProviderBaseUrls;
use service::keys::ProviderKeys;
use tokio::sync::Mutex;

#[derive(Debug, Clone)]
struct Options {
    concurrency: usize,
    seconds: u64,
    deltas: usize,
    delay_ms: u64,
}

fn options() -> Result<Options, String> {
    let mut options = Options {
        concurrency: 200,
        seconds: 30,
        deltas: 500,
        delay_ms: 1,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    for pair in args.chunks(2) {
        let [name, value] = pair else {
            return Err(format!("`{}` needs a value", pair[0]));
        };
        let number = || {
            value
                .parse::<u64>()
                .map_err(|_| format!("{name}: `{value}` is not a number"))
        };
        match name.as_str() {
            "--concurrency" => options.concurrency = number()? as usize,
            "--seconds" => options.seconds = number()?,
            "--deltas" => options.deltas = number()? as usize,
            "--delay-ms" => options.delay_ms = number()?,
            other => {
                return Err(format!(
                    "unknown option `{other}`; use --concurrency N --seconds S --deltas N --delay-ms MS"
                ));
            }
        }
    }
    Ok(options)
}

fn main() -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|err| err.to_string())?;
    if std::env::args().nth(1).as_deref() == Some("--serve") {
        return runtime.block_on(serve());
    }
    let options = options()?;
    runtime.block_on(drive(options))
}

/// The child: a server on an ephemeral port (printed on stdout) until stdin closes.
/// `SKEIN_BENCH_PROVIDER` is the provider's base URL, `SKEIN_BENCH_DB` the log file.
async fn serve() -> Result<(), String> {
    let provider = std::env::var("SKEIN_BENCH_PROVIDER").map_err(|err| err.to_string())?;
    let db = std::env::var("SKEIN_BENCH_DB").map_err(|err| err.to_string())?;
    let mut keys = ProviderKeys::default();
    keys.set(Provider::OpenAi, Secret::new("sk-bench"));
    let config = ServerConfig {
        concurrency_per_caller: 1024,
        service: ServiceConfig {
            keys,
            base_urls: ProviderBaseUrls::from([(Provider::OpenAi, provider)]),
            store: db,
            ..ServiceConfig::default()
        },
        ..ServerConfig::default()
    };
    let server = Server::new(config).await.map_err(|err| err.to_string())?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|err| err.to_string())?;
    println!("{}", listener.local_addr().map_err(|err| err.to_string())?);
    std::io::stdout().flush().map_err(|err| err.to_string())?;
    let stdin_closed = async {
        let _ = tokio::task::spawn_blocking(|| {
            let mut sink = String::new();
            while std::io::stdin().read_line(&mut sink).is_ok_and(|n| n > 0) {}
        })
        .await;
    };
    server
        .serve(listener, stdin_closed)
        .await
        .map_err(|err| err.to_string())
}

/// What the clients saw.
#[derive(Default)]
struct Tally {
    good: AtomicUsize,
    failed: AtomicUsize,
    deltas: AtomicUsize,
    first_event_ms: Mutex<Vec<f64>>,
}

async fn drive(options: Options) -> Result<(), String> {
    let provider =
        StreamingProvider::start(options.deltas, Duration::from_millis(options.delay_ms))
            .await
            .map_err(|err| err.to_string())?;
    let dir = std::env::temp_dir().join(format!("skein-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|err| err.to_string())?;
    let db = dir.join("logs.db");
    let mut child = Command::new(std::env::current_exe().map_err(|err| err.to_string())?)
        .arg("--serve")
        .env("SKEIN_BENCH_PROVIDER", provider.base_url())
        .env("SKEIN_BENCH_DB", &db)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|err| format!("cannot start the server process: {err}"))?;
    let mut address = String::new();
    BufReader::new(child.stdout.take().ok_or("no stdout")?)
        .read_line(&mut address)
        .map_err(|err| err.to_string())?;
    let url = format!("http://{}/v1/response", address.trim());
    let pid = child.id();

    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(options.concurrency)
        .build()
        .map_err(|err| err.to_string())?;
    let tally = Arc::new(Tally::default());
    let cpu_before = tree_usage(pid).map(Usage::cpu);
    let started = Instant::now();
    let deadline = started + Duration::from_secs(options.seconds);
    let workers: Vec<_> = (0..options.concurrency)
        .map(|worker| {
            let client = client.clone();
            let url = url.clone();
            let tally = Arc::clone(&tally);
            let deltas = options.deltas;
            tokio::spawn(async move {
                let mut n = 0;
                while Instant::now() < deadline {
                    n += 1;
                    one_stream(&client, &url, deltas, &tally, worker, n).await;
                }
            })
        })
        .collect();
    for worker in workers {
        worker.await.map_err(|err| err.to_string())?;
    }
    let elapsed = started.elapsed();
    let cpu_after = tree_usage(pid).map(Usage::cpu);

    drop(child.stdin.take()); // the server shuts down gracefully
    let status = child.wait().map_err(|err| err.to_string())?;
    let _ = std::fs::remove_dir_all(&dir);

    let good = tally.good.load(Ordering::SeqCst);
    let failed = tally.failed.load(Ordering::SeqCst);
    let deltas = tally.deltas.load(Ordering::SeqCst);
    let mut first = tally.first_event_ms.lock().await.clone();
    first.sort_by(f64::total_cmp);
    println!(
        "load: {} clients x {} s, provider {} deltas/answer {} ms apart, server pid {pid} (exit: {status})",
        options.concurrency, options.seconds, options.deltas, options.delay_ms
    );
    println!(
        "streams: {good} complete, {failed} failed or lost; {:.1} s wall",
        elapsed.as_secs_f64()
    );
    println!(
        "throughput: {:.1} streams/s, {:.0} deltas/s",
        good as f64 / elapsed.as_secs_f64(),
        deltas as f64 / elapsed.as_secs_f64()
    );
    println!(
        "time to first event: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        percentile(&first, 0.50).unwrap_or(0.0),
        percentile(&first, 0.99).unwrap_or(0.0),
        first.last().copied().unwrap_or(0.0)
    );
    match (cpu_before, cpu_after) {
        (Some(before), Some(after)) if deltas > 0 => {
            let cpu = after - before;
            println!(
                "server CPU: {cpu:.2} s over {:.1} s wall ({:.0}% of a core); {:.2} µs per delta",
                elapsed.as_secs_f64(),
                100.0 * cpu / elapsed.as_secs_f64(),
                cpu * 1e6 / deltas as f64
            );
        }
        _ => println!("server CPU: not measured (needs /proc)"),
    }
    if failed > 0 {
        return Err(format!("{failed} streams failed or were lost"));
    }
    Ok(())
}

/// One streaming request: time to the first event, every delta counted, a terminal
/// `response.done` required.
async fn one_stream(
    client: &reqwest::Client,
    url: &str,
    deltas: usize,
    tally: &Tally,
    worker: usize,
    n: usize,
) {
    let body = serde_json::json!({
        "model_config": {"model_id": "gpt-4o-mini"},
        "input": {"text": format!("client {worker} request {n}")},
    });
    let sent = Instant::now();
    let response = match client.post(url).json(&body).send().await {
        Ok(response) if response.status().is_success() => response,
        Ok(response) => {
            eprintln!("HTTP {}", response.status());
            tally.failed.fetch_add(1, Ordering::SeqCst);
            return;
        }
        Err(err) => {
            eprintln!("request failed: {err}");
            tally.failed.fetch_add(1, Ordering::SeqCst);
            return;
        }
    };
    let mut events = eventsource_stream::EventStream::new(response.bytes_stream());
    let mut seen = 0;
    let mut first = true;
    let mut done = false;
    while let Some(event) = events.next().await {
        let Ok(event) = event else { break };
        if first {
            first = false;
            tally
                .first_event_ms
                .lock()
                .await
                .push(sent.elapsed().as_secs_f64() * 1000.0);
        }
        match event.event.as_str() {
            "content.delta" => seen += 1,
            "response.done" => done = true,
            "response.error" | "response.cancelled" => {
                eprintln!("{}: {}", event.event, event.data);
            }
            _ => {}
        }
    }
    tally.deltas.fetch_add(seen, Ordering::SeqCst);
    if done && seen == deltas {
        tally.good.fetch_add(1, Ordering::SeqCst);
    } else {
        eprintln!("lost stream: {seen} of {deltas} deltas, done: {done}");
        tally.failed.fetch_add(1, Ordering::SeqCst);
    }
}

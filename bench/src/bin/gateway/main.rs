//! Gateway scenario (`cargo xtask bench gateway`): `skein serve`, nginx and LiteLLM's proxy in
//! front of the same loopback provider, driven by the same client, beside the provider alone.
//!
//! ```text
//! cargo build --profile dist -p cli --bin skein
//! cargo build --release -p bench --bin gateway
//! target/release/gateway --skein target/dist/skein --nginx /usr/sbin/nginx \
//!     --litellm target/xtask-litellm/venv/bin/litellm --seconds 20 --concurrency 50,200
//! ```
//!
//! Every row of the report starts its processes afresh: the provider (a child process of this
//! harness started with `--provider`, streaming `deltas` OpenAI Chat Completions chunks per
//! answer, `delay-ms` apart: the bytes of `server::testing::StreamingProvider`) and, unless the
//! row is the provider itself, the relay in front of it. Then the client sends one request
//! alone (the first after start), five more one after another (the same request once
//! everything is warm), and then keeps `concurrency` streams going on keep-alive connections
//! for `seconds`, their starts spread over one answer's duration. Each concurrency runs
//! `rounds` rounds of every target in the same order, so that each Skein row has an nginx row
//! of the same round, measured minutes apart at most on the same shared machine: the ratios
//! of a round compare, absolute figures of different rounds less so.
//!
//! The provider sets `TCP_NODELAY` on its connections: every delta written while the previous
//! one is unacknowledged would otherwise wait for the reader's delayed ACK (about 40 ms on
//! Linux). `--provider-nagle on` serves `server::testing::StreamingProvider` instead of the
//! harness's own provider.
//!
//! A target is a name, a URL, a body builder and a reader of its server-sent events (which
//! events carry answer text, which one ends the stream, which one is an error). A stream counts
//! as complete only when its text is exactly the provider's (`w0 w1 … `) and its end marker
//! came; anything else (an HTTP error, an error event, a short or reordered text, a stream cut
//! early, no answer within two minutes) is a failure. Time to first token is measured from
//! sending the request to the first event that carries answer text; time to first event (any
//! event: Skein's `response.start` comes before the provider answers) is reported beside it.
//! `--samples-dir DIR` writes both for every stream, with its start time, to `DIR/<row>.tsv`.
//!
//! The relay's usage is that of its process tree (the process, every live descendant, and for
//! CPU time the children it has reaped), from `/proc/<pid>/stat` and `/proc/<pid>/io` before
//! and after the load: user and system CPU time, and write syscalls (`syscw`: the writes to
//! clients, and any log or store writes); per delta means divided by the answer pieces the
//! clients received. Peak RSS is the sum of `VmHWM` over the tree at the end of the load. For
//! the direct row the relay is the provider's process. The client's own CPU time is reported
//! too: client, provider and relay share the machine's cores.

mod drive;
mod measure;
mod processes;
mod provider;
mod report;
mod sse;
mod targets;

use bench::gateway_options::{Options, USAGE};

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = if args.first().map(String::as_str) == Some("--provider") {
        Options::parse(&args[1..])
            .map_err(|err| err.to_string())
            .and_then(|options| provider::run(&options))
    } else if args.iter().any(|arg| arg == "-h" || arg == "--help") {
        println!("usage: gateway {USAGE}");
        Ok(())
    } else {
        Options::parse(&args)
            .map_err(|err| err.to_string())
            .and_then(drive::drive)
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("gateway: {message}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// The harness's async runtime (the client, or the provider in its own process).
fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|err| format!("cannot start the async runtime: {err}"))
}

//! Skein's project automation, run as `cargo xtask <command>` (see `.cargo/config.toml`).
//!
//! - `cargo xtask ci`: everything CI checks, in the order a failure is cheapest to find: format,
//!   lints, tests (nextest when installed, else `cargo test`; doc tests too), the chaos test of
//!   durable runs, API fuzzing with schemathesis, the official `openai` SDK, the real OpenAI
//!   clients, docs.
//! - `cargo xtask pg start | stop | status`: a throwaway PostgreSQL cluster for the tests.
//! - `cargo xtask bench`: the server load scenario (200 concurrent streams for 30 s);
//!   `cargo xtask bench gateway`: `skein serve` beside nginx and LiteLLM's proxy;
//!   `cargo xtask bench follow`: the delay of following a run live from another replica.
//! - `cargo xtask chaos-runs [--sqlite]`: the chaos test of durable runs: background runs
//!   through `skein serve` replicas on one PostgreSQL database (or one on SQLite) that are
//!   killed with `kill -9` at random instants and restarted (also a step of `ci`).
//! - `cargo xtask schemathesis`: API fuzzing from the OpenAPI document against a live server
//!   (also a step of `ci`).
//! - `cargo xtask openai-sdk`: the official `openai` Python SDK against a live server whose
//!   providers are recorded streams replayed on loopback (also a step of `ci`).
//! - `cargo xtask clients [CLIENT…]`: real OpenAI clients (openai-python, openai-agents,
//!   langchain-openai, pydantic-ai, `llm`, the Vercel AI SDK, openai npm) against a live
//!   `skein serve` with the echo model and recorded providers; one line per check and a summary
//!   table (also a step of `ci`).
//! - `cargo xtask mcp-servers`: installs the real MCP servers the `mcp` crate's tests run
//!   against (npm's server-everything, the Python `mcp` SDK) under `target/xtask-mcp/` (also a
//!   step of `ci`).
//!
//! Each step prints the command it runs and how long it took, and the first failing step stops
//! the run with its exit status.

mod bench;
mod chaos_runs;
mod ci;
mod clients;
mod cmd;
mod live;
mod mcp_servers;
mod net;
mod npm;
mod openai_sdk;
mod pg;
mod schemathesis;
mod venv;

use std::process::ExitCode;

const USAGE: &str = "\
usage: cargo xtask <command>

commands:
  ci       format check, clippy -D warnings, tests (nextest + doc tests), chaos-runs,
           schemathesis, openai-sdk, clients, feature sets, cargo doc -D warnings
  pg       start | stop | status: a throwaway PostgreSQL cluster for the tests
  bench    server load: 200 concurrent streams x 30 s, p99 time to first event, CPU per delta
  bench gateway
           skein serve beside nginx and LiteLLM's proxy: CPU and writes per delta, TTFT
  bench follow [OPTIONS]
           two replicas on PostgreSQL: the delay of a follower on the other replica (and
           on the same one) behind the client that started the run, p50/p90/p99/max
  chaos-runs [--sqlite] [OPTIONS]
           background runs through 3 replicas on PostgreSQL (or 1 on SQLite) killed with
           kill -9 and restarted: runs ended, nodes lost or duplicated, resumed streams
           against the full replay, takeover time
  schemathesis [ST_RUN_OPTIONS]
           API fuzzing: schemathesis against a live `skein serve` (echo model, offline)
  openai-sdk
           the official `openai` Python SDK against a live `skein serve` (recorded providers)
  clients [CLIENT...]
           real OpenAI clients (Python and JS SDKs, agents, langchain, pydantic-ai, llm, Vercel
           AI SDK) against a live `skein serve` (echo model and recorded providers)
  mcp-servers
           installs the MCP servers the `mcp` tests use (npm, PyPI) under target/xtask-mcp/
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("ci") => ci::run(&args[1..]),
        Some("pg") => pg::run(&args[1..]),
        Some("bench") => bench::run(&args[1..]),
        Some("chaos-runs") => chaos_runs::run(&args[1..]),
        Some("schemathesis") => schemathesis::run(&args[1..]),
        Some("openai-sdk") => openai_sdk::run(&args[1..]),
        Some("mcp-servers") => mcp_servers::run(&args[1..]),
        Some("clients") => clients::run(&args[1..]),
        Some("-h" | "--help" | "help") => {
            print!("{USAGE}");
            Ok(())
        }
        Some(other) => Err(format!("unknown command `{other}`\n\n{USAGE}")),
        None => Err(USAGE.to_owned()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}

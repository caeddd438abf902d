//! `cargo xtask ci`: the whole CI job.

use crate::cmd::{cargo, has_cargo_subcommand, step};

/// Crates tested with `--no-default-features --features …`, so that each optional part builds
/// and passes on its own: every `providers` adapter alone (with and without the test models),
/// and the crates whose default features pull in heavy dependencies, without them.
const FEATURE_SETS: &[(&str, &str)] = &[
    ("providers", "openai"),
    ("providers", "openai,testing"),
    ("providers", "anthropic"),
    ("providers", "anthropic,testing"),
    ("providers", "gemini"),
    ("providers", "gemini,testing"),
    ("providers", "testing"),
    ("agent-loop", ""),
    ("toolchain", ""),
];

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    if let Some(extra) = args.first() {
        return Err(format!("`ci` takes no arguments, got `{extra}`"));
    }
    // Snapshots are reviewed and committed: a missing or changed one fails instead of being
    // written.
    let env = [("INSTA_UPDATE", "no"), ("CARGO_TERM_COLOR", "always")];

    step("format", cargo().args(["fmt", "--all", "--check"]))?;
    step(
        "clippy",
        cargo()
            .args([
                "clippy",
                "--workspace",
                "--all-targets",
                "--all-features",
                "--locked",
                "--",
                "-D",
                "warnings",
            ])
            .envs(env),
    )?;
    // The real MCP servers of the `mcp` crate's end-to-end tests (npm, PyPI).
    crate::mcp_servers::run(&[])?;
    // The PostgreSQL tests run against this cluster; it is stopped when `cluster` is dropped,
    // on every return below, and by its reaper process if xtask itself is killed.
    let cluster = crate::pg::start_for_ci()?;
    let pg_url = cluster.url();
    if has_cargo_subcommand("nextest") {
        step(
            "tests",
            cargo()
                .args([
                    "nextest",
                    "run",
                    "--workspace",
                    "--all-features",
                    "--locked",
                    "--no-fail-fast",
                ])
                .envs(env)
                .env(crate::pg::URL_ENV, &pg_url),
        )?;
    } else {
        eprintln!("cargo-nextest is not installed; running the tests with cargo test");
        step(
            "tests",
            cargo()
                .args([
                    "test",
                    "--workspace",
                    "--all-features",
                    "--locked",
                    "--no-fail-fast",
                ])
                .envs(env)
                .env(crate::pg::URL_ENV, &pg_url),
        )?;
    }
    step(
        "doc tests",
        cargo()
            .args(["test", "--workspace", "--all-features", "--locked", "--doc"])
            .envs(env)
            .env(crate::pg::URL_ENV, &pg_url),
    )?;
    cluster.stop().map_err(|err| err.to_string())?;
    // Durable runs under kill -9: 3 replicas on a PostgreSQL database of their own with 100
    // background runs and 10 kills, then one replica on SQLite with 4 kills.
    crate::chaos_runs::run(&[])?;
    crate::chaos_runs::run(&["--sqlite".to_owned()])?;
    // API fuzzing: schemathesis against a live `skein serve` (0 server errors, 0 responses
    // outside the OpenAPI document, 0 crashes).
    crate::schemathesis::run(&[])?;
    // Client compatibility: the official `openai` Python SDK against a live `skein serve`.
    crate::openai_sdk::run(&[])?;
    // The clients people use (openai-python, openai-agents, langchain-openai, pydantic-ai,
    // llm, the Vercel AI SDK, openai npm), each asserting only on what it returns.
    crate::clients::run(&[])?;
    // Each optional part alone must build and pass its tests.
    for (krate, features) in FEATURE_SETS {
        step(
            &format!("{krate} --no-default-features --features '{features}'"),
            cargo()
                .args(["test", "-p", krate, "--no-default-features", "--features"])
                .args([features, "--locked"])
                .envs(env),
        )?;
    }
    step(
        "docs",
        cargo()
            .args([
                "doc",
                "--workspace",
                "--no-deps",
                "--all-features",
                "--locked",
            ])
            .env("RUSTDOCFLAGS", "-D warnings")
            .envs(env),
    )?;
    eprintln!("\nci: all steps passed");
    Ok(())
}

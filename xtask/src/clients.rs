//! `cargo xtask clients [CLIENT…]`: real OpenAI clients against a live `skein serve`.
//!
//! Installs the clients, then starts the replay server and one `skein serve` whose providers
//! are recorded streams (see [`crate::live`]), and runs one script per client from
//! `xtask/clients/` against it, with the echo model (offline) and the replayed OpenAI,
//! Anthropic and Gemini models:
//!
//! | client | script | checks |
//! |---|---|---|
//! | openai-python | `check_openai_python.py` | chat, streaming, `logprobs` (whole and streamed), `parse`, Responses, `responses.parse`, embeddings, `models.retrieve`, a Gemini tool round |
//! | openai-agents | `check_openai_agents.py` | Responses and Chat Completions models, each with a function tool and a Pydantic `output_type` |
//! | langchain-openai | `check_langchain.py` | `bind_tools` round trip; `with_structured_output` (`json_schema`, `json_mode`, `function_calling`); `use_responses_api` |
//! | pydantic-ai | `check_pydantic_ai.py` | a tool; `NativeOutput` |
//! | llm | `check_llm.py` | `--schema`, `-o seed 1`, `--functions` |
//! | vercel-ai | `check_vercel_ai.mjs` | `generateObject`; `streamText` with a tool and a reasoning step over Responses |
//! | openai-npm | `check_openai_npm.mjs` | `zodResponseFormat` with `chat.completions.parse` |
//!
//! Each script prints one line per check, `PASS name: summary` or `FAIL name: reason` (the
//! reason carries Skein's status and error message as the client reported them); other lines
//! are copied through. At the end a table lists every check; the step fails if one failed, a
//! script exited with an error or printed no check, or the server exited, panicked or did not
//! stop cleanly on SIGTERM. The run directory (server, replay and client logs) is kept then.
//!
//! The Python clients come from PyPI, pinned with all dependencies in
//! `xtask/clients-requirements.txt`, in a virtualenv under `target/xtask-clients/venv`; the JS
//! clients from npm, pinned by `xtask/clients/package.json` and `package-lock.json`, in
//! `target/xtask-clients/npm`. Each is reinstalled only when its pinned files change. Without
//! `python3`, `node` or `npm`, or when an install fails, the step fails and says what to
//! install: nothing is skipped.

mod script;

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use crate::cmd::target_dir;
use crate::live::{DUMMY_KEYS, Replay, Setup, Skein, write};
use script::{ClientEnv, run_client};

/// A file every JS client needs, present once `npm ci` finished.
const NPM_ENTRY: &str = "node_modules/ai/package.json";

/// One client: its name, how its script is run, the script under `xtask/clients/`.
pub(crate) struct Client {
    pub(crate) name: &'static str,
    pub(crate) runtime: Runtime,
    pub(crate) script: &'static str,
}

/// What runs a client's script.
#[derive(Clone, Copy)]
pub(crate) enum Runtime {
    /// The virtualenv's Python.
    Python,
    /// `node`, from the npm prefix (so that the script's imports resolve there).
    Node,
}

const CLIENTS: &[Client] = &[
    Client {
        name: "openai-python",
        runtime: Runtime::Python,
        script: "check_openai_python.py",
    },
    Client {
        name: "openai-agents",
        runtime: Runtime::Python,
        script: "check_openai_agents.py",
    },
    Client {
        name: "langchain-openai",
        runtime: Runtime::Python,
        script: "check_langchain.py",
    },
    Client {
        name: "pydantic-ai",
        runtime: Runtime::Python,
        script: "check_pydantic_ai.py",
    },
    Client {
        name: "llm",
        runtime: Runtime::Python,
        script: "check_llm.py",
    },
    Client {
        name: "vercel-ai",
        runtime: Runtime::Node,
        script: "check_vercel_ai.mjs",
    },
    Client {
        name: "openai-npm",
        runtime: Runtime::Node,
        script: "check_openai_npm.mjs",
    },
];

/// One check's outcome, as its script printed it.
pub(crate) struct Outcome {
    pub(crate) client: &'static str,
    pub(crate) check: String,
    pub(crate) passed: bool,
    pub(crate) detail: String,
}

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    if args.iter().any(|arg| arg == "-h" || arg == "--help") {
        let names: Vec<&str> = CLIENTS.iter().map(|client| client.name).collect();
        println!(
            "usage: cargo xtask clients [--skein PATH] [CLIENT...]\n\
             runs real OpenAI clients against a fresh `skein serve` (echo model and recorded \
             providers, offline); all of them, or only those named: {}\n\
             --skein PATH serves with that binary (a release build, say) instead of building \
             the workspace's debug one",
            names.join(", ")
        );
        return Ok(());
    }
    let (given_binary, args) = match args {
        // Absolute: the server is started from the run's own directory.
        [flag, path, rest @ ..] if flag == "--skein" => (
            Some(std::path::absolute(path).map_err(|err| format!("--skein {path}: {err}"))?),
            rest,
        ),
        [flag] if flag == "--skein" => return Err("`--skein` needs the path of a binary".into()),
        rest => (None, rest),
    };
    let chosen = choose(args)?;
    let started = Instant::now();
    let dir = target_dir().join("xtask-clients");
    let bin =
        crate::venv::ensure(&dir, "clients-requirements.txt", "clients python").map_err(|err| {
            format!("{err}\n(the Python clients come from PyPI; needs python3 with venv)")
        })?;
    let npm = dir.join("npm");
    if chosen
        .iter()
        .any(|client| matches!(client.runtime, Runtime::Node))
    {
        require_tool("node")?;
        crate::npm::ensure(
            "clients",
            &npm,
            NPM_ENTRY,
            "clients node",
            "needs node and npm, and the npm registry for ai, @ai-sdk/openai, openai, zod",
        )?;
    }
    let installed = started.elapsed();
    let binary = match given_binary {
        Some(binary) => binary,
        None => crate::cmd::build_skein()?,
    };
    let run_dir = crate::cmd::fresh_run_dir(&dir)?;
    let outcomes = run_in(&chosen, &bin, &npm, &binary, &run_dir);
    let (outcomes, server_failures) = match outcomes {
        Ok(pair) => pair,
        Err(err) => {
            return Err(format!("{err}\n(logs kept in {})", run_dir.display()));
        }
    };
    print_table(&outcomes);
    let failed = outcomes.iter().filter(|outcome| !outcome.passed).count();
    eprintln!(
        "clients: {} passed, {failed} failed in {:.1?} (installs {:.1?})",
        outcomes.len() - failed,
        started.elapsed(),
        installed
    );
    if failed == 0 && server_failures.is_empty() {
        let _ = fs::remove_dir_all(&run_dir);
        return Ok(());
    }
    let mut message = Vec::new();
    if failed > 0 {
        message.push(format!("{failed} client check(s) failed (table above)"));
    }
    message.extend(server_failures);
    Err(format!(
        "{}\n(the logs of the server, the replay server and the clients are kept in {})",
        message.join("\n"),
        run_dir.display()
    ))
}

/// The clients named in `args`, or all of them; an error names every unknown one.
fn choose(args: &[String]) -> Result<Vec<&'static Client>, String> {
    if args.is_empty() {
        return Ok(CLIENTS.iter().collect());
    }
    let unknown: Vec<&str> = args
        .iter()
        .filter(|arg| !CLIENTS.iter().any(|client| client.name == arg.as_str()))
        .map(String::as_str)
        .collect();
    if !unknown.is_empty() {
        let names: Vec<&str> = CLIENTS.iter().map(|client| client.name).collect();
        return Err(format!(
            "unknown client(s) {}; known: {}",
            unknown.join(", "),
            names.join(", ")
        ));
    }
    Ok(CLIENTS
        .iter()
        .filter(|client| args.iter().any(|arg| arg == client.name))
        .collect())
}

/// Fails with an install hint unless `tool --version` runs.
fn require_tool(tool: &str) -> Result<(), String> {
    let works = Command::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if works {
        Ok(())
    } else {
        Err(format!(
            "`{tool} --version` does not run: install Node.js 20 or later with npm (e.g. \
             `apt-get install nodejs npm`) for the JS clients"
        ))
    }
}

/// Starts the servers, runs every chosen client, stops the servers: the outcomes, and what
/// went wrong with the servers.
fn run_in(
    chosen: &[&'static Client],
    bin: &Path,
    npm: &Path,
    binary: &Path,
    run_dir: &Path,
) -> Result<(Vec<Outcome>, Vec<String>), String> {
    let replay = Replay::start(&bin.join("python"), run_dir)?;
    let token = crate::live::run_token("clients");
    let token_file = write(run_dir, "tokens.txt", &format!("{token}\n"))?;
    let config = crate::live::replay_config(run_dir, "skein.yaml", replay.port)?;
    let mut servers = [Skein::start(Setup {
        name: "skein",
        binary,
        dir: run_dir,
        config,
        token_file,
        address: crate::net::free_port().map(|port| format!("127.0.0.1:{port}"))?,
        keys: DUMMY_KEYS,
    })?];
    let mut server_failures = Vec::new();
    let mut outcomes = Vec::new();
    match servers[0].wait_healthy() {
        Err(err) => server_failures.push(err),
        Ok(()) => {
            let url = servers[0].url();
            for client in chosen {
                let env = ClientEnv {
                    bin,
                    npm,
                    run_dir,
                    url: &url,
                    token: &token,
                };
                outcomes.extend(run_client(client, &env));
            }
        }
    }
    server_failures.extend(crate::live::stop(&mut servers, replay));
    Ok((outcomes, server_failures))
}

/// The summary: one row per check, failures with their reason (cut to one screen line).
fn print_table(outcomes: &[Outcome]) {
    let client_width = outcomes
        .iter()
        .map(|o| o.client.len())
        .max()
        .unwrap_or(6)
        .max(6);
    let check_width = outcomes
        .iter()
        .map(|o| o.check.len())
        .max()
        .unwrap_or(5)
        .max(5);
    println!(
        "\n{:client_width$}  {:check_width$}  result  reason",
        "client", "check"
    );
    for outcome in outcomes {
        let result = if outcome.passed { "PASS" } else { "FAIL" };
        let detail = if outcome.passed {
            ""
        } else {
            shorten(&outcome.detail, 160)
        };
        println!(
            "{:client_width$}  {:check_width$}  {result:6}  {detail}",
            outcome.client, outcome.check
        );
    }
}

fn shorten(text: &str, limit: usize) -> &str {
    match text.char_indices().nth(limit) {
        Some((index, _)) => &text[..index],
        None => text,
    }
}

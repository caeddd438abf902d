//! Running one client's script of `cargo xtask clients` and reading its check lines.

use std::fs;
use std::io::{BufRead as _, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::{Client, Outcome, Runtime};
use crate::cmd::workspace_root;
use crate::live::CLIENT_UNSET_VARIABLES;

/// How long one client's script may run before it is killed (and its checks fail).
const CLIENT_TIMEOUT: Duration = Duration::from_secs(120);

/// What every client's script is given.
pub(crate) struct ClientEnv<'a> {
    pub(crate) bin: &'a Path,
    pub(crate) npm: &'a Path,
    pub(crate) run_dir: &'a Path,
    pub(crate) url: &'a str,
    pub(crate) token: &'a str,
}

/// Runs `client`'s script, copying its lines to stdout and `run_dir/NAME.log`; its outcomes,
/// with a failed one for a script that failed, timed out or printed no check.
pub(crate) fn run_client(client: &'static Client, env: &ClientEnv<'_>) -> Vec<Outcome> {
    let source = workspace_root().join("xtask").join("clients");
    let mut command = match client.runtime {
        Runtime::Python => {
            let mut command = Command::new(env.bin.join("python"));
            command.arg(source.join(client.script));
            command
        }
        Runtime::Node => {
            // Node resolves a module's imports from the module's own folder, so the scripts
            // (and the helpers they import) run from copies beside `node_modules`.
            if let Err(err) = copy_scripts(&source, env.npm) {
                return vec![script_failure(client, err)];
            }
            let mut command = Command::new("node");
            command.arg(env.npm.join(client.script));
            command
        }
    };
    let work = env.run_dir.join(client.name);
    if let Err(err) = fs::create_dir_all(&work) {
        return vec![script_failure(client, format!("{}: {err}", work.display()))];
    }
    command
        .env("SKEIN_URL", env.url)
        .env("SKEIN_TOKEN", env.token)
        .env("CLIENT_WORK_DIR", &work)
        .env("CLIENT_BIN_DIR", env.bin)
        .env("PYTHONPATH", &source)
        .env("PYTHONUNBUFFERED", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .current_dir(&work);
    // Neither a client's own settings nor a proxy may change where it connects: loopback only.
    for variable in CLIENT_UNSET_VARIABLES {
        command.env_remove(variable);
    }
    crate::cmd::remove_api_keys(&mut command);
    eprintln!("\n==> {}: {}", client.name, client.script);
    let started = Instant::now();
    let result = drive(client, command, &work);
    eprintln!("<== {} in {:.1?}", client.name, started.elapsed());
    result
}

/// Copies every `.mjs` file of `source` into `npm`.
fn copy_scripts(source: &Path, npm: &Path) -> Result<(), String> {
    let entries = fs::read_dir(source).map_err(|err| format!("{}: {err}", source.display()))?;
    for entry in entries {
        let path = entry.map_err(|err| err.to_string())?.path();
        if path.extension().is_some_and(|ext| ext == "mjs") {
            let copy = npm.join(path.file_name().unwrap_or_default());
            fs::copy(&path, &copy).map_err(|err| {
                format!(
                    "cannot copy {} to {}: {err}",
                    path.display(),
                    copy.display()
                )
            })?;
        }
    }
    Ok(())
}

/// Runs `command` to its end (or [`CLIENT_TIMEOUT`]) and reads its check lines.
fn drive(client: &'static Client, mut command: Command, work: &Path) -> Vec<Outcome> {
    let log_path = work.join("client.log");
    let stderr_path = work.join("stderr.log");
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(err) => return vec![script_failure(client, format!("cannot start: {err}"))],
    };
    let stderr = child.stderr.take();
    let stderr_reader = std::thread::spawn(move || {
        let mut text = String::new();
        if let Some(stderr) = stderr {
            let _ = std::io::Read::read_to_string(&mut BufReader::new(stderr), &mut text);
        }
        text
    });
    let (sender, lines) = mpsc::channel();
    let stdout = child.stdout.take();
    let reader = std::thread::spawn(move || {
        if let Some(stdout) = stdout {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if sender.send(line).is_err() {
                    break;
                }
            }
        }
    });
    let started = Instant::now();
    let mut outcomes = Vec::new();
    let mut log = Vec::new();
    let mut timed_out = false;
    loop {
        match lines.recv_timeout(Duration::from_millis(100)) {
            Ok(line) => {
                println!("[{}] {line}", client.name);
                if let Some(outcome) = parse_line(client, &line) {
                    outcomes.push(outcome);
                }
                log.push(line);
                continue;
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        if started.elapsed() > CLIENT_TIMEOUT {
            timed_out = true;
            let _ = child.kill();
            break;
        }
    }
    let status = child.wait();
    let _ = reader.join();
    let stderr = stderr_reader.join().unwrap_or_default();
    log.push(String::new());
    let _ = fs::write(&log_path, log.join("\n"));
    let _ = fs::write(&stderr_path, &stderr);
    let tail = last_lines(&stderr, 5);
    if timed_out {
        outcomes.push(script_failure(
            client,
            format!(
                "killed after {CLIENT_TIMEOUT:?}; stderr in {}",
                stderr_path.display()
            ),
        ));
    } else {
        match status {
            Ok(status) if status.success() => {}
            Ok(status) => outcomes.push(script_failure(
                client,
                format!(
                    "exited with {status}: {tail} (stderr in {})",
                    stderr_path.display()
                ),
            )),
            Err(err) => outcomes.push(script_failure(client, format!("cannot wait: {err}"))),
        }
    }
    if outcomes.is_empty() {
        outcomes.push(script_failure(
            client,
            format!(
                "printed no check: {tail} (stderr in {})",
                stderr_path.display()
            ),
        ));
    }
    outcomes
}

/// `PASS name: summary` or `FAIL name: reason` (the colon and what follows are optional).
fn parse_line(client: &'static Client, line: &str) -> Option<Outcome> {
    let (passed, rest) = if let Some(rest) = line.strip_prefix("PASS ") {
        (true, rest)
    } else {
        (false, line.strip_prefix("FAIL ")?)
    };
    let (check, detail) = rest.split_once(": ").unwrap_or((rest, ""));
    Some(Outcome {
        client: client.name,
        check: check.trim().to_owned(),
        passed,
        detail: detail.trim().to_owned(),
    })
}

fn script_failure(client: &'static Client, detail: String) -> Outcome {
    Outcome {
        client: client.name,
        check: "(script)".to_owned(),
        passed: false,
        detail,
    }
}

/// The last `count` non-empty lines of `text`, joined with ` | `.
fn last_lines(text: &str, count: usize) -> String {
    let lines: Vec<&str> = text
        .lines()
        .filter(|line| !line.trim().is_empty())
        .collect();
    lines[lines.len().saturating_sub(count)..].join(" | ")
}

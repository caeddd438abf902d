//! `skein serve` against hostile clients, as a real process: its timeout and browser-safety
//! flags take effect, SIGTERM stops it within the grace period while a client holds a
//! half-sent request or the moment it says it serves, and a reader of its stderr that goes
//! away stops neither its serving nor its shutdown.
#![cfg(unix)]

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::support::{
    Stderr, serve_command, signal, skein_process, skein_serve as serve, wait_within,
};

fn answer(address: &str, request: &str) -> String {
    let mut stream = TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer
}

#[test]
fn sigterm_stops_the_server_within_the_grace_period_despite_a_half_sent_request() {
    let dir = tempfile::tempdir().unwrap();
    let mut served = serve(
        dir.path(),
        &["--shutdown-grace", "1", "--header-read-timeout", "600"],
    );
    let mut half = TcpStream::connect(&served.address).unwrap();
    half.write_all(b"POST /v1/response HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .unwrap();
    std::thread::sleep(Duration::from_millis(200));

    let started = Instant::now();
    let status = std::process::Command::new("kill")
        .args(["-TERM", &served.child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    loop {
        if let Some(exit) = served.child.try_wait().unwrap() {
            assert!(exit.success(), "{exit:?}");
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "skein serve still runs 5 s after SIGTERM with a 1 s grace period"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn serve_flags_set_the_header_timeout_hosts_and_origins() {
    let dir = tempfile::tempdir().unwrap();
    let served = serve(
        dir.path(),
        &[
            "--header-read-timeout",
            "1",
            "--allow-hostname",
            "skein.test",
            "--cors-origin",
            "https://app.example",
        ],
    );
    // A half-sent request is dropped after a second.
    let mut half = TcpStream::connect(&served.address).unwrap();
    half.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    half.write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.")
        .unwrap();
    let started = Instant::now();
    let mut rest = Vec::new();
    let _ = half.read_to_end(&mut rest);
    assert!(started.elapsed() < Duration::from_secs(5));

    let get = |host: &str, origin: &str| {
        answer(
            &served.address,
            &format!("GET /health HTTP/1.1\r\nHost: {host}\r\n{origin}Connection: close\r\n\r\n"),
        )
    };
    assert!(get("skein.test", "").starts_with("HTTP/1.1 200"));
    assert!(get("evil.example", "").starts_with("HTTP/1.1 403"));
    assert!(get("127.0.0.1", "Origin: https://app.example\r\n").starts_with("HTTP/1.1 200"));
    assert!(get("127.0.0.1", "Origin: https://evil.example\r\n").starts_with("HTTP/1.1 403"));

    let body = r#"{"model_config": {"model_id": "echo"}, "input": {"text": "hi"}}"#;
    let form = answer(
        &served.address,
        &format!(
            "POST /v1/response HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        ),
    );
    assert!(form.starts_with("HTTP/1.1 415"), "{form}");
}

#[test]
fn a_closed_stderr_stops_neither_serving_nor_the_shutdown() {
    let dir = tempfile::tempdir().unwrap();
    // As `skein serve 2>&1 | head -1` leaves it: every notice after the first meets a closed
    // pipe, and writing one must not panic.
    let mut served = serve_command(skein_process(dir.path()), &[], Stderr::Close);
    let health = answer(
        &served.address,
        "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
    );
    assert!(health.starts_with("HTTP/1.1 200"), "{health}");

    // Its "shutting down" and "stopped" notices go to the closed pipe too.
    signal(served.child.id(), "TERM");
    let exit = wait_within(&mut served.child, Duration::from_secs(5))
        .expect("skein serve still runs 5 s after SIGTERM");
    assert!(exit.success(), "{exit:?}");
}

#[test]
fn a_sigterm_as_soon_as_it_says_it_serves_is_a_graceful_stop() {
    // A service manager may stop the server the moment it starts: its handler must be in
    // place by the time it says it serves, or the signal's default action kills it.
    for _ in 0..5 {
        let dir = tempfile::tempdir().unwrap();
        let mut served = serve_command(skein_process(dir.path()), &[], Stderr::Close);
        signal(served.child.id(), "TERM");
        let exit = wait_within(&mut served.child, Duration::from_secs(5))
            .expect("skein serve still runs 5 s after SIGTERM");
        assert!(exit.success(), "{exit:?}");
    }
}

#[test]
fn logs_to_a_pipe_carry_no_colour_codes() {
    let dir = tempfile::tempdir().unwrap();
    let mut command = skein_process(dir.path());
    // NO_COLOR would hide the defect: colours must follow whether stderr is a terminal.
    command
        .env_remove("NO_COLOR")
        .env("RUST_LOG", "server=debug");
    let mut served = serve_command(command, &[], Stderr::Keep);
    // A request that is not HTTP: its connection ends with a logged error.
    let refused = answer(&served.address, "NOT HTTP\r\n\r\n");
    assert!(refused.starts_with("HTTP/1.1 400"), "{refused}");
    signal(served.child.id(), "TERM");
    let exit = wait_within(&mut served.child, Duration::from_secs(5))
        .expect("skein serve still runs 5 s after SIGTERM");
    assert!(exit.success(), "{exit:?}");
    // Its stderr is read on a thread: wait for the log line to be in.
    let deadline = Instant::now() + Duration::from_secs(5);
    while !served.stderr().contains("connection ended") && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let stderr = served.stderr();
    assert!(
        stderr.contains("connection ended"),
        "no log line to check: {stderr}"
    );
    assert!(!stderr.contains('\u{1b}'), "{stderr:?}");
}

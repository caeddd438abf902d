//! Servers that cannot start or do not speak MCP (no install needed).

use std::time::{Duration, Instant};

use mcp::{McpError, McpServer, McpServerConfig};

use crate::support::assert_within;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_program_names_the_command() {
    let config = McpServerConfig::parse("nope=skein-no-such-mcp-server --flag").unwrap();
    let error = McpServer::connect(config).await.unwrap_err();
    assert!(matches!(error, McpError::Spawn { .. }), "{error:?}");
    let message = error.to_string();
    assert!(message.contains("`skein-no-such-mcp-server`"), "{message}");
    assert!(message.contains("PATH"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_program_that_exits_fails_the_handshake_with_its_stderr() {
    let config = McpServerConfig::stdio(
        "dies",
        "sh",
        ["-c", "echo 'cannot open database' >&2; exit 3"],
    )
    .unwrap();
    let error = McpServer::connect(config).await.unwrap_err();
    match &error {
        McpError::Handshake { stderr, .. } => {
            assert_eq!(stderr.as_deref(), Some("cannot open database"), "{error}");
        }
        other => panic!("expected a handshake error, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_program_times_out_connecting() {
    let config = McpServerConfig::stdio("mute", "sleep", ["30"])
        .unwrap()
        .with_timeout(Duration::from_millis(500));
    let started = Instant::now();
    let error = McpServer::connect(config).await.unwrap_err();
    assert!(matches!(error, McpError::Timeout { .. }), "{error:?}");
    assert_within(started, Duration::from_secs(5));
}

/// A loopback HTTP server answering every request with `head` (no body), counting the
/// connections it accepted.
async fn answering(head: String) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let accepted = std::sync::Arc::new(AtomicUsize::new(0));
    let count = std::sync::Arc::clone(&accepted);
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            let head = head.clone();
            tokio::spawn(async move {
                let mut request = Vec::new();
                let mut buf = [0u8; 4096];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                let _ = socket.write_all(head.as_bytes()).await;
            });
        }
    });
    (url, accepted)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_to_another_origin_is_refused_and_named() {
    use std::sync::atomic::Ordering;
    // The other origin: reaching it would hand it the bearer token and the message.
    let (elsewhere, reached) = answering("HTTP/1.1 404 Not Found\r\n\r\n".into()).await;
    for status in [
        "307 Temporary Redirect",
        "308 Permanent Redirect",
        "302 Found",
    ] {
        let (url, _) = answering(format!(
            "HTTP/1.1 {status}\r\nLocation: {elsewhere}?token=leak-me\r\nContent-Length: 0\r\n\r\n"
        ))
        .await;
        let config = McpServerConfig::http("web", &url)
            .unwrap()
            .with_bearer(mcp::Secret::new("bearer-4242"))
            .with_timeout(Duration::from_secs(10));
        let error = McpServer::connect(config).await.unwrap_err();
        let code: u16 = status[..3].parse().unwrap();
        assert!(
            matches!(&error, McpError::Redirected { status, location, .. }
                if *status == code && *location == elsewhere),
            "{status}: {error:?}"
        );
        let message = error.to_string();
        assert!(message.contains(&elsewhere), "{message}");
        assert!(
            !message.contains("leak-me") && !message.contains("4242"),
            "{message}"
        );
    }
    assert_eq!(
        reached.load(Ordering::SeqCst),
        0,
        "the redirect was followed"
    );
}

//! The provider process: the harness started again with `--provider`.

use std::io::Write as _;
use std::net::Ipv4Addr;
use std::time::Duration;

use axum::serve::ListenerExt as _;
use bench::gateway_options::Options;
use server::testing::StreamingProvider;

use crate::runtime;

/// The child: the loopback provider, its base URL printed on stdout, until stdin closes.
pub(crate) fn run(options: &Options) -> Result<(), String> {
    let delay = Duration::from_millis(options.delay_ms);
    let runtime = runtime()?;
    runtime.block_on(async {
        let stdin_closed = async {
            let _ = tokio::task::spawn_blocking(|| {
                let mut sink = String::new();
                while std::io::stdin().read_line(&mut sink).is_ok_and(|n| n > 0) {}
            })
            .await;
        };
        if options.provider_nagle {
            let provider = StreamingProvider::start(options.deltas, delay)
                .await
                .map_err(|err| format!("cannot start the loopback provider: {err}"))?;
            announce(&provider.base_url())?;
            stdin_closed.await;
            return Ok(());
        }
        let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .await
            .map_err(|err| format!("cannot start the loopback provider: {err}"))?;
        let address = listener.local_addr().map_err(|err| err.to_string())?;
        announce(&format!("http://{address}/v1"))?;
        let deltas = options.deltas;
        let app = axum::Router::new().route(
            "/v1/chat/completions",
            axum::routing::post(move || stream_answer(deltas, delay)),
        );
        // Each delta is written as soon as it is produced: without TCP_NODELAY a delta that
        // follows an unacknowledged write waits for the peer's delayed ACK (up to 40 ms).
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        axum::serve(listener, app)
            .with_graceful_shutdown(stdin_closed)
            .await
            .map_err(|err| format!("the loopback provider failed: {err}"))
    })
}

fn announce(base_url: &str) -> Result<(), String> {
    println!("{base_url}");
    std::io::stdout().flush().map_err(|err| err.to_string())
}

/// `StreamingProvider`'s answer, byte for byte: `deltas` chunks `"w0 "`, `"w1 "`, … each after
/// `delay`, a finish chunk, a usage chunk and `data: [DONE]`.
async fn stream_answer(deltas: usize, delay: Duration) -> axum::response::Response {
    let chunk = |delta: serde_json::Value, finish: serde_json::Value, usage: serde_json::Value| {
        let payload = serde_json::json!({
            "id": "chatcmpl-loopback",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "loopback",
            "choices": if usage.is_null() {
                serde_json::json!([{"index": 0, "delta": delta, "finish_reason": finish}])
            } else {
                serde_json::json!([])
            },
            "usage": usage,
        });
        bytes::Bytes::from(format!("data: {payload}\n\n"))
    };
    let body = futures::stream::unfold(0usize, move |step| async move {
        use serde_json::json;
        let frame = match step {
            _ if step < deltas => {
                tokio::time::sleep(delay).await;
                chunk(
                    json!({"content": format!("w{step} ")}),
                    json!(null),
                    json!(null),
                )
            }
            _ if step == deltas => chunk(json!({}), json!("stop"), json!(null)),
            _ if step == deltas + 1 => chunk(
                json!({}),
                json!(null),
                json!({"prompt_tokens": 1, "completion_tokens": deltas, "total_tokens": deltas + 1}),
            ),
            _ if step == deltas + 2 => bytes::Bytes::from_static(b"data: [DONE]\n\n"),
            _ => return None,
        };
        Some((Ok::<_, std::convert::Infallible>(frame), step + 1))
    });
    axum::response::Response::builder()
        .header("content-type", "text/event-stream")
        .body(axum::body::Body::from_stream(body))
        .unwrap_or_default()
}

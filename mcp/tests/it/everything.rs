//! Against `@modelcontextprotocol/server-everything` over stdio.

use std::time::{Duration, Instant};

use mcp::{McpError, McpServer};
use serde_json::{Value, json};
use toolchain::{ContentPart, ExecutionContext, ToolError};

use crate::support::{
    assert_cancelled_promptly, assert_echoes, assert_within, call, everything, everything_config,
    kill, mcp_error, reaped_within, tool,
};

/// The PNG signature.
const PNG: &[u8] = b"\x89PNG\r\n\x1a\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_the_published_tools_namespaced_with_their_schemas() {
    let server = everything("everything").await;
    let list = server.tool_list();
    for original in [
        "echo",
        "get-sum",
        "get-tiny-image",
        "get-env",
        "trigger-long-running-operation",
    ] {
        let info = list
            .iter()
            .find(|tool| tool.original_name == original)
            .unwrap_or_else(|| panic!("{original} missing from {list:?}"));
        assert_eq!(info.name, format!("everything__{original}"));
    }
    let echo = list
        .iter()
        .find(|tool| tool.original_name == "echo")
        .unwrap();
    assert_eq!(echo.description, "Echoes back the input string");
    assert_eq!(echo.input_schema["type"], "object");
    assert_eq!(echo.input_schema["properties"]["message"]["type"], "string");

    let tools = server.tools();
    assert_eq!(tools.len(), list.len());
    let sum = tools
        .iter()
        .find(|tool| tool.name() == "everything__get-sum")
        .unwrap();
    assert_eq!(sum.spec().parameters["required"], json!(["a", "b"]));
    assert_eq!(
        server.info().name.as_deref().map(str::is_empty),
        Some(false)
    );
    server.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_return_the_servers_text() {
    let server = everything("ev").await;
    let ctx = ExecutionContext::new();
    let echo = tool(&server, "ev__echo");
    let result = echo
        .call_json(&ctx, json!({"message": "hi"}))
        .await
        .unwrap();
    assert_eq!(result.text, json!("Echo: hi"));
    assert!(result.media.is_empty());

    let sum = tool(&server, "ev__get-sum");
    let result = sum.call_json(&ctx, json!({"a": 2, "b": 3})).await.unwrap();
    assert_eq!(result.text, json!("The sum of 2 and 3 is 5."));
    server.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_result_becomes_binary_media() {
    let server = everything("ev").await;
    let image = tool(&server, "ev__get-tiny-image");
    let result = call(&image, json!({})).await.unwrap();
    let binaries: Vec<_> = result
        .media
        .iter()
        .filter_map(|part| match part {
            ContentPart::Binary { mime_type, data } => Some((mime_type.as_str(), data)),
            _ => None,
        })
        .collect();
    assert_eq!(binaries.len(), 1, "{:?}", result.media);
    assert_eq!(binaries[0].0, "image/png");
    assert!(binaries[0].1.starts_with(PNG), "not PNG bytes");
    server.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_resources_and_links_reach_the_model() {
    let server = everything("ev").await;
    let ctx = ExecutionContext::new();
    let reference = tool(&server, "ev__get-resource-reference");
    let text = reference
        .call_json(&ctx, json!({"resourceType": "Text", "resourceId": 1}))
        .await
        .unwrap()
        .text;
    let text = text.as_str().unwrap();
    assert!(text.contains("demo://resource/dynamic/text/1"), "{text}");
    assert!(
        text.contains("Resource 1: This is a plaintext resource"),
        "{text}"
    );

    let blob = reference
        .call_json(&ctx, json!({"resourceType": "Blob", "resourceId": 2}))
        .await
        .unwrap();
    assert!(
        blob.text
            .as_str()
            .unwrap()
            .contains("demo://resource/dynamic/blob/2"),
        "{}",
        blob.text
    );
    match blob.media.as_slice() {
        [ContentPart::Binary { mime_type, data }] => {
            assert_eq!(mime_type, "text/plain");
            assert!(data.starts_with(b"Resource 2: This is a base64 blob"));
        }
        other => panic!("expected one binary part, got {other:?}"),
    }

    let links = tool(&server, "ev__get-resource-links")
        .call_json(&ctx, json!({"count": 2}))
        .await
        .unwrap()
        .text;
    let links = links.as_str().unwrap();
    assert!(links.contains("demo://resource/dynamic/blob/1"), "{links}");
    assert!(links.contains("demo://resource/dynamic/text/2"), "{links}");

    let structured = tool(&server, "ev__get-structured-content")
        .call_json(&ctx, json!({"location": "Chicago"}))
        .await
        .unwrap()
        .text;
    let parsed: Value = serde_json::from_str(structured.as_str().unwrap()).unwrap();
    assert!(parsed.get("temperature").is_some(), "{structured}");
    server.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_result_is_a_failed_call_with_the_servers_text() {
    let server = everything("ev").await;
    let echo = tool(&server, "ev__echo");
    let error = call(&echo, json!({})).await.unwrap_err();
    assert!(matches!(error, ToolError::Failed { .. }), "{error:?}");
    let message = error.to_string();
    assert!(
        message.contains("Invalid arguments for tool echo"),
        "{message}"
    );
    // The server is still fine.
    assert_echoes(&echo, "again").await;
    server.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellation_ends_a_long_call_promptly_and_the_server_stays_usable() {
    let server = everything("ev").await;
    let long = tool(&server, "ev__trigger-long-running-operation");
    assert_cancelled_promptly(&long, json!({"duration": 30, "steps": 30})).await;

    let echo = tool(&server, "ev__echo");
    assert_echoes(&echo, "still here").await;
    server.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_earlier_of_the_servers_and_the_contexts_timeouts_ends_a_call() {
    let server = McpServer::connect(everything_config("ev").with_timeout(Duration::from_secs(2)))
        .await
        .unwrap();
    let long = tool(&server, "ev__trigger-long-running-operation");

    let started = Instant::now();
    let error = call(&long, json!({"duration": 30, "steps": 30}))
        .await
        .unwrap_err();
    assert!(
        matches!(error, ToolError::Timeout { timeout, .. } if timeout == Duration::from_secs(2)),
        "{error:?}"
    );
    assert_within(started, Duration::from_secs(6));

    let ctx = ExecutionContext::new().with_call_timeout(Duration::from_millis(300));
    let error = long
        .call_json(&ctx, json!({"duration": 30, "steps": 30}))
        .await
        .unwrap_err();
    assert!(
        matches!(error, ToolError::Timeout { timeout, .. } if timeout == Duration::from_millis(300)),
        "{error:?}"
    );

    let echo = tool(&server, "ev__echo");
    assert_echoes(&echo, "after").await;
    server.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_killed_mid_call_fails_that_call_and_the_next_promptly() {
    let server = everything("ev").await;
    let pid = server.process_id().expect("a stdio server has a pid");
    let long = tool(&server, "ev__trigger-long-running-operation");
    let echo = tool(&server, "ev__echo");
    let killer = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        kill(pid);
    });
    let started = Instant::now();
    let error = call(&long, json!({"duration": 30, "steps": 30}))
        .await
        .unwrap_err();
    killer.await.unwrap();
    assert_within(started, Duration::from_secs(5));
    assert!(
        matches!(mcp_error(&error), Some(McpError::Stopped { server, .. }) if server == "ev"),
        "{error:?}"
    );

    let started = Instant::now();
    let error = call(&echo, json!({"message": "anyone?"}))
        .await
        .unwrap_err();
    assert_within(started, Duration::from_secs(1));
    assert!(
        matches!(mcp_error(&error), Some(McpError::Stopped { .. })),
        "{error:?}"
    );
    assert!(
        reaped_within(pid, Duration::from_secs(5)).await,
        "{pid} left a zombie"
    );
    server.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_child_gets_its_env_but_not_the_parents_secrets() {
    // Cargo sets CARGO_MANIFEST_DIR for test runs: it must not reach the server.
    assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some());
    let server = McpServer::connect(everything_config("ev").with_env("SKEIN_MCP_TEST", "hello"))
        .await
        .unwrap();
    let env = call(&tool(&server, "ev__get-env"), json!({}))
        .await
        .unwrap()
        .text;
    let env = env.as_str().unwrap();
    assert!(env.contains("SKEIN_MCP_TEST"), "{env}");
    assert!(env.contains("hello"), "{env}");
    assert!(env.contains("PATH"), "{env}");
    assert!(!env.contains("CARGO_MANIFEST_DIR"), "{env}");
    server.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_and_drop_reap_the_child() {
    let server = everything("ev").await;
    let pid = server.process_id().unwrap();
    let echo = tool(&server, "ev__echo");
    server.close().await;
    assert!(
        reaped_within(pid, Duration::from_secs(1)).await,
        "close left {pid}"
    );
    let error = call(&echo, json!({"message": "x"})).await.unwrap_err();
    assert!(
        matches!(mcp_error(&error), Some(McpError::Stopped { .. })),
        "{error:?}"
    );

    let server = everything("ev").await;
    let pid = server.process_id().unwrap();
    let tools = server.tools();
    drop(server);
    // The tools keep the connection alive.
    let result = tools
        .iter()
        .find(|tool| tool.name() == "ev__echo")
        .unwrap()
        .call_json(&ExecutionContext::new(), json!({"message": "x"}))
        .await
        .unwrap();
    assert_eq!(result.text, json!("Echo: x"));
    drop(tools);
    assert!(
        reaped_within(pid, Duration::from_secs(10)).await,
        "drop left {pid}"
    );
}

#[test]
fn dropping_the_runtime_kills_the_child_without_panicking() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (tools, pid) = runtime.block_on(async {
        let server = everything("ev").await;
        (server.tools(), server.process_id().unwrap())
    });
    drop(runtime);
    drop(tools);
    let started = Instant::now();
    loop {
        // Gone, or killed and waiting to be reaped by this process's exit.
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|stat| {
                stat.rsplit(')')
                    .next()
                    .map(|rest| rest.trim().chars().next())
            })
            .flatten();
        if matches!(state, None | Some('Z')) {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{pid} still runs: {state:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

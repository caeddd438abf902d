//! What OpenAI clients put in a conversation, through `skein serve` to each provider: system
//! messages after the conversation began (pydantic-ai's retry of a failed validation), image,
//! file and audio parts, and the media fetching rules for a provider that needs the bytes.

use crate::support;

use serde_json::{Value, json};
use support::{TestServer, client, keyed, received, replay};
use wiremock::MockServer;

/// A server whose OpenAI, Anthropic and Gemini models all use `mock`.
async fn server(mock: &MockServer) -> TestServer {
    server_fetching(mock, tools::MediaFetchPolicy::default()).await
}

/// [`server`], fetching media under `media_fetch`.
async fn server_fetching(mock: &MockServer, media_fetch: tools::MediaFetchPolicy) -> TestServer {
    let mut config = keyed(mock);
    config.service.media_fetch = media_fetch;
    TestServer::start(config).await
}

/// A server in front of a mock that answers Claude with a recorded streamed text, and the
/// mock.
async fn claude_server() -> (MockServer, TestServer) {
    let mock = MockServer::start().await;
    replay(&mock, "/v1/messages", &["anthropic/stream_text.sse"]).await;
    let server = server(&mock).await;
    (mock, server)
}

async fn post(server: &TestServer, path: &str, body: &Value) -> (u16, Value) {
    let response = client()
        .post(server.url(path))
        .json(body)
        .send()
        .await
        .expect("the server answers");
    let status = response.status().as_u16();
    let text = response.text().await.unwrap_or_default();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

const GEMINI_PATH: &str = "/v1beta/models/gemini-2.5-flash:streamGenerateContent";

/// The model, the provider path and the recorded answer of each provider.
const PROVIDERS: [(&str, &str, &str); 3] = [
    (
        "gpt-4o-mini",
        "/v1/chat/completions",
        "openai/chat_stream_text_after_tool.sse",
    ),
    (
        "claude-sonnet-4-5",
        "/v1/messages",
        "anthropic/stream_text.sse",
    ),
    ("gemini-2.5-flash", GEMINI_PATH, "gemini/stream_text.sse"),
];

/// pydantic-ai's retry: the output tool's arguments failed validation, and the client adds a
/// system message after the tool result.
fn retry_messages() -> Value {
    json!([
        {"role": "system", "content": "You extract cities."},
        {"role": "user", "content": "Where is the Eiffel Tower?"},
        {"role": "assistant", "content": null, "tool_calls": [{
            "id": "call_1", "type": "function",
            "function": {"name": "final_result", "arguments": "{\"city\": 1}"},
        }]},
        {"role": "tool", "tool_call_id": "call_1", "content": "city: Input should be a valid string"},
        {"role": "developer", "content": "Fix the errors and try again."},
    ])
}

/// The last system instruction as each provider received it.
fn later_instruction(model: &str, sent: &Value) -> Value {
    match model {
        "gpt-4o-mini" => sent["messages"][4].clone(),
        "claude-sonnet-4-5" => sent["messages"][2]["content"][1].clone(),
        _ => sent["contents"][3].clone(),
    }
}

#[tokio::test]
async fn a_system_message_after_a_tool_round_is_accepted_on_every_provider() {
    let marked = "<system_instruction>\nFix the errors and try again.\n</system_instruction>";
    for (model, path, fixture) in PROVIDERS {
        let mock = MockServer::start().await;
        replay(&mock, path, &[fixture]).await;
        let server = server(&mock).await;
        let tools = json!([{"type": "function", "function": {
            "name": "final_result", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        }}]);
        let (status, body) = post(
            &server,
            "/v1/chat/completions",
            &json!({"model": model, "stream": true, "messages": retry_messages(), "tools": tools}),
        )
        .await;
        assert_eq!(status, 200, "{model}: {body}");
        let sent = received(&mock).await.remove(0);
        let expected = match model {
            // OpenAI takes it where it stands (gpt-4o-mini's system prompt role is `system`).
            "gpt-4o-mini" => json!({"role": "system", "content": "Fix the errors and try again."}),
            "claude-sonnet-4-5" => json!({"type": "text", "text": marked}),
            _ => json!({"role": "user", "parts": [{"text": marked}]}),
        };
        assert_eq!(later_instruction(model, &sent), expected, "{model}");
        server.stop().await;
    }
}

#[tokio::test]
async fn responses_take_system_items_anywhere_and_keep_instructions_first() {
    let (mock, server) = claude_server().await;
    let (status, body) = post(
        &server,
        "/v1/responses",
        &json!({
            "model": "claude-sonnet-4-5",
            "stream": true,
            "instructions": "Be brief.",
            "input": [
                {"role": "user", "content": "Hi"},
                {"role": "assistant", "content": "Hello"},
                {"role": "system", "content": [{"type": "input_text", "text": "Answer in French."}]},
                {"role": "user", "content": "Name a pirate."},
            ],
        }),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let sent = received(&mock).await.remove(0);
    assert_eq!(
        sent["system"],
        json!([{"type": "text", "text": "Be brief."}])
    );
    assert_eq!(
        sent["messages"][2]["content"],
        json!([
            {"type": "text", "text": "<system_instruction>\nAnswer in French.\n</system_instruction>"},
            {"type": "text", "text": "Name a pirate."},
        ])
    );
    server.stop().await;
}

#[tokio::test]
async fn media_parts_reach_anthropic_as_image_and_document_blocks() {
    let (mock, server) = claude_server().await;
    let (status, body) = post(
        &server,
        "/v1/chat/completions",
        &json!({"model": "claude-sonnet-4-5", "stream": true, "messages": [{"role": "user", "content": [
            {"type": "text", "text": "Compare."},
            {"type": "image_url", "image_url": {"url": "https://example.com/cat.png", "detail": "low"}},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw=="}},
            {"type": "file", "file": {"file_data": "data:application/pdf;base64,JVBERi0=", "filename": "a.pdf"}},
        ]}]}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let sent = received(&mock).await.remove(0);
    // The Messages API's documented blocks: `image` / `document` with a `url` or `base64`
    // source.
    assert_eq!(
        sent["messages"][0]["content"],
        json!([
            {"type": "text", "text": "Compare."},
            {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.png"}},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw=="}},
            {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="}},
        ])
    );
    server.stop().await;
}

#[tokio::test]
async fn media_parts_reach_openai_as_given() {
    let mock = MockServer::start().await;
    replay(
        &mock,
        "/v1/chat/completions",
        &["openai/chat_stream_text_after_tool.sse"],
    )
    .await;
    let server = server(&mock).await;
    let (status, body) = post(
        &server,
        "/v1/chat/completions",
        &json!({"model": "gpt-4o-mini", "stream": true, "messages": [{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": "https://example.com/cat.png", "detail": "high"}},
            {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
        ]}]}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let sent = received(&mock).await.remove(0);
    assert_eq!(
        sent["messages"][0]["content"],
        json!([
            {"type": "image_url", "image_url": {"url": "https://example.com/cat.png", "detail": "high"}},
            {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
        ])
    );
    server.stop().await;
}

#[tokio::test]
async fn gemini_gets_inline_data_and_a_loopback_image_url_is_refused() {
    let mock = MockServer::start().await;
    replay(&mock, GEMINI_PATH, &["gemini/stream_text.sse"]).await;
    let server = server(&mock).await;
    let (status, body) = post(
        &server,
        "/v1/responses",
        &json!({"model": "gemini-2.5-flash", "stream": true, "input": [{"role": "user", "content": [
            {"type": "input_text", "text": "Read it."},
            {"type": "input_file", "file_data": "data:application/pdf;base64,JVBERi0=", "filename": "a.pdf"},
            {"type": "input_image", "image_url": "gs://bucket/cat.png"},
        ]}]}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let sent = received(&mock).await.remove(0);
    assert_eq!(
        sent["contents"][0]["parts"],
        json!([
            {"text": "Read it."},
            {"inlineData": {"mimeType": "application/pdf", "data": "JVBERi0="}},
            {"fileData": {"fileUri": "gs://bucket/cat.png", "mimeType": "image/png"}},
        ])
    );

    // Gemini needs the bytes of a web URL: the server fetches them only from public addresses.
    let url = format!("{}/cat.png", mock.uri());
    let (status, body) = post(
        &server,
        "/v1/chat/completions",
        &json!({"model": "gemini-2.5-flash", "messages": [{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": url}},
        ]}]}),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    let message = body["error"]["message"].as_str().expect("a message");
    assert!(message.contains(&url), "{message}");
    assert!(message.contains("loopback"), "{message}");
    assert_eq!(
        received(&mock).await.len(),
        1,
        "the provider was not called"
    );

    // So is a Responses `file_url`, for every provider.
    let (status, body) = post(
        &server,
        "/v1/responses",
        &json!({"model": "gemini-2.5-flash", "input": [{"role": "user", "content": [
            {"type": "input_file", "file_url": url},
        ]}]}),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["param"], "input[0].content[0].file_url");
    server.stop().await;
}

/// The operator's `media_fetch` settings apply: an internal host it lists is fetched, and its
/// size limit refuses a larger file.
#[tokio::test]
async fn the_configured_media_policy_lets_a_listed_host_through_up_to_its_limit() {
    let mock = MockServer::start().await;
    replay(&mock, GEMINI_PATH, &["gemini/stream_text.sse"]).await;
    for (path, bytes) in [("/cat.png", &b"PNGDATA!"[..]), ("/big.png", &[7u8; 65][..])] {
        wiremock::Mock::given(wiremock::matchers::method("GET"))
            .and(wiremock::matchers::path(path))
            .respond_with(
                wiremock::ResponseTemplate::new(200).set_body_raw(bytes.to_vec(), "image/png"),
            )
            .mount(&mock)
            .await;
    }
    let config: service::ServiceConfig = serde_json::from_value(json!({"media_fetch": {
        "allow_private": [mock.address().to_string()],
        "max_bytes": 64,
    }}))
    .expect("a valid configuration");
    let server = server_fetching(&mock, config.media_fetch).await;
    let ask = |url: String| {
        json!({"model": "gemini-2.5-flash", "stream": true, "messages": [{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": url}},
        ]}]})
    };

    let (status, body) = post(
        &server,
        "/v1/chat/completions",
        &ask(format!("{}/cat.png", mock.uri())),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let sent = received(&mock)
        .await
        .into_iter()
        .find(|body| body.get("contents").is_some())
        .expect("Gemini was called");
    assert_eq!(
        sent["contents"][0]["parts"],
        json!([{"inlineData": {"mimeType": "image/png", "data": "UE5HREFUQSE="}}])
    );

    let url = format!("{}/big.png", mock.uri());
    let (status, body) = post(&server, "/v1/chat/completions", &ask(url.clone())).await;
    assert_eq!(status, 400, "{body}");
    let message = body["error"]["message"].as_str().expect("a message");
    assert!(message.contains(&url), "{message}");
    assert!(message.contains("64-byte limit"), "{message}");
    server.stop().await;
}

#[tokio::test]
async fn uploaded_file_ids_and_bad_media_are_refused_by_name() {
    let mock = MockServer::start().await;
    let server = server(&mock).await;
    for (path, body, param) in [
        (
            "/v1/chat/completions",
            json!({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": [
                {"type": "file", "file": {"file_id": "file-abc"}},
            ]}]}),
            "messages[0].content[0].file.file_id",
        ),
        (
            "/v1/chat/completions",
            json!({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": [
                {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "flac"}},
            ]}]}),
            "messages[0].content[0].input_audio.format",
        ),
        (
            "/v1/responses",
            json!({"model": "gpt-4o-mini", "input": [{"role": "user", "content": [
                {"type": "input_image", "file_id": "file-abc"},
            ]}]}),
            "input[0].content[0].file_id",
        ),
        (
            "/v1/responses",
            json!({"model": "gpt-4o-mini", "input": [{"role": "user", "content": [
                {"type": "input_file", "file_data": "JVBERi0="},
            ]}]}),
            "input[0].content[0].file_data",
        ),
    ] {
        let (status, answer) = post(&server, path, &body).await;
        assert_eq!(status, 400, "{answer}");
        assert_eq!(answer["error"]["param"], param, "{answer}");
        let message = answer["error"]["message"].as_str().expect("a message");
        assert!(message.contains(param), "{message}");
    }
    assert!(received(&mock).await.is_empty());
    server.stop().await;
}

/// A server whose `skein/vision` agent runs `gemini-2.5-flash` at `mock`, fetching media
/// from the hosts of `allow_private` (none: public addresses only).
async fn agent_server(mock: &MockServer, allow_private: Vec<String>) -> TestServer {
    let agent = service::config::AgentAlias {
        model: "gemini-2.5-flash".into(),
        tools: vec!["calculator".into()],
        ..Default::default()
    };
    let mut config = keyed(mock);
    config.service.agents = [("skein/vision".to_owned(), agent)].into_iter().collect();
    config.service.media_fetch = tools::MediaFetchPolicy {
        allow_private,
        ..tools::MediaFetchPolicy::default()
    };
    TestServer::start(config).await
}

/// The `parts` of each Gemini request `mock` received.
async fn gemini_parts(mock: &MockServer) -> Vec<Value> {
    received(mock)
        .await
        .into_iter()
        .filter(|body| body.get("contents").is_some())
        .map(|body| body["contents"][0]["parts"].clone())
        .collect()
}

#[tokio::test]
async fn an_agent_run_on_gemini_gets_a_web_image_inline_fetched_once() {
    use wiremock::matchers::{method, path};
    let mock = MockServer::start().await;
    // Round 1 calls a tool the agent does not have; round 2 answers after its error.
    replay(
        &mock,
        GEMINI_PATH,
        &[
            "gemini/stream_function_call_signature.sse",
            "gemini/stream_text_after_function_call.sse",
        ],
    )
    .await;
    let png = b"\x89PNG\r\n\x1a\n-the-cat".to_vec();
    wiremock::Mock::given(method("GET"))
        .and(path("/cat.png"))
        .respond_with(wiremock::ResponseTemplate::new(200).set_body_raw(png.clone(), "image/png"))
        .mount(&mock)
        .await;
    let host = mock.address().to_string();
    let server = agent_server(&mock, vec![host]).await;
    let url = format!("{}/cat.png", mock.uri());
    let (status, body) = post(
        &server,
        "/v1/chat/completions",
        &json!({"model": "skein/vision", "messages": [{"role": "user", "content": [
            {"type": "text", "text": "Where is this cat?"},
            {"type": "image_url", "image_url": {"url": url}},
        ]}]}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let rounds = gemini_parts(&mock).await;
    assert_eq!(rounds.len(), 2, "{rounds:?}");
    use base64::Engine as _;
    let inline = json!({"inlineData": {"mimeType": "image/png",
                        "data": base64::engine::general_purpose::STANDARD.encode(&png)}});
    for parts in &rounds {
        assert_eq!(parts[1], inline, "{parts}");
        assert!(!parts.to_string().contains("fileData"), "{parts}");
    }
    let fetches = mock
        .received_requests()
        .await
        .unwrap_or_default()
        .iter()
        .filter(|request| request.url.path() == "/cat.png")
        .count();
    assert_eq!(fetches, 1, "one fetch for both rounds");
    server.stop().await;
}

#[tokio::test]
async fn an_agent_run_refuses_a_private_image_url_before_calling_gemini() {
    let mock = MockServer::start().await;
    replay(&mock, GEMINI_PATH, &["gemini/stream_text.sse"]).await;
    let server = agent_server(&mock, Vec::new()).await;
    let url = format!("{}/cat.png", mock.uri());
    let (status, body) = post(
        &server,
        "/v1/chat/completions",
        &json!({"model": "skein/vision", "messages": [{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": url}},
        ]}]}),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["code"], "invalid_media_url", "{body}");
    let message = body["error"]["message"].as_str().expect("a message");
    assert!(message.contains(&url), "{message}");
    assert!(message.contains("loopback"), "{message}");
    assert!(received(&mock).await.is_empty(), "nothing was sent");
    server.stop().await;
}

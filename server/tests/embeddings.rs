//! `POST /v1/embeddings` over loopback HTTP: the offline `echo` model, OpenAI and Gemini
//! answers served behind the server (written from the API references: no embeddings call is
//! recorded among the fixtures), and the 400s that name what is wrong.

use base64::Engine as _;
use providers::Provider;
use serde_json::{Value, json};
use server::ServerConfig;
use server::schema::Secret;
use service::ServiceConfig;
use service::config::ProviderBaseUrls;
use service::keys::ProviderKeys;
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{TestServer, client, received};

async fn embed(server: &TestServer, body: &Value) -> (u16, Value) {
    let response = client()
        .post(server.url("/v1/embeddings"))
        .json(body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

#[tokio::test]
async fn echo_embeds_offline_as_floats_or_base64() {
    let server = TestServer::start(ServerConfig::default()).await;
    let (status, floats) = embed(
        &server,
        &json!({"model": "echo", "input": ["one two", "three"], "dimensions": 8}),
    )
    .await;
    assert_eq!(status, 200, "{floats}");
    assert_eq!(floats["object"], "list");
    assert_eq!(floats["model"], "echo");
    assert_eq!(
        floats["usage"],
        json!({"prompt_tokens": 3, "total_tokens": 3})
    );
    let data = floats["data"].as_array().unwrap();
    assert_eq!(data.len(), 2);
    for (index, item) in data.iter().enumerate() {
        assert_eq!(item["object"], "embedding");
        assert_eq!(item["index"], index);
        assert_eq!(item["embedding"].as_array().unwrap().len(), 8);
    }

    // The same vector in base64: little-endian 32-bit floats.
    let (status, encoded) = embed(
        &server,
        &json!({"model": "echo", "input": "one two", "dimensions": 8, "encoding_format": "base64"}),
    )
    .await;
    assert_eq!(status, 200, "{encoded}");
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded["data"][0]["embedding"].as_str().unwrap())
        .unwrap();
    let decoded: Vec<f32> = bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    // JSON numbers read back as the 32-bit floats they were written from.
    #[allow(clippy::cast_possible_truncation)]
    let floats: Vec<f32> = data[0]["embedding"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap() as f32)
        .collect();
    assert_eq!(decoded, floats);
    server.stop().await;
}

#[tokio::test]
async fn inputs_and_models_that_cannot_embed_are_named() {
    let server = TestServer::start(ServerConfig::default()).await;
    for (body, param, needle) in [
        (
            json!({"model": "echo", "input": ["a", "", 3]}),
            "input",
            "`input[1]`, `input[2]`",
        ),
        (
            json!({"model": "echo", "input": ["a", ""]}),
            "input",
            "`input[1]`",
        ),
        (json!({"model": "echo", "input": []}), "input", "is empty"),
        (
            json!({"model": "echo", "input": {"text": "a"}}),
            "input",
            "must be a string",
        ),
        (
            json!({"model": "echo", "input": "a", "dimensions": 0}),
            "dimensions",
            "is 0",
        ),
        (
            json!({"model": "echo", "input": "a", "dimensions": 5000}),
            "dimensions",
            "1 to 4096",
        ),
        (
            json!({"model": "claude-sonnet-4-5", "input": "a"}),
            "model",
            "Anthropic has no embeddings API",
        ),
        (
            json!({"model": "gemini-embedding-001", "input": [[1, 2]]}),
            "input",
            "token arrays",
        ),
        (
            json!({"model": "echo", "input": "a", "colour": "red"}),
            "colour",
            "unknown field",
        ),
    ] {
        let (status, answer) = embed(&server, &body).await;
        assert_eq!(status, 400, "{body} → {answer}");
        assert_eq!(answer["error"]["type"], "invalid_request_error", "{answer}");
        assert_eq!(answer["error"]["param"], param, "{body} → {answer}");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message.contains(needle), "{body} → {message}");
    }
    // A provider without a key on this server.
    let (status, answer) = embed(
        &server,
        &json!({"model": "text-embedding-3-small", "input": "a"}),
    )
    .await;
    assert_eq!(status, 404);
    assert_eq!(answer["error"]["code"], "model_not_found");
    // Token ids are accepted (echo hashes them).
    let (status, answer) = embed(&server, &json!({"model": "echo", "input": [1, 2, 3]})).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["usage"]["prompt_tokens"], 3);
    server.stop().await;
}

#[tokio::test]
async fn openai_and_gemini_models_embed_through_the_server_keys() {
    let mock = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .and(header("authorization", "Bearer sk-server-test"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "object": "list",
            "data": [{"object": "embedding", "index": 0, "embedding": [0.5, -0.25]}],
            "model": "text-embedding-3-small",
            "usage": {"prompt_tokens": 5, "total_tokens": 5},
        })))
        .mount(&mock)
        .await;
    Mock::given(method("POST"))
        .and(path("/models/gemini-embedding-001:batchEmbedContents"))
        .and(header("x-goog-api-key", "gm-server-test"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "embeddings": [{"values": [0.125, 0.75]}]
        })))
        .mount(&mock)
        .await;
    let mut keys = ProviderKeys::default();
    keys.set(Provider::OpenAi, Secret::new("sk-server-test"));
    keys.set(Provider::Google, Secret::new("gm-server-test"));
    let server = TestServer::start(ServerConfig {
        service: ServiceConfig {
            keys,
            base_urls: ProviderBaseUrls::from([
                (Provider::OpenAi, format!("{}/v1", mock.uri())),
                (Provider::Google, mock.uri()),
            ]),
            ..ServiceConfig::default()
        },
        ..ServerConfig::default()
    })
    .await;

    let (status, openai) = embed(
        &server,
        &json!({"model": "text-embedding-3-small", "input": "The food was delicious",
                "dimensions": 2, "user": "user-7"}),
    )
    .await;
    assert_eq!(status, 200, "{openai}");
    assert_eq!(openai["data"][0]["embedding"], json!([0.5, -0.25]));
    assert_eq!(
        openai["usage"],
        json!({"prompt_tokens": 5, "total_tokens": 5})
    );

    let (status, gemini) = embed(
        &server,
        &json!({"model": "gemini-embedding-001", "input": ["a"], "dimensions": 2,
                "encoding_format": "float"}),
    )
    .await;
    assert_eq!(status, 200, "{gemini}");
    assert_eq!(gemini["data"][0]["embedding"], json!([0.125, 0.75]));
    assert_eq!(gemini["usage"]["prompt_tokens"], 0);

    let sent = received(&mock).await;
    assert_eq!(
        sent,
        [
            json!({"model": "text-embedding-3-small", "input": ["The food was delicious"],
                   "encoding_format": "float", "dimensions": 2, "user": "user-7"}),
            json!({"requests": [{"model": "models/gemini-embedding-001",
                   "content": {"parts": [{"text": "a"}]}, "outputDimensionality": 2}]}),
        ]
    );
    server.stop().await;
}

#[tokio::test]
async fn embeddings_need_the_bearer_token_like_every_openai_route() {
    let server = TestServer::start(ServerConfig {
        tokens: vec![Secret::new("token-a")],
        ..ServerConfig::default()
    })
    .await;
    let (status, answer) = embed(&server, &json!({"model": "echo", "input": "a"})).await;
    assert_eq!(status, 401);
    assert_eq!(answer["error"]["type"], "authentication_error");
    let response = client()
        .post(server.url("/v1/embeddings"))
        .bearer_auth("token-a")
        .json(&json!({"model": "echo", "input": "a"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    server.stop().await;
}

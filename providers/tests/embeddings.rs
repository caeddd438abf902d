//! Embedding models against the wire: the bodies sent and the answers read, written from the
//! providers' API references (no recording of an embeddings call exists among the fixtures):
//! OpenAI's `POST /v1/embeddings` (`CreateEmbeddingResponse`: `data[].{object, index,
//! embedding}`, `usage.{prompt_tokens, total_tokens}`), Gemini's `batchEmbedContents`
//! (`BatchEmbedContentsResponse`: `embeddings[].values`, in the requests' order).

use providers::{
    EmbeddingInput, EmbeddingRequest, ModelConfig, ProviderError, embedding_model_from_config,
};
use serde_json::{Value, json};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::config;

async fn sent(server: &MockServer) -> Vec<Value> {
    server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .map(|request| serde_json::from_slice(&request.body).unwrap())
        .collect()
}

#[tokio::test]
async fn openai_embeddings_send_the_reference_body_and_read_vectors_in_index_order() {
    let server = MockServer::start().await;
    // `data` out of order: the answer is read by `index`.
    let answer = json!({
        "object": "list",
        "data": [
            {"object": "embedding", "index": 1, "embedding": [0.25, -0.5]},
            {"object": "embedding", "index": 0, "embedding": [0.0023064255, -0.009327292]},
        ],
        "model": "text-embedding-3-small",
        "usage": {"prompt_tokens": 8, "total_tokens": 8},
    });
    Mock::given(method("POST"))
        .and(path("/embeddings"))
        .and(header("authorization", "Bearer test-key-123"))
        .respond_with(ResponseTemplate::new(200).set_body_json(answer))
        .mount(&server)
        .await;
    let model =
        embedding_model_from_config(&config("text-embedding-3-small", &server.uri())).unwrap();
    let request = EmbeddingRequest {
        dimensions: Some(2),
        user: Some("user-7".into()),
        ..EmbeddingRequest::texts(["The food was delicious", "and the waiter"])
    };
    let embeddings = model.embed(&request).await.unwrap();
    assert_eq!(
        embeddings.vectors,
        [vec![0.002_306_425_5, -0.009_327_292], vec![0.25, -0.5]]
    );
    assert_eq!(embeddings.input_tokens, 8);
    assert_eq!(
        sent(&server).await,
        [json!({
            "model": "text-embedding-3-small",
            "input": ["The food was delicious", "and the waiter"],
            "encoding_format": "float",
            "dimensions": 2,
            "user": "user-7",
        })]
    );
}

#[tokio::test]
async fn openai_token_arrays_pass_through_and_failures_are_retried() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/embeddings"))
        .respond_with(ResponseTemplate::new(503).set_body_json(
            json!({"error": {"message": "overloaded", "type": "server_error", "code": null}}),
        ))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/embeddings"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "object": "list",
            "data": [{"object": "embedding", "index": 0, "embedding": [1.0]}],
            "model": "text-embedding-ada-002",
            "usage": {"prompt_tokens": 3, "total_tokens": 3},
        })))
        .mount(&server)
        .await;
    let model =
        embedding_model_from_config(&config("text-embedding-ada-002", &server.uri())).unwrap();
    let request = EmbeddingRequest {
        input: EmbeddingInput::Tokens(vec![vec![791, 3691, 574]]),
        dimensions: None,
        user: None,
    };
    let embeddings = model.embed(&request).await.unwrap();
    assert_eq!(embeddings.vectors, [vec![1.0]]);
    let bodies = sent(&server).await;
    assert_eq!(bodies.len(), 2, "one retry after the 503");
    assert_eq!(bodies[1]["input"], json!([[791, 3691, 574]]));
    assert!(bodies[1].get("dimensions").is_none());
}

#[tokio::test]
async fn openai_errors_are_read_and_never_hold_the_key() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(401).set_body_json(json!({"error": {
            "message": "Incorrect API key provided: test-key-123.",
            "type": "invalid_request_error", "param": null, "code": "invalid_api_key"}})))
        .mount(&server)
        .await;
    let model =
        embedding_model_from_config(&config("text-embedding-3-small", &server.uri())).unwrap();
    let error = model
        .embed(&EmbeddingRequest::texts(["x"]))
        .await
        .unwrap_err();
    assert_eq!(error.status(), Some(401));
    assert!(!error.to_string().contains("test-key-123"), "{error}");
    assert!(error.to_string().contains("Incorrect API key"), "{error}");
}

#[tokio::test]
async fn gemini_batch_embeds_with_output_dimensionality() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/models/gemini-embedding-001:batchEmbedContents"))
        .and(header("x-goog-api-key", "test-key-123"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "embeddings": [{"values": [0.1, 0.2, 0.3]}, {"values": [0.3, 0.4, 0.5]}]
        })))
        .mount(&server)
        .await;
    let model =
        embedding_model_from_config(&config("gemini-embedding-001", &server.uri())).unwrap();
    let request = EmbeddingRequest {
        dimensions: Some(3),
        ..EmbeddingRequest::texts(["What is the meaning of life?", "How do I bake a cake?"])
    };
    let embeddings = model.embed(&request).await.unwrap();
    assert_eq!(
        embeddings.vectors,
        [vec![0.1, 0.2, 0.3], vec![0.3, 0.4, 0.5]]
    );
    assert_eq!(embeddings.input_tokens, 0, "Gemini reports no token count");
    let one = |text: &str| {
        json!({"model": "models/gemini-embedding-001",
               "content": {"parts": [{"text": text}]},
               "outputDimensionality": 3})
    };
    assert_eq!(
        sent(&server).await,
        [json!({"requests": [one("What is the meaning of life?"), one("How do I bake a cake?")]})]
    );

    // Token arrays mean nothing to Gemini: refused before anything is sent.
    let tokens = EmbeddingRequest {
        input: EmbeddingInput::Tokens(vec![vec![1, 2]]),
        dimensions: None,
        user: None,
    };
    let error = model.embed(&tokens).await.unwrap_err();
    assert!(
        matches!(error, ProviderError::Unsupported { .. }),
        "{error}"
    );
    assert!(error.to_string().contains("token arrays"), "{error}");
    assert_eq!(sent(&server).await.len(), 1);
}

#[test]
fn anthropic_models_do_not_embed_and_say_which_do() {
    let config = ModelConfig {
        api_key: Some("sk-ant".into()),
        ..ModelConfig::new("claude-sonnet-4-5")
    };
    let Err(error) = embedding_model_from_config(&config) else {
        panic!("an Anthropic model embeds");
    };
    let message = error.to_string();
    assert!(message.contains("`claude-sonnet-4-5`"), "{message}");
    assert!(message.contains("text-embedding-3-small"), "{message}");
    assert!(message.contains("gemini-embedding-001"), "{message}");
}

#[tokio::test]
async fn echo_embeds_offline_deterministically() {
    let model = embedding_model_from_config(&ModelConfig::new("echo")).unwrap();
    let first = model
        .embed(&EmbeddingRequest::texts(["one two three"]))
        .await
        .unwrap();
    assert_eq!(
        first.vectors[0].len(),
        providers::ECHO_DEFAULT_DIMENSIONS as usize
    );
    assert_eq!(first.input_tokens, 3);
    let again = model
        .embed(&EmbeddingRequest::texts(["one two three"]))
        .await
        .unwrap();
    assert_eq!(first, again);
    let too_long = EmbeddingRequest {
        dimensions: Some(providers::ECHO_MAX_DIMENSIONS + 1),
        ..EmbeddingRequest::texts(["x"])
    };
    let error = model.embed(&too_long).await.unwrap_err();
    assert!(error.to_string().contains("dimensions"), "{error}");
}

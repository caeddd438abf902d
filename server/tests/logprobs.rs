//! Log probabilities over loopback HTTP: an OpenAI answer that has them (the bodies in
//! `providers/tests/fixtures/reference`, written from the OpenAI API reference) replayed
//! behind the server, read back through `/v1/chat/completions` and `/v1/responses`. Expected
//! values are the fixtures' own, in the shape the OpenAI API reference gives each endpoint.

use crate::support;

use providers::Provider;
use serde_json::{Value, json};
use server::ServerConfig;
use server::schema::Secret;
use service::ServiceConfig;
use service::config::ProviderBaseUrls;
use service::keys::ProviderKeys;
use support::{TestServer, client, events, fixture, received, replay};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const CHAT: &str = "/v1/chat/completions";

async fn openai_server(mock: &MockServer) -> TestServer {
    let mut keys = ProviderKeys::default();
    keys.set(Provider::OpenAi, Secret::new("sk-server-test"));
    TestServer::start(ServerConfig {
        service: ServiceConfig {
            keys,
            base_urls: ProviderBaseUrls::from([(Provider::OpenAi, format!("{}/v1", mock.uri()))]),
            ..ServiceConfig::default()
        },
        ..ServerConfig::default()
    })
    .await
}

async fn post(server: &TestServer, route: &str, body: &Value) -> reqwest::Response {
    client()
        .post(server.url(route))
        .json(body)
        .send()
        .await
        .unwrap()
}

/// The `data:` payloads of a Chat Completions stream, `[DONE]` left out.
async fn chunks(response: reqwest::Response) -> Vec<Value> {
    use futures::StreamExt as _;
    assert_eq!(response.status(), 200);
    let mut stream = eventsource_stream::EventStream::new(response.bytes_stream());
    let mut chunks = Vec::new();
    while let Some(event) = stream.next().await {
        let data = event.unwrap().data;
        if data != "[DONE]" {
            chunks.push(serde_json::from_str(&data).unwrap());
        }
    }
    chunks
}

/// `choices[0].logprobs.content` of the non-streamed reference answer: what OpenAI sent.
fn reference_tokens() -> Value {
    let answer: Value =
        serde_json::from_slice(&fixture("reference/openai_chat_logprobs.json")).unwrap();
    answer["choices"][0]["logprobs"]["content"].clone()
}

/// The reference tokens in the shape of a Responses text event: no `bytes`, anywhere.
fn without_bytes(tokens: &Value) -> Value {
    let mut tokens = tokens.clone();
    for token in tokens.as_array_mut().unwrap() {
        token.as_object_mut().unwrap().remove("bytes");
        for top in token["top_logprobs"].as_array_mut().unwrap() {
            top.as_object_mut().unwrap().remove("bytes");
        }
    }
    tokens
}

fn asked(stream: bool) -> Value {
    json!({
        "model": "gpt-4o-mini", "stream": stream, "logprobs": true, "top_logprobs": 2,
        "messages": [{"role": "user", "content": "Hello!"}],
    })
}

#[tokio::test]
async fn a_whole_chat_answer_returns_the_providers_tokens() {
    let mock = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(ResponseTemplate::new(200).set_body_raw(
            fixture("reference/openai_chat_logprobs.json"),
            "application/json",
        ))
        .mount(&mock)
        .await;
    let server = openai_server(&mock).await;
    let answer: Value = post(&server, CHAT, &asked(false))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(answer["choices"][0]["message"]["content"], "Hello!");
    assert_eq!(
        answer["choices"][0]["logprobs"],
        json!({"content": reference_tokens(), "refusal": null})
    );
    let sent = &received(&mock).await[0];
    assert_eq!(
        (&sent["logprobs"], &sent["top_logprobs"]),
        (&json!(true), &json!(2))
    );
    server.stop().await;
}

#[tokio::test]
async fn each_streamed_chunk_carries_the_tokens_of_its_text() {
    let mock = MockServer::start().await;
    replay(&mock, CHAT, &["reference/openai_chat_stream_logprobs.sse"]).await;
    let server = openai_server(&mock).await;
    let chunks = chunks(post(&server, CHAT, &asked(true)).await).await;
    let tokens = reference_tokens();
    let with_text: Vec<(&Value, &Value)> = chunks
        .iter()
        .filter_map(|chunk| {
            let choice = &chunk["choices"][0];
            choice["delta"]
                .get("content")
                .map(|text| (text, &choice["logprobs"]))
        })
        .collect();
    assert_eq!(
        with_text,
        [
            (
                &json!("Hello"),
                &json!({"content": [tokens[0]], "refusal": null})
            ),
            (
                &json!("!"),
                &json!({"content": [tokens[1]], "refusal": null})
            ),
        ]
    );
    // Every other chunk says null, as OpenAI's do.
    for chunk in &chunks {
        let choice = &chunk["choices"][0];
        if choice["delta"].get("content").is_none() {
            assert_eq!(choice.get("logprobs"), Some(&Value::Null), "{chunk}");
        }
    }
    server.stop().await;
}

#[tokio::test]
async fn without_logprobs_every_choice_says_null() {
    let server = TestServer::start(ServerConfig::default()).await;
    let request =
        json!({"model": "echo", "messages": [{"role": "user", "content": "Hello there"}]});
    let answer: Value = post(&server, CHAT, &request).await.json().await.unwrap();
    assert_eq!(answer["choices"][0].get("logprobs"), Some(&Value::Null));
    let mut streamed = request.clone();
    streamed["stream"] = json!(true);
    let chunks = chunks(post(&server, CHAT, &streamed).await).await;
    assert!(chunks.len() > 2);
    for chunk in &chunks {
        assert_eq!(chunk["choices"][0].get("logprobs"), Some(&Value::Null));
    }
    server.stop().await;
}

#[tokio::test]
async fn responses_text_events_and_the_output_text_part_carry_the_tokens() {
    let mock = MockServer::start().await;
    replay(&mock, CHAT, &["reference/openai_chat_stream_logprobs.sse"]).await;
    let server = openai_server(&mock).await;
    let request = json!({
        "model": "gpt-4o-mini", "stream": true, "input": "Hello!", "top_logprobs": 2,
        "include": ["message.output_text.logprobs"],
    });
    let events = events(post(&server, "/v1/responses", &request).await).await;
    let tokens = reference_tokens();
    let short = without_bytes(&tokens);
    let deltas: Vec<(&Value, &Value)> = events
        .iter()
        .filter(|event| event.name == "response.output_text.delta")
        .map(|event| (&event.data["delta"], &event.data["logprobs"]))
        .collect();
    assert_eq!(
        deltas,
        [
            (&json!("Hello"), &json!([short[0]])),
            (&json!("!"), &json!([short[1]]))
        ]
    );
    let done = events
        .iter()
        .find(|event| event.name == "response.output_text.done")
        .unwrap();
    assert_eq!(done.data["logprobs"], short);
    let completed = &events.last().unwrap().data["response"];
    assert_eq!(completed["output"][0]["content"][0]["logprobs"], tokens);

    let sent = &received(&mock).await[0];
    assert_eq!(
        (&sent["logprobs"], &sent["top_logprobs"]),
        (&json!(true), &json!(2))
    );
    server.stop().await;
}

#[tokio::test]
async fn a_whole_responses_answer_keeps_the_tokens_on_its_output_text() {
    let mock = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(ResponseTemplate::new(200).set_body_raw(
            fixture("reference/openai_chat_logprobs.json"),
            "application/json",
        ))
        .mount(&mock)
        .await;
    let server = openai_server(&mock).await;
    let request = json!({
        "model": "gpt-4o-mini", "input": "Hello!", "top_logprobs": 2,
        "include": ["message.output_text.logprobs"],
    });
    let answer: Value = post(&server, "/v1/responses", &request)
        .await
        .json()
        .await
        .unwrap();
    let part = &answer["output"][0]["content"][0];
    assert_eq!(part["text"], "Hello!");
    assert_eq!(part["logprobs"], reference_tokens());
    server.stop().await;
}

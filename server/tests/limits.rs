//! Authentication, the body limit, the concurrency limit, cancellation (by endpoint and by
//! disconnect), graceful shutdown and key hygiene, through a real HTTP client.

use crate::support;

use std::time::Duration;

use futures::StreamExt as _;
use providers::Provider;
use serde_json::{Value, json};
use server::ServerConfig;
use server::schema::Secret;
use server::testing::StreamingProvider;
use service::ServiceConfig;
use service::config::ProviderBaseUrls;
use service::keys::ProviderKeys;
use support::{TestServer, client, events, names, terminal};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn echo(text: &str) -> Value {
    json!({"model_config": {"model_id": "echo"}, "input": {"text": text}})
}

/// A configuration whose OpenAI models are served by `provider`.
fn slow_config(provider: &StreamingProvider) -> ServerConfig {
    let mut keys = ProviderKeys::default();
    keys.set(Provider::OpenAi, Secret::new("sk-loopback"));
    ServerConfig {
        service: ServiceConfig {
            keys,
            base_urls: ProviderBaseUrls::from([(Provider::OpenAi, provider.base_url())]),
            ..ServiceConfig::default()
        },
        ..ServerConfig::default()
    }
}

fn slow_request() -> Value {
    json!({"model_config": {"model_id": "gpt-4o-mini"}, "input": {"text": "Count slowly."}})
}

/// Waits until `check` holds, for at most five seconds.
async fn eventually(what: &str, check: impl Fn() -> bool) {
    for _ in 0..500 {
        if check() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("timed out waiting until {what}");
}

#[tokio::test]
async fn bearer_tokens_are_required_when_configured() {
    let config = ServerConfig {
        tokens: vec![Secret::new("token-a"), Secret::new("token-b")],
        ..ServerConfig::default()
    };
    let server = TestServer::start(config).await;
    let url = server.url("/v1/response");

    let missing = client().post(&url).json(&echo("hi")).send().await.unwrap();
    assert_eq!(missing.status(), 401);
    assert_eq!(missing.headers()["www-authenticate"], "Bearer");
    assert_eq!(
        missing.json::<Value>().await.unwrap()["code"],
        "unauthorized"
    );

    let wrong = client()
        .post(&url)
        .bearer_auth("token-c")
        .json(&echo("hi"))
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);

    let right = client()
        .post(&url)
        .bearer_auth("token-b")
        .json(&echo(r#"{"raw": "ok"}"#))
        .send()
        .await
        .unwrap();
    let events = events(right).await;
    assert_eq!(support::content(&events), "ok");

    // Health and the API description stay public once tokens exist.
    let health = client().get(server.url("/health")).send().await.unwrap();
    assert_eq!(health.status(), 200);
    server.stop().await;
}

#[tokio::test]
async fn oversize_bodies_are_refused() {
    let config = ServerConfig {
        body_limit: 1024,
        ..ServerConfig::default()
    };
    let server = TestServer::start(config).await;
    let big = echo(&"x".repeat(4096));

    // With a Content-Length over the limit.
    let answer = server.post(&big).await;
    assert_eq!(answer.status(), 413);
    let body: Value = answer.json().await.unwrap();
    assert_eq!(body["code"], "payload_too_large");

    // Chunked, so the limit is only found while reading.
    let bytes = serde_json::to_vec(&big).unwrap();
    let chunks = futures::stream::iter(
        bytes
            .chunks(512)
            .map(|chunk| Ok::<_, std::io::Error>(chunk.to_vec()))
            .collect::<Vec<_>>(),
    );
    let answer = client()
        .post(server.url("/v1/response"))
        .header("content-type", "application/json")
        .body(reqwest::Body::wrap_stream(chunks))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 413);
    assert_eq!(
        answer.json::<Value>().await.unwrap()["code"],
        "payload_too_large"
    );

    // A small request still goes through.
    assert_eq!(server.post(&echo("small")).await.status(), 200);
    server.stop().await;
}

#[tokio::test]
async fn the_concurrency_limit_answers_429_before_any_event() {
    let provider = StreamingProvider::start(500, Duration::from_millis(20))
        .await
        .unwrap();
    let config = ServerConfig {
        concurrency_per_caller: 1,
        retry_after_secs: 2,
        ..slow_config(&provider)
    };
    let server = TestServer::start(config).await;

    // The first response holds the only slot while it streams.
    let first = server.post(&slow_request()).await;
    assert_eq!(first.status(), 200);
    let mut first_events = eventsource_stream::EventStream::new(first.bytes_stream());
    let start = first_events.next().await.unwrap().unwrap();
    assert_eq!(start.event, "response.start");
    let first_id = serde_json::from_str::<Value>(&start.data).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let delta = first_events.next().await.unwrap().unwrap();
    assert_eq!(delta.event, "content.delta");

    let refused = server.post(&echo("me too")).await;
    assert_eq!(refused.status(), 429);
    assert_eq!(refused.headers()["retry-after"], "2");
    assert!(
        refused.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/json")
    );
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["code"], "too_many_requests");

    // Cancelling the first frees the slot; its stream ends with `response.cancelled`.
    let cancelled = client()
        .post(server.url(&format!("/v1/response/{first_id}/cancel")))
        .send()
        .await
        .unwrap();
    assert_eq!(cancelled.status(), 200);
    assert_eq!(
        cancelled.json::<Value>().await.unwrap(),
        json!({"success": true, "message": "Request cancelled"})
    );
    let mut last = None;
    while let Some(event) = first_events.next().await {
        last = Some(event.unwrap());
    }
    let last = last.unwrap();
    assert_eq!(last.event, "response.cancelled");
    let partial: Value = serde_json::from_str(&last.data).unwrap();
    assert_eq!(partial["id"], first_id);
    assert!(
        partial["partial_content"]
            .as_str()
            .unwrap()
            .starts_with("w0 ")
    );

    let again = server.post(&echo(r#"{"raw": "now"}"#)).await;
    assert_eq!(support::content(&events(again).await), "now");

    // A finished response cannot be cancelled.
    let gone = client()
        .post(server.url(&format!("/v1/response/{first_id}/cancel")))
        .send()
        .await
        .unwrap();
    assert_eq!(gone.status(), 404);
    server.stop().await;
}

#[tokio::test]
async fn a_client_that_disconnects_cancels_the_upstream_call() {
    let provider = StreamingProvider::start(1000, Duration::from_millis(10))
        .await
        .unwrap();
    let server = TestServer::start(slow_config(&provider)).await;

    let response = server.post(&slow_request()).await;
    let mut stream = eventsource_stream::EventStream::new(response.bytes_stream());
    let mut seen = Vec::new();
    while seen.len() < 4 {
        seen.push(stream.next().await.unwrap().unwrap().event);
    }
    assert_eq!(
        seen,
        [
            "response.start",
            "content.delta",
            "content.delta",
            "content.delta"
        ]
    );
    assert_eq!(provider.started(), 1);

    drop(stream); // the client goes away mid-answer
    eventually("the provider saw its connection closed", || {
        provider.dropped() == 1
    })
    .await;
    assert_eq!(provider.completed(), 0);
    // The run wound up: no stream is left in flight.
    let mut active = None;
    for _ in 0..500 {
        let health: Value = client()
            .get(server.url("/health"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        active = health["active_streams"].as_u64();
        if active == Some(0) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(active, Some(0));
    server.stop().await;
}

#[tokio::test]
async fn shutdown_finishes_short_runs_and_cancels_long_ones() {
    let long_provider = StreamingProvider::start(3000, Duration::from_millis(10))
        .await
        .unwrap();
    let short_provider = StreamingProvider::start(30, Duration::from_millis(10))
        .await
        .unwrap();
    let config = ServerConfig {
        shutdown_grace_secs: 1,
        service: ServiceConfig {
            allow_request_base_url: true,
            ..slow_config(&long_provider).service
        },
        ..slow_config(&long_provider)
    };
    let mut server = TestServer::start(config).await;

    let long_events = tokio::spawn(events(server.post(&slow_request()).await));
    let mut short = slow_request();
    short["model_config"]["base_url"] = json!(short_provider.base_url());
    short["model_config"]["api_key"] = json!("sk-short");
    let short_events = tokio::spawn(events(server.post(&short).await));
    eventually("both runs started", || {
        long_provider.started() == 1 && short_provider.started() == 1
    })
    .await;

    server.begin_stop();
    // While the runs drain, new responses are refused.
    let mut refused = None;
    for _ in 0..100 {
        let answer = server.post(&echo("late")).await;
        if answer.status() == 503 {
            refused = Some(answer);
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let refused = refused.expect("a 503 during the drain");
    assert_eq!(
        refused.json::<Value>().await.unwrap()["code"],
        "shutting_down"
    );

    // The short run finishes within the grace period; the long one is cancelled after it.
    let short_events = short_events.await.unwrap();
    assert_eq!(
        terminal(&short_events, "response.done")["stop_reason"],
        "end_turn"
    );
    assert_eq!(short_provider.completed(), 1);
    let long_events = long_events.await.unwrap();
    let partial = terminal(&long_events, "response.cancelled");
    assert!(
        partial["partial_content"]
            .as_str()
            .unwrap()
            .starts_with("w0 w1 ")
    );
    assert!(names(&long_events).contains(&"content.delta"));
    server.stopped().await;
    eventually("the provider saw its connection closed", || {
        long_provider.dropped() == 1
    })
    .await;
}

#[tokio::test]
async fn provider_keys_are_never_echoed() {
    let mock = MockServer::start().await;
    Mock::given(wiremock::matchers::method("POST"))
        .respond_with(ResponseTemplate::new(401).set_body_raw(
            support::fixture("openai/error_401_invalid_api_key.json"),
            "application/json",
        ))
        .mount(&mock)
        .await;
    let secret = "sk-live-DO-NOT-LEAK-0123456789";
    let mut keys = ProviderKeys::default();
    keys.set(Provider::OpenAi, Secret::new(secret));
    let config = ServerConfig {
        service: ServiceConfig {
            keys,
            base_urls: ProviderBaseUrls::from([(Provider::OpenAi, format!("{}/v1", mock.uri()))]),
            ..ServiceConfig::default()
        },
        ..ServerConfig::default()
    };
    assert!(!format!("{config:?}").contains(secret));
    let server = TestServer::start(config).await;
    assert!(!format!("{:?}", server.server).contains(secret));

    let streamed = server.post(&slow_request()).await;
    let text = streamed.text().await.unwrap();
    assert!(text.contains("event: response.error"), "{text}");
    assert!(!text.contains(secret), "{text}");

    let mut one_body = slow_request();
    one_body["features"] = json!({"streaming": false});
    let answer = server.post(&one_body).await;
    assert_eq!(answer.status(), 502);
    let text = answer.text().await.unwrap();
    assert!(text.contains("provider_error"), "{text}");
    assert!(!text.contains(secret), "{text}");

    // The key did reach the provider, and only the provider.
    let sent = mock.received_requests().await.unwrap();
    assert_eq!(
        sent[0].headers["authorization"].to_str().unwrap(),
        format!("Bearer {secret}")
    );
    server.stop().await;
}

/// Two replicas on one PostgreSQL database count a token's answers in flight together: of
/// requests sent at once to both, exactly the limit stream and the rest get 429; another token
/// is not affected; and answers that end free their slots for either replica.
#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_concurrency_limit_counts_across_replicas_on_postgres() {
    const LIMIT: usize = 2;
    let provider = StreamingProvider::start(500, Duration::from_millis(20))
        .await
        .unwrap();
    let url = conversation_tree::testing::fresh_postgres_database().await;
    let config = || {
        let mut config = ServerConfig {
            concurrency_per_caller: LIMIT,
            tokens: vec![Secret::new("token-a"), Secret::new("token-b")],
            ..slow_config(&provider)
        };
        config.service.store = url.clone();
        config
    };
    let replicas = [
        TestServer::start(config()).await,
        TestServer::start(config()).await,
    ];
    let send = |replica: usize, token: &'static str| {
        client()
            .post(replicas[replica].url("/v1/response"))
            .bearer_auth(token)
            .json(&slow_request())
            .send()
    };

    let sent = (0..8).map(|i| send(i % 2, "token-a"));
    let responses: Vec<reqwest::Response> = futures::future::join_all(sent)
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    let (streaming, refused): (Vec<_>, Vec<_>) = responses
        .into_iter()
        .partition(|response| response.status() == 200);
    assert_eq!((streaming.len(), refused.len()), (LIMIT, 8 - LIMIT));
    for response in refused {
        assert_eq!(response.status(), 429);
        assert_eq!(
            response.json::<Value>().await.unwrap()["code"],
            "too_many_requests"
        );
    }
    // The other token has slots of its own, on either replica.
    assert_eq!(send(1, "token-b").await.unwrap().status(), 200);

    // Clients that leave end their answers; their slots free for the next request.
    drop(streaming);
    let mut status = 429;
    for _ in 0..100 {
        status = send(1, "token-a").await.unwrap().status().as_u16();
        if status == 200 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(status, 200);
    for replica in replicas {
        replica.stop().await;
    }
}

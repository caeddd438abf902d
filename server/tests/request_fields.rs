//! Every request field of the OpenAI API reference on `/v1/chat/completions` and
//! `/v1/responses` (the reference as openai-python's `completion_create_params` and
//! `response_create_params` type it): accepted on the echo model and in front of a replayed
//! provider, sent on to the provider in its own form, unknown fields named all at once, and
//! the operator's `drop_unsupported_params` policy (refuse by default, or drop and say so in
//! `x-skein-dropped-params`).

use crate::support;

use providers::Provider;
use serde_json::{Value, json};
use server::ServerConfig;
use server::schema::Secret;
use service::ServiceConfig;
use service::config::{ModelSettings, ProviderBaseUrls};
use service::keys::ProviderKeys;
use support::{TestServer, client, received, replay};
use wiremock::MockServer;

const DROPPED: &str = "x-skein-dropped-params";

async fn post(server: &TestServer, path: &str, body: &Value) -> reqwest::Response {
    client()
        .post(server.url(path))
        .json(body)
        .send()
        .await
        .expect("the server answers")
}

/// A server whose `provider` models go to `mock` with a dummy key.
async fn server_for(provider: Provider, base_url: String, service: ServiceConfig) -> TestServer {
    let mut keys = ProviderKeys::default();
    keys.set(provider, Secret::new("sk-server-test"));
    TestServer::start(ServerConfig {
        service: ServiceConfig {
            keys,
            base_urls: ProviderBaseUrls::from([(provider, base_url)]),
            ..service
        },
        ..ServerConfig::default()
    })
    .await
}

/// A server whose OpenAI models go to a mock replaying a recorded streamed answer, and the
/// mock.
async fn replayed_openai() -> (MockServer, TestServer) {
    let mock = MockServer::start().await;
    replay(
        &mock,
        "/v1/chat/completions",
        &["openai/chat_stream_text_after_tool.sse"],
    )
    .await;
    let server = server_for(
        Provider::OpenAi,
        format!("{}/v1", mock.uri()),
        ServiceConfig::default(),
    )
    .await;
    (mock, server)
}

fn weather_tool_chat() -> Value {
    json!({"type": "function", "function": {"name": "get_weather", "description": "Weather of a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}})
}

/// Every documented Chat Completions field that asks the model for something, with a real
/// value (the gateway's own fields `audio`, `prediction`, … are left to the policy tests).
fn every_chat_field(model: &str) -> Value {
    json!({
        "model": model,
        "messages": [{"role": "user", "content": "Hi"}],
        "frequency_penalty": 0.25,
        "logit_bias": {"50256": -100},
        "logprobs": true,
        "max_completion_tokens": 64,
        "max_tokens": 64,
        "metadata": {"team": "search"},
        "modalities": ["text"],
        "n": 1,
        "parallel_tool_calls": false,
        "presence_penalty": 0.5,
        "prompt_cache_key": "tenant-1",
        "prompt_cache_options": {},
        "prompt_cache_retention": "24h",
        "reasoning_effort": "low",
        "safety_identifier": "hash-1",
        "seed": 42,
        "service_tier": "flex",
        "stop": ["END"],
        "store": true,
        "stream": true,
        "stream_options": {"include_usage": true, "include_obfuscation": false},
        "temperature": 0.5,
        "tool_choice": "auto",
        "tools": [weather_tool_chat()],
        "top_logprobs": 2,
        "top_p": 0.9,
        "user": "user-7",
        "verbosity": "low",
        "audio": null,
        "prediction": null,
        "web_search_options": null,
        "moderation": null,
    })
}

/// Every documented Responses field, likewise.
fn every_responses_field(model: &str) -> Value {
    json!({
        "model": model,
        "input": "Hi",
        "background": false,
        "include": ["reasoning.encrypted_content"],
        "instructions": "Be brief.",
        "max_output_tokens": 64,
        "max_tool_calls": 3,
        "metadata": {"team": "search"},
        "parallel_tool_calls": false,
        "prompt_cache_key": "tenant-1",
        "prompt_cache_options": {},
        "prompt_cache_retention": "in_memory",
        "reasoning": {"effort": "low", "summary": "auto"},
        "safety_identifier": "hash-1",
        "service_tier": "auto",
        "store": true,
        "stream": true,
        "stream_options": {"include_obfuscation": false},
        "temperature": 0.5,
        "tool_choice": "auto",
        "tools": [{"type": "function", "name": "get_weather", "description": "Weather of a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}],
        "top_p": 0.9,
        "truncation": "disabled",
        "user": "user-7",
        "context_management": [],
        "conversation": null,
        "prompt": null,
        "moderation": null,
    })
}

#[tokio::test]
async fn every_documented_field_is_accepted_by_the_echo_model() {
    let server = TestServer::start(ServerConfig::default()).await;
    let response = post(&server, "/v1/chat/completions", &every_chat_field("echo")).await;
    assert_eq!(response.status(), 200, "{:?}", response.text().await);
    assert!(response.headers().get(DROPPED).is_none());
    let _ = response.text().await;

    let response = post(&server, "/v1/responses", &every_responses_field("echo")).await;
    assert_eq!(response.status(), 200, "{:?}", response.text().await);
    server.stop().await;
}

/// OpenAI's Chat Completions has a field for each: they reach the provider as sent.
#[tokio::test]
async fn every_documented_chat_field_reaches_a_replayed_openai() {
    let (mock, server) = replayed_openai().await;
    let response = post(&server, "/v1/chat/completions", &every_chat_field("gpt-4o")).await;
    assert_eq!(response.status(), 200);
    let _ = response.text().await;
    let sent = &received(&mock).await[0];
    for (key, value) in [
        ("frequency_penalty", json!(0.25)),
        ("logit_bias", json!({"50256": -100})),
        ("logprobs", json!(true)),
        ("metadata", json!({"team": "search"})),
        ("parallel_tool_calls", json!(false)),
        ("presence_penalty", json!(0.5)),
        ("prompt_cache_key", json!("tenant-1")),
        ("reasoning_effort", json!("low")),
        ("safety_identifier", json!("hash-1")),
        ("seed", json!(42)),
        ("service_tier", json!("flex")),
        ("stop", json!(["END"])),
        ("top_logprobs", json!(2)),
        ("top_p", json!(0.9)),
        ("user", json!("user-7")),
        ("verbosity", json!("low")),
    ] {
        assert_eq!(sent[key], value, "{key}: {sent}");
    }
    server.stop().await;
}

/// Anthropic takes the Responses fields in its own form: `top_p`, `metadata.user_id` from
/// the user, `tool_choice.disable_parallel_tool_use`, `service_tier: auto`.
#[tokio::test]
async fn every_documented_responses_field_reaches_a_replayed_anthropic() {
    let mock = MockServer::start().await;
    replay(&mock, "/v1/messages", &["anthropic/stream_text.sse"]).await;
    let server = server_for(Provider::Anthropic, mock.uri(), ServiceConfig::default()).await;
    let response = post(
        &server,
        "/v1/responses",
        &every_responses_field("claude-sonnet-4-5"),
    )
    .await;
    assert_eq!(response.status(), 200);
    assert!(response.headers().get(DROPPED).is_none());
    let _ = response.text().await;
    let sent = &received(&mock).await[0];
    assert_eq!(sent["top_p"], json!(0.9));
    assert_eq!(sent["metadata"], json!({"user_id": "user-7"}));
    assert_eq!(
        sent["tool_choice"],
        json!({"type": "auto", "disable_parallel_tool_use": true})
    );
    assert_eq!(sent["service_tier"], json!("auto"));
    server.stop().await;
}

#[tokio::test]
async fn unknown_fields_are_named_all_at_once() {
    let server = TestServer::start(ServerConfig::default()).await;
    for (path, mut body) in [
        (
            "/v1/chat/completions",
            json!({"model": "echo", "messages": [{"role": "user", "content": "Hi"}]}),
        ),
        ("/v1/responses", json!({"model": "echo", "input": "Hi"})),
    ] {
        body["seeed"] = json!(1);
        body["temprature"] = json!(0.5);
        let response = post(&server, path, &body).await;
        assert_eq!(response.status(), 400, "{path}");
        let error: Value = response.json().await.unwrap();
        let error = &error["error"];
        assert_eq!(error["type"], "invalid_request_error", "{path}");
        assert_eq!(error["code"], "unknown_parameter", "{path}");
        let message = error["message"].as_str().unwrap();
        assert!(
            message.contains("`seeed`") && message.contains("`temprature`"),
            "{path}: {message}"
        );
        assert_eq!(error["param"], "seeed, temprature", "{path}");
    }
    server.stop().await;
}

/// The fields both endpoints share are read from one flattened part of each request: an
/// unknown field next to them is still named (with every other one, in the order sent: here
/// sorted, as `json!` writes keys), and a
/// shared field of the wrong shape is still named as the parameter at fault.
#[tokio::test]
async fn shared_fields_leave_unknown_and_wrong_fields_named() {
    let server = TestServer::start(ServerConfig::default()).await;
    for (path, body) in [
        (
            "/v1/chat/completions",
            json!({"model": "echo", "messages": [{"role": "user", "content": "Hi"}]}),
        ),
        ("/v1/responses", json!({"model": "echo", "input": "Hi"})),
    ] {
        let mut unknown = body.clone();
        let fields = unknown.as_object_mut().unwrap();
        fields.insert("zeta".into(), json!(1));
        fields.insert("top_p".into(), json!(0.5));
        fields.insert("user".into(), json!("u-1"));
        fields.insert("alpha".into(), json!({"nested": true}));
        let response = post(&server, path, &unknown).await;
        assert_eq!(response.status(), 400, "{path}");
        let error: Value = response.json().await.unwrap();
        assert_eq!(error["error"]["code"], "unknown_parameter", "{path}");
        assert_eq!(error["error"]["param"], "alpha, zeta", "{path}");

        let mut wrong = body.clone();
        wrong["top_p"] = json!("high");
        let response = post(&server, path, &wrong).await;
        assert_eq!(response.status(), 400, "{path}");
        let error: Value = response.json().await.unwrap();
        assert_eq!(error["error"]["type"], "invalid_request_error", "{path}");
        assert_eq!(error["error"]["param"], "top_p", "{path}");
        let message = error["error"]["message"].as_str().unwrap();
        assert!(
            message.starts_with("`top_p`: invalid type: string \"high\""),
            "{path}: {message}"
        );

        let mut shared = body;
        shared["top_p"] = json!(0.5);
        shared["metadata"] = json!({"k": "v"});
        let response = post(&server, path, &shared).await;
        assert_eq!(response.status(), 200, "{path}");
    }
    server.stop().await;
}

/// Gemini cannot be told to make one call at a time, nor to bias tokens: by default the
/// request is refused naming both fields and the provider, before anything is sent.
#[tokio::test]
async fn by_default_what_a_provider_cannot_honour_is_refused() {
    let mock = MockServer::start().await;
    let server = server_for(
        Provider::Google,
        format!("{}/v1beta", mock.uri()),
        ServiceConfig::default(),
    )
    .await;
    let body = json!({
        "model": "gemini-2.5-flash",
        "messages": [{"role": "user", "content": "Hi"}],
        "tools": [weather_tool_chat()],
        "parallel_tool_calls": false,
        "logit_bias": {"50256": -100},
        "seed": 7,
    });
    let response = post(&server, "/v1/chat/completions", &body).await;
    assert_eq!(response.status(), 400);
    let error: Value = response.json().await.unwrap();
    let error = &error["error"];
    assert_eq!(error["code"], "unsupported_parameter");
    assert_eq!(error["param"], "logit_bias, parallel_tool_calls");
    let message = error["message"].as_str().unwrap();
    for named in [
        "`logit_bias`",
        "`parallel_tool_calls`",
        "google",
        "gemini-2.5-flash",
        "drop_unsupported_params",
    ] {
        assert!(message.contains(named), "{named}: {message}");
    }
    assert!(received(&mock).await.is_empty(), "nothing was sent");
    server.stop().await;
}

/// A field Skein serves for no model (`conversation`) is not blamed on the provider: the
/// message says which fields Gemini lacks and which no model is served with, in one answer.
#[tokio::test]
async fn fields_no_model_is_served_with_are_not_blamed_on_the_provider() {
    let mock = MockServer::start().await;
    let server = server_for(
        Provider::Google,
        format!("{}/v1beta", mock.uri()),
        ServiceConfig::default(),
    )
    .await;
    let body = json!({
        "model": "gemini-2.5-flash",
        "input": "Hi",
        "tools": [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}],
        "parallel_tool_calls": false,
        "conversation": "conv_1",
    });
    let response = post(&server, "/v1/responses", &body).await;
    assert_eq!(response.status(), 400);
    let error: Value = response.json().await.unwrap();
    let error = &error["error"];
    assert_eq!(error["code"], "unsupported_parameter");
    assert_eq!(error["param"], "conversation, parallel_tool_calls");
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains(
            "`parallel_tool_calls` cannot be honoured for `gemini-2.5-flash` (google): the \
             provider has no equivalent, and `conversation` is served by Skein for no model"
        ),
        "{message}"
    );
    assert!(message.contains("leave them out"), "{message}");
    assert!(received(&mock).await.is_empty(), "nothing was sent");
    server.stop().await;
}

/// With `drop_unsupported_params` the same request is answered without those fields, and
/// the answer says which were dropped; what Gemini does take (`seed`) still goes out.
#[tokio::test]
async fn dropped_fields_are_named_in_a_header() {
    let mock = MockServer::start().await;
    replay(
        &mock,
        "/v1beta/models/gemini-2.5-flash:streamGenerateContent",
        &["gemini/stream_text.sse"],
    )
    .await;
    let server = server_for(
        Provider::Google,
        format!("{}/v1beta", mock.uri()),
        ServiceConfig {
            drop_unsupported_params: true,
            ..ServiceConfig::default()
        },
    )
    .await;
    let body = json!({
        "model": "gemini-2.5-flash",
        "messages": [{"role": "user", "content": "Hi"}],
        "tools": [weather_tool_chat()],
        "parallel_tool_calls": false,
        "logit_bias": {"50256": -100},
        "seed": 7,
        "stream": true,
    });
    let response = post(&server, "/v1/chat/completions", &body).await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()[DROPPED].to_str().unwrap(),
        "logit_bias,parallel_tool_calls"
    );
    let _ = response.text().await;
    let sent = &received(&mock).await[0];
    assert_eq!(sent["generationConfig"]["seed"], json!(7));
    assert!(sent.get("logit_bias").is_none(), "{sent}");
    server.stop().await;
}

/// The policy per model wins over the global one, and fields the gateway carries to no
/// provider (`audio`, a stored `prompt`) fall under it too.
#[tokio::test]
async fn the_policy_can_be_set_per_model() {
    let server = TestServer::start(ServerConfig {
        service: ServiceConfig {
            models: [(
                "echo".to_owned(),
                ModelSettings {
                    drop_unsupported_params: Some(true),
                },
            )]
            .into(),
            ..ServiceConfig::default()
        },
        ..ServerConfig::default()
    })
    .await;
    let body = json!({
        "model": "echo",
        "messages": [{"role": "user", "content": "Hi"}],
        "modalities": ["text", "audio"],
        "audio": {"voice": "alloy", "format": "wav"},
    });
    let response = post(&server, "/v1/chat/completions", &body).await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()[DROPPED].to_str().unwrap(),
        "audio,modalities"
    );

    let body = json!({"model": "echo", "input": "Hi", "prompt": {"id": "pmpt_1"}, "conversation": "conv_1"});
    let response = post(&server, "/v1/responses", &body).await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()[DROPPED].to_str().unwrap(),
        "prompt,conversation"
    );
    server.stop().await;

    // Without it, the same request is refused.
    let server = TestServer::start(ServerConfig::default()).await;
    let response = post(&server, "/v1/responses", &body).await;
    assert_eq!(response.status(), 400);
    let error: Value = response.json().await.unwrap();
    assert_eq!(error["error"]["param"], "prompt, conversation");
    server.stop().await;
}

/// An agent alias falls under the policy of the model it runs on: by default the fields its
/// provider cannot honour are refused, naming the alias and the provider, before the agent
/// runs; the policy is looked up under the alias's name first, then its model's, then the
/// global one.
#[tokio::test]
async fn an_agent_alias_follows_the_policy_of_its_model() {
    let mock = MockServer::start().await;
    replay(
        &mock,
        "/v1beta/models/gemini-2.5-flash:streamGenerateContent",
        &["gemini/stream_text.sse"],
    )
    .await;
    let alias = |model: &str| service::config::AgentAlias {
        model: model.to_owned(),
        ..Default::default()
    };
    let agents: std::collections::BTreeMap<_, _> = [
        ("skein/gemini".to_owned(), alias("gemini-2.5-flash")),
        ("skein/strict".to_owned(), alias("gemini-2.5-flash")),
    ]
    .into();
    let body = |model: &str| {
        json!({
            "model": model,
            "messages": [{"role": "user", "content": "Hi"}],
            "logit_bias": {"50256": -100},
            "verbosity": "low",
            "seed": 7,
        })
    };

    let server = server_for(
        Provider::Google,
        format!("{}/v1beta", mock.uri()),
        ServiceConfig {
            agents: agents.clone(),
            ..ServiceConfig::default()
        },
    )
    .await;
    let response = post(&server, "/v1/chat/completions", &body("skein/gemini")).await;
    assert_eq!(response.status(), 400);
    let error: Value = response.json().await.unwrap();
    let error = &error["error"];
    assert_eq!(error["code"], "unsupported_parameter");
    assert_eq!(error["param"], "logit_bias, verbosity");
    let message = error["message"].as_str().unwrap();
    for named in ["`logit_bias`", "`verbosity`", "google", "`skein/gemini`"] {
        assert!(message.contains(named), "{named}: {message}");
    }
    assert!(received(&mock).await.is_empty(), "the agent did not run");
    server.stop().await;

    // The model's own setting lets them be dropped, unless the alias has a setting of its own.
    let setting = |drop| ModelSettings {
        drop_unsupported_params: Some(drop),
    };
    let server = server_for(
        Provider::Google,
        format!("{}/v1beta", mock.uri()),
        ServiceConfig {
            agents,
            models: [
                ("gemini-2.5-flash".to_owned(), setting(true)),
                ("skein/strict".to_owned(), setting(false)),
            ]
            .into(),
            ..ServiceConfig::default()
        },
    )
    .await;
    let response = post(&server, "/v1/chat/completions", &body("skein/gemini")).await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()[DROPPED].to_str().unwrap(),
        "logit_bias,verbosity"
    );
    let _ = response.text().await;
    // What Gemini does take reaches it from the agent's call.
    let sent = &received(&mock).await[0];
    assert_eq!(sent["generationConfig"]["seed"], json!(7), "{sent}");
    assert!(sent.get("logit_bias").is_none(), "{sent}");

    let response = post(&server, "/v1/chat/completions", &body("skein/strict")).await;
    assert_eq!(response.status(), 400);
    let error: Value = response.json().await.unwrap();
    assert_eq!(error["error"]["param"], "logit_bias, verbosity");
    server.stop().await;
}

/// The deprecated `functions` / `function_call` are read as `tools` / `tool_choice`.
#[tokio::test]
async fn legacy_functions_are_read_as_tools() {
    let (mock, server) = replayed_openai().await;
    let body = json!({
        "model": "gpt-4o",
        "messages": [{"role": "user", "content": "Hi"}],
        "functions": [{"name": "get_weather", "parameters": {"type": "object", "properties": {}}}],
        "function_call": {"name": "get_weather"},
        "stream": true,
    });
    let response = post(&server, "/v1/chat/completions", &body).await;
    assert_eq!(response.status(), 200);
    let _ = response.text().await;
    let sent = &received(&mock).await[0];
    assert_eq!(sent["tools"][0]["function"]["name"], "get_weather");
    assert_eq!(
        sent["tool_choice"],
        json!({"type": "function", "function": {"name": "get_weather"}})
    );
    server.stop().await;
}

/// `n` above 1 asks for several choices, which Skein does not give: refused by default, and
/// answered with one choice (the header naming `n`) when the operator drops what cannot be
/// honoured. Outside OpenAI's 1 to 128 it is refused whatever the policy.
#[tokio::test]
async fn several_choices_fall_under_the_policy() {
    let body = |n: u32| json!({"model": "echo", "messages": [{"role": "user", "content": "{\"raw\": \"one\"}"}], "n": n});
    let refusing = TestServer::start(ServerConfig::default()).await;
    let response = post(&refusing, "/v1/chat/completions", &body(2)).await;
    assert_eq!(response.status(), 400);
    let error: Value = response.json().await.unwrap();
    assert_eq!(error["error"]["code"], "unsupported_parameter");
    assert_eq!(error["error"]["param"], "n");
    refusing.stop().await;

    let dropping = TestServer::start(ServerConfig {
        service: ServiceConfig {
            drop_unsupported_params: true,
            ..ServiceConfig::default()
        },
        ..ServerConfig::default()
    })
    .await;
    let response = post(&dropping, "/v1/chat/completions", &body(3)).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()[DROPPED].to_str().unwrap(), "n");
    let answer: Value = response.json().await.unwrap();
    assert_eq!(answer["choices"].as_array().map(Vec::len), Some(1));
    assert_eq!(answer["choices"][0]["message"]["content"], "one");
    for n in [0, 129] {
        let response = post(&dropping, "/v1/chat/completions", &body(n)).await;
        assert_eq!(response.status(), 400, "n = {n}");
        let error: Value = response.json().await.unwrap();
        assert_eq!(error["error"]["code"], "invalid_value", "n = {n}");
        assert_eq!(error["error"]["param"], "n", "n = {n}");
    }
    dropping.stop().await;
}

/// `include` takes the values OpenAI documents (the SDKs' `ResponseIncludable`); another is
/// refused as OpenAI refuses it, naming the field, while every documented one is accepted.
#[tokio::test]
async fn include_takes_the_documented_values_only() {
    let server = TestServer::start(ServerConfig::default()).await;
    let documented = [
        "message.output_text.logprobs",
        "reasoning.encrypted_content",
        "web_search_call.action.sources",
        "web_search_call.results",
        "code_interpreter_call.outputs",
        "computer_call_output.output.image_url",
        "file_search_call.results",
        "message.input_image.image_url",
    ];
    let body = json!({"model": "echo", "input": "{\"raw\": \"ok\"}", "include": documented});
    let response = post(&server, "/v1/responses", &body).await;
    assert_eq!(response.status(), 200);
    let body = json!({"model": "echo", "input": "hi", "include": ["reasoning.encrypted_content", "message.bogus"]});
    let response = post(&server, "/v1/responses", &body).await;
    assert_eq!(response.status(), 400);
    let error: Value = response.json().await.unwrap();
    let message = error["error"]["message"].as_str().unwrap();
    assert!(message.contains("message.bogus"), "{message}");
    assert!(
        error["error"]["param"]
            .as_str()
            .unwrap()
            .starts_with("include"),
        "{error}"
    );
    server.stop().await;
}

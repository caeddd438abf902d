//! A tool round continued by a client that resends only what it understood of the answer
//! (openai-python, LangChain, the Agents SDK …): no `reasoning_details`, no reasoning items,
//! no `previous_response_id`. The provider must still get back the reasoning it issued:
//! Gemini the `thoughtSignature` of its call, Anthropic the signed thinking block before its
//! `tool_use`. Recorded streams are replayed behind the server; expected signatures are read
//! off the recordings.

use crate::support;

use providers::Provider;
use serde_json::{Value, json};
use server::ServerConfig;
use server::schema::Secret;
use service::ServiceConfig;
use service::config::ProviderBaseUrls;
use service::keys::ProviderKeys;
use support::{TestServer, client, events, received, replay};
use wiremock::MockServer;

const GEMINI_STREAM: &str = "/v1beta/models/gemini-2.5-flash:streamGenerateContent";

/// A server whose OpenAI, Anthropic and Gemini models all use `mock`, callable with `tokens`
/// (none: loopback callers only).
fn keyed(mock: &MockServer, tokens: &[&str]) -> ServerConfig {
    let mut keys = ProviderKeys::default();
    keys.set(Provider::OpenAi, Secret::new("sk-server-test"));
    keys.set(Provider::Anthropic, Secret::new("sk-ant-server-test"));
    keys.set(Provider::Google, Secret::new("g-server-test"));
    ServerConfig {
        tokens: tokens.iter().map(|token| Secret::new(*token)).collect(),
        service: ServiceConfig {
            keys,
            base_urls: ProviderBaseUrls::from([
                (Provider::OpenAi, format!("{}/v1", mock.uri())),
                (Provider::Anthropic, mock.uri()),
                (Provider::Google, format!("{}/v1beta", mock.uri())),
            ]),
            ..ServiceConfig::default()
        },
        ..ServerConfig::default()
    }
}

/// `POST path` with `body`, as the caller of `token` when there is one.
async fn post(
    server: &TestServer,
    path: &str,
    token: Option<&str>,
    body: &Value,
) -> reqwest::Response {
    let request = client().post(server.url(path)).json(body);
    match token {
        Some(token) => request.bearer_auth(token),
        None => request,
    }
    .send()
    .await
    .unwrap()
}

/// The `data:` payloads of a Chat Completions stream, without the final `[DONE]`.
async fn chunks(response: reqwest::Response) -> Vec<Value> {
    use futures::StreamExt as _;
    assert_eq!(response.status(), 200);
    let mut stream = eventsource_stream::EventStream::new(response.bytes_stream());
    let mut chunks = Vec::new();
    while let Some(event) = stream.next().await {
        let data = event.expect("a well-formed SSE event").data;
        if data != "[DONE]" {
            chunks.push(serde_json::from_str(&data).expect("JSON data"));
        }
    }
    chunks
}

/// The tool call of a Chat Completions stream, its pieces joined, as a client resends it.
fn streamed_call(chunks: &[Value]) -> Value {
    let pieces: Vec<&Value> = chunks
        .iter()
        .filter_map(|chunk| chunk.pointer("/choices/0/delta/tool_calls/0"))
        .collect();
    let id = pieces
        .iter()
        .find_map(|piece| piece["id"].as_str())
        .unwrap();
    let name = pieces
        .iter()
        .find_map(|piece| piece["function"]["name"].as_str())
        .unwrap();
    let arguments: String = pieces
        .iter()
        .filter_map(|piece| piece["function"]["arguments"].as_str())
        .collect();
    json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}})
}

/// The recorded Gemini request of the tool round: its question and its tool, as an OpenAI
/// client declares it.
fn gemini_round() -> (Value, Value) {
    let recorded: Value = serde_json::from_slice(&support::fixture(
        "gemini/stream_function_call_signature.request.json",
    ))
    .unwrap();
    let declaration = &recorded["tools"][0]["functionDeclarations"][0];
    let question = recorded["contents"][0]["parts"][0]["text"].clone();
    let function = json!({"name": declaration["name"], "description": declaration["description"],
                          "parameters": declaration["parameters_json_schema"]});
    (question, function)
}

/// The bytes of a base64 signature, whichever alphabet wrote it (the recording's client wrote
/// URL-safe base64).
fn signature_bytes(signature: &Value) -> Vec<u8> {
    use base64::Engine as _;
    let text = signature
        .as_str()
        .unwrap_or_else(|| panic!("a signature, not {signature}"))
        .replace('-', "+")
        .replace('_', "/");
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .unwrap()
}

/// The signature the recorded follow-up sent back with the call.
fn recorded_gemini_signature() -> Vec<u8> {
    let followup: Value = serde_json::from_slice(&support::fixture(
        "gemini/stream_function_call_signature.followup.request.json",
    ))
    .unwrap();
    signature_bytes(&call_part(&followup)["thoughtSignature"])
}

/// The `functionCall` part of the model turn in a Gemini request body.
fn call_part(body: &Value) -> &Value {
    let turn = &body["contents"][1];
    assert_eq!(turn["role"], "model", "{body}");
    turn["parts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|part| part.get("functionCall").is_some())
        .expect("the call is sent back")
}

/// Turn 1 of the Gemini round through Chat Completions as `token`; the call it made.
async fn gemini_chat_turn_one(server: &TestServer, token: Option<&str>) -> (Value, Value) {
    let (question, function) = gemini_round();
    let tools = json!([{"type": "function", "function": function}]);
    let first = chunks(
        post(
            server,
            "/v1/chat/completions",
            token,
            &json!({"model": "gemini-2.5-flash", "stream": true, "tools": tools,
                    "messages": [{"role": "user", "content": question}]}),
        )
        .await,
    )
    .await;
    let call = streamed_call(&first);
    assert_eq!(call["function"]["name"], function["name"]);
    let turn_two = json!({"model": "gemini-2.5-flash", "stream": true, "tools": tools,
    "messages": [
        {"role": "user", "content": question},
        {"role": "assistant", "content": null, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call["id"], "content": "{\"country\": \"France\"}"},
    ]});
    (call, turn_two)
}

#[tokio::test]
async fn a_gemini_round_resent_through_chat_completions_gets_its_signature_back() {
    let mock = MockServer::start().await;
    replay(
        &mock,
        GEMINI_STREAM,
        &[
            "gemini/stream_function_call_signature.sse",
            "gemini/stream_text_after_function_call.sse",
        ],
    )
    .await;
    let server = TestServer::start(keyed(&mock, &[])).await;
    let (_, turn_two) = gemini_chat_turn_one(&server, None).await;
    // Resent as openai-python and LangChain resend it: the message they parsed, nothing more.
    let answered = chunks(post(&server, "/v1/chat/completions", None, &turn_two).await).await;
    assert!(
        answered
            .iter()
            .any(|chunk| chunk["choices"][0]["finish_reason"] == "stop")
    );
    let sent = received(&mock).await;
    assert_eq!(sent.len(), 2);
    assert_eq!(
        signature_bytes(&call_part(&sent[1])["thoughtSignature"]),
        recorded_gemini_signature()
    );
    server.stop().await;
}

#[tokio::test]
async fn a_gemini_round_resent_as_responses_items_gets_its_signature_back() {
    let mock = MockServer::start().await;
    replay(
        &mock,
        GEMINI_STREAM,
        &[
            "gemini/stream_function_call_signature.sse",
            "gemini/stream_text_after_function_call.sse",
        ],
    )
    .await;
    let server = TestServer::start(keyed(&mock, &[])).await;
    let (question, function) = gemini_round();
    let mut tool = function.clone();
    tool["type"] = json!("function");
    let first = events(
        post(
            &server,
            "/v1/responses",
            None,
            &json!({"model": "gemini-2.5-flash", "tools": [tool], "stream": true,
                    "input": question}),
        )
        .await,
    )
    .await;
    let first = &first.last().unwrap().data["response"];
    let call = first["output"]
        .as_array()
        .unwrap()
        .iter()
        .find(|item| item["type"] == "function_call")
        .unwrap()
        .clone();
    // The items sent back as received, without `previous_response_id` (a client keeping its
    // own history, as the Agents SDK does with `store` on).
    let second = post(
        &server,
        "/v1/responses",
        None,
        &json!({"model": "gemini-2.5-flash", "tools": [tool], "stream": true,
        "input": [
            {"role": "user", "content": question},
            call,
            {"type": "function_call_output", "call_id": call["call_id"],
             "output": "{\"country\": \"France\"}"},
        ]}),
    )
    .await;
    let second = events(second).await;
    assert_eq!(second.last().unwrap().name, "response.completed");
    let sent = received(&mock).await;
    assert_eq!(
        signature_bytes(&call_part(&sent[1])["thoughtSignature"]),
        recorded_gemini_signature()
    );
    server.stop().await;
}

/// The signature of the thinking block in `anthropic/stream_thinking_tool_use.sse`.
const ANTHROPIC_SIGNATURE: &str = "EoQDCm0IDhgCKkCDzGs2kL2PgnDCZU/nM2wG2P1VIXCRHVnhDDzBQxNF1fl4QBXEKLxRItNJ2MwFdW9eeZPhsxSQIxD54cv3zs29MhljbGF1ZGUtaGFpa3UtNC01LTIwMjUxMDAxOABCCHRoaW5raW5nEgy/OWlwTmmqUjC6L70aDJ4P0R5NfuIe9U5zAiIwCxPduXS2UxCNxJCee3i91qK3cAyAgxCjL2wkQ5UD56iX1hXGOyuNaiH5k+dF5OCQKsQBxiAo+NjC61hV8nRYtaiP+C4inOcuMKuTG9Z1rysxTXkKBTl3oMiOlnEPHHPpKpg4sYF2G5VoTg8JTon20hdZw4GfTEVupnU1qAmnMqyAgke9SoV7HBW/PyA/FxL/q33xJ2gKFiD+BsgI9Z0koMmFKCvm2MoYE6u+ONEwKdFQXL1FKRW6t/bYbJGrLJLwxilsL82h9j4xjggjMn8Npvpn+zsrDPW/8PuLd4Pu+/EsjoneYwyxQQtUVgzhVGhhANWRjSBwUxgB";

#[tokio::test]
async fn an_anthropic_thinking_round_resent_without_reasoning_gets_its_thinking_back() {
    let mock = MockServer::start().await;
    replay(
        &mock,
        "/v1/messages",
        &[
            "anthropic/stream_thinking_tool_use.sse",
            "anthropic/stream_text_after_tool.sse",
        ],
    )
    .await;
    let server = TestServer::start(keyed(&mock, &[])).await;
    let tools = json!([{"type": "function", "function": {"name": "fixed_version", "parameters": {"type": "object"}}}]);
    let question = "Which version? Then a joke.";
    let first = chunks(
        post(
            &server,
            "/v1/chat/completions",
            None,
            &json!({"model": "claude-sonnet-4-5", "stream": true, "tools": tools,
                    "reasoning_effort": "low",
                    "messages": [{"role": "user", "content": question}]}),
        )
        .await,
    )
    .await;
    let call = streamed_call(&first);
    assert_eq!(call["id"], "toolu_01825dXWLSoJwCst1qTsiWdb");
    // LangChain keeps neither `reasoning_content` nor `reasoning_details`.
    let answered = chunks(
        post(
            &server,
            "/v1/chat/completions",
            None,
            &json!({"model": "claude-sonnet-4-5", "stream": true, "tools": tools,
            "reasoning_effort": "low",
            "messages": [
                {"role": "user", "content": question},
                {"role": "assistant", "content": "", "tool_calls": [call]},
                {"role": "tool", "tool_call_id": call["id"], "content": "1.2.3"},
            ]}),
        )
        .await,
    )
    .await;
    assert!(
        answered
            .iter()
            .any(|chunk| chunk["choices"][0]["finish_reason"] == "stop")
    );
    let sent = received(&mock).await;
    let turn = &sent[1]["messages"][1];
    assert_eq!(turn["role"], "assistant");
    assert_eq!(turn["content"][0]["type"], "thinking", "{turn}");
    assert_eq!(turn["content"][0]["signature"], ANTHROPIC_SIGNATURE);
    assert!(
        turn["content"][0]["thinking"]
            .as_str()
            .unwrap()
            .starts_with("The user wants me to:\n1. Use the fixed_version tool")
    );
    assert_eq!(turn["content"][1]["type"], "tool_use");
    assert_eq!(turn["content"][1]["id"], "toolu_01825dXWLSoJwCst1qTsiWdb");
    assert_eq!(
        sent[1]["messages"][2]["content"][0]["tool_use_id"],
        "toolu_01825dXWLSoJwCst1qTsiWdb"
    );
    server.stop().await;
}

#[tokio::test]
async fn another_callers_identical_history_gets_no_signature_of_the_first() {
    let tokens = ["signature-token-a", "signature-token-b"];
    let mock = MockServer::start().await;
    replay(
        &mock,
        GEMINI_STREAM,
        &[
            "gemini/stream_function_call_signature.sse",
            "gemini/stream_text_after_function_call.sse",
        ],
    )
    .await;
    let server = TestServer::start(keyed(&mock, &tokens)).await;
    let (_, turn_two) = gemini_chat_turn_one(&server, Some(tokens[0])).await;
    // Caller B sends the very history A received, ids included: it is B's own conversation,
    // which holds no answer, so nothing of A's reaches the provider for B.
    let answered =
        chunks(post(&server, "/v1/chat/completions", Some(tokens[1]), &turn_two).await).await;
    assert!(!answered.is_empty());
    let sent = received(&mock).await;
    let signature = &call_part(&sent[1])["thoughtSignature"];
    assert_ne!(signature_bytes(signature), recorded_gemini_signature());
    // Gemini's documented stand-in for a call it did not sign in this conversation.
    assert_eq!(signature, "skip_thought_signature_validator");
    server.stop().await;
}

/// The finished response of a streamed `POST /v1/responses`.
async fn streamed_response(response: reqwest::Response) -> Value {
    let events = events(response).await;
    let last = events.last().expect("some events");
    assert_eq!(last.name, "response.completed", "{:?}", last.data);
    last.data["response"].clone()
}

#[tokio::test]
async fn item_references_stand_for_the_stored_items_with_their_reasoning() {
    let mock = MockServer::start().await;
    replay(
        &mock,
        "/v1/messages",
        &[
            "anthropic/stream_thinking_tool_use.sse",
            "anthropic/stream_text_after_tool.sse",
        ],
    )
    .await;
    let server = TestServer::start(keyed(&mock, &[])).await;
    let tools =
        json!([{"type": "function", "name": "fixed_version", "parameters": {"type": "object"}}]);
    let question = "Which version? Then a joke.";
    let first = streamed_response(
        post(
            &server,
            "/v1/responses",
            None,
            &json!({"model": "claude-sonnet-4-5", "stream": true, "tools": tools,
                    "input": question}),
        )
        .await,
    )
    .await;
    let output = first["output"].as_array().unwrap();
    assert_eq!(output[0]["type"], "reasoning");
    assert_eq!(output[1]["type"], "function_call");
    let call_id = output[1]["call_id"].clone();
    // As the Vercel AI SDK continues after a reasoning step: references to the stored items.
    // `store: false` here, so only the references can bring the thinking back.
    let second = streamed_response(
        post(
            &server,
            "/v1/responses",
            None,
            &json!({"model": "claude-sonnet-4-5", "stream": true, "tools": tools,
            "store": false,
            "input": [
                {"role": "user", "content": [{"type": "input_text", "text": question}]},
                {"type": "item_reference", "id": output[0]["id"]},
                {"type": "item_reference", "id": output[1]["id"]},
                {"type": "function_call_output", "call_id": call_id, "output": "1.2.3"},
            ]}),
        )
        .await,
    )
    .await;
    assert_eq!(second["status"], "completed");
    let sent = received(&mock).await;
    let turn = &sent[1]["messages"][1];
    assert_eq!(turn["content"][0]["type"], "thinking", "{turn}");
    assert_eq!(turn["content"][0]["signature"], ANTHROPIC_SIGNATURE);
    assert_eq!(turn["content"][1]["type"], "tool_use");
    assert_eq!(turn["content"][1]["id"], "toolu_01825dXWLSoJwCst1qTsiWdb");
    assert_eq!(
        sent[1]["messages"][2]["content"][0]["tool_use_id"],
        "toolu_01825dXWLSoJwCst1qTsiWdb"
    );
    server.stop().await;
}

#[tokio::test]
async fn only_the_callers_own_items_can_be_referenced() {
    let tokens = ["reference-token-a", "reference-token-b"];
    let server = TestServer::start(ServerConfig {
        tokens: tokens.iter().map(|token| Secret::new(*token)).collect(),
        ..ServerConfig::default()
    })
    .await;
    let mine: Value = post(
        &server,
        "/v1/responses",
        Some(tokens[0]),
        &json!({"model": "echo", "input": "{\"raw\": \"Mine.\"}"}),
    )
    .await
    .json()
    .await
    .unwrap();
    let message = mine["output"][0]["id"].as_str().unwrap().to_owned();
    assert!(message.starts_with("msg_"), "{mine}");
    let continued = |message: &str| {
        json!({"model": "echo", "input": [
            {"role": "user", "content": "{\"raw\": \"Mine.\"}"},
            {"type": "item_reference", "id": message},
            {"role": "user", "content": "{\"raw\": \"Again.\"}"},
        ]})
    };
    // The owner may refer to it: it stands for the stored message.
    let own = post(
        &server,
        "/v1/responses",
        Some(tokens[0]),
        &continued(&message),
    )
    .await;
    assert_eq!(own.status(), 200);
    let own: Value = own.json().await.unwrap();
    assert_eq!(own["output"][0]["content"][0]["text"], "Again.");

    // Another caller gets a 400 for each of the owner's items, as for an id never given out.
    let (stem, _) = message.rsplit_once('_').unwrap();
    for id in [
        message.clone(),
        format!("{stem}_1"),
        message.replacen("msg_", "rs_", 1),
    ] {
        let refused = post(&server, "/v1/responses", Some(tokens[1]), &continued(&id)).await;
        assert_eq!(refused.status(), 400, "{id}");
    }
    let other = post(
        &server,
        "/v1/responses",
        Some(tokens[1]),
        &continued(&message),
    )
    .await;
    assert_eq!(other.status(), 400);
    let other: Value = other.json().await.unwrap();
    assert_eq!(other["error"]["type"], "invalid_request_error");
    assert_eq!(other["error"]["param"], "input[1].id");
    assert!(
        other["error"]["message"]
            .as_str()
            .unwrap()
            .contains(&message),
        "{other}"
    );
    let several = post(
        &server,
        "/v1/responses",
        Some(tokens[0]),
        &json!({"model": "echo", "input": [
            {"role": "user", "content": "hi"},
            {"type": "item_reference", "id": "rs_0123456789abcdef_0"},
            {"type": "item_reference", "id": "not-an-item"},
        ]}),
    )
    .await;
    assert_eq!(several.status(), 400);
    let several: Value = several.json().await.unwrap();
    let text = several["error"]["message"].as_str().unwrap();
    assert!(
        text.contains("`rs_0123456789abcdef_0` (input[1])"),
        "{text}"
    );
    assert!(text.contains("`not-an-item` (input[2])"), "{text}");
    assert_eq!(several["error"]["param"], "input[1].id");
    server.stop().await;
}

#[tokio::test]
async fn without_a_stored_conversation_the_signature_rides_in_extra_content() {
    let mock = MockServer::start().await;
    replay(
        &mock,
        GEMINI_STREAM,
        &[
            "gemini/stream_function_call_signature.sse",
            "gemini/stream_text_after_function_call.sse",
        ],
    )
    .await;
    let server = TestServer::start(keyed(&mock, &[])).await;
    let (question, function) = gemini_round();
    let tools = json!([{"type": "function", "function": function}]);
    let first = chunks(
        post(
            &server,
            "/v1/chat/completions",
            None,
            &json!({"model": "gemini-2.5-flash", "stream": true, "tools": tools, "store": false,
                    "messages": [{"role": "user", "content": question}]}),
        )
        .await,
    )
    .await;
    // Where Gemini's OpenAI compatibility puts it: `extra_content.google.thought_signature`
    // on the call, here on a piece of call 0.
    let signature = first
        .iter()
        .filter_map(|chunk| chunk.pointer("/choices/0/delta/tool_calls/0"))
        .find_map(|piece| piece.pointer("/extra_content/google/thought_signature"))
        .expect("the call's signature reaches the client")
        .clone();
    assert_eq!(signature_bytes(&signature), recorded_gemini_signature());
    let mut call = streamed_call(&first);
    call["extra_content"] = json!({"google": {"thought_signature": signature}});
    // `store: false`: nothing to restore from, so only what the client sends back counts.
    let answered = chunks(
        post(
            &server,
            "/v1/chat/completions",
            None,
            &json!({"model": "gemini-2.5-flash", "stream": true, "tools": tools, "store": false,
                "messages": [
                    {"role": "user", "content": question},
                    {"role": "assistant", "content": null, "tool_calls": [call]},
                    {"role": "tool", "tool_call_id": call["id"], "content": "{\"country\": \"France\"}"},
                ]}),
        )
        .await,
    )
    .await;
    assert!(!answered.is_empty());
    let sent = received(&mock).await;
    assert_eq!(
        signature_bytes(&call_part(&sent[1])["thoughtSignature"]),
        recorded_gemini_signature()
    );
    server.stop().await;
}

#[tokio::test]
async fn reasoning_items_sent_back_without_encrypted_content_get_their_signature_back() {
    let mock = MockServer::start().await;
    replay(
        &mock,
        "/v1/messages",
        &[
            "anthropic/stream_thinking_tool_use.sse",
            "anthropic/stream_text_after_tool.sse",
        ],
    )
    .await;
    let server = TestServer::start(keyed(&mock, &[])).await;
    let tools =
        json!([{"type": "function", "name": "fixed_version", "parameters": {"type": "object"}}]);
    let question = "Which version? Then a joke.";
    let first = streamed_response(
        post(
            &server,
            "/v1/responses",
            None,
            &json!({"model": "claude-sonnet-4-5", "stream": true, "tools": tools,
                    "input": question}),
        )
        .await,
    )
    .await;
    // The Agents SDK sends the reasoning item back without `encrypted_content` unless it
    // asked for it with `include`.
    let mut items = first["output"].as_array().unwrap().clone();
    items[0]
        .as_object_mut()
        .unwrap()
        .remove("encrypted_content");
    let call_id = items[1]["call_id"].clone();
    items.insert(0, json!({"role": "user", "content": question}));
    items.push(json!({"type": "function_call_output", "call_id": call_id, "output": "1.2.3"}));
    let second = streamed_response(
        post(
            &server,
            "/v1/responses",
            None,
            &json!({"model": "claude-sonnet-4-5", "stream": true, "tools": tools, "input": items}),
        )
        .await,
    )
    .await;
    assert_eq!(second["status"], "completed");
    let sent = received(&mock).await;
    let turn = &sent[1]["messages"][1];
    assert_eq!(turn["content"][0]["type"], "thinking", "{turn}");
    assert_eq!(turn["content"][0]["signature"], ANTHROPIC_SIGNATURE);
    assert_eq!(turn["content"][1]["id"], "toolu_01825dXWLSoJwCst1qTsiWdb");
    server.stop().await;
}

#[tokio::test]
async fn an_unstored_gemini_round_resent_as_responses_items_gets_its_signature_back() {
    let mock = MockServer::start().await;
    replay(
        &mock,
        GEMINI_STREAM,
        &[
            "gemini/stream_function_call_signature.sse",
            "gemini/stream_text_after_function_call.sse",
        ],
    )
    .await;
    let server = TestServer::start(keyed(&mock, &[])).await;
    let (question, function) = gemini_round();
    let mut tool = function.clone();
    tool["type"] = json!("function");
    let first = events(
        post(
            &server,
            "/v1/responses",
            None,
            &json!({"model": "gemini-2.5-flash", "tools": [tool], "stream": true,
                    "store": false, "input": question}),
        )
        .await,
    )
    .await;
    // The call is announced with the id it keeps: a client may pair pieces by it.
    let added = first
        .iter()
        .find(|event| event.name == "response.output_item.added")
        .map(|event| event.data["item"]["call_id"].clone())
        .unwrap();
    let response = &first.last().unwrap().data["response"];
    assert_eq!(response["store"], false);
    let call = response["output"]
        .as_array()
        .unwrap()
        .iter()
        .find(|item| item["type"] == "function_call")
        .unwrap();
    assert_eq!(call["call_id"], added);
    // As openai-python's `model_dump` resends it: the documented fields of the item, nothing
    // Skein-specific, and no reasoning item (Gemini sent none).
    let resent = json!({"type": "function_call", "id": call["id"], "call_id": call["call_id"],
                        "name": call["name"], "arguments": call["arguments"],
                        "status": call["status"]});
    let second = events(
        post(
            &server,
            "/v1/responses",
            None,
            &json!({"model": "gemini-2.5-flash", "tools": [tool], "stream": true,
            "store": false,
            "input": [
                {"role": "user", "content": question},
                resent,
                {"type": "function_call_output", "call_id": call["call_id"],
                 "output": "{\"country\": \"France\"}"},
            ]}),
        )
        .await,
    )
    .await;
    assert_eq!(second.last().unwrap().name, "response.completed");
    let sent = received(&mock).await;
    assert_eq!(sent.len(), 2);
    assert_eq!(
        signature_bytes(&call_part(&sent[1])["thoughtSignature"]),
        recorded_gemini_signature()
    );
    server.stop().await;
}

#[tokio::test]
async fn a_garbled_signature_in_a_call_id_is_refused_naming_the_field() {
    let server = TestServer::start(ServerConfig::default()).await;
    let tool = json!({"type": "function", "name": "lookup", "parameters": {"type": "object"}});
    for (call_id, output_id, param) in [
        ("call_1~s1.%%%", "call_1", "input[1].call_id"),
        ("~s1.AAAA", "call_1", "input[1].call_id"),
        ("call_1", "call_1~s1t._w", "input[2].call_id"),
    ] {
        let refused = post(
            &server,
            "/v1/responses",
            None,
            &json!({"model": "echo", "tools": [tool], "store": false, "input": [
                {"role": "user", "content": "Look it up."},
                {"type": "function_call", "call_id": call_id, "name": "lookup",
                 "arguments": "{}"},
                {"type": "function_call_output", "call_id": output_id, "output": "found"},
            ]}),
        )
        .await;
        assert_eq!(refused.status(), 400, "{call_id}");
        let body: Value = refused.json().await.unwrap();
        assert_eq!(body["error"]["type"], "invalid_request_error", "{body}");
        assert_eq!(body["error"]["param"], param, "{body}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains(&format!("`{param}`")), "{message}");
        assert!(message.contains("thought signature"), "{message}");
    }
    server.stop().await;
}

#[tokio::test]
async fn an_unstored_responses_call_id_continues_through_chat_completions() {
    let mock = MockServer::start().await;
    replay(
        &mock,
        GEMINI_STREAM,
        &[
            "gemini/stream_function_call_signature.sse",
            "gemini/stream_text_after_function_call.sse",
        ],
    )
    .await;
    let server = TestServer::start(keyed(&mock, &[])).await;
    let (question, function) = gemini_round();
    let mut tool = function.clone();
    tool["type"] = json!("function");
    let first = streamed_response(
        post(
            &server,
            "/v1/responses",
            None,
            &json!({"model": "gemini-2.5-flash", "tools": [tool], "store": false,
                    "stream": true, "input": question}),
        )
        .await,
    )
    .await;
    let call = first["output"]
        .as_array()
        .unwrap()
        .iter()
        .find(|item| item["type"] == "function_call")
        .unwrap();
    // As the Agents SDK's Chat Completions model turns the items into messages: the
    // `call_id` becomes the tool call's id, nothing else comes along.
    let call_id = call["call_id"].clone();
    let answered = chunks(
        post(
            &server,
            "/v1/chat/completions",
            None,
            &json!({"model": "gemini-2.5-flash", "stream": true, "store": false,
            "tools": [{"type": "function", "function": function}],
            "messages": [
                {"role": "user", "content": question},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": call_id, "type": "function",
                     "function": {"name": call["name"], "arguments": call["arguments"]}}]},
                {"role": "tool", "tool_call_id": call_id, "content": "{\"country\": \"France\"}"},
            ]}),
        )
        .await,
    )
    .await;
    assert!(
        answered
            .iter()
            .any(|chunk| chunk["choices"][0]["finish_reason"] == "stop")
    );
    let sent = received(&mock).await;
    let part = call_part(&sent[1]);
    assert_eq!(
        signature_bytes(&part["thoughtSignature"]),
        recorded_gemini_signature()
    );
    // The provider's own id (none on the wire: the adapter minted it) goes back, never the
    // carrier.
    assert!(part["functionCall"].get("id").is_none(), "{part}");
    assert!(!sent[1].to_string().contains("~s1."), "{}", sent[1]);
    server.stop().await;
}

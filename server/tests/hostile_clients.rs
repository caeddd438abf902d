//! Clients that attack the server (issue 11): half-sent requests, too many connections, web
//! pages (cross-site requests, DNS rebinding), other tokens' conversations and runs, big and
//! malformed bodies. All end to end over loopback HTTP, most of them on raw sockets so that
//! nothing a client library does hides what goes over the wire.

use crate::support;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use server::schema::Secret;
use server::{ConversationId, ServerConfig};
use service::ServiceConfig;
use support::{TestServer, client, content, events, terminal};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

fn echo(text: &str) -> Value {
    json!({"model_config": {"model_id": "echo"}, "input": {"text": text}})
}

/// Sends `request` (a whole HTTP/1.1 request) on a new connection and reads until the server
/// closes it (at most five seconds).
async fn raw(addr: SocketAddr, request: &[u8]) -> String {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(request).await.unwrap();
    read_to_close(&mut stream, Duration::from_secs(5)).await
}

async fn read_to_close(stream: &mut TcpStream, within: Duration) -> String {
    let mut answer = Vec::new();
    tokio::time::timeout(within, stream.read_to_end(&mut answer))
        .await
        .expect("the server answers and closes the connection in time")
        .ok();
    String::from_utf8_lossy(&answer).into_owned()
}

/// A POST of `body` to `/v1/response` with these extra header lines, `Connection: close`.
fn post(host: &str, headers: &str, body: &str) -> Vec<u8> {
    format!(
        "POST /v1/response HTTP/1.1\r\nHost: {host}\r\n{headers}Content-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

fn status(answer: &str) -> u16 {
    answer
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP answer: {answer:?}"))
}

fn json_body(answer: &str) -> Value {
    let body = answer.split("\r\n\r\n").nth(1).unwrap_or_default();
    serde_json::from_str(body).unwrap_or_else(|_| panic!("not a JSON body: {answer:?}"))
}

// ---- Timeouts, connections, shutdown ----

#[tokio::test]
async fn half_sent_headers_are_dropped_after_the_header_timeout() {
    let server = TestServer::start(ServerConfig {
        header_read_timeout_secs: 1,
        ..ServerConfig::default()
    })
    .await;
    let mut stream = TcpStream::connect(server.addr).await.unwrap();
    stream
        .write_all(b"POST /v1/response HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Ty")
        .await
        .unwrap();
    let started = Instant::now();
    // The server closes the connection (before any authentication) instead of waiting forever.
    read_to_close(&mut stream, Duration::from_secs(5)).await;
    assert!(started.elapsed() >= Duration::from_millis(900));
    // A silent connection is closed as well.
    let mut silent = TcpStream::connect(server.addr).await.unwrap();
    read_to_close(&mut silent, Duration::from_secs(5)).await;
    server.stop().await;
}

#[tokio::test]
async fn shutdown_finishes_within_the_grace_period_whatever_the_clients_do() {
    let mut server = TestServer::start(ServerConfig {
        header_read_timeout_secs: 600,
        body_read_timeout_secs: 600,
        shutdown_grace_secs: 1,
        ..ServerConfig::default()
    })
    .await;
    // One client sends half its headers, another half its body; a third sends nothing.
    let mut half_headers = TcpStream::connect(server.addr).await.unwrap();
    half_headers
        .write_all(b"POST /v1/response HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .await
        .unwrap();
    let mut half_body = TcpStream::connect(server.addr).await.unwrap();
    half_body
        .write_all(&post("127.0.0.1", "Content-Type: application/json\r\n", "{}")[..100])
        .await
        .unwrap();
    let _silent = TcpStream::connect(server.addr).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;

    let started = Instant::now();
    server.begin_stop();
    tokio::time::timeout(Duration::from_secs(5), server.stopped())
        .await
        .expect("the server stops within the grace period plus a second");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    // The clients were disconnected.
    read_to_close(&mut half_headers, Duration::from_secs(1)).await;
    read_to_close(&mut half_body, Duration::from_secs(1)).await;
}

#[tokio::test]
async fn a_slow_body_is_answered_408_after_the_body_read_timeout() {
    let server = TestServer::start(ServerConfig {
        body_read_timeout_secs: 1,
        ..ServerConfig::default()
    })
    .await;
    let mut stream = TcpStream::connect(server.addr).await.unwrap();
    let body = echo("hi").to_string();
    let request = post("127.0.0.1", "Content-Type: application/json\r\n", &body);
    // Everything but the last byte of the body.
    stream
        .write_all(&request[..request.len() - 1])
        .await
        .unwrap();
    let answer = read_to_close(&mut stream, Duration::from_secs(5)).await;
    assert_eq!(status(&answer), 408, "{answer}");
    assert_eq!(json_body(&answer)["code"], "request_timeout");
    server.stop().await;
}

#[tokio::test]
async fn connections_over_the_bound_get_503() {
    let server = TestServer::start(ServerConfig {
        max_connections: 2,
        ..ServerConfig::default()
    })
    .await;
    let first = TcpStream::connect(server.addr).await.unwrap();
    let second = TcpStream::connect(server.addr).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let answer = raw(server.addr, &post("127.0.0.1", "", "")).await;
    assert_eq!(status(&answer), 503, "{answer}");
    assert_eq!(json_body(&answer)["code"], "too_many_connections");
    // Closing one frees its place.
    drop(first);
    let mut served = false;
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(20)).await;
        if let Ok(answer) = client().get(server.url("/health")).send().await
            && answer.status() == 200
        {
            served = true;
            break;
        }
    }
    assert!(served, "a connection is served once another closed");
    drop(second);
    server.stop().await;
}

// ---- Browser safety ----

#[tokio::test]
async fn bodies_that_are_not_json_get_415() {
    let server = TestServer::start(ServerConfig::default()).await;
    let body = echo("from a web page").to_string();
    for content_type in [
        "Content-Type: text/plain\r\n",
        "Content-Type: application/x-www-form-urlencoded\r\n",
        "Content-Type: multipart/form-data; boundary=x\r\n",
        "",
    ] {
        let answer = raw(server.addr, &post("127.0.0.1", content_type, &body)).await;
        assert_eq!(status(&answer), 415, "{content_type:?}: {answer}");
        assert_eq!(json_body(&answer)["code"], "unsupported_media_type");
    }
    let answer = raw(
        server.addr,
        &post(
            "127.0.0.1",
            "Content-Type: application/json; charset=utf-8\r\n",
            &json!({"model_config": {"model_id": "echo"}, "input": {"text": "ok"},
                    "features": {"streaming": false}})
            .to_string(),
        ),
    )
    .await;
    assert_eq!(status(&answer), 200, "{answer}");
    server.stop().await;
}

#[tokio::test]
async fn a_tokenless_server_refuses_other_hosts() {
    let server = TestServer::start(ServerConfig {
        allowed_hosts: vec!["skein.test".to_owned()],
        ..ServerConfig::default()
    })
    .await;
    let json = "Content-Type: application/json\r\n";
    let body = echo("rebound").to_string();
    // A DNS-rebinding page: the browser connects to 127.0.0.1 but names its own host.
    let answer = raw(server.addr, &post("evil.example:8080", json, &body)).await;
    assert_eq!(status(&answer), 403, "{answer}");
    assert_eq!(json_body(&answer)["code"], "host_not_allowed");
    let health = raw(
        server.addr,
        b"GET /health HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert_eq!(status(&health), 403, "{health}");
    // Loopback names and configured names are served.
    for host in [
        server.addr.to_string(),
        "localhost:8080".to_owned(),
        "skein.test".to_owned(),
    ] {
        let answer = raw(server.addr, &post(&host, json, &body)).await;
        assert_eq!(status(&answer), 200, "{host}: {answer}");
    }
    server.stop().await;

    // With tokens, the token is what protects the server: any Host is fine.
    let server = TestServer::start(ServerConfig {
        tokens: vec![Secret::new("token-a")],
        ..ServerConfig::default()
    })
    .await;
    let answer = raw(
        server.addr,
        &post(
            "skein.example.com",
            "Content-Type: application/json\r\nAuthorization: Bearer token-a\r\n",
            &body,
        ),
    )
    .await;
    assert_eq!(status(&answer), 200, "{answer}");
    server.stop().await;
}

#[tokio::test]
async fn cross_origin_requests_are_refused_unless_configured() {
    let server = TestServer::start(ServerConfig::default()).await;
    let json = "Content-Type: application/json\r\n";
    let body = echo("hi").to_string();
    let answer = raw(
        server.addr,
        &post(
            "127.0.0.1",
            &format!("{json}Origin: https://evil.example\r\n"),
            &body,
        ),
    )
    .await;
    assert_eq!(status(&answer), 403, "{answer}");
    assert_eq!(json_body(&answer)["code"], "cross_origin_forbidden");
    assert!(
        !answer
            .to_ascii_lowercase()
            .contains("access-control-allow-origin")
    );
    server.stop().await;

    let server = TestServer::start(ServerConfig {
        cors_origins: vec!["https://app.example".to_owned()],
        ..ServerConfig::default()
    })
    .await;
    let allowed = raw(
        server.addr,
        &post(
            "127.0.0.1",
            &format!("{json}Origin: https://app.example\r\n"),
            &body,
        ),
    )
    .await;
    assert_eq!(status(&allowed), 200, "{allowed}");
    assert!(
        allowed
            .to_ascii_lowercase()
            .contains("access-control-allow-origin: https://app.example"),
        "{allowed}"
    );
    // The browser's preflight is answered for the configured origin.
    let preflight = raw(
        server.addr,
        b"OPTIONS /v1/response HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: https://app.example\r\n\
          Access-Control-Request-Method: POST\r\n\
          Access-Control-Request-Headers: content-type\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert_eq!(status(&preflight), 200, "{preflight}");
    assert!(
        preflight
            .to_ascii_lowercase()
            .contains("access-control-allow-origin: https://app.example")
    );
    // Other origins are still refused.
    let other = raw(
        server.addr,
        &post(
            "127.0.0.1",
            &format!("{json}Origin: https://evil.example\r\n"),
            &body,
        ),
    )
    .await;
    assert_eq!(status(&other), 403, "{other}");
    server.stop().await;
}

// ---- Bodies ----

#[tokio::test]
async fn a_3_mib_body_under_a_4_mib_limit_is_served() {
    let server = TestServer::start(ServerConfig {
        body_limit: 4 * 1024 * 1024,
        ..ServerConfig::default()
    })
    .await;
    let text = "x".repeat(3 * 1024 * 1024);
    let mut body = echo(&text);
    body["features"] = json!({"streaming": false});
    let answer = server.post(&body).await;
    assert_eq!(answer.status(), 200);
    let answer: Value = answer.json().await.unwrap();
    // The echo model reports the prompt (what fits its context window).
    assert!(answer["content"].as_str().unwrap().contains(&text[..4096]));
    assert_eq!(answer["stop_reason"], "end_turn");
    server.stop().await;
}

#[tokio::test]
async fn a_prompt_cut_to_fit_is_reported_in_the_whole_body_as_in_the_stream() {
    let server = TestServer::start(ServerConfig::default()).await;
    // Far over the echo model's context window (128K tokens): compression must cut it.
    let prompt: String = (0..90_000).map(|n| format!("w{n} ")).collect();
    let streamed = events(server.post(&echo(&prompt)).await).await;
    let done = terminal(&streamed, "response.done");
    assert_eq!(done["compression"]["prompt_truncated"], true, "{done}");

    let mut body = echo(&prompt);
    body["features"] = json!({"streaming": false});
    let answer = server.post(&body).await;
    assert_eq!(answer.status(), 200);
    let answer: Value = answer.json().await.unwrap();
    assert_eq!(
        answer["compression"], done["compression"],
        "{}",
        answer["compression"]
    );

    // Nothing cut: no `compression` in either.
    let mut short = echo("hi");
    short["features"] = json!({"streaming": false});
    let answer: Value = server.post(&short).await.json().await.unwrap();
    assert!(answer.get("compression").is_none(), "{answer}");
    server.stop().await;
}

#[tokio::test]
async fn trailing_garbage_after_the_json_is_refused() {
    let server = TestServer::start(ServerConfig::default()).await;
    let json = "Content-Type: application/json\r\n";
    let request = echo("hi").to_string();
    for body in [
        format!("{request} trailing"),
        format!("{request}{request}"),
        format!("{request}}}"),
    ] {
        let answer = raw(server.addr, &post("127.0.0.1", json, &body)).await;
        assert_eq!(status(&answer), 400, "{body}: {answer}");
        assert_eq!(json_body(&answer)["code"], "invalid_request");
    }
    // Whitespace after it is fine.
    let answer = raw(
        server.addr,
        &post("127.0.0.1", json, &format!("{request} \n")),
    )
    .await;
    assert_eq!(status(&answer), 200, "{answer}");
    server.stop().await;
}

#[tokio::test]
async fn max_retries_is_bounded() {
    let server = TestServer::start(ServerConfig::default()).await;
    let mut body = echo("hi");
    body["model_config"]["max_retries"] = json!(4_000_000_000u32);
    let answer = server.post(&body).await;
    assert_eq!(answer.status(), 422);
    let error: Value = answer.json().await.unwrap();
    assert_eq!(
        error["details"]["fields"][0]["field"],
        "model_config.max_retries"
    );
    assert!(
        error["message"].as_str().unwrap().contains("at most 10"),
        "{error}"
    );
    body["model_config"]["max_retries"] = json!(10);
    assert_eq!(server.post(&body).await.status(), 200);
    server.stop().await;
}

// ---- Ownership ----

const TOKEN_A: &str = "token-a-0123456789abcdef";
const TOKEN_B: &str = "token-b-0123456789abcdef";

async fn post_as(server: &TestServer, token: &str, body: &Value) -> reqwest::Response {
    client()
        .post(server.url("/v1/response"))
        .bearer_auth(token)
        .json(body)
        .send()
        .await
        .unwrap()
}

/// The `response.done` payload of a streamed answer.
async fn done(answer: reqwest::Response) -> (Value, String) {
    let events = events(answer).await;
    (terminal(&events, "response.done").clone(), content(&events))
}

fn two_tokens(store: String) -> ServerConfig {
    ServerConfig {
        tokens: vec![Secret::new(TOKEN_A), Secret::new(TOKEN_B)],
        service: ServiceConfig {
            store,
            ..ServiceConfig::default()
        },
        ..ServerConfig::default()
    }
}

/// Token B never gets token A's conversation, whoever named it.
async fn conversations_belong_to_their_token(store: String) {
    let server = TestServer::start(two_tokens(store)).await;
    let mut first = echo("my launch code is 4711");
    first["system"] = json!("SECRET SYSTEM PROMPT of A");
    let (done_a, _) = done(post_as(&server, TOKEN_A, &first).await).await;
    let id = done_a["conversation_id"].as_str().unwrap().to_owned();
    // A minted id: `conv-` and 32 hex digits.
    assert!(id.starts_with("conv-") && id.len() == 37, "{id}");

    // B continuing it: 404, and nothing of A's conversation in the answer.
    for (field, mut body) in [
        ("session_id", echo("what was said before?")),
        ("metadata", echo("what was said before?")),
    ] {
        if field == "session_id" {
            body["session_id"] = json!(id);
        } else {
            body["metadata"] = json!({"conversation_id": id});
        }
        for streaming in [true, false] {
            body["features"] = json!({"streaming": streaming});
            let answer = post_as(&server, TOKEN_B, &body).await;
            assert_eq!(answer.status(), 404, "{field}, streaming {streaming}");
            let text = answer.text().await.unwrap();
            assert!(!text.contains("4711") && !text.contains("SECRET"), "{text}");
            assert!(text.contains("not_found"), "{text}");
        }
        // Without the history either.
        body["include_history"] = json!(false);
        assert_eq!(post_as(&server, TOKEN_B, &body).await.status(), 404);
    }

    // A continues its own conversation, history included.
    let mut again = echo("and what was it?");
    again["session_id"] = json!(id);
    let (done_again, said) = done(post_as(&server, TOKEN_A, &again).await).await;
    assert_eq!(done_again["conversation_id"], json!(id));
    assert!(
        said.contains("4711"),
        "the echo model saw A's history: {said}"
    );

    // Both use the client-chosen id "a": two conversations, each sees its own id.
    let mut mine = echo("A's words in a");
    mine["session_id"] = json!("a");
    let (done_a, _) = done(post_as(&server, TOKEN_A, &mine).await).await;
    assert_eq!(done_a["conversation_id"], "a");
    let mut theirs = echo("B speaks in a");
    theirs["session_id"] = json!("a");
    let (done_b, said_b) = done(post_as(&server, TOKEN_B, &theirs).await).await;
    assert_eq!(done_b["conversation_id"], "a");
    assert!(!said_b.contains("A's words"), "{said_b}");
    let mut back = echo("what did I say?");
    back["session_id"] = json!("a");
    back["features"] = json!({"streaming": false});
    let answer: Value = post_as(&server, TOKEN_A, &back).await.json().await.unwrap();
    assert_eq!(answer["conversation_id"], "a");
    let said = answer["content"].as_str().unwrap();
    assert!(
        said.contains("A's words") && !said.contains("B speaks"),
        "{said}"
    );

    // In the store: no conversation is called "a", and A's and B's are apart.
    let store = server.server.chat().store();
    assert!(
        store
            .conversation(&ConversationId::new("a").unwrap())
            .await
            .unwrap()
            .is_none()
    );
    let listed = store.conversations(100).await.unwrap();
    assert_eq!(listed.len(), 3, "{listed:?}");
    server.stop().await;
}

#[tokio::test]
async fn conversations_belong_to_their_token_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    conversations_belong_to_their_token(dir.path().join("log.db").display().to_string()).await;
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conversations_belong_to_their_token_on_postgres() {
    let url = conversation_tree::testing::fresh_postgres_database().await;
    conversations_belong_to_their_token(url).await;
}

#[tokio::test]
async fn ownership_survives_a_restart_on_the_same_store() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("log.db").display().to_string();
    let server = TestServer::start(two_tokens(store.clone())).await;
    let (done_a, _) = done(post_as(&server, TOKEN_A, &echo("kept")).await).await;
    let id = done_a["conversation_id"].clone();
    server.stop().await;
    // Tokens in another order: ownership follows the token, not its position.
    let server = TestServer::start(ServerConfig {
        tokens: vec![Secret::new(TOKEN_B), Secret::new(TOKEN_A)],
        service: ServiceConfig {
            store,
            ..ServiceConfig::default()
        },
        ..ServerConfig::default()
    })
    .await;
    let mut body = echo("still mine?");
    body["session_id"] = id;
    assert_eq!(post_as(&server, TOKEN_B, &body).await.status(), 404);
    assert_eq!(post_as(&server, TOKEN_A, &body).await.status(), 200);
    server.stop().await;
}

#[tokio::test]
async fn another_caller_cannot_cancel_a_run_even_with_the_same_request_id() {
    let provider = server::testing::StreamingProvider::start(400, Duration::from_millis(25))
        .await
        .unwrap();
    let mut config = two_tokens(":memory:".to_owned());
    config.service.allow_request_base_url = true;
    let server = TestServer::start(config).await;
    let slow = json!({
        "model_config": {"model_id": "gpt-4o-mini", "base_url": provider.base_url(),
                         "api_key": "sk-test"},
        "input": {"text": "Count slowly."},
    });
    let start = |token: &'static str| {
        client()
            .post(server.url("/v1/response"))
            .bearer_auth(token)
            .header("x-request-id", "req-same")
            .json(&slow)
            .send()
    };
    let run_a = tokio::spawn(events(start(TOKEN_A).await.unwrap()));
    let run_b = tokio::spawn(events(start(TOKEN_B).await.unwrap()));
    for _ in 0..500 {
        if provider.started() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Both runs have streamed a while (deltas come every 25 ms), so A's partial text is not
    // empty however busy the machine is.
    tokio::time::sleep(Duration::from_millis(200)).await;
    // B cancels "req-same": its own run, never A's.
    let cancel = client()
        .post(server.url("/v1/response/req-same/cancel"))
        .bearer_auth(TOKEN_B)
        .send()
        .await
        .unwrap();
    assert_eq!(cancel.status(), 200);
    terminal(&run_b.await.unwrap(), "response.cancelled");
    // B cannot cancel it again (its run is gone, A's is invisible to it).
    let again = client()
        .post(server.url("/v1/response/req-same/cancel"))
        .bearer_auth(TOKEN_B)
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 404);
    // A's run went on, and A can still cancel it by the id B's finished run also had.
    let cancel_a = client()
        .post(server.url("/v1/response/req-same/cancel"))
        .bearer_auth(TOKEN_A)
        .send()
        .await
        .unwrap();
    assert_eq!(cancel_a.status(), 200);
    let events_a = run_a.await.unwrap();
    let partial = terminal(&events_a, "response.cancelled");
    assert!(
        partial["partial_content"]
            .as_str()
            .unwrap()
            .starts_with("w0 "),
        "{partial}"
    );
    server.stop().await;
}

/// A store at `dir/logs.db` holding the bases `public` (a holiday calendar) and `hr-private`
/// (salaries).
async fn store_with_two_bases(dir: &std::path::Path) -> String {
    let db = dir.join("logs.db").display().to_string();
    let kb = knowledge_base::KnowledgeStore::open(&db).await.unwrap();
    for (base, text) in [
        ("public", "The office is closed on the first Monday of May."),
        ("hr-private", "The salary of Alice Example is 98765 a year."),
    ] {
        kb.add(
            base,
            vec![knowledge_base::Document::new(
                base,
                format!("{base}.md"),
                text,
            )],
        )
        .await
        .unwrap();
    }
    db
}

/// A request searching the knowledge bases `kb_ids` (all those offered when empty) for
/// `query`.
fn kb_search(kb_ids: &[&str], query: &str) -> Value {
    let call = json!({"tool_calls": [{"name": "knowledge_base_search",
                                      "arguments": {"query": query}}]});
    let mut search = json!({"enabled": true});
    if !kb_ids.is_empty() {
        search["kb_ids"] = json!(kb_ids);
    }
    json!({"model_config": {"model_id": "echo"}, "input": {"text": call.to_string()},
           "tools": {"builtin": {"knowledge_base_search": search}}})
}

/// The bases of the passages a streamed search answer found.
async fn searched_bases(answer: reqwest::Response) -> Vec<String> {
    assert_eq!(answer.status(), 200);
    let events = events(answer).await;
    let done = events
        .iter()
        .find(|event| event.name == "tool.done")
        .expect("the search ran");
    assert!(done.data["error"].is_null(), "{}", done.data);
    let output: Value = serde_json::from_str(done.data["output"].as_str().unwrap()).unwrap();
    output["passages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|passage| passage["base"].as_str().unwrap().to_owned())
        .collect()
}

/// A refused request's 422 body, as text.
async fn refusal(answer: reqwest::Response) -> String {
    assert_eq!(answer.status(), 422);
    answer.text().await.unwrap()
}

/// A token reads only the knowledge bases the operator offers it: the server's
/// `knowledge_bases` and its own `token_knowledge_bases`, never another base of the store by
/// naming it in `kb_ids`, on the Chat Shell API or through its token tools.
#[tokio::test]
async fn a_token_searches_only_the_knowledge_bases_offered_to_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = two_tokens(store_with_two_bases(dir.path()).await);
    config.service.knowledge_bases = vec!["public".to_owned()];
    config.service.token_knowledge_bases = vec![service::config::TokenKnowledgeBases {
        token: Secret::new(TOKEN_A),
        knowledge_bases: vec!["hr-private".to_owned()],
    }];
    config.service.token_tools = vec![service::config::TokenTools {
        token: Secret::new(TOKEN_B),
        tools: vec!["knowledge_base_search".to_owned()],
        system: None,
        max_rounds: None,
    }];
    let server = TestServer::start(config).await;

    // B names A's base: refused before any search, naming the base and what B may search.
    let text =
        refusal(post_as(&server, TOKEN_B, &kb_search(&["hr-private"], "salary")).await).await;
    assert!(
        text.contains("tools.builtin.knowledge_base_search.kb_ids[0]")
            && text.contains("`hr-private` is not offered to you")
            && text.contains("`public`")
            && text.contains("--kb"),
        "{text}"
    );
    assert!(!text.contains("98765"), "{text}");
    // A base that does not exist reads the same: the answer tells nothing of the store.
    let missing =
        refusal(post_as(&server, TOKEN_B, &kb_search(&["payroll"], "salary")).await).await;
    assert_eq!(
        missing.replace("payroll", "hr-private"),
        text,
        "a missing base and a base not offered are refused alike"
    );
    // Naming none, B searches the server's bases only.
    let bases =
        searched_bases(post_as(&server, TOKEN_B, &kb_search(&[], "salary Monday")).await).await;
    assert_eq!(bases, ["public"]);
    // A searches its own base, and the server's.
    let bases =
        searched_bases(post_as(&server, TOKEN_A, &kb_search(&["hr-private"], "salary")).await)
            .await;
    assert_eq!(bases, ["hr-private"]);
    let mut all =
        searched_bases(post_as(&server, TOKEN_A, &kb_search(&[], "salary Monday")).await).await;
    all.sort();
    assert_eq!(all, ["hr-private", "public"]);

    // B's token tools (OpenAI-compatible endpoint) search B's bases only.
    let call = json!({"tool_calls": [{"name": "knowledge_base_search",
                                      "arguments": {"query": "salary Monday"}}]});
    let answer: Value = client()
        .post(server.url("/v1/chat/completions"))
        .bearer_auth(TOKEN_B)
        .json(
            &json!({"model": "echo", "messages": [{"role": "user", "content": call.to_string()}]}),
        )
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let report = answer["choices"][0]["message"]["content"].as_str().unwrap();
    assert!(report.contains("public.md"), "{report}");
    assert!(
        !report.contains("98765") && !report.contains("hr-private"),
        "{report}"
    );
    server.stop().await;
}

/// A server started without `--kb` offers no base, however a request names one.
#[tokio::test]
async fn a_server_without_knowledge_bases_offers_none() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start(ServerConfig {
        service: ServiceConfig {
            store: store_with_two_bases(dir.path()).await,
            ..ServiceConfig::default()
        },
        ..ServerConfig::default()
    })
    .await;
    let answer = server.post(&kb_search(&["hr-private"], "salary")).await;
    let text = refusal(answer).await;
    assert!(
        text.contains("`hr-private` is not offered to you: this server offers you none")
            && text.contains("--kb"),
        "{text}"
    );
    assert!(!text.contains("98765"), "{text}");
    server.stop().await;
}

/// A token's knowledge bases are checked when the server starts, like the server's own.
#[tokio::test]
async fn token_knowledge_bases_are_checked_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_with_two_bases(dir.path()).await;
    let entry = |token: &str, base: &str| service::config::TokenKnowledgeBases {
        token: Secret::new(token),
        knowledge_bases: vec![base.to_owned()],
    };
    let mut unknown_token = two_tokens(store.clone());
    unknown_token.service.token_knowledge_bases = vec![entry("token-c-0123456789abcdef", "public")];
    let error = server::Server::new(unknown_token)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("`token_knowledge_bases[0].token` is not one of `tokens`"),
        "{error}"
    );
    assert!(!error.contains("token-c"), "{error}");
    let mut missing_base = two_tokens(store);
    missing_base.service.token_knowledge_bases = vec![entry(TOKEN_A, "payroll")];
    let error = server::Server::new(missing_base)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("`token_knowledge_bases[0]`") && error.contains("payroll"),
        "{error}"
    );
}

#[tokio::test]
async fn a_body_of_too_many_tiny_messages_is_refused_naming_the_limit() {
    // 200,000 messages of 30 bytes (6.8 MB, under the 8 MiB body limit) used to be parsed and
    // answered: ~170 MB per request, and eight at once left the server ~470 MB larger.
    use server::schema::MAX_REQUEST_MESSAGES;

    let server = TestServer::start(ServerConfig::default()).await;
    let tiny = |count: usize| vec![json!({"role": "user", "content": "a"}); count];
    let over = MAX_REQUEST_MESSAGES + 1;
    let bodies = [
        (
            "/v1/chat/completions",
            json!({"model": "echo", "messages": tiny(200_000)}),
            400,
        ),
        (
            "/v1/chat/completions",
            json!({"model": "echo", "messages": tiny(over)}),
            400,
        ),
        (
            "/v1/responses",
            json!({"model": "echo", "input": tiny(over)}),
            400,
        ),
        (
            "/v1/response",
            json!({"model_config": {"model_id": "echo"}, "input": {"messages": tiny(over)},
                "features": {"streaming": false}}),
            422,
        ),
    ];
    for (path, body, status) in bodies {
        let answer = client()
            .post(server.url(path))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), status, "{path}");
        let text = answer.text().await.unwrap();
        assert!(
            text.contains("MAX_REQUEST_MESSAGES")
                && text.contains(&MAX_REQUEST_MESSAGES.to_string()),
            "{path}: {text}"
        );
    }
    // At the limit, a request is served.
    let answer = client()
        .post(server.url("/v1/chat/completions"))
        .json(&json!({"model": "echo", "messages": tiny(MAX_REQUEST_MESSAGES)}))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    server.stop().await;
}

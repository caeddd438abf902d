//! The server's own knowledge bases (`knowledge_bases` in its configuration): searched by a
//! request that enables `knowledge_base_search` without naming any, and by an agent alias that
//! lists it; checked when the server starts.

use crate::support;

use serde_json::{Value, json};
use server::ServerConfig;
use service::ServiceConfig;
use service::config::AgentAlias;
use support::{TestServer, client, events, terminal};

/// A store at `dir/logs.db` holding the base `docs` with the workspace's SECURITY.md.
async fn store_with_docs(dir: &std::path::Path) -> String {
    let db = dir.join("logs.db").display().to_string();
    let security = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../SECURITY.md");
    knowledge_base::KnowledgeStore::open(&db)
        .await
        .unwrap()
        .add(
            "docs",
            vec![knowledge_base::Document::from_file(&security).unwrap()],
        )
        .await
        .unwrap();
    db
}

fn search(query: &str) -> String {
    json!({"tool_calls": [{"name": "knowledge_base_search", "arguments": {"query": query}}]})
        .to_string()
}

#[tokio::test]
async fn a_request_naming_no_base_searches_the_configured_ones() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start(ServerConfig {
        service: ServiceConfig {
            store: store_with_docs(dir.path()).await,
            knowledge_bases: vec!["docs".to_owned()],
            ..ServiceConfig::default()
        },
        ..ServerConfig::default()
    })
    .await;
    let events = events(
        server
            .post(&json!({
                "model_config": {"model_id": "echo"},
                "input": {"text": search("rotating a token")},
                "tools": {"builtin": {"knowledge_base_search": {"enabled": true}}},
            }))
            .await,
    )
    .await;
    let done = events
        .iter()
        .find(|event| event.name == "tool.done")
        .expect("the search ran");
    assert!(done.data["error"].is_null(), "{}", done.data);
    let output: Value = serde_json::from_str(done.data["output"].as_str().unwrap()).unwrap();
    let passages = output["passages"].as_array().unwrap();
    assert!(!passages.is_empty(), "{output}");
    assert!(passages.iter().all(|passage| passage["base"] == "docs"));
    assert!(
        passages[0]["location"]
            .as_str()
            .unwrap()
            .contains("SECURITY.md:"),
        "{output}"
    );
    assert_eq!(
        terminal(&events, "response.done")["sources"],
        done.data["sources"]
    );

    // Without it being enabled, the configured bases are not searched.
    let plain = events_of_text(&server, &search("token")).await;
    let tool = plain
        .iter()
        .find(|event| event.name == "tool.done")
        .unwrap();
    assert!(tool.data["error"].is_string(), "{}", tool.data);
    server.stop().await;
}

async fn events_of_text(server: &TestServer, text: &str) -> Vec<support::Sse> {
    events(
        server
            .post(&json!({"model_config": {"model_id": "echo"}, "input": {"text": text}}))
            .await,
    )
    .await
}

#[tokio::test]
async fn without_configured_bases_a_search_is_refused() {
    let server = TestServer::start(ServerConfig::default()).await;
    let answer = server
        .post(&json!({
            "model_config": {"model_id": "echo"},
            "input": {"text": "hi"},
            "tools": {"builtin": {"knowledge_base_search": {"enabled": true}}},
        }))
        .await;
    assert_eq!(answer.status(), 422);
    let body: Value = answer.json().await.unwrap();
    let text = body.to_string();
    assert!(
        text.contains("tools.builtin.knowledge_base_search.kb_ids")
            && text.contains("`knowledge_bases`"),
        "{body}"
    );
    server.stop().await;
}

#[tokio::test]
async fn an_agent_alias_listing_the_search_uses_the_configured_bases() {
    let dir = tempfile::tempdir().unwrap();
    let agent = AgentAlias {
        model: "echo".into(),
        tools: vec!["knowledge_base_search".into(), "calculator".into()],
        ..Default::default()
    };
    let server = TestServer::start(ServerConfig {
        service: ServiceConfig {
            store: store_with_docs(dir.path()).await,
            knowledge_bases: vec!["docs".to_owned()],
            agents: [("skein/docs".to_owned(), agent)].into_iter().collect(),
            ..ServiceConfig::default()
        },
        ..ServerConfig::default()
    })
    .await;
    let answer: Value = client()
        .post(server.url("/v1/chat/completions"))
        .json(&json!({"model": "skein/docs",
                      "messages": [{"role": "user", "content": search("rotating a token")}]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    // The echo model's final answer reports the tool results it was given.
    let report: Value =
        serde_json::from_str(answer["choices"][0]["message"]["content"].as_str().unwrap()).unwrap();
    let result = &report["tool_results"][0];
    assert_eq!(result["name"], "knowledge_base_search", "{report}");
    let output: Value = serde_json::from_str(result["output"].as_str().unwrap()).unwrap();
    assert_eq!(output["passages"][0]["base"], "docs", "{report}");
    // Both tools were offered to the model.
    let offered = report["options"]["tools"].as_array().unwrap();
    for tool in ["knowledge_base_search", "calculator"] {
        assert!(offered.contains(&json!(tool)), "{tool}: {report}");
    }
    server.stop().await;
}

#[tokio::test]
async fn bases_that_cannot_be_searched_stop_the_server_from_starting() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_with_docs(dir.path()).await;
    let missing = server::Server::new(ServerConfig {
        service: ServiceConfig {
            store: store.clone(),
            knowledge_bases: vec!["docs".to_owned(), "nope".to_owned()],
            ..ServiceConfig::default()
        },
        ..ServerConfig::default()
    })
    .await
    .unwrap_err()
    .to_string();
    assert!(
        missing.contains("`knowledge_bases`")
            && missing.contains("nope")
            && missing.contains("docs"),
        "{missing}"
    );
    let agent = AgentAlias {
        model: "echo".into(),
        tools: vec!["knowledge_base_search".into()],
        ..Default::default()
    };
    let unconfigured = server::Server::new(ServerConfig {
        service: ServiceConfig {
            store,
            agents: [("skein/docs".to_owned(), agent)].into_iter().collect(),
            ..ServiceConfig::default()
        },
        ..ServerConfig::default()
    })
    .await
    .unwrap_err()
    .to_string();
    assert!(
        unconfigured.contains("agent `skein/docs`") && unconfigured.contains("none is configured"),
        "{unconfigured}"
    );
}

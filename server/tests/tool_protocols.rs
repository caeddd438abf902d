//! `features.tool_mode`, `features.text_format` and `features.prompt_cache` on `POST
//! /v1/response`: the text protocol end to end on the echo model, and Anthropic cache
//! breakpoints in the request a recorded stream answers.

use crate::support;

use serde_json::{Value, json};
use server::ServerConfig;
use service::ServiceConfig;
use support::{TestServer, client, content, events, received, replay, terminal};
use wiremock::MockServer;

/// The events of a streamed `POST /v1/response`.
async fn events_of_post(server: &TestServer, body: Value) -> Vec<support::Sse> {
    events(server.post(&body).await).await
}

#[tokio::test]
async fn a_text_protocol_runs_the_tool_and_formats_the_observation() {
    let server = TestServer::start(ServerConfig::default()).await;
    // The echo model answers the first request with this text verbatim: an XML action whose
    // call is JSON.
    let reply = "<thinking>I will compute.</thinking>\n<action>\n\
                 {\"tool\": \"calculator\", \"args\": {\"expression\": \"6*7\"}}\n</action>";
    let events = events_of_post(
        &server,
        json!({
            "model_config": {"model_id": "echo"},
            "input": {"text": json!({"raw": reply}).to_string()},
            "tools": {"builtin": {"calculator": {"enabled": true}}, "max_tool_calls": 1},
            "features": {"tool_mode": "json", "text_format": "xml"},
        }),
    )
    .await;
    let start = events
        .iter()
        .find(|event| event.name == "tool.start")
        .expect("the calculator ran");
    assert_eq!(start.data["name"], "calculator");
    let done = events
        .iter()
        .find(|event| event.name == "tool.done")
        .unwrap();
    assert!(done.data["error"].is_null(), "{}", done.data);
    // The model's next request carried the observation in the protocol's own format.
    let report: Value = serde_json::from_str(&content(&events)).expect("an echo report");
    assert_eq!(
        report["previous"][1]["prompt"],
        "<observation>\n<calculator>\n{\"expression\":\"6*7\",\"result\":42.0}\n</calculator>\n</observation>"
    );
    assert_eq!(report["options"]["tools"], json!([]));
    terminal(&events, "response.done");
    server.stop().await;
}

/// `tool.start`, `tool.done` and `response.done` carry the tool's name for people and the
/// answer so far as ordered blocks, so a client renders any of them without replaying deltas;
/// the non-streamed body carries the same.
#[tokio::test]
async fn tool_events_carry_a_display_name_and_the_blocks_of_the_answer_so_far() {
    let server = TestServer::start(ServerConfig::default()).await;
    let request = json!({
        "model_config": {"model_id": "echo"},
        "input": {"text": json!({"tool_calls": [
            {"name": "calculator", "arguments": {"expression": "2+2"}},
        ]}).to_string()},
        "tools": {"builtin": {"calculator": {"enabled": true}}},
    });
    let events = events_of_post(&server, request.clone()).await;
    let start = &events
        .iter()
        .find(|event| event.name == "tool.start")
        .expect("the calculator ran")
        .data;
    let id = start["id"].as_str().unwrap();
    assert_eq!(start["display_name"], "Calculator", "{start}");
    let pending = json!({
        "type": "tool", "id": id, "tool_use_id": id, "tool_name": "calculator",
        "display_name": "Calculator", "status": "pending", "tool_input": start["input"],
        "tool_output": null, "duration_ms": null,
    });
    assert_eq!(start["blocks"], json!([pending]), "{start}");
    let done = &events
        .iter()
        .find(|event| event.name == "tool.done")
        .unwrap()
        .data;
    assert_eq!(done["display_name"], "Calculator", "{done}");
    let mut finished = pending.clone();
    finished["status"] = json!("done");
    finished["tool_output"] = done["output"].clone();
    finished["duration_ms"] = done["duration_ms"].clone();
    assert_eq!(done["blocks"], json!([finished]), "{done}");
    let answer = terminal(&events, "response.done");
    let text =
        json!({"type": "text", "id": "text-1", "content": content(&events), "status": "done"});
    assert_eq!(answer["blocks"], json!([finished, text]), "{answer}");

    let mut whole = request;
    whole["features"] = json!({"streaming": false});
    let body: Value = server.post(&whole).await.json().await.unwrap();
    assert_eq!(
        body["tool_calls"][0]["display_name"], "Calculator",
        "{body}"
    );
    let blocks = body["blocks"].as_array().expect("blocks");
    assert_eq!(blocks.len(), 2, "{body}");
    assert_eq!(blocks[0]["status"], "done", "{body}");
    assert_eq!(blocks[1]["content"], body["content"], "{body}");
    server.stop().await;
}

#[tokio::test]
async fn a_section_format_without_a_text_protocol_is_named_in_the_422() {
    let server = TestServer::start(ServerConfig::default()).await;
    let answer = server
        .post(&json!({
            "model_config": {"model_id": "echo"},
            "input": {"text": "hi"},
            "features": {"text_format": "xml"},
        }))
        .await;
    assert_eq!(answer.status(), 422);
    let body: Value = answer.json().await.unwrap();
    assert!(body.to_string().contains("features.text_format"), "{body}");
    let unknown = server
        .post(&json!({
            "model_config": {"model_id": "echo"},
            "input": {"text": "hi"},
            "features": {"tool_mode": "python"},
        }))
        .await;
    assert_eq!(unknown.status(), 422);
    server.stop().await;
}

#[tokio::test]
async fn prompt_cache_puts_breakpoints_in_the_anthropic_request() {
    let mock = MockServer::start().await;
    replay(&mock, "/v1/messages", &["anthropic/stream_text.sse"]).await;
    let server = TestServer::start(ServerConfig {
        service: ServiceConfig {
            allow_request_base_url: true,
            ..ServiceConfig::default()
        },
        ..ServerConfig::default()
    })
    .await;
    for cache in [false, true] {
        let response = client()
            .post(server.url("/v1/response"))
            .json(&json!({
                "model_config": {"model_id": "claude-sonnet-4-5", "base_url": mock.uri(), "api_key": "sk-ant-test"},
                "system": "Be brief.",
                "input": {"text": "Name two pirates."},
                "tools": {"builtin": {"calculator": {"enabled": true}}},
                "features": {"prompt_cache": cache},
            }))
            .send()
            .await
            .unwrap();
        terminal(&events(response).await, "response.done");
    }
    let sent = received(&mock).await;
    assert_eq!(sent.len(), 2);
    assert!(!sent[0].to_string().contains("cache_control"));
    let cached = &sent[1];
    assert_eq!(cached["tools"][0]["cache_control"]["type"], "ephemeral");
    let system = cached["system"].as_array().expect("system blocks");
    assert_eq!(system.last().unwrap()["cache_control"]["type"], "ephemeral");
    let last = cached["messages"].as_array().unwrap().last().unwrap();
    let block = last["content"].as_array().unwrap().last().unwrap();
    assert_eq!(block["cache_control"]["type"], "ephemeral");
    server.stop().await;
}

fn skill_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("arithmetic")).unwrap();
    std::fs::write(
        dir.path().join("arithmetic/SKILL.md"),
        "---\nname: arithmetic\ndescription: Exact arithmetic.\ntools: [calculator]\n---\n\
         Check every sum with the calculator.\n",
    )
    .unwrap();
    dir
}

#[tokio::test]
async fn a_request_offers_configured_skills_and_the_model_loads_one() {
    let dir = skill_dir();
    let server = TestServer::start(ServerConfig {
        service: ServiceConfig {
            skills_dirs: vec![dir.path().to_path_buf()],
            ..ServiceConfig::default()
        },
        ..ServerConfig::default()
    })
    .await;
    let load = json!({"tool_calls": [{"name": "load_skill", "arguments": {"name": "arithmetic"}}]});
    let events = events_of_post(
        &server,
        json!({
            "model_config": {"model_id": "echo"},
            "system": "Be careful.",
            "input": {"text": load.to_string()},
            "tools": {"skills": [{"name": "arithmetic"}]},
        }),
    )
    .await;
    let started: Vec<&str> = events
        .iter()
        .filter(|event| event.name == "tool.start")
        .map(|event| event.data["name"].as_str().unwrap())
        .collect();
    assert_eq!(started, ["load_skill"]);
    // The next request had the skill's tool and instructions.
    let report: Value = serde_json::from_str(&content(&events)).expect("an echo report");
    assert_eq!(
        report["options"]["tools"],
        json!(["load_skill", "calculator"])
    );
    assert_eq!(
        report["system"],
        "Be careful.\n\n# Skill: arithmetic\nCheck every sum with the calculator."
    );
    terminal(&events, "response.done");

    // Preloaded: bound from the first request on.
    let preloaded = events_of_post(
        &server,
        json!({"model_config": {"model_id": "echo"}, "input": {"text": "{\"raw\": \"ok\"}"},
               "tools": {"skills": [{"name": "arithmetic", "preload": true}]}}),
    )
    .await;
    terminal(&preloaded, "response.done");
    server.stop().await;
}

#[tokio::test]
async fn unknown_skills_and_versions_are_422() {
    let dir = skill_dir();
    let server = TestServer::start(ServerConfig {
        service: ServiceConfig {
            skills_dirs: vec![dir.path().to_path_buf()],
            ..ServiceConfig::default()
        },
        ..ServerConfig::default()
    })
    .await;
    for (skills, expected) in [
        (json!([{"name": "poetry"}]), "arithmetic"),
        (
            json!([{"name": "arithmetic", "version": "2"}]),
            "tools.skills[0].version",
        ),
    ] {
        let answer = server
            .post(
                &json!({"model_config": {"model_id": "echo"}, "input": {"text": "hi"},
                          "tools": {"skills": skills}}),
            )
            .await;
        assert_eq!(answer.status(), 422);
        let body: Value = answer.json().await.unwrap();
        assert!(body.to_string().contains(expected), "{body}");
    }
    server.stop().await;
}

#[tokio::test]
async fn a_request_searches_the_knowledge_bases_it_names() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("logs.db");
    let readme = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../SECURITY.md");
    let knowledge = knowledge_base::KnowledgeStore::open(&db.display().to_string())
        .await
        .unwrap();
    knowledge
        .add(
            "docs",
            vec![knowledge_base::Document::from_file(&readme).unwrap()],
        )
        .await
        .unwrap();
    let server = TestServer::start(ServerConfig {
        service: ServiceConfig {
            store: db.display().to_string(),
            knowledge_bases: vec!["docs".to_owned()],
            ..ServiceConfig::default()
        },
        ..ServerConfig::default()
    })
    .await;
    let call = json!({"tool_calls": [{"name": "knowledge_base_search", "arguments": {"query": "rotating a token"}}]});
    let events = events_of_post(
        &server,
        json!({
            "model_config": {"model_id": "echo"},
            "input": {"text": call.to_string()},
            "tools": {"builtin": {"knowledge_base_search": {"enabled": true, "kb_ids": ["docs"]}}},
        }),
    )
    .await;
    let done = events
        .iter()
        .find(|event| event.name == "tool.done")
        .expect("the search ran");
    let output: Value = serde_json::from_str(done.data["output"].as_str().unwrap()).unwrap();
    let location = output["passages"][0]["location"].as_str().unwrap();
    assert!(location.contains("SECURITY.md:"), "{location}");
    // The passages are the tool's sources, and the answer's, each once.
    let sources = done.data["sources"]
        .as_array()
        .expect("tool.done lists its sources");
    assert_eq!(sources.len(), output["passages"].as_array().unwrap().len());
    assert_eq!(sources[0]["location"], location);
    assert_eq!(sources[0]["title"], output["passages"][0]["title"]);
    assert_eq!(
        sources[0]["passage"].as_str().unwrap().trim_end(),
        output["passages"][0]["text"].as_str().unwrap().trim_end()
    );
    let finished = terminal(&events, "response.done");
    assert_eq!(finished["sources"], done.data["sources"]);
    // A whole answer lists the same sources.
    let whole: Value = server
        .post(&json!({
            "model_config": {"model_id": "echo"},
            "input": {"text": call.to_string()},
            "tools": {"builtin": {"knowledge_base_search": {"enabled": true, "kb_ids": ["docs"]}}},
            "features": {"streaming": false},
        }))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(whole["sources"], finished["sources"]);

    // A base the server does not offer is a 422 that lists the offered ones.
    let unknown = server
        .post(&json!({
            "model_config": {"model_id": "echo"},
            "input": {"text": "hi"},
            "tools": {"builtin": {"knowledge_base_search": {"enabled": true, "kb_ids": ["nope"]}}},
        }))
        .await;
    assert_eq!(unknown.status(), 422);
    let body: Value = unknown.json().await.unwrap();
    assert!(body.to_string().contains("docs"), "{body}");
    server.stop().await;
}

//! The `knowledge_base_search` tool: its schema, its output, and the sources read from it.

use knowledge_base::{
    Document, KbError, KnowledgeBaseSearch, KnowledgeStore, SourceSet, SqliteKnowledge, TOOL_NAME,
    sources,
};
use serde_json::{Value, json};
use toolchain::{DynTool, ExecutionContext, ToolError};

async fn store_with_docs() -> KnowledgeStore {
    let store = KnowledgeStore::from(SqliteKnowledge::open_in_memory().await.unwrap());
    store
        .add("docs", crate::common::workspace_docs())
        .await
        .unwrap();
    store
        .add(
            "notes",
            vec![Document::new("Notes", "notes.md", "Lunch is at noon.\n")],
        )
        .await
        .unwrap();
    store
}

async fn tool(store: &KnowledgeStore) -> DynTool {
    KnowledgeBaseSearch::new(store.clone(), ["docs", "notes", "docs"])
        .await
        .unwrap()
        .into_dyn()
        .unwrap()
}

async fn call(tool: &DynTool, input: Value) -> Result<Value, ToolError> {
    Ok(tool.call_json(&ExecutionContext::new(), input).await?.text)
}

#[tokio::test]
async fn the_model_sees_a_plain_schema_and_description() {
    let store = store_with_docs().await;
    let tool = tool(&store).await;
    let spec = tool.spec();
    assert_eq!(spec.name, TOOL_NAME);
    assert!(
        spec.description.contains("\"docs\", \"notes\""),
        "{}",
        spec.description
    );
    let parameters = &spec.parameters;
    assert_eq!(parameters["type"], "object");
    assert_eq!(parameters["required"], json!(["query"]));
    assert_eq!(parameters["properties"]["query"]["type"], "string");
    let limit = &parameters["properties"]["limit"];
    assert_eq!(
        (limit["minimum"].as_u64(), limit["maximum"].as_u64()),
        (Some(1), Some(20))
    );
    // No rustdoc markup anywhere a model reads.
    let shown = format!("{} {}", spec.description, spec.parameters);
    for markup in ["[`", "`]", "](", "crate::"] {
        assert!(!shown.contains(markup), "{markup} in {shown}");
    }
    assert!(parameters.get("description").is_none());
}

#[tokio::test]
async fn a_call_returns_passages_with_their_sources() {
    let store = store_with_docs().await;
    let tool = tool(&store).await;
    let output = call(&tool, json!({"query": "WAL mode", "limit": 3}))
        .await
        .unwrap();
    let passages = output["passages"].as_array().unwrap();
    assert!(!passages.is_empty() && passages.len() <= 3, "{output}");
    assert!(output.get("note").is_none());
    for passage in passages {
        for field in ["title", "location", "base", "text"] {
            assert!(passage[field].is_string(), "{field} in {passage}");
        }
    }
    assert!(passages[0]["text"].as_str().unwrap().contains("WAL"));

    let found = sources(&output);
    assert_eq!(found.len(), passages.len());
    assert_eq!(found[0].location, passages[0]["location"].as_str().unwrap());
    assert_eq!(found[0].passage, passages[0]["text"].as_str().unwrap());
    assert!(!found[0].title.is_empty());
    // The same as the passages a direct search finds.
    let direct = store
        .search(&["docs", "notes"], "WAL mode", 3)
        .await
        .unwrap();
    let direct: Vec<knowledge_base::Source> = direct.into_iter().map(Into::into).collect();
    assert_eq!(direct, found);
    // The JSON text the model read gives the same sources.
    let reread: Value = serde_json::from_str(&serde_json::to_string(&output).unwrap()).unwrap();
    assert_eq!(sources(&reread), found);
    // A source serialises as {title, location, passage}.
    let json = serde_json::to_value(&found[0]).unwrap();
    let mut keys: Vec<&String> = json.as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(keys, ["location", "passage", "title"]);

    // Several calls of a run merge into one deduplicated list.
    let again = call(&tool, json!({"query": "WAL"})).await.unwrap();
    let mut set = SourceSet::default();
    set.add_output(&output);
    set.add_output(&again);
    set.add_output(&json!({"unrelated": true}));
    let merged = set.into_vec();
    let mut locations: Vec<&str> = merged.iter().map(|s| s.location.as_str()).collect();
    let count = locations.len();
    locations.sort_unstable();
    locations.dedup();
    assert_eq!(locations.len(), count);
    assert!(count >= found.len());

    // Both bases are searched.
    let lunch = call(&tool, json!({"query": "lunch"})).await.unwrap();
    assert_eq!(lunch["passages"][0]["location"], "notes.md:1");
    assert_eq!(lunch["passages"][0]["base"], "notes");
    assert_eq!(lunch["passages"][0]["text"], "Lunch is at noon.");
}

#[tokio::test]
async fn nothing_found_is_a_hint_not_an_error() {
    let store = store_with_docs().await;
    let tool = tool(&store).await;
    for query in ["xylophonequux", "\"(*)\" NEAR -"] {
        let output = call(&tool, json!({ "query": query })).await.unwrap();
        assert_eq!(output["passages"], json!([]));
        assert!(output["note"].as_str().unwrap().contains("Try other words"));
        assert!(sources(&output).is_empty());
    }
}

#[tokio::test]
async fn bad_input_is_named() {
    let store = store_with_docs().await;
    let tool = tool(&store).await;
    for (input, path) in [
        (json!({"query": "x", "limit": 0}), "limit"),
        (json!({"query": "x", "limit": 21}), "limit"),
        (json!({"query": "   "}), "query"),
        (json!({"query": "x", "limit": -1}), "limit"),
    ] {
        match call(&tool, input.clone()).await {
            Err(ToolError::InvalidInput {
                path: Some(found), ..
            }) => {
                assert_eq!(found, path, "{input}");
            }
            other => panic!("{input}: {other:?}"),
        }
    }
    assert!(matches!(
        call(&tool, json!({"q": "x"})).await,
        Err(ToolError::InvalidInput { .. })
    ));
    assert!(matches!(
        call(&tool, json!({"query": "x", "base": "other"})).await,
        Err(ToolError::InvalidInput { .. })
    ));
}

#[tokio::test]
async fn the_tool_needs_known_bases() {
    let store = store_with_docs().await;
    let error = KnowledgeBaseSearch::new(store.clone(), ["docs", "nope"])
        .await
        .unwrap_err();
    assert!(
        matches!(&error, KbError::UnknownBase { name, known } if name == "nope" && known == &["docs", "notes"]),
        "{error:?}"
    );
    let none: [&str; 0] = [];
    assert!(matches!(
        KnowledgeBaseSearch::new(store.clone(), none).await,
        Err(KbError::NoBases)
    ));

    // A base removed after the tool was made: the model reads why.
    let tool = tool(&store).await;
    store.remove("notes").await.unwrap();
    match call(&tool, json!({"query": "lunch"})).await {
        Err(ToolError::Failed { message, .. }) => {
            assert!(
                message.contains("no knowledge base named `notes`"),
                "{message}"
            );
        }
        other => panic!("{other:?}"),
    }
}

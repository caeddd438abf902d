//! What a tool cites: read from its typed output by `Tool::sources`, carried through the erased
//! path to `ToolEvent::Finished`, redacted like the result; and `ToolResult` stays a plain
//! `{ text, media }` that tools and plugins build as a literal.

use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use toolchain::{
    DynTool, ExecutionContext, JsonSchema, JsonTool, NativeToolChain, Redactor, Source, Tool,
    ToolCall, ToolError, ToolEvent, ToolResult, ToolSet, ToolSpec, async_trait,
};

#[derive(Deserialize, JsonSchema)]
struct LookupInput {
    /// The page to look up; `missing` fails.
    page: String,
}

#[derive(Serialize)]
struct Page {
    url: String,
    snippet: String,
}

/// A tool that cites the page it read.
struct Lookup;

#[async_trait]
impl Tool<LookupInput, Page> for Lookup {
    fn name(&self) -> &str {
        "lookup"
    }
    fn description(&self) -> &str {
        "Reads a page."
    }
    async fn call(
        &self,
        _: &ExecutionContext,
        input: LookupInput,
    ) -> Result<ToolResult<Page>, ToolError> {
        if input.page == "missing" {
            return Err(ToolError::failed("no such page"));
        }
        // Built as a literal: the shape outside crates rely on.
        Ok(ToolResult {
            text: Page {
                url: format!("https://pages.example/{}", input.page),
                snippet: "the key is hunter2".into(),
            },
            media: Vec::new(),
        })
    }
    fn sources(&self, page: &Page) -> Vec<Source> {
        vec![Source {
            title: "Page".into(),
            location: page.url.clone(),
            passage: page.snippet.clone(),
        }]
    }
}

/// A tool with no Rust types, which cites nothing.
struct Echo {
    spec: ToolSpec,
}

#[async_trait]
impl JsonTool for Echo {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }
    async fn call_json(
        &self,
        _: &ExecutionContext,
        input: Value,
    ) -> Result<ToolResult<Value>, ToolError> {
        Ok(ToolResult {
            text: input,
            media: Vec::new(),
        })
    }
}

#[test]
fn a_tool_result_is_text_and_media() {
    let ToolResult { text, media } = ToolResult::text("done");
    assert_eq!((text, media.len()), ("done", 0));
}

#[tokio::test]
async fn a_typed_tool_cites_from_its_output_and_a_json_tool_cites_nothing() {
    let ctx = ExecutionContext::new();
    let lookup = DynTool::new(Lookup).unwrap();
    let (result, sources) = lookup
        .call_json_with_sources(&ctx, json!({"page": "rust"}))
        .await
        .unwrap();
    assert_eq!(result.text["url"], "https://pages.example/rust");
    assert_eq!(sources.len(), 1);
    assert_eq!(sources[0].location, "https://pages.example/rust");

    let echo = DynTool::from_json_tool(Echo {
        spec: ToolSpec {
            name: "echo".into(),
            description: "Echoes its input.".into(),
            parameters: json!({"type": "object"}),
        },
    })
    .unwrap();
    let (result, sources) = echo
        .call_json_with_sources(&ctx, json!({"a": 1}))
        .await
        .unwrap();
    assert_eq!(result.text, json!({"a": 1}));
    assert!(sources.is_empty());
}

/// The sources reach the `Finished` event redacted like the result; a failed call cites none.
#[tokio::test]
async fn finished_events_carry_the_sources_redacted() {
    let tools = ToolSet::new().with(Lookup).unwrap();
    let chain = NativeToolChain::new(tools);
    let calls = [
        ToolCall::new("1", "lookup", r#"{"page": "rust"}"#),
        ToolCall::new("2", "lookup", r#"{"page": "missing"}"#),
    ];
    let seen = Mutex::new(Vec::new());
    let observer = |event: &ToolEvent<'_>| {
        if let ToolEvent::Finished { call, sources, .. } = event {
            seen.lock()
                .unwrap()
                .push((call.id.clone(), sources.to_vec()));
        }
    };
    let ctx = ExecutionContext::new().with_redactor(Arc::new(Redactor::new().with("hunter2")));
    chain.execute_observed(&ctx, &calls, &observer).await;
    let mut seen = seen.into_inner().unwrap();
    seen.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].1.len(), 1);
    assert_eq!(seen[0].1[0].location, "https://pages.example/rust");
    assert_eq!(seen[0].1[0].passage, "the key is [REDACTED]");
    assert!(seen[1].1.is_empty());
}

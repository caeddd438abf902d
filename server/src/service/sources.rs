//! Sources: what a run's search tools found (knowledge-base passages, web pages), as a front
//! end shows them under an answer, each once.

use knowledge_base::Source;
use serde::Deserialize as _;
use serde_json::Value;

use crate::service::tools::WEB_SEARCH;

pub(crate) use knowledge_base::SourceSet;

/// The sources in the output `value` of the tool `name`: `knowledge_base_search` passages and
/// `web_search` results; none for any other tool.
pub(crate) fn of_tool(name: &str, value: &Value) -> Vec<Source> {
    match name {
        knowledge_base::TOOL_NAME => knowledge_base::sources(value),
        WEB_SEARCH => value
            .get("sources")
            .and_then(Value::as_array)
            .map(|sources| {
                sources
                    .iter()
                    .filter_map(|source| Source::deserialize(source).ok())
                    .collect()
            })
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn search_outputs_become_sources_and_others_none() {
        let kb = json!({"passages": [
            {"title": "Guide", "location": "guide.md:1-3", "base": "docs", "text": "Backups."},
        ]});
        assert_eq!(
            of_tool(knowledge_base::TOOL_NAME, &kb)[0].location,
            "guide.md:1-3"
        );
        let web = json!({"query": "q", "results": [], "sources": [
            {"title": "Rust", "location": "https://www.rust-lang.org/", "passage": "A language."},
        ]});
        assert_eq!(of_tool(WEB_SEARCH, &web)[0].title, "Rust");
        assert!(of_tool("calculator", &json!({"result": 4})).is_empty());
        assert!(of_tool(WEB_SEARCH, &json!({"sources": "nope"})).is_empty());
    }
}

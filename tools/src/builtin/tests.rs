use super::*;
use crate::{HttpGetPolicy, WebSearchConfig};

#[test]
fn only_the_calculator_by_default() {
    let tools = BuiltinTools::new(&ToolsConfig::default()).unwrap();
    assert_eq!(tools.names().collect::<Vec<_>>(), ["calculator"]);
    let set = tools.select(["calculator", "calculator"]).unwrap();
    assert_eq!(set.names().collect::<Vec<_>>(), ["calculator"]);
    assert!(matches!(
        tools.select(["read_file"]),
        Err(ToolSelectError::Disabled { .. })
    ));
    assert!(matches!(
        tools.select(["http_get"]),
        Err(ToolSelectError::Disabled { .. })
    ));
    let err = tools.select(["web_search"]).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("tool `web_search` is off here: configure a search backend"),
        "{err}"
    );
    let err = tools.select(["shell"]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "unknown tool `shell`; the built-in tools are: calculator, read_file, list_files, http_get, web_search"
    );
}

/// Every built-in tool, the file tools confined to `root`.
fn every_tool(root: &std::path::Path) -> BuiltinTools {
    BuiltinTools::new(&ToolsConfig {
        files_root: Some(root.to_path_buf()),
        http_get: Some(HttpGetPolicy::allow(["example.com"])),
        web_search: Some(WebSearchConfig::searxng("http://127.0.0.1:8888")),
        ..Default::default()
    })
    .unwrap()
}

/// What a model reads about a tool is written for models: no rustdoc link syntax, no
/// Rust type names standing in for a description.
#[test]
fn tool_descriptions_and_schemas_are_written_for_models() {
    let dir = tempfile::tempdir().unwrap();
    let tools = every_tool(dir.path());
    let mut set = tools.select(BUILTIN_TOOL_NAMES.iter().copied()).unwrap();
    set.add_dyn(tools.silent_exit()).unwrap();
    let specs = set.specs();
    assert_eq!(specs.len(), BUILTIN_TOOL_NAMES.len() + 1);
    for spec in specs {
        let text = format!("{} {}", spec.description, spec.parameters);
        for markup in ["[`", "`]", "](", "Input of", "Output of", "::"] {
            assert!(
                !text.contains(markup),
                "{}: {markup:?} in {text}",
                spec.name
            );
        }
        assert!(
            !spec.description.is_empty(),
            "{} has no description",
            spec.name
        );
    }
}

#[test]
fn configured_tools_are_available() {
    let dir = tempfile::tempdir().unwrap();
    let tools = every_tool(dir.path());
    assert_eq!(tools.names().collect::<Vec<_>>(), BUILTIN_TOOL_NAMES);
    let set = tools.select(["list_files", "calculator"]).unwrap();
    assert_eq!(
        set.names().collect::<Vec<_>>(),
        ["list_files", "calculator"]
    );
}

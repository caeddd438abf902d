use serde_json::json;

use super::*;

const SERVERS: [ConfiguredServer<'static>; 2] = [
    ConfiguredServer {
        name: "everything",
        url: None,
    },
    ConfiguredServer {
        name: "docs",
        url: Some("https://docs.example.com/mcp"),
    },
];

fn tool(value: Value) -> McpTool {
    serde_json::from_value(value).unwrap()
}

#[test]
fn a_configured_server_is_declared_with_openais_default_of_approving_every_call() {
    let checked = declarations(
        vec![(
            0,
            tool(json!({"type": "mcp", "server_label": "everything"})),
        )],
        &SERVERS,
    )
    .unwrap();
    assert_eq!(
        checked,
        vec![(
            0,
            McpDeclaration {
                server_label: "everything".into(),
                allowed_tools: None,
                require_approval: RequireApproval::Always,
            }
        )]
    );
}

#[test]
fn allowed_tools_and_require_approval_take_both_of_openais_forms() {
    let checked = declarations(
        vec![
            (
                0,
                tool(json!({"type": "mcp", "server_label": "docs",
                    "server_url": "https://docs.example.com/mcp",
                    "allowed_tools": ["search", "fetch"], "require_approval": "never"})),
            ),
            (
                1,
                tool(json!({"type": "mcp", "server_label": "everything",
                    "allowed_tools": {"tool_names": ["echo", "add"]},
                    "require_approval": {"never": {"tool_names": ["echo"]}}})),
            ),
        ],
        &SERVERS,
    )
    .unwrap();
    assert_eq!(
        checked[0].1.allowed_tools,
        Some(vec!["search".to_owned(), "fetch".to_owned()])
    );
    assert_eq!(checked[0].1.require_approval, RequireApproval::Never);
    assert_eq!(
        checked[1].1.allowed_tools,
        Some(vec!["echo".to_owned(), "add".to_owned()])
    );
    assert_eq!(
        checked[1].1.require_approval,
        RequireApproval::Named {
            always: Vec::new(),
            never: vec!["echo".to_owned()],
        }
    );
}

#[test]
fn every_problem_of_every_entry_is_named_at_once() {
    let error = declarations(
        vec![
            (
                0,
                tool(json!({"type": "mcp", "server_label": "mail",
                    "headers": {"Authorization": "Bearer x"}})),
            ),
            (
                2,
                tool(json!({"type": "mcp", "server_label": "docs",
                    "server_url": "https://evil.example/mcp", "authorization": "x",
                    "require_approval": "sometimes", "allowed_tools": "search"})),
            ),
        ],
        &SERVERS,
    )
    .unwrap_err();
    assert_eq!(error.status(), http::StatusCode::BAD_REQUEST);
    let body = serde_json::to_value(error.body()).unwrap();
    assert_eq!(body["error"]["param"], "tools[0].server_label");
    let message = body["error"]["message"].as_str().unwrap();
    for expected in [
        "`tools[0].server_label`: no MCP server is named `mail` (the configured ones: everything, docs)",
        "`tools[0].headers`: `headers` is not accepted",
        "`tools[2].server_url`: `https://evil.example/mcp` is not the URL the operator configured for `docs`",
        "`tools[2].authorization`",
        "`tools[2].allowed_tools`: must be a list",
        "`tools[2].require_approval`: must be `always`, `never`",
    ] {
        assert!(
            message.contains(expected),
            "{expected:?} not in {message:?}"
        );
    }
    // The credentials a client sent are never repeated back.
    assert!(!message.contains("Bearer x"), "{message}");
}

#[test]
fn a_tools_list_reads_functions_and_mcp_servers_by_type() {
    #[derive(Deserialize)]
    struct Tools {
        #[serde(deserialize_with = "tool_entries")]
        tools: Option<Vec<ResponseToolEntry>>,
    }
    let read: Tools = serde_json::from_value(json!({"tools": [
        {"type": "function", "name": "f"},
        {"type": "mcp", "server_label": "everything", "require_approval": "never"},
    ]}))
    .unwrap();
    let tools = read.tools.unwrap();
    assert!(matches!(&tools[0], ResponseToolEntry::Function(tool) if tool.name == "f"));
    assert!(matches!(&tools[1], ResponseToolEntry::Mcp(tool) if tool.server_label == "everything"));
    let error = serde_json::from_value::<Tools>(json!({"tools": [
        {"type": "mcp", "server_lable": "everything"},
    ]}))
    .err()
    .unwrap()
    .to_string();
    assert!(
        error.contains("`tools[0]`: unknown field `server_lable`"),
        "{error}"
    );
}

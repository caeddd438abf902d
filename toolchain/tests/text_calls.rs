//! How the text chains read calls: the documented syntax, what models write instead, per-call
//! problems that leave the other calls running, and YAML's schema-aware typing.

use crate::common;

use common::{block_on, tools};
use serde_json::json;
use toolchain::{
    ExecutionContext, JsonToolChain, MarkdownFormat, ToolChain, ToolChainError, ToolChainResult,
    ToolError,
};

fn run(chain: &dyn ToolChain, content: &str) -> Result<ToolChainResult, ToolChainError> {
    block_on(chain.execute(&ExecutionContext::new(), content, &MarkdownFormat::new()))
}

#[test]
fn json_accepts_what_models_write() {
    let chain = JsonToolChain::new(tools());
    let cases = [
        // A single object, an array, a fenced array, several values in a row.
        (r#"{"tool": "noop", "args": {}}"#, 1),
        (r#"[{"tool": "noop", "args": {}}, {"tool": "noop"}]"#, 2),
        ("```json\n[{\"tool\": \"noop\", \"args\": null}]\n```", 1),
        (
            "{\"tool\": \"noop\"}\n{\"tool\": \"noop\"}\n[{\"tool\": \"noop\"}]",
            3,
        ),
        // OpenAI-style keys and arguments as a JSON string.
        (r#"{"name": "noop", "arguments": "{}"}"#, 1),
    ];
    for (content, calls) in cases {
        let result = run(&chain, content).unwrap();
        assert_eq!(result.raw.len(), calls, "{content}");
        assert_eq!(
            result.raw.error_count(),
            0,
            "{content}: {:?}",
            result.raw.errors
        );
    }
    let result = run(
        &chain,
        r#"{"tool": "get_customer_info", "arguments": "{\"id\": \"C001\"}", "reason": "x"}"#,
    )
    .unwrap();
    assert_eq!(
        result.raw.results[0].output,
        Some(json!({"id": "C001", "name": "John"}))
    );
}

#[test]
fn a_bad_call_is_an_error_entry_and_the_others_still_run() {
    let chain = JsonToolChain::new(tools());
    let content = r#"[{"args": {"id": "C001"}}, 42, {"tool": "get_customer_info", "args": [1]}, {"tool": "get_customer_info", "args": {"id": "C001"}}]"#;
    let result = run(&chain, content).unwrap();
    assert_eq!(
        result.text,
        "# error\nError: tool call 1 has no \"tool\" field; write each call as {\"tool\": \"tool_name\", \"args\": {...}}\n\n\
         # error\nError: tool call 2 is a number, not an object; write each call as {\"tool\": \"tool_name\", \"args\": {...}}\n\n\
         # get_customer_info\nError: invalid input for tool \"get_customer_info\" at `args`: expected an object of named arguments, found an array\n\n\
         # get_customer_info\n{\"id\":\"C001\",\"name\":\"John\"}"
    );
    assert!(matches!(
        result.raw.errors[0],
        Some(ToolError::InvalidCall { .. })
    ));
    assert_eq!(result.raw.calls[0].arguments, r#"{"id":"C001"}"#);
    assert!(matches!(
        result.raw.errors[2],
        Some(ToolError::InvalidInput { .. })
    ));
    assert!(result.raw.errors[3].is_none());
}

#[test]
fn unparseable_sections_are_typed_errors_quoting_the_line() {
    let chain = JsonToolChain::new(tools());
    let err = run(&chain, "[\n  {\"tool\": \"noop\"},\n  {\"tool\": noop}\n]").unwrap_err();
    let ToolChainError::MalformedCalls {
        syntax,
        section,
        line,
        ..
    } = &err
    else {
        panic!("{err:?}")
    };
    assert_eq!((*syntax, section.as_str()), ("JSON", "action"));
    assert_eq!(
        line.as_ref().map(|line| (line.number, line.text.as_str())),
        Some((3, "  {\"tool\": noop}"))
    );
    assert_eq!(
        err.to_string(),
        "invalid JSON in the `action` section: expected ident at column 13 (line 3: `  {\"tool\": \
         noop}`); write each call as {\"tool\": \"tool_name\", \"args\": {...}}"
    );
}

#[test]
fn a_custom_section_name() {
    let chain = JsonToolChain::new(tools())
        .with_section_name("tool_calls")
        .unwrap();
    assert_eq!(chain.section().name(), "tool_calls");
    assert!(
        chain
            .describe_tools()
            .contains("Write tool calls in the `tool_calls` section.")
    );
    assert!(
        JsonToolChain::new(tools())
            .with_section_name("tool calls")
            .is_err()
    );
}

#[cfg(feature = "yaml")]
mod yaml {
    use super::*;
    use toolchain::YamlToolChain;

    fn names_and_args(result: &ToolChainResult) -> Vec<(String, String)> {
        result
            .raw
            .calls
            .iter()
            .map(|call| (call.name.clone(), call.arguments.clone()))
            .collect()
    }

    #[test]
    fn yaml_accepts_single_list_fenced_and_flow_calls() {
        let chain = YamlToolChain::new(tools());
        let cases = [
            ("tool: noop\nargs: {}", 1),
            ("- tool: noop\n- tool: noop\n  args:\n", 2),
            ("```yaml\n- {tool: noop, args: {}}\n```", 1),
            ("name: noop\narguments: {}", 1),
            ("~", 0),
        ];
        for (content, calls) in cases {
            let result = run(&chain, content).unwrap();
            assert_eq!(result.raw.len(), calls, "{content}");
            assert_eq!(
                result.raw.error_count(),
                0,
                "{content}: {:?}",
                result.raw.errors
            );
        }
    }

    #[test]
    fn string_arguments_keep_their_text_as_written() {
        // YAML reads `01234` as a number and `2026-01-25` / `yes` as other
        // types; the tool's schema says they are strings.
        let chain = YamlToolChain::new(tools());
        let content = "- tool: get_customer_info\n  args:\n    id: 01234\n\
                       - tool: get_flight_info\n  args:\n    flight: 1.50\n    date: 2026-01-25\n\
                       - tool: get_customer_info\n  args: {id: yes}";
        let result = run(&chain, content).unwrap();
        assert_eq!(
            names_and_args(&result),
            [
                (
                    "get_customer_info".to_owned(),
                    r#"{"id":"01234"}"#.to_owned()
                ),
                (
                    "get_flight_info".to_owned(),
                    r#"{"date":"2026-01-25","flight":"1.50"}"#.to_owned()
                ),
                ("get_customer_info".to_owned(), r#"{"id":"yes"}"#.to_owned()),
            ]
        );
        assert_eq!(
            result.raw.errors[0].as_ref().unwrap().to_string(),
            "no customer with id 01234"
        );
    }

    #[test]
    fn multiline_and_quoted_strings() {
        let chain = YamlToolChain::new(tools());
        let content =
            "tool: sleep\nargs:\n  millis: 0\n  label: |\n    line one\n    line two: with colon\n";
        let result = run(&chain, content).unwrap();
        assert_eq!(
            result.raw.results[0].output,
            Some(json!("line one\nline two: with colon\n"))
        );
        let result = run(
            &chain,
            "tool: sleep\nargs:\n  millis: 0\n  label: \"a: b\\n\\nc\"",
        )
        .unwrap();
        assert_eq!(result.raw.results[0].output, Some(json!("a: b\n\nc")));
    }

    #[test]
    fn bad_yaml_calls() {
        let chain = YamlToolChain::new(tools());
        let result = run(&chain, "- just a string\n- tool: noop\n- args: {a: 1}").unwrap();
        assert!(
            matches!(&result.raw.errors[0], Some(ToolError::InvalidCall { message }) if message.starts_with("tool call 1 is a string"))
        );
        assert!(result.raw.errors[1].is_none());
        assert!(
            matches!(&result.raw.errors[2], Some(ToolError::InvalidCall { message }) if message.starts_with("tool call 3 has no \"tool\" field"))
        );
        let err = run(&chain, "tool: noop\n  args: x: y").unwrap_err();
        assert!(
            matches!(err, ToolChainError::MalformedCalls { syntax: "YAML", .. }),
            "{err}"
        );
        let err = run(&chain, "just text").unwrap_err();
        assert!(err.to_string().contains("a tool call mapping"), "{err}");
    }
}

#[test]
fn text_chains_report_events_with_minted_ids() {
    use std::sync::Mutex;
    use toolchain::ToolEvent;

    let chain = JsonToolChain::new(tools());
    let events = Mutex::new(Vec::new());
    let observer = |event: &ToolEvent<'_>| {
        let entry = match event {
            ToolEvent::Started { index, call } => {
                format!("start {index} {} {}", call.id, call.name)
            }
            ToolEvent::Finished {
                index,
                call,
                content,
                ..
            } => {
                format!("done {index} {} {content}", call.id)
            }
        };
        events.lock().unwrap().push(entry);
    };
    let ctx = ExecutionContext::new().with_max_concurrency(1);
    let content = r#"[{"tool": "noop"}, {"tool": "get_customer_info", "args": {"id": "C9"}}]"#;
    block_on(chain.execute_observed(&ctx, content, &MarkdownFormat::new(), &observer)).unwrap();
    assert_eq!(
        *events.lock().unwrap(),
        [
            "start 0 call_1 noop",
            "done 0 call_1 ",
            "start 1 call_2 get_customer_info",
            "done 1 call_2 Error: no customer with id C9",
        ]
    );
}

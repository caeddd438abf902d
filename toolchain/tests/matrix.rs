//! Both formats x both text chains x success / tool error / unknown tool / malformed call /
//! media, from the model's whole reply to the observation it reads next, snapshot-tested.

use crate::common;

use common::{block_on, tools};
use toolchain::{
    ExecutionContext, JsonToolChain, MarkdownFormat, TextFormat, ToolChain, ToolChainError,
    ToolChainResult, XmlFormat,
};

/// What the model writes in its action section, per scenario, as (JSON, YAML).
const SCENARIOS: [(&str, &str, &str); 5] = [
    (
        "success",
        r#"[{"tool": "get_customer_info", "args": {"id": "C001"}}, {"tool": "get_flight_info", "args": {"flight": "AA100"}}]"#,
        "- tool: get_customer_info\n  args:\n    id: C001\n- tool: get_flight_info\n  args:\n    flight: AA100",
    ),
    (
        "tool_error",
        r#"{"tool": "get_customer_info", "args": {"id": "C404"}}"#,
        "tool: get_customer_info\nargs:\n  id: C404",
    ),
    (
        "unknown_tool",
        r#"[{"tool": "get_weather", "args": {"city": "Paris"}}, {"tool": "get_flight_info", "args": {"flight": "AA100"}}]"#,
        "- tool: get_weather\n  args:\n    city: Paris\n- tool: get_flight_info\n  args:\n    flight: AA100",
    ),
    (
        "malformed_call",
        "{\"tool\": \"get_customer_info\",\n \"args\": {\"id\": \"C001\"\n",
        "tool: get_customer_info\nargs: {id: [C001\n",
    ),
    (
        "media",
        r#"{"tool": "screenshot", "args": {"url": "https://example.com"}}"#,
        "tool: screenshot\nargs:\n  url: https://example.com",
    ),
];

fn react(mut format: impl TextFormat + 'static, chain: &dyn ToolChain) -> Box<dyn TextFormat> {
    format.register_section(toolchain::TextSection::new("thinking", "Your reasoning.").unwrap());
    format.register_section(chain.section());
    format.register_section(toolchain::TextSection::new("answer", "Your answer.").unwrap());
    Box::new(format)
}

/// Runs one round: the model's reply is parsed with `format`, every action section executed.
fn round(format: &dyn TextFormat, chain: &dyn ToolChain, calls: &str) -> String {
    let reply = format!(
        "I will look this up.\n{}\n{}",
        format.format_section("thinking", "I need the data first."),
        format.format_section("action", calls),
    );
    let parsed = format.parse(&reply).unwrap();
    let actions = parsed.get("action");
    assert_eq!(actions.len(), 1, "{reply}");
    let result = block_on(chain.execute(&ExecutionContext::new(), actions[0], format));
    describe(format, result)
}

fn describe(format: &dyn TextFormat, result: Result<ToolChainResult, ToolChainError>) -> String {
    match result {
        Err(error) => format!(
            "=== error\n{error}\n=== observation (ToolChainError::observation)\n{}",
            error.observation(format)
        ),
        Ok(result) => {
            let mut out = format!("=== text\n{}\n=== media\n", result.text);
            for part in &result.media {
                match part {
                    toolchain::ContentPart::Binary { mime_type, data } => {
                        out.push_str(&format!("{mime_type}, {} bytes\n", data.len()));
                    }
                    other => out.push_str(&format!("{other:?}\n")),
                }
            }
            out.push_str("=== raw\n");
            for (call, outcome) in result.raw.iter() {
                let outcome = match outcome {
                    Ok(output) => format!("ok {output}"),
                    Err(error) => format!("err {error:?}"),
                };
                out.push_str(&format!(
                    "{} {} {} -> {outcome}\n",
                    call.id, call.name, call.arguments
                ));
            }
            out
        }
    }
}

fn check(
    format_name: &str,
    chain_name: &str,
    format: impl TextFormat + 'static,
    chain: &dyn ToolChain,
    yaml: bool,
) {
    let format = react(format, chain);
    for (scenario, json_calls, yaml_calls) in SCENARIOS {
        let calls = if yaml { yaml_calls } else { json_calls };
        let snapshot = round(format.as_ref(), chain, calls);
        insta::assert_snapshot!(format!("{format_name}_{chain_name}_{scenario}"), snapshot);
    }
}

#[test]
fn markdown_json() {
    check(
        "markdown",
        "json",
        MarkdownFormat::new(),
        &JsonToolChain::new(tools()),
        false,
    );
}

#[test]
fn xml_json() {
    check(
        "xml",
        "json",
        XmlFormat::new(),
        &JsonToolChain::new(tools()),
        false,
    );
}

#[cfg(feature = "yaml")]
#[test]
fn markdown_yaml() {
    check(
        "markdown",
        "yaml",
        MarkdownFormat::new(),
        &toolchain::YamlToolChain::new(tools()),
        true,
    );
}

#[cfg(feature = "yaml")]
#[test]
fn xml_yaml() {
    check(
        "xml",
        "yaml",
        XmlFormat::new(),
        &toolchain::YamlToolChain::new(tools()),
        true,
    );
}

//! The data flow end to end: `Tool::call` returns a raw `CustomerInfo`, the chain renders it as
//! JSON, wraps it with `format_section(tool_name, json)`, combines the sections with
//! `format_sections`, and the agent loop uses `result.text` / `as_content_parts()` directly.

use crate::common;

use common::{PNG, block_on, tools};
use serde_json::json;
use toolchain::{
    ContentPart, ExecutionContext, JsonToolChain, MarkdownFormat, NativeToolChain, Role,
    TextFormat, TextSection, ToolCall, ToolChain, XmlFormat,
};

const ACTION: &str = r#"[{"tool": "get_customer_info", "args": {"id": "C001"}},
                         {"tool": "get_flight_info", "args": {"flight": "AA100"}}]"#;

#[test]
fn markdown_observation_is_the_seed_example() {
    let chain = JsonToolChain::new(tools());
    let mut format = MarkdownFormat::new();
    format.register_section(chain.section());
    format.register_section(TextSection::new("answer", "Your answer.").unwrap());

    // The model's reply, parsed with the same format.
    let reply = format!("Let me check.\n\n# Action\n```json\n{ACTION}\n```\n");
    let parsed = format.parse(&reply).unwrap();
    let action = parsed.first("action").unwrap();

    let result = block_on(chain.execute(&ExecutionContext::new(), action, &format)).unwrap();
    // One `# <tool>` section per call, in call order, joined by a blank line.
    assert_eq!(
        result.text,
        "# get_customer_info\n{\"id\":\"C001\",\"name\":\"John\"}\n\n\
         # get_flight_info\n{\"date\":null,\"flight\":\"AA100\",\"status\":\"on time\"}"
    );
    assert!(result.media.is_empty());
    assert_eq!(
        result.as_content_parts(),
        vec![ContentPart::text(result.text.clone())]
    );

    // Raw, for code: the typed output as JSON, index-aligned with the calls.
    assert_eq!(result.raw.calls.len(), 2);
    assert_eq!(result.raw.calls[0].id, "call_1");
    assert_eq!(result.raw.calls[0].name, "get_customer_info");
    assert_eq!(result.raw.calls[0].arguments, r#"{"id":"C001"}"#);
    assert_eq!(result.raw.results[0].name, "get_customer_info");
    assert_eq!(
        result.raw.results[0].output,
        Some(json!({"id": "C001", "name": "John"}))
    );
    assert_eq!(
        result.raw.results[1].output.as_ref().unwrap()["status"],
        "on time"
    );
    assert!(result.raw.errors.iter().all(Option::is_none));
}

#[test]
fn xml_observation_includes_the_wrapper() {
    let chain = JsonToolChain::new(tools());
    let result =
        block_on(chain.execute(&ExecutionContext::new(), ACTION, &XmlFormat::new())).unwrap();
    assert_eq!(
        result.text,
        "<observation>\n\
         <get_customer_info>\n{\"id\":\"C001\",\"name\":\"John\"}\n</get_customer_info>\n\
         <get_flight_info>\n{\"date\":null,\"flight\":\"AA100\",\"status\":\"on time\"}\n</get_flight_info>\n\
         </observation>"
    );
}

#[test]
fn empty_results_give_the_empty_string() {
    let chain = JsonToolChain::new(tools());
    for format in [&XmlFormat::new() as &dyn TextFormat, &MarkdownFormat::new()] {
        for content in ["", "  \n ", "```json\n```", "[]"] {
            let result =
                block_on(chain.execute(&ExecutionContext::new(), content, format)).unwrap();
            assert_eq!(result.text, "", "{content:?}");
            assert!(result.raw.is_empty());
            assert!(result.as_content_parts().is_empty());
        }
    }
}

#[test]
fn media_follows_the_text_in_content_parts() {
    let chain = JsonToolChain::new(tools());
    let action = r#"[{"tool": "screenshot", "args": {"url": "a"}}, {"tool": "get_customer_info", "args": {"id": "C001"}}, {"tool": "screenshot", "args": {"url": "b"}}]"#;
    let result =
        block_on(chain.execute(&ExecutionContext::new(), action, &XmlFormat::new())).unwrap();
    let parts = result.as_content_parts();
    assert_eq!(parts.len(), 3);
    assert_eq!(parts[0], ContentPart::text(result.text.clone()));
    assert_eq!(parts[1], ContentPart::binary("image/png", PNG));
    assert_eq!(parts[2], ContentPart::binary("image/png", PNG));
    assert!(result.text.contains(
        "<screenshot>\n{\"format\":\"png\",\"height\":1080,\"width\":1920}\n</screenshot>"
    ));
}

#[test]
fn the_same_tools_answer_native_calls() {
    let chain = NativeToolChain::new(tools());
    let specs = chain.tool_specs();
    assert_eq!(specs[0].name, "get_customer_info");
    assert_eq!(specs[0].parameters["required"], json!(["id"]));

    let calls = [
        ToolCall::new("toolu_01", "get_customer_info", r#"{"id":"C001"}"#),
        ToolCall::new("toolu_02", "screenshot", r#"{"url":"https://example.com"}"#),
    ];
    let round = block_on(chain.execute(&ExecutionContext::new(), &calls));
    assert_eq!(round.messages.len(), 2);
    let first = &round.messages[0];
    assert_eq!(first.role, Role::Tool);
    let response = first.tool_responses().next().unwrap();
    assert_eq!(response.tool_call_id, "toolu_01");
    assert_eq!(response.name, "get_customer_info");
    assert_eq!(response.content, r#"{"id":"C001","name":"John"}"#);
    // Media rides after its ToolResponse, in the same tool message.
    let second = &round.messages[1];
    assert_eq!(second.parts.len(), 2);
    assert_eq!(
        second.tool_responses().next().unwrap().tool_call_id,
        "toolu_02"
    );
    assert_eq!(second.parts[1], ContentPart::binary("image/png", PNG));
    assert_eq!(round.raw.calls, calls);
}

//! ToolSet registration rules and composition.

use crate::common;

use common::{Empty, GetCustomerInfo, GetFlightInfo, Noop};
use serde::Deserialize;
use serde_json::{Value, json};
use toolchain::{
    DynTool, ExecutionContext, JsonSchema, JsonTool, Tool, ToolError, ToolResult, ToolSet,
    ToolSpec, async_trait,
};

struct Named(&'static str);

#[async_trait]
impl Tool<Empty, String> for Named {
    fn name(&self) -> &str {
        self.0
    }
    fn description(&self) -> &str {
        "A tool with a given name."
    }
    async fn call(&self, _: &ExecutionContext, _: Empty) -> Result<ToolResult<String>, ToolError> {
        Ok(ToolResult::text(self.0.to_owned()))
    }
}

#[derive(Deserialize, JsonSchema)]
struct Bare(String);

struct TakesAString;

#[async_trait]
impl Tool<Bare, String> for TakesAString {
    fn name(&self) -> &str {
        "bare"
    }
    fn description(&self) -> &str {
        "Takes a bare string."
    }
    async fn call(
        &self,
        _: &ExecutionContext,
        input: Bare,
    ) -> Result<ToolResult<String>, ToolError> {
        Ok(ToolResult::text(input.0))
    }
}

#[test]
fn duplicate_names_are_an_error() {
    let mut tools = ToolSet::new();
    tools.add(Noop).unwrap();
    let err = tools.add(Named("noop")).unwrap_err();
    assert_eq!(
        err.to_string(),
        "a tool named \"noop\" is already in the set; tool names must be unique"
    );
    assert_eq!(tools.len(), 1);
}

#[test]
fn names_and_schemas_are_checked() {
    let err = ToolSet::new().with(Named("get weather")).unwrap_err();
    assert_eq!(
        err.to_string(),
        "tool \"get weather\" cannot be registered: its name contains ' '; use only ASCII letters, digits, `_` and `-`"
    );
    assert!(matches!(
        ToolSet::new().with(Named("")),
        Err(ToolError::InvalidTool { .. })
    ));
    let err = ToolSet::new().with(TakesAString).unwrap_err();
    assert_eq!(
        err.to_string(),
        "tool \"bare\" cannot be registered: its input schema has type \"string\", but tools take a \
         JSON object; use a struct with named fields (an empty struct for no input)"
    );
}

#[test]
fn sets_compose_cheaply() {
    let base = ToolSet::new().with(GetCustomerInfo).unwrap();
    let mut round = base.clone();
    round.add(GetFlightInfo).unwrap();
    // The clone grew; the base did not.
    assert_eq!(base.names().collect::<Vec<_>>(), ["get_customer_info"]);
    assert_eq!(
        round.names().collect::<Vec<_>>(),
        ["get_customer_info", "get_flight_info"]
    );

    let mut all = ToolSet::new().with(Noop).unwrap();
    all.extend(&round).unwrap();
    assert_eq!(all.len(), 3);
    // All or nothing on a clash.
    let mut clash = ToolSet::new().with(Named("get_flight_info")).unwrap();
    assert!(clash.extend(&round).is_err());
    assert_eq!(clash.len(), 1);

    let only_flights = all.filtered(|tool| tool.name().contains("flight"));
    assert_eq!(
        only_flights.names().collect::<Vec<_>>(),
        ["get_flight_info"]
    );
    assert!(only_flights.get("get_flight_info").is_some());
    assert!(only_flights.get("noop").is_none());
    assert_eq!(format!("{only_flights:?}"), "[\"get_flight_info\"]");
}

/// A tool whose schema comes from configuration, as MCP tools do.
struct Remote {
    spec: ToolSpec,
}

#[async_trait]
impl JsonTool for Remote {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }
    async fn call_json(
        &self,
        _: &ExecutionContext,
        input: Value,
    ) -> Result<ToolResult<Value>, ToolError> {
        Ok(ToolResult::text(json!({ "echo": input })))
    }
}

#[tokio::test]
async fn json_tools_join_typed_ones() {
    let remote = Remote {
        spec: ToolSpec {
            name: "remote_echo".into(),
            description: "Echoes its input.".into(),
            parameters: json!({"type": "object", "properties": {"q": {"type": "string"}}}),
        },
    };
    let mut tools = ToolSet::new().with(Noop).unwrap();
    tools
        .add_dyn(DynTool::from_json_tool(remote).unwrap())
        .unwrap();
    let tool = tools.get("remote_echo").unwrap();
    let ctx = ExecutionContext::new();
    let output = tool.call_json_text(&ctx, r#"{"q": "hi"}"#).await.unwrap();
    assert_eq!(output.text, json!({"echo": {"q": "hi"}}));
    // Blank arguments count as `{}`.
    let output = tool.call_json_text(&ctx, " ").await.unwrap();
    assert_eq!(output.text, json!({"echo": {}}));
}

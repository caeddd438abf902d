//! Writing a tool as a plugin author: one typed tool, offered to a text-protocol model through
//! `JsonToolChain` and to a function-calling model through `NativeToolChain`.
//!
//! Run with `cargo run -p toolchain --example plugin_author`.

use serde::{Deserialize, Serialize};
use toolchain::{
    ExecutionContext, JsonSchema, JsonToolChain, NativeToolChain, TextFormat, TextSection, Tool,
    ToolCall, ToolChain, ToolError, ToolResult, ToolSet, XmlFormat, async_trait,
};

/// What the model sends. Doc comments become the descriptions in the JSON Schema it is shown.
#[derive(Deserialize, JsonSchema)]
struct WeatherQuery {
    /// City name, e.g. `Paris`.
    city: String,
    /// Temperature unit.
    #[serde(default)]
    unit: Unit,
}

#[derive(Clone, Copy, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Unit {
    #[default]
    Celsius,
    Fahrenheit,
}

/// What the tool returns. The chain decides how the model sees it (JSON here).
#[derive(Serialize)]
struct Weather {
    city: String,
    temperature: f64,
    unit: Unit,
    conditions: String,
}

struct GetWeather;

#[async_trait]
impl Tool<WeatherQuery, Weather> for GetWeather {
    fn name(&self) -> &str {
        "get_weather"
    }

    fn description(&self) -> &str {
        "Current weather for a city."
    }

    async fn call(
        &self,
        ctx: &ExecutionContext,
        input: WeatherQuery,
    ) -> Result<ToolResult<Weather>, ToolError> {
        // A real tool would call an API here, watching `ctx.cancellation()`.
        if ctx.is_cancelled() {
            return Err(ToolError::failed("cancelled"));
        }
        let celsius = match input.city.as_str() {
            "Paris" => 18.0,
            "Oslo" => 4.0,
            other => return Err(ToolError::failed(format!("no weather station in {other}"))),
        };
        let temperature = match input.unit {
            Unit::Celsius => celsius,
            Unit::Fahrenheit => celsius * 9.0 / 5.0 + 32.0,
        };
        Ok(ToolResult::text(Weather {
            city: input.city,
            temperature,
            unit: input.unit,
            conditions: "clear".to_owned(),
        }))
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let tools = ToolSet::new().with(GetWeather)?;
    let ctx = ExecutionContext::new();

    // 1. A text-protocol model: the calls are JSON in the <action> section of its reply.
    let chain = JsonToolChain::new(tools.clone());
    let mut format = XmlFormat::new();
    format.register_section(chain.section());
    format.register_section(TextSection::new("answer", "Your final answer.")?);
    println!(
        "--- system prompt ---\n{}\n{}",
        chain.describe_tools(),
        format.describe_structure()
    );

    let reply = r#"I'll check both cities.
<action>
[{"tool": "get_weather", "args": {"city": "Paris"}},
 {"tool": "get_weather", "args": {"city": "Lyon", "unit": "fahrenheit"}}]
</action>"#;
    let parsed = format.parse(reply)?;
    for action in parsed.get("action") {
        let result = chain.execute(&ctx, action, &format).await?;
        println!("--- observation for the model ---\n{}", result.text);
        assert_eq!(result.raw.error_count(), 1);
    }

    // 2. A function-calling model: the same tool, native calls and Role::Tool answers.
    let native = NativeToolChain::new(tools);
    println!(
        "--- tool specs ---\n{}",
        serde_json::to_string_pretty(&native.tool_specs())?
    );
    let calls = [ToolCall::new(
        "call_1",
        "get_weather",
        r#"{"city":"Oslo","unit":"celsius"}"#,
    )];
    let round = native.execute(&ctx, &calls).await;
    for message in &round.messages {
        for response in message.tool_responses() {
            println!(
                "--- {} ({}) ---\n{}",
                response.name, response.tool_call_id, response.content
            );
        }
    }
    Ok(())
}

//! Tools shared by the integration tests: a customer/flight example plus tools that
//! fail, panic, hang, attach media or ask for a silent exit.

#![allow(dead_code, unreachable_pub)]

use std::time::Duration;

use serde::{Deserialize, Serialize};
use toolchain::{
    ContentPart, ExecutionContext, JsonSchema, Tool, ToolError, ToolResult, ToolSet, async_trait,
};

#[derive(Deserialize, JsonSchema)]
pub struct CustomerQuery {
    /// Customer id, such as `C001`.
    pub id: String,
}

/// A customer record, returned raw for the chain to render.
#[derive(Serialize)]
pub struct CustomerInfo {
    pub id: String,
    pub name: String,
}

pub struct GetCustomerInfo;

#[async_trait]
impl Tool<CustomerQuery, CustomerInfo> for GetCustomerInfo {
    fn name(&self) -> &str {
        "get_customer_info"
    }
    fn description(&self) -> &str {
        "Looks up a customer by id."
    }
    async fn call(
        &self,
        _: &ExecutionContext,
        input: CustomerQuery,
    ) -> Result<ToolResult<CustomerInfo>, ToolError> {
        match input.id.as_str() {
            "C001" => Ok(ToolResult::text(CustomerInfo {
                id: input.id,
                name: "John".into(),
            })),
            other => Err(ToolError::failed(format!("no customer with id {other}"))),
        }
    }
}

#[derive(Deserialize, JsonSchema)]
pub struct FlightQuery {
    /// Flight number, such as `AA100`.
    pub flight: String,
    /// Departure date, `YYYY-MM-DD`.
    pub date: Option<String>,
}

#[derive(Serialize)]
pub struct FlightInfo {
    pub flight: String,
    pub status: String,
    pub date: Option<String>,
}

pub struct GetFlightInfo;

#[async_trait]
impl Tool<FlightQuery, FlightInfo> for GetFlightInfo {
    fn name(&self) -> &str {
        "get_flight_info"
    }
    fn description(&self) -> &str {
        "Gets the status of a flight."
    }
    async fn call(
        &self,
        _: &ExecutionContext,
        input: FlightQuery,
    ) -> Result<ToolResult<FlightInfo>, ToolError> {
        Ok(ToolResult::text(FlightInfo {
            flight: input.flight,
            status: "on time".into(),
            date: input.date,
        }))
    }
}

#[derive(Deserialize, JsonSchema)]
pub struct ScreenshotInput {
    /// Page to capture.
    pub url: String,
}

#[derive(Serialize)]
pub struct ScreenshotOutput {
    pub width: u32,
    pub height: u32,
    pub format: String,
}

/// A screenshot tool: text metadata plus an image part.
pub struct Screenshot;

pub const PNG: &[u8] = b"\x89PNG fake";

#[async_trait]
impl Tool<ScreenshotInput, ScreenshotOutput> for Screenshot {
    fn name(&self) -> &str {
        "screenshot"
    }
    fn description(&self) -> &str {
        "Takes a screenshot of a page."
    }
    async fn call(
        &self,
        _: &ExecutionContext,
        _: ScreenshotInput,
    ) -> Result<ToolResult<ScreenshotOutput>, ToolError> {
        Ok(ToolResult::with_media(
            ScreenshotOutput {
                width: 1920,
                height: 1080,
                format: "png".into(),
            },
            vec![ContentPart::binary("image/png", PNG)],
        ))
    }
}

#[derive(Deserialize, JsonSchema)]
pub struct Empty {}

/// Panics with a message.
pub struct Panicking;

#[async_trait]
impl Tool<Empty, String> for Panicking {
    fn name(&self) -> &str {
        "explode"
    }
    fn description(&self) -> &str {
        "Always panics."
    }
    async fn call(&self, _: &ExecutionContext, _: Empty) -> Result<ToolResult<String>, ToolError> {
        panic!("kaboom")
    }
}

#[derive(Deserialize, JsonSchema)]
pub struct SleepInput {
    pub millis: u64,
    /// Echoed back.
    pub label: String,
}

/// Sleeps (with Tokio's timer, so paused-clock tests run instantly), then echoes the label.
pub struct Sleep;

#[async_trait]
impl Tool<SleepInput, String> for Sleep {
    fn name(&self) -> &str {
        "sleep"
    }
    fn description(&self) -> &str {
        "Sleeps, then answers its label."
    }
    async fn call(
        &self,
        _: &ExecutionContext,
        input: SleepInput,
    ) -> Result<ToolResult<String>, ToolError> {
        tokio::time::sleep(Duration::from_millis(input.millis)).await;
        Ok(ToolResult::text(input.label))
    }
}

#[derive(Deserialize, JsonSchema)]
pub struct SilentInput {
    pub reason: String,
}

/// A tool that asks for a silent exit with its `reason`.
pub struct SilentExit;

#[async_trait]
impl Tool<SilentInput, String> for SilentExit {
    fn name(&self) -> &str {
        "silent_exit"
    }
    fn description(&self) -> &str {
        "Ends the conversation without replying."
    }
    async fn call(
        &self,
        _: &ExecutionContext,
        input: SilentInput,
    ) -> Result<ToolResult<String>, ToolError> {
        Err(ToolError::silent_exit(input.reason))
    }
}

/// Does nothing; the benchmark's and fuzzer's tool.
pub struct Noop;

#[async_trait]
impl Tool<Empty, String> for Noop {
    fn name(&self) -> &str {
        "noop"
    }
    fn description(&self) -> &str {
        "Does nothing."
    }
    async fn call(&self, _: &ExecutionContext, _: Empty) -> Result<ToolResult<String>, ToolError> {
        Ok(ToolResult::text(String::new()))
    }
}

pub fn tools() -> ToolSet {
    let mut tools = ToolSet::new();
    tools.add(GetCustomerInfo).unwrap();
    tools.add(GetFlightInfo).unwrap();
    tools.add(Screenshot).unwrap();
    tools.add(Panicking).unwrap();
    tools.add(Sleep).unwrap();
    tools.add(SilentExit).unwrap();
    tools.add(Noop).unwrap();
    tools
}

pub fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
        .block_on(future)
}

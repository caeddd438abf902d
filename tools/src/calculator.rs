//! `calculator`: evaluates an arithmetic expression (`expr`: its parser).

mod expr;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolchain::{ExecutionContext, Tool, ToolError, ToolResult, async_trait};

use crate::{Builtin, Offered};

/// `calculator` in the table of built-in tools: always on.
pub(crate) const BUILTIN: Builtin = Builtin {
    name: "calculator",
    enable: "it is always on",
    build: |_| Offered::new(Calculator).map(Some),
};

/// The calculator tool. Pure computation: no names but constants and math functions exist.
#[derive(Clone, Copy, Debug, Default)]
pub struct Calculator;

/// Input of [`Calculator`].
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CalculatorInput {
    /// An arithmetic expression, e.g. `(2 + 3) * 4 ^ 2 / sqrt(16)`. Operators: + - * / % and
    /// ^ (or **) for powers; constants pi, e, tau; functions abs, sqrt, cbrt, exp, ln,
    /// log(x[, base]), log2, log10, sin, cos, tan, asin, acos, atan, atan2, sinh, cosh, tanh,
    /// floor, ceil, round, trunc, min, max, pow, hypot. Angles are in radians.
    pub expression: String,
}

/// Output of [`Calculator`].
#[derive(Debug, PartialEq, Serialize)]
pub struct CalculatorOutput {
    /// The expression as given.
    pub expression: String,
    /// Its value.
    pub result: f64,
}

#[async_trait]
impl Tool<CalculatorInput, CalculatorOutput> for Calculator {
    fn name(&self) -> &str {
        "calculator"
    }

    fn description(&self) -> &str {
        "Evaluates an arithmetic expression exactly as written and returns its numeric value. \
         Use it for any arithmetic instead of computing in your head."
    }

    async fn call(
        &self,
        _ctx: &ExecutionContext,
        input: CalculatorInput,
    ) -> Result<ToolResult<CalculatorOutput>, ToolError> {
        let result = expr::evaluate(&input.expression).map_err(|err| {
            ToolError::failed(format!(
                "cannot evaluate `{}`: {err}",
                excerpt(&input.expression)
            ))
        })?;
        Ok(ToolResult::text(CalculatorOutput {
            expression: input.expression,
            result,
        }))
    }
}

/// The start of a long expression, for error messages.
fn excerpt(text: &str) -> String {
    const SHOWN: usize = 80;
    match text.char_indices().nth(SHOWN) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use toolchain::DynTool;

    use super::*;

    #[tokio::test]
    async fn answers_through_the_erased_tool() {
        let tool = DynTool::new(Calculator).unwrap();
        let ctx = ExecutionContext::new();
        let out = tool
            .call_json_text(&ctx, r#"{"expression": "(2 + 3) * 4"}"#)
            .await
            .unwrap();
        assert_eq!(
            out.text,
            serde_json::json!({"expression": "(2 + 3) * 4", "result": 20.0})
        );
        let err = tool
            .call_json_text(&ctx, r#"{"expression": "1/0"}"#)
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "cannot evaluate `1/0`: division by zero at byte 1"
        );
        let err = tool
            .call_json_text(&ctx, r#"{"expr": "1"}"#)
            .await
            .unwrap_err();
        assert!(matches!(err, ToolError::InvalidInput { .. }), "{err}");
    }

    #[test]
    fn long_expressions_are_cut_in_messages() {
        let long = "1+".repeat(100);
        assert_eq!(excerpt(&long).chars().count(), 81);
        assert_eq!(excerpt("short"), "short");
    }
}
